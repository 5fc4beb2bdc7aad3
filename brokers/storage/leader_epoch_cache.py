"""LeaderEpochCache: which leader epoch wrote from which offset (KIP-101), kept in
``leader-epoch-checkpoint`` and rewritten on every change.

A new epoch (``assign``: every partition a LeaderAndIsr makes leader, and the first batch of an epoch on a
follower) rewrites the file without fsync, as Kafka does since KAFKA-15046: at 2,000 partitions the two fsyncs
per partition were most of a broker's event-loop time during topic creation and failover. ``flush`` makes it
durable; the Log flushes it before its recovery point moves, so every entry below the recovery point is
durable, and recovery re-assigns the epochs of the batches past it (``Log._rebuild_epochs``). Truncations
stay durable at once.

Invariants: entries are strictly increasing in both epoch and start offset. ``assign`` of an epoch
not above the latest is ignored; truncation from the end (follower truncation) removes entries whose
start offset is at or past the truncation point; truncation from the start (retention) moves the
first entry's start offset up.
"""
from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from pathlib import Path

from brokers.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, partition_dir: Path):
        self._checkpoint = LeaderEpochCheckpointFile(Path(partition_dir) / LEADER_EPOCH_CHECKPOINT)
        self._lock = threading.Lock()
        self._entries = [EpochEntry(e, o) for e, o in self._checkpoint.read()]
        self._dirty = False  # the file holds entries not yet fsynced

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts writing at ``start_offset``; True if the cache changed."""
        entries = self._entries
        if start_offset < 0:
            raise ValueError(f"leader epoch {epoch} cannot start at negative offset {start_offset}")
        if epoch < 0 or (entries and epoch <= entries[-1].epoch):
            return False  # the common case on every append: no lock, no write
        with self._lock:
            if self._entries and epoch <= self._entries[-1].epoch:
                return False
            # A new epoch starting at or below an older entry's start supersedes it.
            while self._entries and self._entries[-1].start_offset >= start_offset:
                self._entries.pop()
            self._entries.append(EpochEntry(epoch, start_offset))
            self._flush(durable=False)
            return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch, as Kafka's LeaderEpochFileCache.endOffsetFor answers it:

        - the latest epoch ends at the log end offset;
        - an older epoch ends where the next higher epoch starts, reported under the largest known
          epoch <= requested (or the requested epoch itself when it is below every entry);
        - an undefined epoch, an empty cache or an epoch above the latest is (-1, -1).
        """
        with self._lock:
            entries = self._entries
            if requested_epoch == UNDEFINED_EPOCH or not entries:
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            if requested_epoch == entries[-1].epoch:
                return requested_epoch, log_end_offset
            epochs = [e.epoch for e in entries]
            higher = bisect.bisect_right(epochs, requested_epoch)
            if higher == len(entries):
                return UNDEFINED_EPOCH, UNDEFINED_OFFSET
            floor_epoch = entries[higher - 1].epoch if higher else requested_epoch
            return floor_epoch, entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int:
        with self._lock:
            starts = [e.start_offset for e in self._entries]
            index = bisect.bisect_right(starts, offset)
            return self._entries[index - 1].epoch if index else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries that start at or after ``end_offset`` (the log was truncated there)."""
        with self._lock:
            kept = [e for e in self._entries if e.start_offset < end_offset]
            if len(kept) != len(self._entries):
                self._entries = kept
                self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop older entries, clamp the first one up to it."""
        with self._lock:
            starts = [e.start_offset for e in self._entries]
            index = bisect.bisect_right(starts, start_offset)
            if index == 0:
                return
            first = self._entries[index - 1]
            kept = [EpochEntry(first.epoch, max(first.start_offset, start_offset))] + self._entries[index:]
            if kept != self._entries:
                self._entries = kept
                self._flush()

    def clear_and_flush(self) -> None:
        with self._lock:
            self._entries = []
            self._flush()

    def flush(self, durable: bool = True) -> None:
        """Make the file durable if an ``assign`` left it unsynced. The file already holds every entry, so
        ``durable=False`` (the caller syncs the whole filesystem afterwards) writes nothing."""
        with self._lock:
            if self._dirty:
                if durable:
                    self._flush(durable)
                self._dirty = False

    def _flush(self, durable: bool = True) -> None:
        self._checkpoint.write(((e.epoch, e.start_offset) for e in self._entries), durable)
        self._dirty = not durable
