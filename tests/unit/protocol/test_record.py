"""Record-level codec (DefaultRecord) and whole batches built with build_batch."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.protocol.compression import CODEC_BY_NAME
from brokers.protocol.errors import CorruptRecordError, ErrorCode, UnsupportedCompressionError
from brokers.protocol.record import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    ConsumerRecord,
    Record,
    batch_records,
    build_batch,
    decode_records,
    decode_varint,
    decode_varlong,
    encode_records,
    encode_varint,
    encode_varlong,
    iter_records,
)
from brokers.protocol.record_batch import HEADER_SIZE, check_crc, iter_batches, read_header, validate_batches

CODECS = sorted(CODEC_BY_NAME.values())
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
maybe_bytes = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=20), maybe_bytes), max_size=4).map(tuple)


# --- varints -------------------------------------------------------------------------------------


@given(int32s)
def test_varint_round_trip(value):
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= 5
    assert decode_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


@given(int64s)
def test_varlong_round_trip(value):
    encoded = encode_varlong(value)
    assert 1 <= len(encoded) <= 10
    assert decode_varlong(encoded + b"\x00") == (value, len(encoded))


@given(st.integers(-8193, 8192), st.binary(max_size=2))
def test_one_and_two_byte_varints_decode_alike_at_the_end_and_before_more_bytes(value, trailing):
    """The short-varint fast path (lengths and deltas of records under 8 KiB) must agree with the
    general one, at the buffer's end as well as in its middle."""
    encoded = encode_varint(value)
    assert decode_varint(encoded) == (value, len(encoded))
    assert decode_varint(encoded + trailing) == (value, len(encoded))
    assert decode_varlong(b"\x00" + encoded + trailing, 1) == (value, 1 + len(encoded))


@pytest.mark.parametrize(
    "value, encoded",
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"), (300, b"\xd8\x04")],
)
def test_varint_known_encodings(value, encoded):
    """Zigzag then base-128, as protobuf's sint32 and Kafka's ByteUtils.writeVarint."""
    assert encode_varint(value) == encoded
    assert encode_varlong(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))


def test_varint_extremes():
    assert encode_varint(INT32_MAX) == b"\xfe\xff\xff\xff\x0f"
    assert encode_varint(INT32_MIN) == b"\xff\xff\xff\xff\x0f"
    assert decode_varint(b"\xff\xff\xff\xff\x0f") == (INT32_MIN, 5)
    assert encode_varlong(INT64_MIN) == b"\xff" * 9 + b"\x01"
    assert decode_varlong(encode_varlong(INT64_MAX)) == (INT64_MAX, 10)


@pytest.mark.parametrize("value", [INT32_MAX + 1, INT32_MIN - 1])
def test_varint_out_of_range(value):
    with pytest.raises(ValueError):
        encode_varint(value)
    assert decode_varlong(encode_varlong(value))[0] == value


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1])
def test_varlong_out_of_range(value):
    with pytest.raises(ValueError):
        encode_varlong(value)


def test_varint_truncated_or_too_long():
    with pytest.raises(CorruptRecordError, match="cut short"):
        decode_varint(b"\x80\x80")
    with pytest.raises(CorruptRecordError, match="cut short"):
        decode_varint(b"")
    with pytest.raises(CorruptRecordError, match="longer than 5"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(CorruptRecordError, match="overflows"):
        decode_varint(b"\xff\xff\xff\xff\x1f")
    with pytest.raises(CorruptRecordError, match="longer than 10"):
        decode_varlong(b"\x80" * 10 + b"\x01")


# --- records -------------------------------------------------------------------------------------


def record_lists(max_size: int = 20):
    def build(items):
        return [
            Record(offset_delta=i, timestamp_delta=ts, key=key, value=value, headers=hdrs)
            for i, (ts, key, value, hdrs) in enumerate(items)
        ]

    item = st.tuples(st.integers(0, 10**9), maybe_bytes, maybe_bytes, headers)
    return st.lists(item, min_size=1, max_size=max_size).map(build)


@given(record_lists())
def test_records_round_trip(records):
    data = encode_records(records)
    assert decode_records(data, len(records)) == records
    assert decode_records(memoryview(data)) == records


def test_record_with_nulls_and_header_with_null_value():
    record = Record(0, -5, None, None, (("trace", None), ("empty", b""), ("ünï", b"\x00\xff")))
    data = encode_records([record])
    # length, attributes, ts delta -5, offset delta 0, key -1, value -1, 3 headers
    assert data[1:7] == b"\x00\x09\x00\x01\x01\x06"
    (decoded,) = decode_records(data, 1)
    assert decoded == record
    assert decoded.key is None and decoded.value is None
    assert decoded.headers[0] == ("trace", None)
    assert decoded.headers[1] == ("empty", b"")


def test_empty_key_is_not_null():
    (decoded,) = decode_records(encode_records([Record(0, 0, b"", b"")]), 1)
    assert decoded.key == b"" and decoded.value == b""


def test_record_bytes_match_kafka_layout():
    data = encode_records([Record(offset_delta=1, timestamp_delta=2, key=b"k", value=b"vv", headers=(("h", b"x"),))])
    body = b"\x00" + b"\x04" + b"\x02" + b"\x02k" + b"\x04vv" + b"\x02" + b"\x02h" + b"\x02x"
    assert data == bytes([len(body) << 1]) + body


def _two_records() -> bytes:
    return encode_records([Record(0, 0, b"key", b"value", (("h", b"v"),)), Record(1, 3, None, b"second")])


@pytest.mark.parametrize("cut", range(1, 20))
def test_truncated_records_are_corrupt(cut):
    data = _two_records()
    with pytest.raises(CorruptRecordError) as caught:
        decode_records(data[:-cut], 2)
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE


def test_count_mismatch_and_trailing_bytes_are_corrupt():
    data = _two_records()
    with pytest.raises(CorruptRecordError, match="holds 2 records, batch says 3"):
        decode_records(data, 3)
    with pytest.raises(CorruptRecordError, match="bytes after its 1 records"):
        decode_records(data, 1)
    with pytest.raises(CorruptRecordError, match="bytes after its 2 records"):
        decode_records(data + b"\x00", 2)
    with pytest.raises(CorruptRecordError):
        decode_records(data + b"\x00")  # a zero-length record is not a record


def test_record_length_disagreeing_with_fields_is_corrupt():
    data = bytearray(encode_records([Record(0, 0, b"k", b"v")]))
    data[0] += 2  # declare one more byte
    with pytest.raises(CorruptRecordError, match="declares 9 bytes but its fields take 8"):
        decode_records(bytes(data) + b"\x00", 1)
    data[0] -= 4  # declare one fewer byte: the headers count falls outside
    with pytest.raises(CorruptRecordError):
        decode_records(bytes(data[:-1]), 1)


def test_bad_header_key_is_corrupt():
    good = encode_records([Record(0, 0, None, None, (("ab", None),))])
    bad_utf8 = good.replace(b"ab", b"\xff\xfe")
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        decode_records(bad_utf8, 1)
    body = b"\x00\x00\x00\x01\x01" + b"\x02" + b"\x01" + b"\x01"  # one header: null key, null value
    null_key = bytes([len(body) << 1]) + body
    with pytest.raises(CorruptRecordError, match="header key is null"):
        decode_records(null_key, 1)


def test_negative_length_other_than_minus_one_is_corrupt():
    data = bytearray(encode_records([Record(0, 0, None, b"v")]))
    data[4] = 0x03  # key length -2
    with pytest.raises(CorruptRecordError, match="negative length -2"):
        decode_records(bytes(data), 1)


def test_no_records():
    assert decode_records(b"", 0) == []
    assert decode_records(b"") == []
    assert encode_records([]) == b""


# --- batches -------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    records=record_lists(),
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**62),
    base_timestamp=st.integers(0, 2**50),
    producer_id=st.integers(-1, 2**40),
    log_append=st.booleans(),
)
def test_build_batch_round_trip(records, codec, base_offset, base_timestamp, producer_id, log_append):
    batch = build_batch(
        records,
        base_offset=base_offset,
        base_timestamp=base_timestamp,
        codec=codec,
        producer_id=producer_id,
        producer_epoch=3 if producer_id >= 0 else -1,
        base_sequence=7 if producer_id >= 0 else -1,
        timestamp_type_log_append=log_append,
    )
    header = read_header(batch)
    check_crc(batch, header)
    assert header.size == len(batch)
    assert header.compression == codec
    assert header.base_offset == base_offset
    assert header.records_count == len(records)
    assert header.last_offset_delta == len(records) - 1
    assert header.base_timestamp == base_timestamp
    assert header.max_timestamp == base_timestamp + max(r.timestamp_delta for r in records)
    assert header.producer_id == producer_id
    assert header.timestamp_type == ("LogAppendTime" if log_append else "CreateTime")
    assert not header.is_transactional and not header.is_control
    assert batch_records(batch, header) == records
    validate_batches(batch)


def test_build_batch_flags_and_producer_fields():
    batch = build_batch(
        [Record(0, 0, b"\x00\x00\x00\x01", b"")],
        base_timestamp=1,
        partition_leader_epoch=9,
        producer_id=42,
        producer_epoch=2,
        base_sequence=11,
        transactional=True,
        control=True,
        codec=CODEC_BY_NAME["zstd"],
    )
    header = read_header(batch)
    assert header.attributes == 4 | 0x10 | 0x20
    assert header.is_transactional and header.is_control
    assert (header.partition_leader_epoch, header.producer_id, header.producer_epoch, header.base_sequence) == (
        9,
        42,
        2,
        11,
    )
    check_crc(batch, header)


def test_build_batch_keeps_offset_gaps_and_explicit_max_timestamp():
    """The compaction cleaner keeps the original last_offset_delta so the offsets after it stay put."""
    survivors = [Record(2, 5, b"a", b"1"), Record(7, 1, b"b", b"2")]
    batch = build_batch(survivors, base_offset=100, base_timestamp=1000, last_offset_delta=9, max_timestamp=2000)
    header = read_header(batch)
    assert (header.last_offset_delta, header.records_count, header.next_offset) == (9, 2, 110)
    assert header.max_timestamp == 2000
    assert [r.offset for r in iter_records(batch)] == [102, 107]
    check_crc(batch, header)
    default = read_header(build_batch(survivors, base_timestamp=1000))
    assert (default.last_offset_delta, default.max_timestamp) == (7, 1005)


def test_build_empty_batch():
    batch = build_batch([], base_offset=50, base_timestamp=77, last_offset_delta=4, codec=CODEC_BY_NAME["gzip"])
    header = read_header(batch)
    check_crc(batch, header)
    assert len(batch) == HEADER_SIZE
    assert (header.records_count, header.compression, header.max_timestamp, header.next_offset) == (0, 0, 77, 55)
    assert batch_records(batch, header) == []
    with pytest.raises(ValueError, match="last_offset_delta"):
        build_batch([], base_timestamp=0)


def test_build_batch_rejects_bad_input():
    with pytest.raises(UnsupportedCompressionError):
        build_batch([Record(0, 0, None, b"v")], base_timestamp=0, codec=6)
    with pytest.raises(ValueError, match="out of range"):
        build_batch([Record(0, 0, None, b"v")], base_timestamp=0, producer_epoch=1 << 20)


def test_batch_records_with_corrupt_section():
    batch = build_batch([Record(0, 0, None, b"v" * 100)], base_timestamp=0, codec=CODEC_BY_NAME["gzip"])
    batch[HEADER_SIZE + 12] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        batch_records(batch, read_header(batch))


def test_batch_records_count_mismatch():
    batch = build_batch([Record(0, 0, None, b"a"), Record(1, 0, None, b"b")], base_timestamp=0)
    batch[HEADER_SIZE - 1] = 3  # records_count low byte: 2 -> 3
    with pytest.raises(CorruptRecordError, match="batch says 3"):
        batch_records(batch, read_header(batch))


def test_iter_records_across_batches():
    first = build_batch(
        [Record(0, 0, b"k", b"a", (("h", None),)), Record(1, 10, None, b"b")],
        base_offset=5,
        base_timestamp=1000,
        codec=CODEC_BY_NAME["lz4"],
    )
    marker = build_batch([Record(0, 0, b"\x00\x00\x00\x00", b"")], base_offset=7, base_timestamp=1, control=True)
    second = build_batch(
        [Record(0, 1, None, b"c"), Record(1, 3, None, b"d")],
        base_offset=8,
        base_timestamp=2000,
        max_timestamp=5000,
        timestamp_type_log_append=True,
        codec=CODEC_BY_NAME["snappy"],
    )
    buf = bytes(first + marker + second)
    assert list(iter_records(buf)) == [
        ConsumerRecord(5, 1000, b"k", b"a", (("h", None),)),
        ConsumerRecord(6, 1010, None, b"b", ()),
        ConsumerRecord(8, 5000, None, b"c", ()),  # LogAppendTime: the batch's max_timestamp
        ConsumerRecord(9, 5000, None, b"d", ()),
    ]
    assert [r.offset for r in iter_records(buf, include_control=True)] == [5, 6, 7, 8, 9]
    assert len(list(iter_batches(buf))) == 3


def test_iter_records_checks_crc_unless_told_not_to():
    batch = build_batch([Record(0, 0, None, b"value")], base_timestamp=0)
    batch[-2] ^= 0x01  # inside the value
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(iter_records(batch))
    assert [r.value for r in iter_records(batch, verify_crc=False)] == [b"valud"]


def test_records_are_frozen():
    record = Record(0, 0, None, None)
    with pytest.raises(AttributeError):
        record.value = b"x"  # type: ignore[misc]
    assert not hasattr(record, "__dict__")


def test_batch_records_for_a_header_read_from_a_file_chunk():
    """A header whose position is a file position is decoded at the chunk-relative position given."""
    first = build_batch([Record(0, 0, None, b"first")], base_timestamp=0)
    second = build_batch([Record(0, 0, None, b"second")], base_offset=1, base_timestamp=0, codec=1)
    chunk = bytes(first + second)[len(first) :]  # the file's bytes from the second batch on
    header = read_header(chunk, 0, file_position=4096 + len(first))
    check_crc(chunk, header, 0)
    assert [r.value for r in batch_records(chunk, header, 0)] == [b"second"]
