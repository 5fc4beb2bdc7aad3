"""ProducerStateManager: what each idempotent producer last wrote to one partition (Kafka's
ProducerStateManager), so that a retried batch is answered with its original offsets instead of
being written twice, and a batch out of sequence or from a fenced epoch is refused.

Per producer id it keeps the producer epoch and the metadata of the producer's last
``NUM_BATCHES_TO_RETAIN`` (5) batches: first and last sequence, first and last offset, max
timestamp. A producer has at most 5 requests in flight, so a retry is always one of those.

Invariants:
- the state is a function of the log's batches below the log end: it never holds a batch past the
  log end. After a truncation that removed a producer's batch the state is rebuilt from a snapshot
  and the batch headers after it, never patched. Retention and compaction removing older batches
  leave it alone (Kafka keeps producers until ``producer.id.expiration.ms``);
- a producer's retained batches all carry its current epoch, oldest first, and the last one is the
  producer's latest batch in the log;
- only batches with ``producer_id >= 0`` touch it; other batches cost one comparison;
- checking is pure: ``check_append`` reads the state and raises or reports a duplicate; ``update``
  applies batches after their bytes are in the log (leader) or unchecked (follower, loading).

Leader checks (Kafka 2.8's ``Log.analyzeAndValidateProducerState``): duplicates, then the epoch and
sequence rules of producer_append_checks.py; for a known producer, later batches of one append are
checked against the earlier ones. Not thread-safe: the owning ``Log`` calls it under its lock.

Transactions (KIP-98): a producer's first transactional batch on the partition opens its transaction
(``current_txn_first_offset``, its first offset); its marker (a control batch, see
``protocol.control_record``) completes it, records the coordinator epoch and yields a ``CompletedTxn``.
A completed transaction keeps the partition unstable until its marker is below the high watermark
(KAFKA-5121): ``first_unstable_offset`` is the smallest first offset over the open transactions and
the completed ones not yet replicated. Leader checks: a non-transactional batch from a producer with
an open transaction is INVALID_TXN_STATE; a marker from an older producer epoch is
INVALID_PRODUCER_EPOCH, from an older coordinator epoch TRANSACTION_COORDINATOR_FENCED.

KIP-890 (as Kafka 3.6): before a leader asks the transaction coordinator whether the partition is in
a producer's transaction, ``start_verification`` registers a fresh ``VerificationGuard`` for the
producer (the sentinel when its transaction is already open here); any marker of that producer, and
the batch that opens its transaction, drop the registered guard. A transactional batch that would
open a transaction is INVALID_TXN_STATE unless it carries the registered guard: a marker landing while
the coordinator was being asked (the producer's EndTxn, a fencing abort) makes the answer stale.
A guard left unused (the coordinator refused) expires with ``producer.id.expiration.ms``.

Snapshots (producer_snapshot.py, Kafka's format version 1): Kafka writes one entry per producer (its
last batch); this writes one per retained batch, oldest first, so Kafka's reader (last entry wins)
still reads it. Taken on roll and on close; loading deletes those past the log end and falls back
past a corrupt one, then scans the batch headers after the snapshot's offset.
"""
from __future__ import annotations

import logging
from bisect import bisect_right
from collections import deque
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

from brokers.protocol.control_record import EndTxnMarker, parse_marker
from brokers.protocol.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from brokers.protocol.record_batch import CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader
from brokers.storage.producer_append_checks import (
    SENTINEL_VERIFICATION_GUARD,
    VerificationGuard,
    check_sequence,
    decrement_sequence,
    in_sequence,
    increment_sequence,
    verification_missing,
)
from brokers.storage.producer_snapshot import ProducerSnapshotFiles, SnapshotEntry
from brokers.storage.segment import LogSegment

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_COORDINATOR_EPOCH = -1
NO_SEQUENCE = -1

MarkerReader = Callable[[BatchHeader], EndTxnMarker]


def segment_marker(segment: LogSegment, header: BatchHeader) -> EndTxnMarker:
    """The marker of the control batch ``header`` in ``segment`` (read from the file)."""
    data = segment.read_bytes(header.position, header.size)
    return parse_marker(data, header._replace(position=0))


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class CompletedTxn(NamedTuple):
    """A transaction its marker ended: first offset, the marker's offset, and the partition's LSO right
    after the marker (the first offset of another open transaction, else the marker's offset + 1)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int


class ProducerStateEntry:
    __slots__ = ("batches", "coordinator_epoch", "current_txn_first_offset", "epoch", "last_offset", "producer_id")

    def __init__(self, producer_id: int, epoch: int):
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        # of the latest batch (data or control) that touched this entry; at least N - 1 when loaded from
        # the snapshot at N, which records no marker offsets: a truncation below it rebuilds the state
        self.last_offset = -1
        self.current_txn_first_offset: int | None = None  # first offset of the open transaction
        self.coordinator_epoch = NO_COORDINATOR_EPOCH  # of the latest marker

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def add(self, epoch: int, batch: BatchMetadata | None, last_offset: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        if batch is not None:
            self.batches.append(batch)
        self.last_offset = last_offset

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(id={self.producer_id}, epoch={self.epoch}, batches={list(self.batches)}, "
                f"txn_first_offset={self.current_txn_first_offset}, coordinator_epoch={self.coordinator_epoch})")


class ProducerStateManager:
    def __init__(self, directory: Path | None = None):
        self.directory = Path(directory) if directory is not None else None
        self._snapshots = ProducerSnapshotFiles(self.directory)
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: list[CompletedTxn] = []  # completed, marker not yet below the HW; by marker offset
        self._verifications: dict[int, VerificationGuard] = {}  # producer id -> guard of a pending KIP-890 check

    # -- reading -------------------------------------------------------------------------------
    @property
    def producers(self) -> dict[int, ProducerStateEntry]:
        return dict(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its open transaction."""
        return dict(self._ongoing)

    def first_unstable_offset(self) -> int | None:
        """The first offset of an open transaction or of a completed one whose marker is not yet below
        the high watermark (KAFKA-5121), whichever is smaller; None when there is none."""
        if not self._ongoing and not self._unreplicated:
            return None
        firsts = list(self._ongoing.values()) + [txn.first_offset for txn in self._unreplicated]
        return min(firsts)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is now below the HW stop holding the LSO back."""
        if self._unreplicated and self._unreplicated[0].last_offset < high_watermark:
            self._unreplicated = [txn for txn in self._unreplicated if txn.last_offset >= high_watermark]

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Kafka's ``appendEndTxnMarker`` checks before a leader writes a marker (raises; changes nothing)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {producer_epoch}, older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}")

    def start_verification(self, producer_id: int, now_ms: int) -> VerificationGuard:
        """KIP-890: the guard a leader append must carry after asking the coordinator (see above)."""
        entry = self._producers.get(producer_id)
        if entry is not None and entry.current_txn_first_offset is not None:
            return SENTINEL_VERIFICATION_GUARD
        guard = self._verifications.get(producer_id)
        if guard is None:
            guard = self._verifications[producer_id] = VerificationGuard(producer_id, now_ms)
        return guard

    # -- appending -----------------------------------------------------------------------------
    def check_append(self, headers: Iterable[BatchHeader],
                     verification_guard: VerificationGuard | None = None) -> BatchMetadata | None:
        """Check a leader append before anything is written: the retained batch a duplicate repeats
        (nothing may be written then), or None when every batch may go in. Raises
        OutOfOrderSequenceError / InvalidProducerEpochError / InvalidRecordError / InvalidTxnStateError;
        changes nothing. ``verification_guard``: KIP-890's, None when verification is off."""
        pending: dict[int, tuple[int, int]] = {}  # (epoch, last sequence) after earlier batches of this set
        opened: set[int] = set()  # producers an earlier batch of this set puts in a transaction
        for header in headers:
            producer_id = header.producer_id
            if producer_id < 0:
                continue
            first_seq, epoch = header.base_sequence, header.producer_epoch
            if first_seq < 0:
                raise InvalidRecordError(f"producer {producer_id} sent a batch without a sequence number")
            last_seq = increment_sequence(first_seq, header.last_offset_delta)
            entry = self._producers.get(producer_id)
            current = pending.get(producer_id)
            if entry is not None:
                if current is None:
                    current = (entry.epoch, entry.last_seq)
                # the next batch in sequence is never a retry (5 batches cannot span 2**31 sequences)
                if not (epoch == current[0] and in_sequence(current[1], first_seq)):
                    duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
                    if duplicate is not None:
                        return duplicate
                    check_sequence(producer_id, current, epoch, first_seq)
                if entry.current_txn_first_offset is not None and not header.attributes & TRANSACTIONAL_BIT:
                    raise InvalidTxnStateError(
                        f"producer {producer_id} sent a non-transactional batch inside its open transaction")
            if header.attributes & TRANSACTIONAL_BIT:
                txn_open = producer_id in opened or (entry is not None and entry.current_txn_first_offset is not None)
                if verification_missing(txn_open, verification_guard, self._verifications.get(producer_id)):
                    raise InvalidTxnStateError(
                        f"producer {producer_id}'s transactional batch is not part of a verified open transaction")
                opened.add(producer_id)
            pending[producer_id] = (epoch, last_seq)
        return None

    def update(self, headers: Iterable[BatchHeader], markers: MarkerReader | None = None) -> list[CompletedTxn]:
        """Apply batches that are now in the log (their headers carry the final offsets); unchecked.
        ``markers`` reads a control batch's marker; the transactions the markers completed are returned."""
        completed = []
        for header in headers:
            if header.producer_id >= 0:
                marker = markers(header) if markers is not None and header.attributes & CONTROL_BIT else None
                txn = self._apply(header, marker)
                if txn is not None:
                    completed.append(txn)
        return completed

    def _apply(self, header: BatchHeader, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        producer_id, epoch = header.producer_id, header.producer_epoch
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id, epoch)
        elif epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        first, delta = header.base_offset, header.last_offset_delta
        entry.last_offset = first + delta
        if header.attributes & CONTROL_BIT:
            self._verifications.pop(producer_id, None)
            return None if marker is None else self._complete(entry, first + delta, marker)
        first_seq = header.base_sequence
        entry.batches.append(BatchMetadata(first_seq, increment_sequence(first_seq, delta), first, first + delta,
                                           header.max_timestamp))
        if header.attributes & TRANSACTIONAL_BIT and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first
            self._ongoing[producer_id] = first
            self._verifications.pop(producer_id, None)
        return None

    def _complete(self, entry: ProducerStateEntry, offset: int, marker: EndTxnMarker) -> CompletedTxn:
        """A marker at ``offset`` ends the producer's transaction (an empty one starts at the marker)."""
        producer_id = entry.producer_id
        first = entry.current_txn_first_offset
        first = offset if first is None else first
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = marker.coordinator_epoch
        self._ongoing.pop(producer_id, None)
        stable = min(self._ongoing.values(), default=offset + 1)
        txn = CompletedTxn(producer_id, first, offset, not marker.commit, stable)
        self._unreplicated.append(txn)
        return txn

    # -- rebuilding ----------------------------------------------------------------------------
    def load(self, segments: Sequence[LogSegment], log_end: int, rebuild_from: int | None = None,
             on_completed: Callable[[LogSegment, CompletedTxn], None] | None = None) -> None:
        """Rebuild from the newest usable snapshot at or below ``log_end`` (and ``rebuild_from``, the
        first offset whose derived state must be rebuilt) plus the headers after it. ``on_completed``
        sees every transaction a scanned marker completes, with the segment holding the marker."""
        self._producers.clear()
        self._ongoing.clear()
        self._verifications.clear()
        self._unreplicated.clear()
        self._snapshots.delete(lambda offset: offset > log_end)
        start = self._load_latest_snapshot(log_end if rebuild_from is None else min(log_end, rebuild_from))
        bases = [segment.base_offset for segment in segments]
        first = max(0, bisect_right(bases, start) - 1)
        for segment in segments[first:]:
            position = segment.offset_index.lookup(start)[1] if segment.base_offset <= start else 0
            for header in segment.iter_headers(position):
                if header.producer_id >= 0 and header.last_offset >= start:
                    marker = segment_marker(segment, header) if header.attributes & CONTROL_BIT else None
                    txn = self._apply(header, marker)
                    if txn is not None and on_completed is not None:
                        on_completed(segment, txn)

    def truncate(self, segments: Sequence[LogSegment], log_end: int) -> None:
        """The log now ends at ``log_end``: rebuild unless no producer lost a batch (data or marker);
        a log without producers costs nothing."""
        self._snapshots.delete(lambda offset: offset > log_end)
        if any(entry.last_offset >= log_end for entry in self._producers.values()):
            self.load(segments, log_end)
        self._unreplicated = [txn for txn in self._unreplicated if txn.last_offset < log_end]

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers whose latest batch's timestamp is ``expiration_ms`` old (Kafka's
        ``producer.id.expiration.ms``, default one day), and verification guards as old; return how many
        producers went. Not scheduled yet."""
        doomed = [pid for pid, entry in self._producers.items()
                  if now_ms - (entry.batches[-1].timestamp if entry.batches else -1) >= expiration_ms
                  and entry.current_txn_first_offset is None]
        for pid in doomed:
            del self._producers[pid]
        for pid in [pid for pid, guard in self._verifications.items() if now_ms - guard.created_ms >= expiration_ms]:
            del self._verifications[pid]
        return len(doomed)

    def truncate_fully(self) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self._verifications.clear()
        self._unreplicated.clear()
        self._snapshots.delete(lambda offset: True)

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot_offsets(self) -> list[int]:
        return [offset for offset, _ in self._snapshots.files()]

    def take_snapshot(self, offset: int, *, durable: bool = False) -> None:
        """Write ``<offset>.snapshot`` (the state covers every batch below ``offset``)."""
        self._snapshots.write(offset, snapshot_entries(self._producers.values()), durable)

    def _load_latest_snapshot(self, at_most: int) -> int:
        """Load the newest readable snapshot at or below ``at_most``; return its offset, or 0."""
        def corrupt(path: Path, exc: Exception) -> None:
            log.warning("ignoring producer snapshot %s: %s", path, exc)

        offset, rows = self._snapshots.read_latest(at_most, corrupt)
        for row in rows:
            producer_id, epoch, batch = row.producer_id, row.epoch, snapshot_batch(row)
            entry = self._producers.get(producer_id)
            if entry is None:
                entry = self._producers[producer_id] = ProducerStateEntry(producer_id, epoch)
            entry.add(epoch, batch, batch.last_offset if batch else entry.last_offset)
            entry.coordinator_epoch = row.coordinator_epoch
            txn_first_offset = row.current_txn_first_offset
            entry.current_txn_first_offset = None if txn_first_offset < 0 else txn_first_offset
            if txn_first_offset >= 0:
                self._ongoing[producer_id] = txn_first_offset
            else:
                self._ongoing.pop(producer_id, None)
        for entry in self._producers.values():  # a marker below the snapshot may have touched it last
            entry.last_offset = max(entry.last_offset, offset - 1)
        return offset

    def __repr__(self) -> str:
        return f"ProducerStateManager({len(self._producers)} producers)"


def snapshot_entries(entries: Iterable[ProducerStateEntry]) -> list[SnapshotEntry]:
    """One snapshot entry per retained batch, oldest first (one with offset -1 if none)."""
    rows = []
    for entry in entries:
        txn_first = -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
        for b in entry.batches or [None]:
            if b is None:
                rows.append(SnapshotEntry(entry.producer_id, entry.epoch, NO_SEQUENCE, -1, 0, -1,
                                          entry.coordinator_epoch, txn_first))
            else:
                rows.append(SnapshotEntry(entry.producer_id, entry.epoch, b.last_seq, b.last_offset,
                                          b.last_offset - b.first_offset, b.timestamp, entry.coordinator_epoch,
                                          txn_first))
    return rows


def snapshot_batch(row: SnapshotEntry) -> BatchMetadata | None:
    """The retained batch a snapshot entry records, None for an entry without one."""
    if row.last_offset < 0:
        return None
    first_seq = decrement_sequence(row.last_seq, row.offset_delta)
    return BatchMetadata(first_seq, row.last_seq, row.last_offset - row.offset_delta, row.last_offset, row.timestamp)
