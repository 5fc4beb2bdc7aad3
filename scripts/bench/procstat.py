"""What a run costs the machine, from /proc: CPU seconds of a set of processes (utime + stime of each,
children not included), their peak resident memory (``VmHWM``), and the machine's idle share
(idle + iowait jiffies over all jiffies of ``/proc/stat``'s ``cpu`` line) between two samples.

The parsers take the files' text, so they are tested without a /proc; ``Sample`` reads them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds_of(stat_text: str) -> float:
    """utime + stime of one ``/proc/<pid>/stat`` (the command name may hold spaces and parentheses)."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def peak_rss_bytes_of(status_text: str) -> int:
    """``VmHWM`` of one ``/proc/<pid>/status``: the process's peak resident set so far."""
    for line in status_text.splitlines():
        if line.startswith("VmHWM:"):
            value, unit = line.split()[1:3]
            return int(value) * {"kB": 1024}[unit]
    return 0


def machine_jiffies_of(proc_stat_text: str) -> tuple[int, int]:
    """(idle + iowait, total) jiffies of every CPU, from ``/proc/stat``'s first line."""
    fields = [int(x) for x in proc_stat_text.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return idle, sum(fields[:8])  # guest time is already inside user/nice


def cpu_seconds(pid: int) -> float:
    """utime + stime of a running process."""
    return cpu_seconds_of(Path(f"/proc/{pid}/stat").read_text())


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None


@dataclass(frozen=True)
class Sample:
    """CPU seconds per pid (a pid that is gone counts its last known value as 0) and machine jiffies."""

    cpu: dict[int, float]
    idle_jiffies: int
    total_jiffies: int

    @classmethod
    def take(cls, pids: list[int]) -> "Sample":
        cpu = {}
        for pid in pids:
            text = _read(f"/proc/{pid}/stat")
            cpu[pid] = cpu_seconds_of(text) if text is not None else 0.0
        idle, total = machine_jiffies_of(Path("/proc/stat").read_text())
        return cls(cpu, idle, total)


def cpu_between(before: Sample, after: Sample) -> float:
    """CPU seconds the sampled processes used between the two samples (a process that died in between
    contributes nothing rather than a negative number)."""
    return sum(max(0.0, after.cpu.get(pid, 0.0) - used) for pid, used in before.cpu.items())


def idle_share_between(before: Sample, after: Sample) -> float | None:
    total = after.total_jiffies - before.total_jiffies
    return (after.idle_jiffies - before.idle_jiffies) / total if total > 0 else None


def peak_rss_bytes(pids: list[int]) -> int:
    """The largest ``VmHWM`` among ``pids`` (the broker's peak; ZooKeeper's JVM is reported apart)."""
    peaks = [peak_rss_bytes_of(text) for pid in pids if (text := _read(f"/proc/{pid}/status")) is not None]
    return max(peaks, default=0)
