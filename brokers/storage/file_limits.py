"""The open-file budget of a broker, told at start-up instead of crashed into.

A partition replica costs one open file per log segment (the ``.log``; the indexes hold none, see
``index_file.py``), and nothing is memory-mapped, so ``vm.max_map_count`` does not bound the partition count
here (Kafka maps two indexes per segment and is bounded by it). The process's soft ``RLIMIT_NOFILE`` is raised
to its hard limit at start (as the JVM does with ``-XX:+MaxFDLimit``), and the broker logs how many segments
that leaves room for, so an operator sizing a cluster by partitions sees the ceiling before reaching it.
"""
from __future__ import annotations

import logging
import resource
from dataclasses import dataclass

log = logging.getLogger(__name__)

RESERVED_FILES = 1000  # sockets (clients, replica fetchers, ZooKeeper, HTTP), checkpoints, interpreter files
WARN_SHARE = 0.8  # warn once the segments open at start use this share of the budget


@dataclass(frozen=True)
class FileBudget:
    soft_limit: int
    hard_limit: int
    raised_from: int | None  # the soft limit before start-up raised it, if it did
    segments_open: int

    @property
    def segment_capacity(self) -> int:
        """Segments (one open file each) the limit leaves room for, beside the reserve."""
        return max(0, self.soft_limit - RESERVED_FILES)

    @property
    def tight(self) -> bool:
        return self.segments_open >= WARN_SHARE * self.segment_capacity

    def describe(self) -> str:
        raised = f", raised from {self.raised_from}" if self.raised_from is not None else ""
        return (f"open file limit {self.soft_limit} (hard {self.hard_limit}{raised}): {self.segments_open} log "
                f"segments open, room for about {self.segment_capacity} (one open file per segment, "
                f"{RESERVED_FILES} kept for sockets); no memory maps, so vm.max_map_count does not bound partitions")


def raise_soft_limit() -> tuple[int, int, int | None]:
    """(soft, hard, the soft limit before) after raising the soft ``RLIMIT_NOFILE`` to the hard one; the
    previous value is None when nothing changed (already at the hard limit, or the raise was refused)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, _nr_open())
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft, hard, None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("cannot raise the open file limit from %d to %d: %s", soft, target, exc)
        return soft, hard, None
    return target, hard, soft


def _nr_open() -> int:
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1 << 20


def report(segments_open: int) -> FileBudget:
    """Raise the soft limit, then log the budget (a warning when the segments open use most of it)."""
    soft, hard, before = raise_soft_limit()
    budget = FileBudget(soft, hard, before, segments_open)
    (log.warning if budget.tight else log.info)("%s", budget.describe())
    return budget

