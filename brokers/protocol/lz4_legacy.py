"""The LZ4 frame header checksum of magic-0 message sets (Kafka's KAFKA-3160).

An LZ4 frame starts with the magic number 0x184D2204 (little-endian), the FLG and BD bytes, an
optional 8-byte content size and one header-checksum byte HC, the second byte of XXH32 (seed 0) of
the descriptor::

    04 22 4D 18  FLG  BD  [content size]  HC

Kafka's first LZ4 writer (0.8/0.9, message format v0) hashed the magic number too (bytes 0 to HC
instead of 4 to HC). Kafka keeps that mistake for magic 0 so old clients can read what it writes,
and ignores HC when it reads magic 0; magic 1 uses the correct checksum both ways. The LZ4 library
checks HC, so magic-0 frames are patched here before decompressing and after compressing; the
codec itself stays in ``compression``.
"""
from __future__ import annotations

import struct

from brokers.protocol.errors import CorruptRecordError

FRAME_MAGIC = b"\x04\x22\x4d\x18"
_CONTENT_SIZE_FLAG = 0x08
_PRIME1, _PRIME2, _PRIME3, _PRIME4, _PRIME5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_MASK = 0xFFFFFFFF
_UINT32_LE = struct.Struct("<I")


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes (a frame descriptor is at most 15)."""
    if len(data) >= 16:
        raise ValueError("xxh32_short takes fewer than 16 bytes")
    h = (_PRIME5 + len(data)) & _MASK
    position = 0
    while position + 4 <= len(data):
        (word,) = _UINT32_LE.unpack_from(data, position)
        h = (_rotl((h + word * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        position += 4
    for byte in data[position:]:
        h = (_rotl((h + byte * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
    h ^= h >> 15
    h = (h * _PRIME2) & _MASK
    h ^= h >> 13
    h = (h * _PRIME3) & _MASK
    return h ^ (h >> 16)


def _hc_position(frame) -> int:
    if len(frame) < 7 or bytes(frame[:4]) != FRAME_MAGIC:
        raise CorruptRecordError("lz4 records section does not start with an LZ4 frame header")
    position = 6 + (8 if frame[4] & _CONTENT_SIZE_FLAG else 0)
    if len(frame) <= position:
        raise CorruptRecordError("lz4 frame header is cut short")
    return position


def header_checksum(frame, *, broken: bool) -> int:
    """HC of the frame header at the start of ``frame``: Kafka's magic-0 value when ``broken``."""
    position = _hc_position(frame)
    return (xxh32_short(bytes(frame[0 if broken else 4 : position])) >> 8) & 0xFF


def with_header_checksum(frame, *, broken: bool) -> bytes:
    """``frame`` with its first header's HC set to the correct value, or Kafka's magic-0 value when ``broken``.

    Only the first frame's header is patched: Kafka's writers put one frame in each wrapper message.
    """
    position = _hc_position(frame)
    patched = bytearray(frame)
    patched[position] = header_checksum(patched, broken=broken)
    return bytes(patched)
