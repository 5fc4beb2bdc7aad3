"""``__transaction_state`` records byte for byte against Kafka 2.8's TransactionLogKey / TransactionLogValue v0,
and the batches they are appended in."""
import struct

import pytest

from brokers.model import TopicPartition
from brokers.protocol.record import iter_records
from brokers.protocol.record_batch import iter_batches
from transactions.coordinator import log_records
from transactions.coordinator.metadata import TxnTransitMetadata
from transactions.coordinator.state import TransactionState as S


def transit(state, partitions=(), start=1700000000000):
    return TxnTransitMetadata(producer_id=4001, last_producer_id=-1, producer_epoch=3, last_producer_epoch=-1,
                              txn_timeout_ms=60000, txn_state=state, topic_partitions=frozenset(partitions),
                              txn_start_timestamp=start, txn_last_update_timestamp=1700000000123)


def test_key_bytes():
    # version 0, then the string "tx-1": int16 length 4 + UTF-8
    assert log_records.encode_key("tx-1") == bytes.fromhex("0000" "0004" "74782d31")


def test_ongoing_value_bytes():
    value = log_records.encode_value(transit(S.ONGOING, [TopicPartition("ab", 1), TopicPartition("ab", 0),
                                                         TopicPartition("c", 2)]))
    expected = bytes.fromhex(
        "0000"                  # version 0
        "0000000000000fa1"      # ProducerId 4001
        "0003"                  # ProducerEpoch 3
        "0000ea60"              # TransactionTimeoutMs 60000
        "01"                    # TransactionStatus Ongoing
        "00000002"              # TransactionPartitions: 2 topics
        "0002" "6162" "00000002" "00000000" "00000001"  # "ab" [0, 1]
        "0001" "63" "00000001" "00000002"               # "c" [2]
        "0000018bcfe5687b"      # TransactionLastUpdateTimestampMs 1700000000123
        "0000018bcfe56800"      # TransactionStartTimestampMs 1700000000000
    )
    assert value == expected


def test_empty_value_has_null_partitions():
    value = log_records.encode_value(transit(S.EMPTY, start=-1))
    assert value[17:21] == struct.pack(">i", -1) and len(value) == 2 + 8 + 2 + 4 + 1 + 4 + 8 + 8
    with pytest.raises(ValueError):
        log_records.encode_value(transit(S.EMPTY, [TopicPartition("t", 0)]))


@pytest.mark.parametrize("state", [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT,
                                   S.COMPLETE_ABORT])
def test_round_trip(state):
    partitions = [] if state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else [TopicPartition("t", 0),
                                                                                     TopicPartition("ü", 9)]
    t = transit(state, partitions)
    txn_id, meta = log_records.decode(log_records.encode_key("tx-é"), log_records.encode_value(t))
    assert txn_id == "tx-é"
    assert (meta.producer_id, meta.producer_epoch, meta.txn_timeout_ms, meta.state, meta.topic_partitions,
            meta.txn_start_timestamp, meta.txn_last_update_timestamp) == (
        4001, 3, 60000, state, set(partitions), t.txn_start_timestamp, 1700000000123)
    assert (meta.last_producer_id, meta.last_producer_epoch, meta.pending_state) == (-1, -1, None)


def test_tombstone_decodes_to_none():
    assert log_records.decode(log_records.encode_key("gone"), None) == ("gone", None)


@pytest.mark.parametrize("key, value", [
    (bytes.fromhex("0001" "0001" "61"), None),  # key version 1
    (bytes.fromhex("0000" "0005" "61"), None),  # truncated string
])
def test_unreadable_keys(key, value):
    with pytest.raises(log_records.TransactionLogFormatError):
        log_records.decode(key, value)


def test_unreadable_values():
    good = log_records.encode_value(transit(S.ONGOING, [TopicPartition("t", 0)]))
    for bad in (b"\x00\x01" + good[2:], good[:-3], good[:16] + b"\x09" + good[17:]):
        with pytest.raises(log_records.TransactionLogFormatError):
            log_records.decode_value("tx", bad)


def test_batch_of_one_record_and_of_tombstones():
    key, value = log_records.encode_key("tx"), log_records.encode_value(transit(S.ONGOING, [TopicPartition("t", 0)]))
    batch = log_records.build_record_batch(key, value, timestamp_ms=42)
    (header,) = list(iter_batches(batch))
    assert (header.base_offset, header.records_count, header.producer_id, header.is_control) == (0, 1, -1, False)
    assert [(r.key, r.value, r.timestamp) for r in iter_records(batch)] == [(key, value, 42)]
    tombstones = log_records.build_records_batch([(log_records.encode_key("a"), None),
                                                  (log_records.encode_key("b"), None)], timestamp_ms=7)
    assert [(log_records.decode_key(r.key), r.value, r.offset) for r in iter_records(tombstones)] == [
        ("a", None, 0), ("b", None, 1)]
