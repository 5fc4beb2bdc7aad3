"""``MirrorProcess``: a ``kafka-mirror-maker`` run as a child process, for whatever drives one (the tests, ``zkafka
demo mirror``, ``zkafka bench mirror``): started with ``--http-port 0`` and waited for until it prints its started
line (which names the port it bound), read through ``/api/v1/mirror``, stopped with SIGTERM or killed with -9."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

STARTED = "kafka-mirror-maker started"


class MirrorProcessError(RuntimeError):
    pass


class MirrorProcess:
    """``python -m scripts.tools.kafka_mirror_maker CONFIG --http-port 0``, its stderr appended to ``log``."""

    def __init__(self, config: Path, log: Path):
        self.config, self.log = Path(config), Path(log)
        self.proc: subprocess.Popen | None = None
        self.http_port: int | None = None

    def start(self, timeout: float = 60.0) -> "MirrorProcess":
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "scripts.tools.kafka_mirror_maker", str(self.config),
                                          "--http-port", "0"], stdout=subprocess.PIPE, stderr=err,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:  # readline blocks: the deadline is checked between lines
            line = self.proc.stdout.readline().decode()
            if line.startswith(STARTED):
                self.http_port = int(re.search(r":(\d+)/", line).group(1))
                return self
            if not line and self.proc.poll() is not None:
                raise MirrorProcessError(f"kafka-mirror-maker exited {self.proc.returncode}: "
                                         f"{self.log.read_text()[-3000:]}")
        self.kill()
        raise MirrorProcessError(f"kafka-mirror-maker did not start in {timeout:.0f} s (log: {self.log})")

    def api(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/api/v1/mirror", timeout=5) as response:
            return json.loads(response.read())

    def flow(self, index: int = 0) -> dict:
        return self.api()["flows"][index]

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics", timeout=5) as response:
            return response.read().decode()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM and its exit code (0: every flow stopped cleanly)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        return self.proc.returncode
