"""A Log's transactional bookkeeping (KIP-98): markers, the last stable offset and the ``.txnindex``.

- ``last_stable_offset``: the LSO is the first unstable offset (producer_state.py: an open transaction,
  or a completed one whose marker is not yet below the high watermark, KAFKA-5121) when there is one,
  capped by the high watermark; else the high watermark. READ_COMMITTED consumers read below it.
- ``record_completed``: an aborted transaction's entry goes to the ``.txnindex`` of the segment holding
  its marker (``TransactionIndex``: the marker offsets increase, so a rebuilt entry already there is
  skipped, which makes rebuilding after a crash idempotent).
- ``collect_aborted``: the entries overlapping a READ_COMMITTED read, from the segment holding the start
  offset on, until an entry's marker reaches the upper bound (Kafka's ``collectAbortedTransactions``);
  ``fetch_upper_bound`` is that bound for a read: the offset after its bytes.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from brokers.protocol.control_record import parse_marker
from brokers.protocol.record_batch import BatchHeader
from brokers.storage.producer_state import CompletedTxn, MarkerReader
from brokers.storage.segment import FileRange, LogSegment
from brokers.storage.transaction_index import AbortedTxn


def last_stable_offset(first_unstable_offset: int | None, high_watermark: int) -> int:
    if first_unstable_offset is None:
        return high_watermark
    return min(first_unstable_offset, high_watermark)


def buffer_markers(buf) -> MarkerReader:
    """Reads the markers of control batches in ``buf`` (header positions relative to ``buf``)."""
    def read(header: BatchHeader):
        return parse_marker(buf, header)
    return read


def record_completed(segment: LogSegment, txn: CompletedTxn) -> None:
    """Index an aborted transaction in the segment holding its marker (once)."""
    if not txn.is_aborted:
        return
    index = segment.txn_index
    last = index.last_offset
    if last is None or txn.last_offset > last:
        index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset))


def collect_aborted(segments: Sequence[LogSegment], bases: Sequence[int], start_offset: int,
                    upper_bound_offset: int) -> list[AbortedTxn]:
    """Aborted transactions with a marker at or after ``start_offset`` that began before
    ``upper_bound_offset``."""
    found: list[AbortedTxn] = []
    first = max(0, bisect_right(bases, start_offset) - 1)
    for segment in segments[first:]:
        index = segment.txn_index
        found.extend(index.collect(start_offset, upper_bound_offset))
        last = index.last_offset
        if last is not None and last >= upper_bound_offset:
            break
    return found


def fetch_upper_bound(records: FileRange, limit: int) -> int:
    """The offset after a read's bytes (the first batch starting at or after their end), at most
    ``limit``: a READ_COMMITTED answer names only the aborted transactions starting below it."""
    end = records.position + records.size
    segment = records.segment
    for header in segment.iter_headers(records.position):
        if header.position >= end:
            return min(header.base_offset, limit)
    return min(segment.next_offset, limit)
