"""Kafka's codecs: round trips, both snappy framings, and what happens to bad input."""
from __future__ import annotations

import gzip
import os
import struct

import lz4.frame
import pytest
import snappy
import zstandard

from brokers.protocol.compression import CODEC_BY_NAME, XERIAL_MAGIC, compress, decompress
from brokers.protocol.errors import CorruptRecordError, ErrorCode, UnsupportedCompressionError

CODECS = sorted(CODEC_BY_NAME.values())
COMPRESSING = [c for c in CODECS if c != 0]
MIB = 1 << 20
CODEC_BY_NAME_BY_ID = {v: k for k, v in CODEC_BY_NAME.items()}


def _payload(size: int) -> bytes:
    """Half random, half repetitive, so codecs both shrink it and must carry incompressible bytes."""
    half = size // 2
    return os.urandom(half) + (b"kafka record " * (size // 13 + 1))[: size - half]


def test_codec_ids_are_kafkas():
    assert CODEC_BY_NAME == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("size", [0, 1, 13, 4096, 65536 + 7, MIB])
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec, size):
    data = _payload(size)
    packed = compress(codec, data)
    assert isinstance(packed, bytes)
    assert decompress(codec, packed) == data


@pytest.mark.parametrize("codec", CODECS)
def test_accepts_any_bytes_like(codec):
    data = _payload(5000)
    packed = compress(codec, memoryview(bytearray(data)))
    assert decompress(codec, memoryview(bytearray(packed))) == data


@pytest.mark.parametrize("codec", COMPRESSING)
def test_repetitive_data_shrinks(codec):
    data = b"v-0 " * 50_000
    assert len(compress(codec, data)) < len(data) // 10


def test_none_is_identity():
    assert compress(0, b"abc") == b"abc"
    assert decompress(0, bytearray(b"abc")) == b"abc"


def test_gzip_is_a_standard_gzip_stream():
    data = _payload(10_000)
    packed = compress(1, data)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == data


def test_gzip_reads_concatenated_members():
    assert decompress(1, gzip.compress(b"first ") + gzip.compress(b"second")) == b"first second"


def test_snappy_writes_xerial_framing_in_32k_blocks():
    data = _payload(100_000)
    packed = compress(2, data)
    assert packed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    blocks, position = [], 16
    while position < len(packed):
        (length,) = struct.unpack_from(">i", packed, position)
        blocks.append(snappy.uncompress(packed[position + 4 : position + 4 + length]))
        position += 4 + length
    assert position == len(packed)
    assert [len(b) for b in blocks] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_blocks():
    data = _payload(70_000)
    raw = snappy.compress(data)
    assert raw[:8] != XERIAL_MAGIC
    assert decompress(2, raw) == data


def test_snappy_raw_and_xerial_decode_to_the_same_bytes():
    data = b"v-snappy-1-7 " * 300
    xerial = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for chunk in (data[:1000], data[1000:]):
        block = snappy.compress(chunk)
        xerial += struct.pack(">i", len(block)) + block
    assert decompress(2, xerial) == decompress(2, snappy.compress(data)) == data


def test_snappy_xerial_header_alone_is_empty():
    assert decompress(2, XERIAL_MAGIC + struct.pack(">ii", 1, 1)) == b""


def test_lz4_writes_independent_blocks_without_content_size():
    packed = compress(3, _payload(200_000))
    assert packed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg = packed[4]
    assert flg & 0x20  # block independence: Java's KafkaLZ4BlockInputStream needs it
    assert not flg & 0x08 and not flg & 0x04  # no content size, no content checksum


def test_lz4_reads_every_frame():
    assert decompress(3, lz4.frame.compress(b"one ") + lz4.frame.compress(b"two")) == b"one two"


def test_zstd_reads_frames_without_content_size():
    data = _payload(300_000)
    stream = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    packed = stream.compress(data) + stream.flush()
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(packed)  # the one-shot API cannot size its output
    assert decompress(4, packed) == data


def test_zstd_reads_concatenated_frames():
    z = zstandard.ZstdCompressor()
    assert decompress(4, z.compress(b"left ") + z.compress(b"right")) == b"left right"


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 99])
def test_unknown_codec(codec):
    with pytest.raises(UnsupportedCompressionError) as compressing:
        compress(codec, b"x")
    with pytest.raises(UnsupportedCompressionError) as decompressing:
        decompress(codec, b"x")
    assert compressing.value.code == decompressing.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


GARBAGE = [b"", b"\xff", b"not compressed at all, just some text", bytes(range(256)) * 4]


@pytest.mark.parametrize("garbage", GARBAGE, ids=["empty", "ff", "text", "bytes"])
@pytest.mark.parametrize("codec", COMPRESSING)
def test_garbage_is_corrupt(codec, garbage):
    with pytest.raises(CorruptRecordError) as caught:
        decompress(codec, garbage)
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE
    assert CODEC_BY_NAME_BY_ID[codec] in str(caught.value)


@pytest.mark.parametrize("codec", COMPRESSING)
def test_truncated_is_corrupt(codec):
    packed = compress(codec, _payload(50_000))
    with pytest.raises(CorruptRecordError):
        decompress(codec, packed[: len(packed) - 5])


@pytest.mark.parametrize("codec", COMPRESSING)
def test_trailing_garbage_is_corrupt(codec):
    packed = compress(codec, _payload(5_000))
    with pytest.raises(CorruptRecordError):
        decompress(codec, packed + b"\x07garbage")


def test_gzip_bit_flip_fails_its_crc():
    packed = bytearray(compress(1, _payload(20_000)))
    packed[-6] ^= 0x01  # inside the CRC32 trailer
    with pytest.raises(CorruptRecordError, match="gzip"):
        decompress(1, packed)


def test_xerial_block_length_past_end_is_corrupt():
    bad = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 1000) + b"\x00" * 10
    with pytest.raises(CorruptRecordError, match="claims 1000 bytes"):
        decompress(2, bad)


def test_xerial_header_cut_short_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decompress(2, XERIAL_MAGIC + b"\x00\x00")
