"""Kafka's record-batch compression codecs, by the codec id in attributes bits 0-2.

====  ======  ==================================================================================
 id   name    bytes of a compressed records section
====  ======  ==================================================================================
  0   none    the records themselves
  1   gzip    one or more concatenated gzip members (RFC 1952); we write one member, level 6 and
              mtime 0 like Java's ``GZIPOutputStream``
  2   snappy  either xerial framing (Java ``SnappyOutputStream``, kafka-python, aiokafka)::

                  b"\\x82SNAPPY\\x00"  int32 version (1)  int32 min-compatible version (1)
                  { int32 length  <length bytes of one raw snappy block> } ...

              or one plain raw snappy block (librdkafka: confluent-kafka, kcat). We write xerial
              framing with 32 KiB input blocks, as the Java client does; every client reads it.
              Raw snappy cannot begin with the xerial magic (it would start with a copy of
              bytes not yet written), so the two are told apart by the first 8 bytes.
  3   lz4     one or more LZ4 frames (lz4 frame format, not the legacy block format); we write
              independent 64 KiB blocks, no content size and no content checksum, like Java
  4   zstd    one or more zstd frames; the frame header may omit the content size (librdkafka
              and Java stream it), so decompression always streams
====  ======  ==================================================================================

Failures to decompress raise CorruptRecordError; a codec id outside 0-4 raises
UnsupportedCompressionError. This is the only module that imports the codec libraries.
"""
from __future__ import annotations

import struct
import zlib

import lz4.frame
import snappy
import zstandard

from brokers.protocol.errors import CorruptRecordError, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_BY_NAME: dict[str, int] = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

GZIP_LEVEL = 6  # java.util.zip.Deflater.DEFAULT_COMPRESSION
ZSTD_LEVEL = 3  # Kafka's compression.zstd.level default
_GZIP_WBITS = 31  # gzip container only

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)  # 16
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

_ZSTD_COMPRESSOR = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()


def compress(codec: int, data) -> bytes:
    """Compress a records section (any bytes-like object) with ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return zlib.compress(data, GZIP_LEVEL, wbits=_GZIP_WBITS)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False, store_size=False
        )
    if codec == ZSTD:
        return _ZSTD_COMPRESSOR.compress(data)
    raise UnsupportedCompressionError(f"unknown compression codec {codec}")


def decompress(codec: int, data) -> bytes:
    """Decompress a records section written with ``codec``; raise CorruptRecordError if it is not valid."""
    if codec == NONE:
        return bytes(data)
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise UnsupportedCompressionError(f"unknown compression codec {codec}")
    try:
        return decoder(data)
    except CorruptRecordError:
        raise
    except _LIBRARY_ERRORS as exc:
        name = _NAMES[codec]
        raise CorruptRecordError(f"{name} records section ({len(data)} bytes) does not decompress: {exc}") from exc


def _all_frames(data, new_frame, name: str) -> bytes:
    """Every frame (gzip member, LZ4 frame, zstd frame) in ``data``, concatenated, the way Java's
    streams read them; a library's one-shot decompress would stop after the first frame."""
    out = []
    rest = data
    while True:
        frame = new_frame()
        out.append(frame.decompress(rest))
        if not frame.eof:
            raise CorruptRecordError(f"{name} records section ({len(data)} bytes) is truncated")
        rest = frame.unused_data
        if not rest:
            return b"".join(out)


def _gunzip(data) -> bytes:
    return _all_frames(data, lambda: zlib.decompressobj(_GZIP_WBITS), "gzip")


def _xerial_compress(data) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK):
        block = snappy.compress(view[start : start + _XERIAL_BLOCK])
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _unsnappy(data) -> bytes:
    """Xerial-framed or raw snappy, told apart by the xerial magic."""
    view = memoryview(data)
    if view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return snappy.uncompress(view)
    if len(view) < _XERIAL_HEADER_SIZE:
        raise CorruptRecordError(f"snappy xerial header is cut short ({len(view)} bytes)")
    out = []
    position = _XERIAL_HEADER_SIZE
    end = len(view)
    while position < end:
        if end - position < 4:
            raise CorruptRecordError(f"snappy xerial block length at byte {position} is cut short")
        (length,) = _INT32.unpack_from(view, position)
        position += 4
        if length < 0 or length > end - position:
            raise CorruptRecordError(
                f"snappy xerial block at byte {position} claims {length} bytes, {end - position} remain"
            )
        out.append(snappy.uncompress(view[position : position + length]))
        position += length
    return b"".join(out)


def _unlz4(data) -> bytes:
    return _all_frames(data, lz4.frame.LZ4FrameDecompressor, "lz4")


def _unzstd(data) -> bytes:
    """Streamed, so that frames without a content size (librdkafka's) work."""
    return _all_frames(data, _ZSTD_DECOMPRESSOR.decompressobj, "zstd")


_DECODERS = {GZIP: _gunzip, SNAPPY: _unsnappy, LZ4: _unlz4, ZSTD: _unzstd}
_NAMES = {code: name for name, code in CODEC_BY_NAME.items()}
_LIBRARY_ERRORS = (zlib.error, snappy.UncompressError, RuntimeError, zstandard.ZstdError, ValueError)
