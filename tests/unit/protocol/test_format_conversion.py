"""Up-conversion (Produce v0-2 -> v2 batch) and down-conversion (v2 batches -> Fetch v0-3 message sets)."""
from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.protocol import compression
from brokers.protocol.errors import ErrorCode, InvalidRecordError, KafkaError, UnsupportedCompressionError
from brokers.protocol.format_conversion import down_convert, up_convert
from brokers.protocol.message_set import build_message_set, encode_message, iter_messages, shallow_messages
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.lz4_legacy import header_checksum
from brokers.protocol.record_batch import TIMESTAMP_TYPE_BIT, iter_batches

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4]
T0 = 1_700_000_000_000
ENTRIES = [(i, T0 + 3 * i, b"k%d" % i, b"v" * (i + 1)) for i in range(5)]


def v2_batch(base_offset: int, n: int, *, codec: int = 0, ts: int = T0, headers=(), log_append: bool = False,
             control: bool = False) -> bytearray:
    records = [Record(i, i, b"k%d" % (base_offset + i), b"value-%d" % (base_offset + i), tuple(headers))
               for i in range(n)]
    append_time = ts + 500 if log_append else None  # the log stamps max_timestamp with the append time
    return build_batch(records, base_offset=base_offset, base_timestamp=ts, max_timestamp=append_time, codec=codec,
                       timestamp_type_log_append=log_append, control=control)


# --- up-conversion -------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_up_convert_every_codec_and_magic(magic, codec):
    batch = up_convert(build_message_set(ENTRIES, magic, codec=codec))
    [header] = list(iter_batches(batch, verify_crc=True))
    assert header.compression == codec  # re-compressed with the producer's codec
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 4, 5)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert not header.attributes & TIMESTAMP_TYPE_BIT
    records = list(iter_records(batch))
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [(o, k, v, ()) for o, _, k, v in ENTRIES]
    if magic == 1:
        assert [r.timestamp for r in records] == [t for _, t, _, _ in ENTRIES]
        assert (header.base_timestamp, header.max_timestamp) == (T0, T0 + 12)
    else:  # magic 0 has no timestamps: NO_TIMESTAMP
        assert [r.timestamp for r in records] == [-1] * 5
        assert (header.base_timestamp, header.max_timestamp) == (-1, -1)


def test_up_convert_renumbers_whatever_offsets_the_producer_wrote():
    data = b"".join(encode_message(offset, 1, 0, T0, None, b"x") for offset in (7, 7, 100))
    assert [r.offset for r in iter_records(up_convert(data))] == [0, 1, 2]


def test_up_convert_keeps_null_keys_and_values():
    data = build_message_set([(0, T0, None, None), (1, T0, b"", b"")], 1, codec=compression.GZIP)
    assert [(r.key, r.value) for r in iter_records(up_convert(data))] == [(None, None), (b"", b"")]


def test_up_convert_drops_a_truncated_trailing_message():
    data = build_message_set(ENTRIES, 1)
    cut = data[:-3]
    assert [r.offset for r in iter_records(up_convert(cut))] == [0, 1, 2, 3]


@pytest.mark.parametrize("data", [b"", encode_message(0, 1, 0, T0, None, b"x")[:-1]])
def test_up_convert_of_no_complete_message_is_invalid(data):
    with pytest.raises(InvalidRecordError):
        up_convert(data)


def test_up_convert_rejects_mixed_magics_and_wrapper_plus_more():
    mixed = encode_message(0, 0, 0, -1, None, b"a") + encode_message(1, 1, 0, T0, None, b"b")
    with pytest.raises(InvalidRecordError, match="magic"):
        up_convert(mixed)
    two_wrappers = build_message_set(ENTRIES, 1, codec=compression.GZIP) * 2
    with pytest.raises(InvalidRecordError, match="one wrapper"):
        up_convert(two_wrappers)
    plain_then_wrapper = encode_message(0, 1, 0, T0, None, b"a") + build_message_set(ENTRIES, 1, codec=compression.GZIP)
    with pytest.raises(InvalidRecordError, match="one wrapper"):
        up_convert(plain_then_wrapper)


@pytest.mark.parametrize("codec", [compression.NONE, compression.SNAPPY])
def test_producer_log_append_time_is_invalid_timestamp(codec):
    data = build_message_set(ENTRIES, 1, codec=codec, log_append_time=T0 + 99)
    with pytest.raises(KafkaError) as raised:
        up_convert(data)
    assert raised.value.code == ErrorCode.INVALID_TIMESTAMP
    # outside a produce (producer=False) the wrapper's LogAppendTime and timestamp are kept
    [header] = list(iter_batches(up_convert(data, producer=False), verify_crc=True))
    assert header.attributes & TIMESTAMP_TYPE_BIT and header.max_timestamp == T0 + 99


# --- down-conversion -----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_down_convert_keeps_absolute_offsets_and_codec(magic, codec):
    log = v2_batch(100, 3, codec=codec) + v2_batch(103, 2, codec=codec, ts=T0 + 50)
    data = down_convert(log, magic, first_offset=100)
    shallow, used = shallow_messages(data)
    assert used == len(data)
    assert [m.compression for m in shallow] == ([codec, codec] if codec else [0] * 5)
    if codec:
        assert [m.offset for m in shallow] == [102, 104]  # a wrapper carries its last inner offset
    messages = list(iter_messages(data))
    assert [(m.offset, m.key, m.value) for m in messages] == [(o, b"k%d" % o, b"value-%d" % o) for o in range(100, 105)]
    assert all(m.magic == magic for m in messages)
    expected = [T0, T0 + 1, T0 + 2, T0 + 50, T0 + 51] if magic else [-1] * 5
    assert [m.timestamp for m in messages] == expected


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_round_trip_through_the_log_format(magic, codec):
    produced = build_message_set(ENTRIES, magic, codec=codec)
    assert down_convert(up_convert(produced), magic) == produced


def test_down_convert_drops_headers_and_control_batches():
    log = (v2_batch(0, 2, headers=[("h", b"1")]) + v2_batch(2, 1, control=True)
           + v2_batch(3, 1, codec=compression.GZIP, headers=[("h", None)]))
    messages = list(iter_messages(down_convert(log, 1)))
    assert [m.offset for m in messages] == [0, 1, 3]


def test_down_convert_drops_records_below_the_fetch_offset_of_uncompressed_batches_only():
    log = v2_batch(10, 5)
    assert [m.offset for m in iter_messages(down_convert(log, 1, first_offset=12))] == [12, 13, 14]
    compressed = v2_batch(10, 5, codec=compression.GZIP)
    assert [m.offset for m in iter_messages(down_convert(compressed, 1, first_offset=12))] == [10, 11, 12, 13, 14]


@pytest.mark.parametrize("cut", [1, 30, 61, 70])
def test_down_convert_drops_a_batch_cut_short(cut):
    log = v2_batch(0, 2) + v2_batch(2, 3, codec=compression.SNAPPY)
    assert [m.offset for m in iter_messages(down_convert(log[:-cut], 1))] == [0, 1]


def test_down_convert_of_nothing_whole_is_empty():
    assert down_convert(b"", 0) == b""
    assert down_convert(v2_batch(0, 3)[:40], 0) == b""


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP])
def test_down_convert_log_append_time(codec):
    log = v2_batch(0, 3, codec=codec, log_append=True)
    messages = list(iter_messages(down_convert(log, 1)))
    assert [m.timestamp for m in messages] == [T0 + 500] * 3
    assert all(m.log_append_time for m in messages)
    assert [m.timestamp for m in iter_messages(down_convert(log, 0))] == [-1] * 3


def test_zstd_first_batch_is_unsupported_compression_type():
    with pytest.raises(UnsupportedCompressionError) as raised:
        down_convert(v2_batch(0, 2, codec=compression.ZSTD) + v2_batch(2, 1), 1)
    assert raised.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_zstd_after_converted_batches_stops_the_conversion_there():
    log = v2_batch(0, 2) + v2_batch(2, 2, codec=compression.ZSTD) + v2_batch(4, 1)
    assert [m.offset for m in iter_messages(down_convert(log, 0))] == [0, 1]


def test_down_convert_needs_an_old_magic():
    with pytest.raises(ValueError):
        down_convert(v2_batch(0, 1), 2)


@pytest.mark.parametrize("magic, broken", [(0, True), (1, False)])
def test_down_converted_lz4_header_checksum_follows_the_magic(magic, broken):
    [wrapper] = shallow_messages(down_convert(v2_batch(0, 2, codec=compression.LZ4), magic))[0]
    assert wrapper.value[6] == header_checksum(wrapper.value, broken=broken)
    assert wrapper.value[6] != header_checksum(wrapper.value, broken=not broken)


def test_size_limit_keeps_whole_batches_and_always_the_first():
    log = v2_batch(0, 3) + v2_batch(3, 3) + v2_batch(6, 3)
    one = len(down_convert(v2_batch(0, 3), 1))
    assert [m.offset for m in iter_messages(down_convert(log, 1, size_limit=2 * one))] == list(range(6))
    assert [m.offset for m in iter_messages(down_convert(log, 1, size_limit=2 * one - 1))] == [0, 1, 2]
    assert [m.offset for m in iter_messages(down_convert(log, 1, size_limit=1))] == [0, 1, 2]
    assert [m.offset for m in iter_messages(down_convert(log, 1))] == list(range(9))


def test_timestamps_too_far_apart_for_one_batch_are_invalid_timestamp():
    data = encode_message(0, 1, 0, -(2**63), None, b"a") + encode_message(1, 1, 0, 2**63 - 1, None, b"b")
    with pytest.raises(KafkaError) as raised:
        up_convert(data)
    assert raised.value.code == ErrorCode.INVALID_TIMESTAMP


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_message_sets_fail_only_with_kafka_errors(data):
    """Whatever a producer sends, up-conversion answers with a Kafka error code (never a broker bug)."""
    codec = data.draw(st.sampled_from(CODECS))
    magic = data.draw(st.sampled_from([0, 1]))
    buf = bytearray(build_message_set(ENTRIES, magic, codec=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(buf) - 1))
        buf[position] = data.draw(st.integers(0, 255))
    size = int.from_bytes(buf[8:12], "big", signed=True)
    if data.draw(st.booleans()) and 14 <= size <= len(buf) - 12:  # past the CRC: into the fields and codecs
        buf[12:16] = zlib.crc32(bytes(buf[16 : 12 + size])).to_bytes(4, "big")
    cut = data.draw(st.one_of(st.just(len(buf)), st.integers(0, len(buf))))
    try:
        batch = up_convert(bytes(buf[:cut]))
    except KafkaError:
        return
    assert list(iter_batches(batch, verify_crc=True))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_fail_only_with_kafka_errors(junk):
    try:
        up_convert(junk)
    except KafkaError:
        pass
