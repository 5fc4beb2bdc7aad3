"""One ZooKeeper server process (``ZooKeeperServer``): its files, its JVM, readiness through ``srvr``, signals."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.local.zookeeper.classpath import find_java, resolve_classpath
from scripts.local.zookeeper.config import (DEFAULT_PORT, DEFAULT_TICK_TIME, JVM_FLAGS, QUORUM_MAIN, SERVING_MODES,
                                            STANDALONE_MAIN, ZooKeeperError, log4j2_properties, zoo_cfg)
from scripts.local.zookeeper.network import srvr, try_srvr

def pid_state(pid: int) -> str | None:
    """The /proc state letter, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return "?"
    return stat.rpartition(")")[2].split()[0]


def _pid_is(pid: int, marker: str) -> bool:
    """True if ``pid`` is a live (not zombie) process whose command line contains ``marker``."""
    if not Path("/proc").is_dir():  # not Linux: best effort
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state = pid_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return marker in cmdline


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@dataclass(frozen=True)
class Peers:
    myid: int
    servers: dict[int, tuple[int, int]]  # myid -> (quorum port, election port)


class ZooKeeperServer:
    """One ZooKeeper server process: standalone, or one member of a ``ZooKeeperEnsemble``.

    ``with ZooKeeperServer(dir, port, tick_time=500) as zk: ...`` starts (waits for ``srvr``) and stops.
    A server object can also be made for a process another Python process started (``load``): it finds
    the process through the pid file, checking the pid still runs our zoo.cfg.
    """

    def __init__(self, data_dir: Path | str, port: int = DEFAULT_PORT, *, tick_time: int = DEFAULT_TICK_TIME,
                 classpath: str | None = None, java: str | None = None, peers: Peers | None = None,
                 host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.tick_time = tick_time
        self.host = host
        self._classpath = classpath
        self._java = java
        self._peers = peers
        self._proc: subprocess.Popen | None = None

    # paths
    cfg_path = property(lambda self: self.data_dir / "zoo.cfg")
    log_path = property(lambda self: self.data_dir / "zookeeper.log")
    pid_path = property(lambda self: self.data_dir / "zookeeper.pid")
    log4j_path = property(lambda self: self.data_dir / "log4j2.properties")

    @property
    def myid(self) -> int | None:
        return self._peers.myid if self._peers else None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        if self._proc is not None:
            return self._proc.pid
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    def __repr__(self) -> str:
        who = f"myid={self.myid} " if self.myid else ""
        return f"ZooKeeperServer({who}{self.connect_string}, {self.data_dir})"

    # lifecycle
    def write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        servers = self._peers.servers if self._peers else None
        self.cfg_path.write_text(zoo_cfg(self.data_dir, self.port, tick_time=self.tick_time, servers=servers))
        self.log4j_path.write_text(log4j2_properties())
        if self._peers:
            (self.data_dir / "myid").write_text(f"{self._peers.myid}\n")

    def command(self) -> list[str]:
        java = self._java or find_java()
        classpath = self._classpath or resolve_classpath()
        main = QUORUM_MAIN if self._peers else STANDALONE_MAIN
        return [java, *JVM_FLAGS, f"-Dlog4j2.configurationFile={self.log4j_path}",
                "-Dzookeeper.admin.enableServer=false", "-cp", classpath, main, str(self.cfg_path)]

    def spawn(self) -> None:
        """Write the config and start the JVM in the background (its own session); don't wait."""
        if self.is_running():
            raise ZooKeeperError(f"ZooKeeper already running in {self.data_dir} (pid {self.pid})")
        cmd = self.command()  # resolve java and jars before touching anything
        self.write_config()
        if self.log_path.exists():
            self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          cwd=self.data_dir, start_new_session=True, close_fds=True)
        self.pid_path.write_text(f"{self._proc.pid}\n")

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Spawn, then wait until ``srvr`` reports a serving mode; on failure stop it and raise with the log."""
        self.spawn()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 30.0, modes: frozenset[str] = SERVING_MODES) -> dict:
        deadline = time.monotonic() + timeout
        last: dict | None = None
        while True:
            if not self.is_running():
                raise ZooKeeperError(f"{self!r} exited during start-up (code {self.returncode}); "
                                     f"last lines of {self.log_path}:\n{log_tail(self.log_path)}")
            last = try_srvr(self.port, timeout=1.0)
            if last and last["mode"] in modes:
                return last
            if time.monotonic() >= deadline:
                seen = f"srvr said {last.get('mode') or last.get('message')!r}" if last else "srvr got no answer"
                raise ZooKeeperError(f"{self!r} not ready after {timeout:.0f} s ({seen}); "
                                     f"last lines of {self.log_path}:\n{log_tail(self.log_path)}")
            time.sleep(0.05)

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def is_running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        pid = self.pid
        return pid is not None and _pid_is(pid, str(self.cfg_path))

    def srvr(self, timeout: float = 2.0) -> dict:
        return srvr("127.0.0.1", self.port, timeout)

    def kill(self) -> None:
        """SIGKILL, no grace (fault injection), and wait until the process is gone."""
        self._signal_and_wait(signal.SIGKILL, 10.0)
        self.pid_path.unlink(missing_ok=True)

    def stop(self, grace: float = 10.0) -> bool:
        """SIGTERM, SIGKILL after ``grace`` seconds; returns whether a process was running."""
        was_running = self.is_running()
        if was_running and not self._signal_and_wait(signal.SIGTERM, grace):
            self._signal_and_wait(signal.SIGKILL, 10.0)
        if self.is_running():
            raise ZooKeeperError(f"{self!r} (pid {self.pid}) survived SIGKILL")
        self.pid_path.unlink(missing_ok=True)
        return was_running

    def signal(self, sig: signal.Signals) -> bool:
        """Send ``sig`` if the process runs; returns whether it did."""
        pid = self.pid
        if pid is None or not self.is_running():
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def _signal_and_wait(self, sig: signal.Signals, timeout: float) -> bool:
        """Send ``sig`` if running; True once the process is gone, False if it outlived ``timeout``."""
        if not self.signal(sig):
            return not self.is_running()
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def status(self) -> dict:
        info = {"myid": self.myid, "port": self.port, "connect_string": self.connect_string, "pid": self.pid,
                "running": self.is_running(), "data_dir": str(self.data_dir), "log": str(self.log_path)}
        answer = try_srvr(self.port) if info["running"] else None
        info["mode"] = answer["mode"] if answer else None
        info["serving"] = bool(answer and answer["serving"])
        info["zxid"] = answer.get("zxid") if answer else None
        if not info["running"]:
            info["pid"] = None
        return info

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

