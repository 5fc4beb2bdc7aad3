"""TransactionStateManager's pure halves: the append errors as the client sees them, and loading records."""
import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from transactions.coordinator import log_records
from transactions.coordinator.metadata import TxnTransitMetadata
from transactions.coordinator.state import TransactionState as S
from transactions.coordinator.state_manager import coordinator_error, load_transactions


@pytest.mark.parametrize("append_error, answered", [
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    (ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR),
])
def test_append_errors_as_the_client_sees_them(append_error, answered):
    assert coordinator_error(append_error) == answered


def record(txn_id, state, epoch=0, partitions=()):
    value = log_records.encode_value(TxnTransitMetadata(7, -1, epoch, -1, 1000, state, frozenset(partitions), 1, 2))
    return log_records.encode_key(txn_id), value


def test_last_record_wins_tombstones_remove_and_an_unreadable_record_stops_the_load():
    records = [record("a", S.EMPTY), record("b", S.EMPTY), record("a", S.ONGOING, 0, [TopicPartition("t", 0)]),
               (log_records.encode_key("b"), None), record("c", S.EMPTY),
               (b"\x00\x09garbage", b""), record("d", S.EMPTY)]
    loaded = load_transactions(records)
    assert sorted(loaded) == ["a", "c"]
    assert (loaded["a"].state, loaded["a"].topic_partitions) == (S.ONGOING, {TopicPartition("t", 0)})
