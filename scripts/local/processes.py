"""Processes this machine runs, from ``/proc``: the launchers' (and benchmarks') one way to ask whether a pid
is alive and what its command line is."""
from __future__ import annotations

import os
import time
from pathlib import Path


def cmdline(pid: int, settle: float = 0.0) -> str:
    """``/proc/<pid>/cmdline`` as text ("" when there is no such process). It can read empty for a moment right
    after ``Popen`` returns, so with ``settle`` an empty one is read again for up to that many seconds."""
    deadline = time.monotonic() + settle
    while True:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return ""
        if raw or time.monotonic() >= deadline or not alive(pid):
            return raw.replace(b"\0", b" ").decode(errors="replace")
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """A live, non-zombie process (reaping our own children if they exited)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False
