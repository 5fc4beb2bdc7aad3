"""Scheduler: Kafka's KafkaScheduler in miniature, one daemon thread running timed tasks.

Storage work that blocks (fsync, deleting files, retention, compaction) runs here, never on the
broker's event loop. A task that raises is logged and, if periodic, keeps its schedule.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, name: str = "zkafka-scheduler", clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._queue: list[tuple[float, int, str, Callable[[], object], float | None]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(self, name: str, fn: Callable[[], object], delay_ms: int = 0, period_ms: int | None = None) -> None:
        with self._cv:
            if self._stopped:
                return
            due = self._clock() + delay_ms / 1000
            heapq.heappush(self._queue, (due, next(self._seq), name, fn, None if period_ms is None else period_ms / 1000))
            self._cv.notify()

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> None:
        self.schedule(name, fn, delay_ms)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stopped and (not self._queue or self._queue[0][0] > self._clock()):
                    self._cv.wait(None if not self._queue else max(0.0, self._queue[0][0] - self._clock()))
                if self._stopped:
                    return
                due, _, name, fn, period = heapq.heappop(self._queue)
            try:
                fn()
            except Exception:  # noqa: BLE001 - a failing task must not kill the scheduler
                log.exception("scheduled task %s failed", name)
            if period is not None:
                with self._cv:
                    if not self._stopped:
                        heapq.heappush(self._queue, (max(due + period, self._clock()), next(self._seq), name, fn, period))

    def run_pending_once_tasks(self) -> None:
        """Run every one-shot task now (shutdown: pending flushes and deletions must not be lost)."""
        with self._cv:
            once = [item for item in self._queue if item[4] is None]
            self._queue = [item for item in self._queue if item[4] is not None]
            heapq.heapify(self._queue)
        for _, _, name, fn, _ in sorted(once):
            try:
                fn()
            except Exception:  # noqa: BLE001
                log.exception("scheduled task %s failed", name)

    def shutdown(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=30)
