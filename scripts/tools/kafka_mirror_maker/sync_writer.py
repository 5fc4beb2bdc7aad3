"""``OffsetSyncWriter``: the flow's offset syncs written to ``mm2-offset-syncs.<target>.internal`` at the source,
and what they allow the task to commit.

The invariant the offset translation relies on (``offset_sync``): a sync that marks a gap must be durable
before the task's progress passes its record. Were it lost after the progress passed it, the restarted task
would begin beyond the gap and translation would run across it and could skip records at the target. So
``safe_offset`` holds a partition's progress at the upstream offset of its oldest unacknowledged sync (that
record is mirrored again after a crash, and synced again), instead of blocking the commit on the source
cluster: a slow source delays the progress commit, never the copying.

Deliveries of the one-partition topic arrive in the order produced, so one FIFO of (partition, upstream offset)
pairs tells which sync each acknowledgement is for.
"""
from __future__ import annotations

from collections import deque

from confluent_kafka import KafkaError, Producer

from scripts.tools.kafka_mirror_maker.records import OffsetSync


class OffsetSyncWriter:
    def __init__(self, producer: Producer, topic: str):
        self.producer, self.topic = producer, topic
        self.in_flight: deque[tuple[tuple[str, int], int]] = deque()
        self.unacked: dict[tuple[str, int], deque[int]] = {}
        self.failure: KafkaError | None = None
        self.written = 0

    def write(self, syncs: list[OffsetSync]) -> None:
        for sync in syncs:
            tp = (sync.topic, sync.partition)
            self.in_flight.append((tp, sync.upstream_offset))
            self.unacked.setdefault(tp, deque()).append(sync.upstream_offset)
            while True:
                try:
                    self.producer.produce(self.topic, sync.value(), sync.key(), 0, on_delivery=self._delivered)
                    break
                except BufferError:  # the source is slow: wait for room, the syncs must all be written
                    self.producer.poll(0.05)
        self.written += len(syncs)
        self.producer.poll(0)

    def _delivered(self, error, _msg) -> None:
        tp, upstream = self.in_flight.popleft()
        if error is not None:
            self.failure = self.failure or error
            return
        self.unacked[tp].remove(upstream)  # not popleft: a failed one before it stays unacknowledged

    def safe_offset(self, tp: tuple[str, int], next_offset: int) -> int:
        """The progress ``tp`` may be committed at: ``next_offset``, or the record of its oldest sync
        still unacknowledged."""
        pending = self.unacked.get(tp)
        return min(next_offset, pending[0]) if pending else next_offset

    def poll(self) -> None:
        self.producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        """Waits for every sync's acknowledgement; returns how many are still unacknowledged."""
        return self.producer.flush(timeout_s)
