"""What the transaction coordinator shows (pure reads of ``TransactionStateManager``): ``describe`` for /metrics
and the dashboard, ListTransactions and DescribeTransactions (KIP-664, as Kafka 3.0's coordinator answers them),
and KIP-890's verification of a partition against a producer's transaction."""
from __future__ import annotations

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from transactions.coordinator.metadata import TransactionMetadata
from transactions.coordinator.state import TransactionState
from transactions.coordinator.state_manager import EpochAndMetadata, TransactionStateManager

S = TransactionState
IDLE = (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.DEAD)


def verification(lookup: tuple[ErrorCode, EpochAndMetadata | None], producer_id: int, producer_epoch: int,
                 tp: TopicPartition) -> ErrorCode:
    """KIP-890 part 1: NONE when ``tp`` is in the producer's Ongoing transaction at that epoch; else the
    lookup's error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), INVALID_PRODUCER_ID_MAPPING (unknown id or
    another producer), PRODUCER_FENCED (another epoch), CONCURRENT_TRANSACTIONS (the transaction is ending),
    INVALID_TXN_STATE (the partition is not in the transaction)."""
    error, found = lookup
    if error != ErrorCode.NONE:
        return error
    if found is None or found.metadata.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    metadata = found.metadata
    if metadata.producer_epoch != producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or metadata.pending_state in (
            S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    ongoing = metadata.state == S.ONGOING
    return ErrorCode.NONE if ongoing and tp in metadata.topic_partitions else ErrorCode.INVALID_TXN_STATE


def _transaction(metadata: TransactionMetadata) -> dict:
    return {
        "transactional_id": metadata.transactional_id, "producer_id": metadata.producer_id,
        "producer_epoch": metadata.producer_epoch, "state": metadata.state.kafka_name,
        "pending_state": None if metadata.pending_state is None else metadata.pending_state.kafka_name,
        "timeout_ms": metadata.txn_timeout_ms, "start_ms": metadata.txn_start_timestamp,
        "last_update_ms": metadata.txn_last_update_timestamp,
        "partitions": sorted(str(tp) for tp in metadata.topic_partitions),
    }


def describe(state: TransactionStateManager, counters: dict[str, int], broker_id: int) -> dict:
    """Per partition led here: its coordinator epoch, how many ids it holds and its transactions in progress
    (not idle, or with a transition pending); the partitions loading; the coordinator's counters."""
    partitions = {}
    for partition, entry in sorted(state.cache.items()):
        ongoing = [_transaction(m) for _, m in sorted(entry.transactions.items())
                   if m.state not in IDLE or m.pending_state is not None]
        partitions[partition] = {"coordinator_epoch": entry.coordinator_epoch,
                                 "transactional_ids": len(entry.transactions), "ongoing": ongoing}
    return {"broker_id": broker_id, "partitions": partitions, "loading": sorted(state.loading),
            "counters": dict(counters)}


def list_transactions(state: TransactionStateManager, state_filters: list[str], producer_id_filters: list[int]
                      ) -> tuple[ErrorCode, list[str], list[tuple[str, int, str]]]:
    """(error, unknown state names, [(transactional id, producer id, state name)]): every id but Dead ones,
    narrowed by the filters (empty = no filter); COORDINATOR_LOAD_IN_PROGRESS while a partition loads."""
    if state.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
    unknown = [name for name in state_filters if S.from_name(name) is None]
    wanted_states = {S.from_name(name) for name in state_filters} - {None}
    wanted_ids = set(producer_id_filters)
    listed = [(txn_id, m.producer_id, m.state.kafka_name)
              for entry in state.cache.values() for txn_id, m in sorted(entry.transactions.items())
              if m.state != S.DEAD and (not wanted_ids or m.producer_id in wanted_ids)
              and (not state_filters or m.state in wanted_states)]
    return ErrorCode.NONE, unknown, listed


def error_answer(transactional_id: str, error: ErrorCode) -> dict:
    """A DescribeTransactions entry with only an error: the schema's defaults (zeros) elsewhere, as Kafka."""
    return {"transactional_id": transactional_id, "error_code": error, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": 0, "producer_id": 0, "producer_epoch": 0,
            "topics": {}}


def describe_transaction(state: TransactionStateManager, transactional_id: str) -> dict:
    """One DescribeTransactions entry: the error code and, when NONE, the transaction's fields."""
    answer = error_answer(transactional_id, ErrorCode.NONE)
    if not transactional_id:
        return {**answer, "error_code": ErrorCode.INVALID_REQUEST}
    error, found = state.get_transaction_state(transactional_id)
    if error != ErrorCode.NONE:
        return {**answer, "error_code": error}
    if found is None or found.metadata.state == S.DEAD:
        return {**answer, "error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND}
    m = found.metadata
    topics: dict[str, list[int]] = {}
    for tp in sorted(m.topic_partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return {**answer, "transaction_state": m.state.kafka_name, "transaction_timeout_ms": m.txn_timeout_ms,
            "transaction_start_time_ms": m.txn_start_timestamp, "producer_id": m.producer_id,
            "producer_epoch": m.producer_epoch, "topics": topics}
