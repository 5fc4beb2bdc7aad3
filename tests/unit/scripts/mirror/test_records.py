"""MirrorMaker 2's record formats (scripts/tools/kafka_mirror_maker/records.py): golden bytes written out by
hand from Kafka 2.8's schemas (OffsetSync, Checkpoint, Heartbeat), round trips, and the errors on bytes that
are not such records or values their schema cannot hold."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scripts.tools.kafka_mirror_maker.records import (Checkpoint, Heartbeat, OffsetSync, RecordFormatError,
                                                      format_checkpoint, format_heartbeat, format_offset_sync)

ZERO64 = b"\x00" * 8
MINUS_ONE64 = b"\xff" * 8
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


def i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


# -- golden bytes ---------------------------------------------------------------------------------------

def test_offset_sync_golden_bytes():
    sync = OffsetSync("t", 0, 5, 7)
    assert sync.key() == b"\x00\x01t\x00\x00\x00\x00"
    assert sync.value() == b"\x00\x00\x00\x00\x00\x00\x00\x05" + b"\x00\x00\x00\x00\x00\x00\x00\x07"
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


def test_offset_sync_golden_bytes_large_values():
    sync = OffsetSync("orders", 258, 0x0102030405060708, INT64_MAX)
    assert sync.key() == b"\x00\x06orders\x00\x00\x01\x02"
    assert sync.value() == b"\x01\x02\x03\x04\x05\x06\x07\x08" + b"\x7f\xff\xff\xff\xff\xff\xff\xff"


def test_offset_sync_value_has_no_version_header():
    assert len(OffsetSync("t", 0, 0, 0).value()) == 16
    assert OffsetSync("t", 0, -1, -1).value() == MINUS_ONE64 + MINUS_ONE64


def test_checkpoint_golden_bytes():
    checkpoint = Checkpoint("g", "t", 1, 10, 20, "m")
    assert checkpoint.key() == b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x01"
    assert checkpoint.value() == (b"\x00\x00" + b"\x00\x00\x00\x00\x00\x00\x00\x0a"
                                  + b"\x00\x00\x00\x00\x00\x00\x00\x14" + b"\x00\x01m")
    assert Checkpoint.decode(checkpoint.key(), checkpoint.value()) == checkpoint


def test_checkpoint_empty_metadata_is_a_zero_length_string():
    checkpoint = Checkpoint("group-1", "topic", 0, 0, 0, "")
    assert checkpoint.value() == b"\x00\x00" + ZERO64 + ZERO64 + b"\x00\x00"
    assert Checkpoint("group-1", "topic", 0, 0, 0) == checkpoint  # metadata defaults to ""


def test_heartbeat_golden_bytes():
    heartbeat = Heartbeat("a", "bb", 1234)
    assert heartbeat.key() == b"\x00\x01a" + b"\x00\x02bb"
    assert heartbeat.value() == b"\x00\x00" + b"\x00\x00\x00\x00\x00\x00\x04\xd2"
    assert Heartbeat.decode(heartbeat.key(), heartbeat.value()) == heartbeat


def test_realistic_heartbeat():
    heartbeat = Heartbeat("us-west", "us-east", 1_700_000_000_123)
    assert heartbeat.key() == b"\x00\x07us-west\x00\x07us-east"
    assert heartbeat.value() == b"\x00\x00" + (1_700_000_000_123).to_bytes(8, "big")


def test_non_ascii_strings_count_utf8_bytes():
    sync = OffsetSync("tópico", 3, 1, 2)
    assert sync.key() == b"\x00\x07t\xc3\xb3pico\x00\x00\x00\x03"
    duck = Checkpoint("🦆", "é", 0, 1, 2, "données")
    assert duck.key() == b"\x00\x04\xf0\x9f\xa6\x86" + b"\x00\x02\xc3\xa9" + b"\x00\x00\x00\x00"
    assert duck.value().endswith(b"\x00\x08donn\xc3\xa9es")
    assert Checkpoint.decode(duck.key(), duck.value()) == duck
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


def test_negative_and_extreme_integers():
    sync = OffsetSync("t", -1, INT64_MIN, -1)
    assert sync.key() == b"\x00\x01t\xff\xff\xff\xff"
    assert sync.value() == b"\x80" + b"\x00" * 7 + MINUS_ONE64
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


def test_decode_accepts_bytearray_and_memoryview():
    sync = OffsetSync("t", 0, 5, 7)
    assert OffsetSync.decode(bytearray(sync.key()), memoryview(sync.value())) == sync


def test_longest_string_fits():
    topic = "x" * 32767
    sync = OffsetSync(topic, 0, 0, 0)
    assert sync.key()[:2] == b"\x7f\xff"
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


# -- round trips ----------------------------------------------------------------------------------------

names = st.text(max_size=40)
int32s = st.integers(-2**31, 2**31 - 1)
int64s = st.integers(INT64_MIN, INT64_MAX)


@settings(max_examples=200, deadline=None)
@given(names, int32s, int64s, int64s)
def test_offset_sync_round_trip(topic, partition, upstream, downstream):
    sync = OffsetSync(topic, partition, upstream, downstream)
    assert OffsetSync.decode(sync.key(), sync.value()) == sync


@settings(max_examples=200, deadline=None)
@given(names, names, int32s, int64s, int64s, names)
def test_checkpoint_round_trip(group, topic, partition, upstream, downstream, metadata):
    checkpoint = Checkpoint(group, topic, partition, upstream, downstream, metadata)
    assert Checkpoint.decode(checkpoint.key(), checkpoint.value()) == checkpoint


@settings(max_examples=200, deadline=None)
@given(names, names, int64s)
def test_heartbeat_round_trip(source, target, timestamp):
    heartbeat = Heartbeat(source, target, timestamp)
    assert Heartbeat.decode(heartbeat.key(), heartbeat.value()) == heartbeat


# -- decoding errors ------------------------------------------------------------------------------------

SAMPLES = [
    (OffsetSync, OffsetSync("topic", 4, 100, 90), "OffsetSync"),
    (Checkpoint, Checkpoint("group", "topic", 4, 100, 90, "meta"), "Checkpoint"),
    (Heartbeat, Heartbeat("src", "dst", 42), "Heartbeat"),
]


@pytest.mark.parametrize("cls, record, name", SAMPLES)
def test_every_truncated_key_is_rejected(cls, record, name):
    key, value = record.key(), record.value()
    for size in range(len(key)):
        with pytest.raises(RecordFormatError, match=f"^{name} key"):
            cls.decode(key[:size], value)


@pytest.mark.parametrize("cls, record, name", SAMPLES)
def test_every_truncated_value_is_rejected(cls, record, name):
    key, value = record.key(), record.value()
    for size in range(len(value)):
        with pytest.raises(RecordFormatError, match=f"^{name} value"):
            cls.decode(key, value[:size])


@pytest.mark.parametrize("cls, record, name", SAMPLES)
def test_trailing_bytes_are_rejected(cls, record, name):
    with pytest.raises(RecordFormatError, match=f"{name} key: 1 unexpected bytes"):
        cls.decode(record.key() + b"\x00", record.value())
    with pytest.raises(RecordFormatError, match=f"{name} value: 2 unexpected bytes"):
        cls.decode(record.key(), record.value() + b"\x00\x00")


@pytest.mark.parametrize("cls, record, name", SAMPLES)
def test_none_is_not_bytes(cls, record, name):
    with pytest.raises(RecordFormatError, match=f"{name} key: expected bytes, got NoneType"):
        cls.decode(None, record.value())
    with pytest.raises(RecordFormatError, match=f"{name} value: expected bytes, got str"):
        cls.decode(record.key(), "text")


def test_truncation_message_names_the_field():
    key = OffsetSync("topic", 4, 1, 2).key()
    with pytest.raises(RecordFormatError, match="field partition needs 4 bytes at offset 7, 2 left"):
        OffsetSync.decode(key[:-2], OffsetSync("t", 0, 1, 2).value())
    with pytest.raises(RecordFormatError, match="field topic needs 5 bytes at offset 2, 3 left"):
        OffsetSync.decode(key[:5], OffsetSync("t", 0, 1, 2).value())
    with pytest.raises(RecordFormatError, match="field topic needs 2 bytes at offset 0, 1 left"):
        OffsetSync.decode(b"\x00", OffsetSync("t", 0, 1, 2).value())


def test_negative_string_length_is_rejected():
    with pytest.raises(RecordFormatError, match="Heartbeat key: field sourceClusterAlias has negative length -1"):
        Heartbeat.decode(b"\xff\xff", Heartbeat("a", "b", 0).value())


def test_invalid_utf8_is_rejected():
    with pytest.raises(RecordFormatError, match="Checkpoint key: field topic is not UTF-8"):
        Checkpoint.decode(b"\x00\x01g\x00\x01\xff\x00\x00\x00\x00", Checkpoint("g", "t", 0, 0, 0).value())


@pytest.mark.parametrize("version", [b"\x00\x01", b"\xff\xff", b"\x7f\xff"])
def test_unknown_versions_are_rejected(version):
    checkpoint, heartbeat = Checkpoint("g", "t", 0, 1, 2, "m"), Heartbeat("a", "b", 3)
    with pytest.raises(RecordFormatError, match="Checkpoint value: unsupported version"):
        Checkpoint.decode(checkpoint.key(), version + checkpoint.value()[2:])
    with pytest.raises(RecordFormatError, match="Heartbeat value: unsupported version"):
        Heartbeat.decode(heartbeat.key(), version + heartbeat.value()[2:])


def test_offset_sync_value_is_not_a_checkpoint_value():
    """A checkpoint value read as an offset sync is garbage, not silently misread."""
    checkpoint = Checkpoint("g", "t", 0, 1, 2, "m")
    with pytest.raises(RecordFormatError, match="OffsetSync"):
        OffsetSync.decode(OffsetSync("t", 0, 0, 0).key(), checkpoint.value())


def test_record_format_error_is_a_value_error():
    assert issubclass(RecordFormatError, ValueError)


# -- encoding errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("record, message", [
    (OffsetSync("t", 2**31, 0, 0), "OffsetSync: partition 2147483648 does not fit INT32"),
    (OffsetSync("t", -2**31 - 1, 0, 0), "OffsetSync: partition -2147483649 does not fit INT32"),
    (Checkpoint("g", "t", 2**31, 0, 0), "Checkpoint: partition 2147483648 does not fit INT32"),
])
def test_key_integers_out_of_range(record, message):
    with pytest.raises(RecordFormatError, match=message):
        record.key()


@pytest.mark.parametrize("record, message", [
    (OffsetSync("t", 0, 2**63, 0), "OffsetSync: upstreamOffset 9223372036854775808 does not fit INT64"),
    (OffsetSync("t", 0, 0, -2**63 - 1), "OffsetSync: offset -9223372036854775809 does not fit INT64"),
    (Checkpoint("g", "t", 0, 0, 2**64), "Checkpoint: offset 18446744073709551616 does not fit INT64"),
    (Heartbeat("a", "b", 2**63), "Heartbeat: timestamp 9223372036854775808 does not fit INT64"),
    (OffsetSync("t", 0, 1.5, 0), "OffsetSync: upstreamOffset 1.5 does not fit INT64"),
])
def test_value_integers_out_of_range(record, message):
    with pytest.raises(RecordFormatError, match=message):
        record.value()


def test_strings_longer_than_32767_bytes():
    with pytest.raises(RecordFormatError, match="OffsetSync: topic is 32768 bytes long"):
        OffsetSync("x" * 32768, 0, 0, 0).key()
    with pytest.raises(RecordFormatError, match="Checkpoint: metadata is 32769 bytes long"):
        Checkpoint("g", "t", 0, 0, 0, "é" * 16384 + "x").value()


def test_unencodable_and_non_strings():
    with pytest.raises(RecordFormatError, match="Heartbeat: sourceClusterAlias"):
        Heartbeat("\ud800", "b", 0).key()
    with pytest.raises(RecordFormatError, match="Checkpoint: group None is not a UTF-8 encodable string"):
        Checkpoint(None, "t", 0, 0, 0).key()


def test_records_are_frozen_and_hashable():
    sync = OffsetSync("t", 0, 1, 2)
    with pytest.raises(AttributeError):
        sync.topic = "u"
    assert len({sync, OffsetSync("t", 0, 1, 2), Heartbeat("a", "b", 1), Checkpoint("g", "t", 0, 1, 2)}) == 3


# -- Kafka's formatters ---------------------------------------------------------------------------------

def test_format_offset_sync_as_kafka_prints_it():
    assert format_offset_sync(OffsetSync("orders", 3, 100, 97)) == \
        "OffsetSync{topicPartition=orders-3, upstreamOffset=100, downstreamOffset=97}"


def test_format_checkpoint_as_kafka_prints_it_typo_included():
    assert format_checkpoint(Checkpoint("app", "us-west.orders", 0, 12, 10, "")) == (
        "Checkpoint{consumerGroupId=app, topicPartition=us-west.orders-0, upstreamOffset=12, "
        "downstreamOffset=10, metatadata=}")


def test_format_heartbeat_as_kafka_prints_it():
    assert format_heartbeat(Heartbeat("us-west", "us-east", 1700000000123)) == \
        "Heartbeat{sourceClusterAlias=us-west, targetClusterAlias=us-east, timestamp=1700000000123}"
