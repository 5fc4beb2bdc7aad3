"""What the log cleaner knows of transactions while it walks a log (Kafka 2.8's CleanedTransactionMetadata and
the cleaner's batch retention).

The walk sees batches in offset order. Aborted transactions are known in advance from the segments'
``.txnindex`` entries (``AbortedTxn``: producer id, first offset, ABORT marker's offset); an entry becomes
*ongoing* once the walk reaches its first offset. Then, per batch:

* a transactional data batch of a producer with an ongoing aborted transaction is aborted: its records go. The
  last such batch is remembered. A transactional batch of any other producer is part of a transaction that
  committed (or is still open, past the first unstable offset): the producer has an ongoing committed
  transaction, and its records are compacted like any other;
* an ABORT marker closes the producer's aborted transaction. It may go only if the walk saw no batch of that
  transaction (they were removed by an earlier pass); if it saw one, the marker stays and its ``AbortedTxn`` is
  reported to ``cleaned_index`` (the cleaned segment's ``.txnindex``), since that batch may still be in the
  log (see ``batch_retention``);
* a COMMIT marker may go only if the walk saw no batch of its transaction;
* a marker that may go still stays while its segment is newer than the delete horizon
  (``delete.retention.ms``, the tombstones' rule), so that a consumer reading behind sees the transaction
  end. Hence Kafka's two passes: the first removes an aborted transaction's data (or compacts a committed
  one's away), a later one, past the horizon, its marker;
* a control batch with no record (already emptied) may always go; other control types always stay.

``batch_retention`` is Kafka's ``checkBatchRetention``: the batch holding an active producer's last sequence
(or, when the producer has no data batch left, its last marker, which carries its epoch for fencing) stays,
emptied if its records go, so that the producer state can be rebuilt from the log.
"""
from __future__ import annotations

import heapq
from enum import Enum
from typing import Iterable, Mapping, NamedTuple, Protocol

from brokers.protocol.control_record import ABORT, COMMIT, parse_control_type
from brokers.protocol.record_batch import BatchHeader
from brokers.storage.producer_state import ProducerStateEntry
from brokers.storage.transaction_index import AbortedTxn


class BatchRetention(Enum):
    DELETE = "delete"  # the batch goes, records and header
    DELETE_EMPTY = "delete_empty"  # records filtered one by one; the batch goes if none is left
    RETAIN_EMPTY = "retain_empty"  # records filtered (all of them when discarded); the header stays


class LastRecord(NamedTuple):
    """An active producer's latest batch in the log (Kafka's ``LastRecord``)."""

    last_data_offset: int | None  # last offset of its latest data batch, None if it has none
    producer_epoch: int


def last_records_of_active_producers(producers: Mapping[int, ProducerStateEntry]) -> dict[int, LastRecord]:
    return {pid: LastRecord(entry.batches[-1].last_offset if entry.batches else None, entry.epoch)
            for pid, entry in producers.items()}


def batch_retention(header: BatchHeader, discard_records: bool, last_records: Mapping[int, LastRecord]) -> BatchRetention:
    last = last_records.get(header.producer_id) if header.producer_id >= 0 else None
    if last is not None:
        if last.last_data_offset is not None:
            holds_last = header.last_offset == last.last_data_offset
        else:
            holds_last = header.is_control and header.producer_epoch == last.producer_epoch
        if holds_last:
            return BatchRetention.RETAIN_EMPTY
    return BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY


class TxnIndexSink(Protocol):
    def append(self, entry: AbortedTxn) -> None: ...


class _AbortedInProgress:
    __slots__ = ("txn", "last_observed_batch_offset")

    def __init__(self, txn: AbortedTxn):
        self.txn = txn
        self.last_observed_batch_offset: int | None = None



class CleanedTransactionMetadata:
    """The transactions open at the cleaner's current position; see the module docstring."""

    def __init__(self, aborted: Iterable[AbortedTxn] = ()):
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._known: set[tuple[int, int]] = set()  # (producer id, marker offset) of every aborted txn added
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedInProgress] = {}
        self.cleaned_index: TxnIndexSink | None = None
        self.add_aborted_transactions(aborted)

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        """Add ``.txnindex`` entries; an entry already added (segments' ranges overlap) is ignored."""
        for txn in aborted:
            key = (txn.producer_id, txn.last_offset)
            if key not in self._known:
                self._known.add(key)
                heapq.heappush(self._aborted, (txn.first_offset, txn.last_offset, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedInProgress(txn))

    def on_control_batch(self, header: BatchHeader, control_key: bytes | None) -> bool:
        """The walk reached a control batch (``control_key``: its first record's key, None when it has no
        record); whether it may be removed, the delete horizon aside."""
        self._consume_aborted_up_to(header.last_offset)
        if control_key is None:
            return True
        kind = parse_control_type(control_key)
        producer_id = header.producer_id
        if kind == ABORT:
            in_progress = self._ongoing_aborted.pop(producer_id, None)
            if in_progress is not None and in_progress.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(in_progress.txn)
                return False
            return True
        if kind == COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_data_batch(self, header: BatchHeader) -> bool:
        """The walk reached a data batch; True if it belongs to an aborted transaction (its records may go)."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        in_progress = self._ongoing_aborted.get(header.producer_id)
        if in_progress is not None:
            in_progress.last_observed_batch_offset = header.last_offset
            return True
        self._ongoing_committed.add(header.producer_id)
        return False
