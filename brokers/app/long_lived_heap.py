"""The broker's long-lived heap and CPython's cyclic garbage collector.

A broker's heap is mostly long-lived: per partition replica its ``Partition``, ``Log``, segments, indexes,
leader-epoch cache, metadata and fetch-session entries (about 80 tracked objects each; 800,000 on a broker
holding 10,000 replicas). CPython's full (generation 2) collection walks every tracked object, holding the GIL:
at that size it takes 300-550 ms, during which the event loop answers nothing. That was the L1 benchmark's
p99 beside 10,000 idle partitions (206-440 ms, against 5-8 ms with the collector kept off the long-lived heap;
BENCHMARKS.md "The collector and the long-lived heap"). Kafka's JVM has the same problem and answers it with
generational collectors that leave the old generation alone; CPython's answer is ``gc.freeze()``: every object
tracked at that moment moves to a permanent generation that later collections skip.

The policy (Instagram's, made adaptive): after a full collection that took ``slow_ms`` or more, the survivors
are frozen at once (they just survived a full collection: they are long-lived). Later full collections walk
only what was allocated since, until the heap has grown enough to be slow again, which freezes again. So the
pause is paid once per growth spurt (a topic creation, a controller failover), on the thread whose allocation
triggered it, not every few seconds for the life of the broker.

What that costs: a frozen object that later becomes cyclic garbage is not reclaimed (reference counting still
frees everything without a cycle). Where a broker drops much long-lived state at once — a StopReplica deleting
partitions — it calls ``release``: the frozen objects go back to the oldest generation and the next full
collection reclaims the cycles among them (one slow collection, which freezes the survivors again). A frozen
connection or group that later dies in a cycle stays until then: bounded by what was alive at each freeze.
"""
from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

SLOW_FULL_COLLECTION_MS = 10.0  # ~40,000 objects on this machine; a broker with a few topics has 70,000-100,000


@dataclass
class LongLivedHeap:
    """Installs itself as a ``gc.callbacks`` entry (``install``; ``uninstall`` removes it). Process-wide, like the
    collector it steers: ``HEAP`` below is the process's."""

    slow_ms: float = SLOW_FULL_COLLECTION_MS
    freezes: int = 0
    releases: int = 0
    last_full_collection_ms: float = 0.0
    _started: float | None = None

    def install(self) -> "LongLivedHeap":
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)
        return self

    def uninstall(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)

    def release(self, why: str) -> None:
        """Much long-lived state was just dropped: let the next full collection look at everything again."""
        frozen = gc.get_freeze_count()
        if frozen:
            gc.unfreeze()
            self.releases += 1
            log.info("unfroze %d objects (%s): the next full collection reclaims what died among them", frozen, why)

    def _on_collection(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        elapsed_ms = (time.perf_counter() - self._started) * 1000
        self._started = None
        self.last_full_collection_ms = elapsed_ms
        if elapsed_ms >= self.slow_ms:
            self._freeze(elapsed_ms)

    def _freeze(self, elapsed_ms: float) -> None:
        before = gc.get_freeze_count()
        gc.freeze()
        self.freezes += 1
        log.info("a full garbage collection took %.0f ms: froze %d objects (%d frozen in all), later full "
                 "collections skip them", elapsed_ms, gc.get_freeze_count() - before, gc.get_freeze_count())


HEAP = LongLivedHeap()  # the process's: ``python -m brokers`` installs it, StopReplica deletions release it
