"""Magic 0/1 message sets: golden bytes from the format spec, CRCs, wrappers and their offsets, LZ4's
KAFKA-3160 header checksum, truncation, and interoperability with kafka-python's own implementation."""
from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from brokers.protocol import compression
from brokers.protocol.errors import CorruptRecordError, InvalidRecordError
from brokers.protocol.lz4_legacy import header_checksum, with_header_checksum, xxh32_short
from brokers.protocol.message_set import (
    Message,
    build_message_set,
    compress_inner,
    decompress_inner,
    encode_message,
    inner_messages,
    iter_messages,
    read_message,
    shallow_messages,
)

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4]
# kafka-python reads and writes magic-0 LZ4 only with the xxhash package, which is not installed: that pair
# is covered by the KAFKA-3160 tests instead
INTEROP = [(magic, codec) for magic in (0, 1) for codec in CODECS if (magic, codec) != (0, compression.LZ4)]
ENTRIES = [(i, 1_600_000_000_000 + 10 * i, b"key-%d" % i if i % 2 else None, b"value" * i) for i in range(6)]

# offset 5, key b"k", value b"val", magic 0, attributes 0: 8 + 4 + 4 + 14 bytes
GOLDEN_V0 = bytes.fromhex(
    "0000000000000005"  # offset
    "00000012"  # message_size 18 = crc 4 + magic 1 + attributes 1 + key 4+1 + value 4+3
    "316a1df0"  # CRC-32 of the 14 bytes below
    "00" "00"  # magic 0, attributes 0
    "00000001" "6b"  # key b"k"
    "00000003" "76616c"  # value b"val"
)
# offset 7, timestamp 1600000000000 (CreateTime), null key, value b"hi", magic 1
GOLDEN_V1 = bytes.fromhex(
    "0000000000000007"
    "00000018"  # message_size 24 = crc 4 + magic 1 + attributes 1 + timestamp 8 + key 4 + value 4+2
    "bc2d090d"  # CRC-32 of the 20 bytes below
    "01" "00" "00000174876e8000"  # magic 1, attributes 0, timestamp
    "ffffffff"  # null key
    "00000002" "6869"
)


def test_golden_magic_0_message():
    assert encode_message(5, 0, 0, -1, b"k", b"val") == GOLDEN_V0
    assert zlib.crc32(GOLDEN_V0[16:]) == 0x316A1DF0
    assert read_message(GOLDEN_V0) == Message(5, 0, 0, -1, b"k", b"val")


def test_golden_magic_1_message():
    assert encode_message(7, 1, 0, 1_600_000_000_000, None, b"hi") == GOLDEN_V1
    assert read_message(GOLDEN_V1) == Message(7, 1, 0, 1_600_000_000_000, None, b"hi")


def test_golden_magic_1_gzip_wrapper_layout():
    """A wrapper: null key, codec in attributes, offset of the last inner message, max inner timestamp."""
    wrapper_bytes = build_message_set([(3, 50, None, b"a"), (4, 70, b"b", None)], 1, codec=compression.GZIP)
    offset, size, _crc, magic, attributes, timestamp, key_length = struct.unpack_from(">qiIbbqi", wrapper_bytes)
    assert (offset, size, magic, attributes, timestamp, key_length) == (4, len(wrapper_bytes) - 12, 1, 1, 70, -1)
    (value_length,) = struct.unpack_from(">i", wrapper_bytes, 30)
    assert 34 + value_length == len(wrapper_bytes)
    inner = zlib.decompress(wrapper_bytes[34:], wbits=31)
    # inner offsets relative to the first: 0 and 1
    assert inner == encode_message(0, 1, 0, 50, None, b"a") + encode_message(1, 1, 0, 70, b"b", None)


def test_xxh32_matches_the_reference_vectors():
    assert xxh32_short(b"") == 0x02CC5D05
    assert xxh32_short(b"a") == 0x550D7456
    assert xxh32_short(b"abc") == 0x32D153FF


def test_lz4_header_checksum_correct_and_kafka_3160():
    frame = lz4.frame.compress(b"kafka" * 20, block_linked=False, content_checksum=False, store_size=False)
    assert frame[:6] == bytes.fromhex("04224d186040")
    assert header_checksum(frame, broken=False) == frame[6] == 0x82  # what the LZ4 library writes
    # Kafka 0.8/0.9 hashed the magic number too: second byte of XXH32(04 22 4d 18 60 40)
    assert header_checksum(frame, broken=True) == (0xC8581A3A >> 8) & 0xFF == 0x1A
    broken = with_header_checksum(frame, broken=True)
    assert broken[6] == 0x1A and broken[7:] == frame[7:]
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(broken)  # why magic 0 needs the patch


def test_magic_0_lz4_wrapper_carries_the_broken_checksum_and_magic_1_the_correct_one():
    data = encode_message(0, 0, 0, -1, None, b"x" * 100)
    v0 = compress_inner(compression.LZ4, 0, data)
    v1 = compress_inner(compression.LZ4, 1, data)
    assert v0[6] == header_checksum(v0, broken=True) != header_checksum(v0, broken=False)
    assert v1[6] == header_checksum(v1, broken=False)
    assert decompress_inner(compression.LZ4, 0, v0) == decompress_inner(compression.LZ4, 1, v1) == data
    # magic 0 reading ignores HC, as Kafka does: a correct one is read too
    assert decompress_inner(compression.LZ4, 0, v1) == data


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_round_trip(magic, codec):
    data = build_message_set(ENTRIES, magic, codec=codec)
    messages = list(iter_messages(data))
    assert [(m.offset, m.key, m.value) for m in messages] == [(o, k, v) for o, _, k, v in ENTRIES]
    expected = [t for _, t, _, _ in ENTRIES] if magic else [-1] * len(ENTRIES)
    assert [m.timestamp for m in messages] == expected
    assert all(m.magic == magic and m.compression == 0 for m in messages)
    shallow, used = shallow_messages(data)
    assert used == len(data)
    assert len(shallow) == (1 if codec else len(ENTRIES))


@pytest.mark.parametrize("magic, codec", INTEROP)
def test_kafka_python_reads_what_we_write(magic, codec):
    data = build_message_set(ENTRIES, magic, codec=codec)
    records = MemoryRecords(data)
    batches = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        batches.append(batch)
    assert len(batches) == (1 if codec else len(ENTRIES))
    read = [r for batch in batches for r in batch]
    assert [(r.offset, r.key, r.value) for r in read] == [(o, k, v) for o, _, k, v in ENTRIES]
    if magic:
        assert [r.timestamp for r in read] == [t for _, t, _, _ in ENTRIES]


@pytest.mark.parametrize("magic, codec", INTEROP)
def test_we_read_what_kafka_python_writes(magic, codec):
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for offset, timestamp, key, value in ENTRIES:
        builder.append(offset, timestamp, key, value)
    messages = list(iter_messages(bytes(builder.build())))
    assert [(m.offset, m.key, m.value) for m in messages] == [(o, k, v) for o, _, k, v in ENTRIES]
    if magic:
        assert [m.timestamp for m in messages] == [t for _, t, _, _ in ENTRIES]


def test_bad_crc_is_corrupt_message():
    damaged = bytearray(GOLDEN_V1)
    damaged[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        read_message(damaged)
    assert CorruptRecordError("x").code == 2  # CORRUPT_MESSAGE


def test_bad_inner_crc_is_corrupt_message():
    inner = bytearray(encode_message(0, 1, 0, 5, None, b"abc"))
    inner[-1] ^= 0xFF
    wrapper = encode_message(0, 1, compression.GZIP, 5, None, compression.compress(compression.GZIP, inner))
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(iter_messages(wrapper))


@pytest.mark.parametrize("size", [0, 13])
def test_size_below_the_minimum_is_corrupt(size):
    with pytest.raises(CorruptRecordError):
        read_message(struct.pack(">qi", 0, size) + b"\x00" * 30)


def test_unknown_magic_is_corrupt():
    data = bytearray(GOLDEN_V0)
    data[16] = 2
    with pytest.raises(CorruptRecordError, match="magic"):
        read_message(data)


def test_magic_1_inner_offsets_are_relative_to_the_wrapper():
    inner = b"".join(encode_message(i, 1, 0, 100 + i, None, b"v%d" % i) for i in range(5))
    value = compression.compress(compression.SNAPPY, inner)
    wrapper = encode_message(109, 1, compression.SNAPPY, 104, None, value)
    assert [m.offset for m in iter_messages(wrapper)] == [105, 106, 107, 108, 109]
    # wrapper offset 0 (some librdkafka producers): base 0
    producer_wrapper = encode_message(0, 1, compression.SNAPPY, 104, None, value)
    assert [m.offset for m in iter_messages(producer_wrapper)] == [0, 1, 2, 3, 4]
    with pytest.raises(InvalidRecordError, match="below its last inner offset"):
        list(iter_messages(encode_message(3, 1, compression.SNAPPY, 104, None, value)))


def test_magic_0_inner_offsets_are_absolute():
    inner = b"".join(encode_message(40 + i, 0, 0, -1, None, b"v") for i in range(3))
    wrapper = encode_message(999, 0, compression.GZIP, -1, None, compression.compress(compression.GZIP, inner))
    assert [m.offset for m in iter_messages(wrapper)] == [40, 41, 42]


def test_log_append_time_wrapper_gives_its_timestamp_to_the_inner_messages():
    data = build_message_set([(0, 5, None, b"a"), (1, 6, None, b"b")], 1, codec=compression.LZ4, log_append_time=777)
    messages = list(iter_messages(data))
    assert [m.timestamp for m in messages] == [777, 777]
    assert all(m.log_append_time for m in messages)
    # even if the inner timestamps say otherwise
    inner = encode_message(0, 1, 0, 5, None, b"a")
    wrapper = encode_message(0, 1, compression.GZIP | 0x08, 900, None, compression.compress(compression.GZIP, inner))
    assert [m.timestamp for m in iter_messages(wrapper)] == [900]


@pytest.mark.parametrize("inner, error", [
    (encode_message(0, 0, 0, -1, None, b"a"), "does not match wrapper magic"),
    (encode_message(0, 1, compression.GZIP, 1, None, b"zz"), "must not be compressed"),
    (b"", "holds no messages"),
])
def test_invalid_wrappers(inner, error):
    wrapper = encode_message(0, 1, compression.GZIP, 1, None, compression.compress(compression.GZIP, inner))
    with pytest.raises(InvalidRecordError, match=error):
        list(iter_messages(wrapper))


def test_null_and_zstd_wrappers_are_invalid():
    with pytest.raises(InvalidRecordError, match="null value"):
        inner_messages(read_message(encode_message(0, 1, compression.GZIP, 1, None, None)))
    zstd = encode_message(0, 1, compression.ZSTD, 1, None, compression.compress(compression.ZSTD, GOLDEN_V1))
    with pytest.raises(InvalidRecordError, match="zstd"):
        list(iter_messages(zstd))


@pytest.mark.parametrize("cut", [1, 5, 11, 12, 20, len(GOLDEN_V1) - 1])
def test_truncated_trailing_message_is_left_out(cut):
    data = GOLDEN_V0 + GOLDEN_V1[:-cut]
    messages, used = shallow_messages(data)
    assert [m.offset for m in messages] == [5]
    assert used == len(GOLDEN_V0)
    assert read_message(GOLDEN_V1[:-cut]) is None


def test_truncated_inner_set_is_corrupt():
    inner = encode_message(0, 1, 0, 1, None, b"abc")[:-2]
    wrapper = encode_message(0, 1, compression.GZIP, 1, None, compression.compress(compression.GZIP, inner))
    with pytest.raises(CorruptRecordError, match="cut short"):
        list(iter_messages(wrapper))


def test_key_length_past_the_message_is_corrupt():
    body = struct.pack(">bbi", 0, 0, 50) + b"k" + struct.pack(">i", -1)
    data = struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError, match="key"):
        read_message(data)
