"""``zkafka bench spark-cluster``'s CPU accounting from ``/proc``: each process counts for the nearest of the
run's known processes among itself and its ancestors (``Roles``); ``CpuTracker`` samples every role's CPU
seconds and the machine's jiffies while a submission runs; ``cpu_window`` and ``peak_share`` read the samples."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scripts.bench.procstat import CLOCK_TICKS, cpu_seconds_of, machine_jiffies_of
from scripts.bench.spark_cluster_report import ROLES
from scripts.local.processes import cmdline
from scripts.local.spark.standalone import EXECUTOR_CLASS

SAMPLE_S = 0.2


def stat_fields(stat_text: str) -> tuple[int, float]:
    """(parent pid, utime + stime seconds) of one ``/proc/<pid>/stat`` (the name may hold ``)``)."""
    return int(stat_text.rsplit(")", 1)[1].split()[1]), cpu_seconds_of(stat_text)


@dataclass(frozen=True)
class Roles:
    """Who is who during one submission, by pid: a process counts for the nearest of these among itself and
    its ancestors (process groups do not do: PySpark's daemon makes a group of its own)."""

    broker: int
    zookeeper: int | None
    harness: int
    master: int | None
    workers: frozenset[int]
    driver: int | None


def role_of(chain: list[int], roles: Roles, is_executor_jvm: Callable[[], bool]) -> str | None:
    """The row of ``ROLES`` a process counts in, or None (the rest of the machine). ``chain``: its pid, its
    parent's, and so on up. The driver is spark-submit's JVM (its Python and planner workers below it); a
    worker's child is an executor JVM when its command line says so, anything further down is the executors'
    Python (PySpark's daemon and its workers)."""
    for depth, pid in enumerate(chain):
        if pid == roles.broker:
            return "broker"
        if pid == roles.zookeeper:
            return "zookeeper"
        if roles.driver is not None and pid == roles.driver:
            return "driver"
        if pid == roles.master or (pid in roles.workers and depth == 0):
            return "Spark master+workers"
        if pid in roles.workers:
            return "executor JVM" if depth == 1 and is_executor_jvm() else "executor Python"
        if pid == roles.harness:
            return "bench harness"
    return None


@dataclass(frozen=True)
class CpuSample:
    """At epoch second ``t``: CPU seconds used so far by each role (a process that ended keeps its last
    value, so each role only grows) and the machine's busy and total jiffies (all CPUs)."""

    t: float
    cpu: dict[str, float]
    busy_jiffies: int
    total_jiffies: int


class CpuTracker:
    """Samples ``/proc`` every ``SAMPLE_S`` in a thread while a submission runs. A pid's role is decided the
    first time it is seen, from its ancestors (pids of no role are not read again)."""

    def __init__(self, roles: Roles):
        self.roles = roles
        self.role: dict[int, str | None] = {}
        self.parent: dict[int, int] = {}
        self.last: dict[int, float] = {}
        self.samples: list[CpuSample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-tracker", daemon=True)

    def __enter__(self) -> "CpuTracker":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in self.role and self.role[pid] is None:
                continue
            try:
                self.parent[pid], cpu = stat_fields(Path(f"/proc/{pid}/stat").read_text())
            except (OSError, IndexError, ValueError):
                continue
            if pid not in self.role:
                self.role[pid] = role_of(self._chain(pid), self.roles, lambda: EXECUTOR_CLASS in cmdline(pid))
            if self.role[pid] is not None:
                self.last[pid] = cpu
        totals = dict.fromkeys(ROLES, 0.0)
        for pid, cpu in self.last.items():
            totals[self.role[pid]] += cpu
        idle, total = machine_jiffies_of(Path("/proc/stat").read_text())
        self.samples.append(CpuSample(time.time(), totals, total - idle, total))

    def _chain(self, pid: int) -> list[int]:
        chain = [pid]
        while chain[-1] > 1 and len(chain) < 64:
            parent = self.parent.get(chain[-1])
            if parent is None:
                try:
                    parent = self.parent[chain[-1]] = stat_fields(Path(f"/proc/{chain[-1]}/stat").read_text())[0]
                except (OSError, IndexError, ValueError):
                    break
            chain.append(parent)
        return chain


def _at(samples: list[CpuSample], t: float) -> tuple[dict[str, float], float, float]:
    """Each role's CPU seconds, and the machine's busy and total jiffies, at epoch second ``t``: linear between
    the samples around it (the first or last sample outside them)."""
    if t <= samples[0].t:
        s = samples[0]
        return dict(s.cpu), s.busy_jiffies, s.total_jiffies
    for a, b in zip(samples, samples[1:]):
        if a.t <= t <= b.t:
            f = (t - a.t) / (b.t - a.t) if b.t > a.t else 1.0
            return ({r: a.cpu.get(r, 0.0) + f * (b.cpu.get(r, 0.0) - a.cpu.get(r, 0.0)) for r in b.cpu},
                    a.busy_jiffies + f * (b.busy_jiffies - a.busy_jiffies),
                    a.total_jiffies + f * (b.total_jiffies - a.total_jiffies))
    s = samples[-1]
    return dict(s.cpu), s.busy_jiffies, s.total_jiffies


def cpu_window(samples: list[CpuSample], t0: float, t1: float, cores: int) -> dict:
    """CPU seconds of each role between epoch seconds ``t0`` and ``t1``; ``other``: the machine's busy CPU
    seconds that no role used (other processes, the kernel's own threads); ``capacity``: ``cores`` x wall."""
    (c0, busy0, total0), (c1, busy1, total1) = _at(samples, t0), _at(samples, t1)
    cpu = {r: max(0.0, c1.get(r, 0.0) - c0.get(r, 0.0)) for r in ROLES}
    busy = max(0.0, busy1 - busy0) / CLOCK_TICKS
    total = max(0.0, total1 - total0) / CLOCK_TICKS
    return {"seconds": t1 - t0, "cpu": cpu, "other": max(0.0, busy - sum(cpu.values())), "busy": busy,
            "capacity": total if total > 0 else cores * (t1 - t0)}


def peak_share(samples: list[CpuSample], role: str, t0: float, t1: float, width: float = 1.0) -> float:
    """The largest CPU share (1.0 = one core) ``role`` used over any ``width`` seconds from ``t0`` to ``t1``."""
    if t1 - t0 <= width:
        return cpu_window(samples, t0, t1, 1)["cpu"][role] / max(t1 - t0, 1e-9)
    best, t = 0.0, t0
    while t + width <= t1:
        best = max(best, cpu_window(samples, t, t + width, 1)["cpu"][role] / width)
        t += SAMPLE_S
    return best
