"""When the mirror emits an offset sync, and how the checkpointer translates offsets with them (pure).

An offset sync ``(u, d)`` of a source partition says: the upstream record at offset ``u`` was written at
offset ``d`` of the remote partition. A consumer group committed at upstream offset ``g`` (the next record it
will read) must be translated to a downstream offset ``T`` such that no record at or after ``g`` is lost:
every upstream record ``>= g`` has a copy at or after ``T``. Re-reading a few records is acceptable, skipping
one is not.

**Emitting** (``PartitionSyncState.update``, one state per source partition and mirror lifetime). Kafka
2.8's rule (``MirrorSourceTask.PartitionState``) emits for the first record, after a gap upstream
(``u != previous u + 1``: transaction markers, compaction, aborted records) and when the remote partition
went backwards. zkafka also emits after any gap downstream (``d != previous d + 1``: markers written by an
exactly-once mirror, records a restarted mirror writes twice), so that **between two consecutive syncs of
one lifetime the mapping is exactly contiguous**: record ``u + k`` is at ``d + k`` for every record before
the next sync. That makes 2.8's drift condition (actual minus extrapolated downstream offset
``>= offset.lag.max``) always 0, so ``offset_lag_max`` takes the meaning Kafka 3.5 gave it (KAFKA-14797): a
sync is also emitted when ``d - (last sync's d + 1) >= offset_lag_max``, bounding the records a consumer
past the latest sync re-reads. ``offset_lag_max`` 0 (or less) emits a sync for every record. Like Kafka 3.7
(KAFKA-15906) the mirror also emits, at each commit, the last record seen if it was not a sync
(``pending``) and records it with ``mark_synced``; the lag rule then counts from it.

**Translating** (``OffsetSyncStore.translate``): with ``(u, d)`` the sync of greatest ``u <= g``:

* none: None (the group is older than every sync kept);
* ``g == u``: ``d``;
* a next sync ``(u2, d2)`` exists: ``min(d + (g - u), d2)``: exact inside the contiguous run, never past the
  next sync (a gap upstream between the run's end and ``u2``, or another lifetime's syncs);
* no next sync: ``d + 1`` (Kafka 3.5's rule, KAFKA-12468): what follows the latest sync may hold gaps,
  so the group re-reads up to ``reread_bound(u, g)`` records rather than skipping any.

Each partition keeps its syncs sorted by upstream offset, the last one read winning for an equal upstream
offset (a retried transaction, a restart); at most ``max_syncs_per_partition`` are kept, the lowest
upstream offsets dropped first. Syncs with a negative offset are ignored.

**Duties of the mirror** for the "never skip" guarantee: call ``update`` for every record written, in the
order of the remote partition (for an exactly-once mirror: once the transaction committed); write every
sync ``update`` asks for, never dropping one (Kafka drops them past 10 in flight; here a lost sync lets
``d + (g - u)`` run past records after an upstream gap), and have it acknowledged before committing source
offsets past its record; start a fresh ``PartitionSyncState`` with each lifetime (assignment, restart).
"""
from __future__ import annotations

from bisect import bisect_right

from scripts.tools.kafka_mirror_maker.records import OffsetSync

OFFSET_LAG_MAX_DEFAULT = 100  # offset.lag.max
MAX_SYNCS_PER_PARTITION = 1024


def _upstream(sync: OffsetSync) -> int:
    return sync.upstream_offset


def reread_bound(sync_upstream_offset: int, upstream_offset: int) -> int:
    """At most how many records a group at ``upstream_offset``, translated to ``d + 1`` by a sync at
    ``sync_upstream_offset`` with no later sync, reads again downstream: the upstream records strictly
    between the two (fewer if some are markers or compacted). Assumes no restart wrote records twice."""
    return max(0, upstream_offset - sync_upstream_offset - 1)


class PartitionSyncState:
    """One source partition's mirroring progress in one mirror lifetime: decides which records are syncs."""

    def __init__(self, offset_lag_max: int = OFFSET_LAG_MAX_DEFAULT) -> None:
        self.offset_lag_max = offset_lag_max
        self.previous_upstream_offset = -1
        self.previous_downstream_offset = -1
        self.last_sync_upstream_offset = -1
        self.last_sync_downstream_offset = -1

    def __repr__(self) -> str:
        return (f"PartitionSyncState(offset_lag_max={self.offset_lag_max}, previous="
                f"({self.previous_upstream_offset}, {self.previous_downstream_offset}), last_sync="
                f"({self.last_sync_upstream_offset}, {self.last_sync_downstream_offset}))")

    def update(self, upstream_offset: int, downstream_offset: int) -> bool:
        """Record that upstream ``upstream_offset`` was written at ``downstream_offset``; True: emit it as a
        sync (it is then the last sync)."""
        no_sync_yet = self.last_sync_downstream_offset < 0
        upstream_gap = upstream_offset != self.previous_upstream_offset + 1
        downstream_gap = downstream_offset != self.previous_downstream_offset + 1  # also: went backwards
        too_stale = downstream_offset - (self.last_sync_downstream_offset + 1) >= self.offset_lag_max
        self.previous_upstream_offset = upstream_offset
        self.previous_downstream_offset = downstream_offset
        if no_sync_yet or upstream_gap or downstream_gap or too_stale:
            self.mark_synced(upstream_offset, downstream_offset)
            return True
        return False

    def pending(self) -> tuple[int, int] | None:
        """The last ``(upstream, downstream)`` seen, unless none was seen or it is the last sync."""
        last = (self.previous_upstream_offset, self.previous_downstream_offset)
        if last[0] < 0 or last == (self.last_sync_upstream_offset, self.last_sync_downstream_offset):
            return None
        return last

    def mark_synced(self, upstream_offset: int, downstream_offset: int) -> None:
        """The caller emitted ``(upstream_offset, downstream_offset)`` as a sync (e.g. ``pending()``)."""
        self.last_sync_upstream_offset = upstream_offset
        self.last_sync_downstream_offset = downstream_offset


class OffsetSyncStore:
    """The offset syncs read so far, by source partition, and the translation of upstream offsets."""

    def __init__(self, max_syncs_per_partition: int = MAX_SYNCS_PER_PARTITION) -> None:
        if max_syncs_per_partition < 1:
            raise ValueError(f"max_syncs_per_partition must be at least 1, got {max_syncs_per_partition}")
        self.max_syncs_per_partition = max_syncs_per_partition
        self._syncs: dict[tuple[str, int], list[OffsetSync]] = {}

    def add(self, sync: OffsetSync) -> bool:
        """Keep ``sync`` (replacing one at the same upstream offset); False if ignored (a negative offset)."""
        if sync.upstream_offset < 0 or sync.downstream_offset < 0:
            return False
        syncs = self._syncs.setdefault((sync.topic, sync.partition), [])
        index = bisect_right(syncs, sync.upstream_offset, key=_upstream)
        if index and syncs[index - 1].upstream_offset == sync.upstream_offset:
            syncs[index - 1] = sync
            return True
        syncs.insert(index, sync)
        if len(syncs) > self.max_syncs_per_partition:
            del syncs[0]
        return True

    def translate(self, topic: str, partition: int, upstream_offset: int) -> int | None:
        """The downstream offset for a group committed at ``upstream_offset``; None if no sync is at or
        before it."""
        syncs = self._syncs.get((topic, partition), [])
        index = bisect_right(syncs, upstream_offset, key=_upstream) - 1
        if index < 0:
            return None
        sync = syncs[index]
        if upstream_offset == sync.upstream_offset:
            return sync.downstream_offset
        if index + 1 < len(syncs):
            step = upstream_offset - sync.upstream_offset
            return min(sync.downstream_offset + step, syncs[index + 1].downstream_offset)
        return sync.downstream_offset + 1

    def latest(self, topic: str, partition: int) -> OffsetSync | None:
        """The sync of greatest upstream offset of the partition, if any."""
        syncs = self._syncs.get((topic, partition))
        return syncs[-1] if syncs else None

    def syncs(self, topic: str, partition: int) -> tuple[OffsetSync, ...]:
        """The partition's syncs kept, by increasing upstream offset."""
        return tuple(self._syncs.get((topic, partition), ()))

    def partitions(self) -> list[tuple[str, int]]:
        """The source partitions with syncs, sorted."""
        return sorted(key for key, syncs in self._syncs.items() if syncs)
