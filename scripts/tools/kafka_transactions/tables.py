"""``kafka-transactions``' tables and decisions (pure).

Tables are Kafka's ``ToolsUtils.prettyPrintTable``: every column as wide as its longest cell (header
included), each cell left-aligned, padded and followed by a tab (the last one too). Headers:

* ``list``: TransactionalId Coordinator ProducerId TransactionState (brokers by id, each broker's
  transactions in its answer's order);
* ``describe``: CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState TransactionTimeoutMs
  CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions (``None`` without a start time; the
  partitions as ``topic-partition`` joined by commas);
* ``describe-producers``: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
  CurrentTransactionStartOffset (``None`` outside a transaction);
* ``find-hanging``: Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp
  Duration(min).

A transaction is hanging (``find-hanging``) when a partition holds it open for longer than the largest
transaction timeout (``--max-transaction-timeout``, measured from the producer's last timestamp) and its
coordinator does not know it: no transactional id lists that producer id, the id is not found, or the id's
current transaction does not include that partition (then no coordinator will ever write its marker).
"""
from __future__ import annotations

from dataclasses import dataclass

TP = tuple[str, int]
NONE = "None"

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)")


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    coordinator_id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int | None
    partitions: tuple[TP, ...]


@dataclass(frozen=True)
class ProducerState:
    """One active producer of a partition, as DescribeProducers answers (-1: unknown / none)."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True)
class OpenTransaction:
    partition: TP
    producer: ProducerState


@dataclass(frozen=True)
class AbortSpec:
    """Kafka's ``AbortTransactionSpec``: the marker the partition's leader is asked to write."""
    partition: TP
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (f"AbortTransactionSpec(topicPartition={tp_name(self.partition)}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})")


def tp_name(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def pretty_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    return ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths)) for row in [headers] + rows]


def list_table(by_broker: dict[int, list[TransactionListing]]) -> list[str]:
    return pretty_table(LIST_HEADERS, [(t.transactional_id, str(broker), str(t.producer_id), t.state)
                                       for broker, listings in sorted(by_broker.items()) for t in listings])


def describe_table(d: TransactionDescription, now_ms: int) -> list[str]:
    start = NONE if d.start_time_ms is None else str(d.start_time_ms)
    duration = NONE if d.start_time_ms is None else str(now_ms - d.start_time_ms)
    return pretty_table(DESCRIBE_HEADERS, [(
        str(d.coordinator_id), d.transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
        str(d.timeout_ms), start, duration, ",".join(tp_name(tp) for tp in d.partitions))])


def producers_table(producers: list[ProducerState]) -> list[str]:
    return pretty_table(PRODUCERS_HEADERS, [(
        str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch), str(p.last_sequence),
        str(p.last_timestamp), NONE if p.current_txn_start_offset < 0 else str(p.current_txn_start_offset))
        for p in producers])


def hanging_table(hanging: list[OpenTransaction], now_ms: int) -> list[str]:
    return pretty_table(HANGING_HEADERS, [(
        t.partition[0], str(t.partition[1]), str(t.producer.producer_id), str(t.producer.producer_epoch),
        str(t.producer.coordinator_epoch), str(t.producer.current_txn_start_offset),
        str(t.producer.last_timestamp), str((now_ms - t.producer.last_timestamp) // 60_000))
        for t in hanging])


def candidate_open_transactions(producers: dict[TP, list[ProducerState]], now_ms: int,
                                max_transaction_timeout_ms: int) -> list[OpenTransaction]:
    """Open transactions older than the largest timeout (by the producer's last write)."""
    return [OpenTransaction(tp, p) for tp, states in producers.items() for p in states
            if p.current_txn_start_offset >= 0 and now_ms - p.last_timestamp > max_transaction_timeout_ms]


def hanging_transactions(candidates: list[OpenTransaction], transactional_ids: dict[int, str],
                         descriptions: dict[str, TransactionDescription | None]) -> list[OpenTransaction]:
    """The candidates no coordinator will complete (``transactional_ids``: producer id -> id as listed;
    ``descriptions``: id -> its description, None when not found)."""
    hanging = []
    for candidate in candidates:
        transactional_id = transactional_ids.get(candidate.producer.producer_id)
        description = None if transactional_id is None else descriptions.get(transactional_id)
        if description is None or candidate.partition not in description.partitions:
            hanging.append(candidate)
    return hanging


def abort_spec_at(tp: TP, producers: list[ProducerState], start_offset: int) -> AbortSpec | None:
    """The open transaction starting at ``start_offset`` (an unknown coordinator epoch as 0, which is not
    above any the partition stored), or None."""
    found = next((p for p in producers if p.current_txn_start_offset == start_offset), None)
    if found is None:
        return None
    return AbortSpec(tp, found.producer_id, found.producer_epoch, max(found.coordinator_epoch, 0))


def abort_spec_given(tp: TP, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> AbortSpec:
    """The older brokers' form: a coordinator epoch of -1 (a new producer id's first transaction) as 0."""
    return AbortSpec(tp, producer_id, producer_epoch, max(coordinator_epoch, 0))
