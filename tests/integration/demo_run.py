"""How the demo tests run a ``zkafka demo ...`` as a user does and read its narrative: ``DemoRun(args)``
runs it (exit 0 asserted, with its output and stderr's tail in the message) and ``first(pattern, after)`` finds
the first line matching ``pattern`` at or after line ``after``."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class DemoRun:
    def __init__(self, args: list[str], timeout: float):
        proc = subprocess.run([sys.executable, "-m", "scripts.cli", "demo", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout)
        self.out = proc.stdout
        assert proc.returncode == 0, f"exit {proc.returncode}\n{self.out}\n{proc.stderr[-5000:]}"
        self.lines = self.out.splitlines()

    def first(self, pattern: str, after: int = 0) -> int:
        for i, line in enumerate(self.lines[after:], after):
            if re.search(pattern, line):
                return i
        raise AssertionError(f"no line matching {pattern!r} after line {after}:\n{self.out}")
