"""Message sets of magic 0 and 1 (Kafka's LegacyRecord and AbstractLegacyRecordBatch): the record format
of Produce v0-2 and Fetch v0-3.

A message set is messages back to back, each (big-endian)::

     0  offset        int64
     8  message_size  int32   bytes after this field
    12  crc           uint32  CRC-32 (IEEE, zlib's) of bytes [16, end of message)
    16  magic         int8    0 or 1
    17  attributes    int8    bits 0-2 codec; bit 3 timestamp type (magic 1: 0 CreateTime, 1 LogAppendTime)
    18  timestamp     int64   magic 1 only; -1 is "no timestamp"
        key_length    int32   -1 for a null key
        key
        value_length  int32   -1 for a null value
        value

A message whose codec is not 0 is a *wrapper*: its value is a compressed message set of inner
messages, none of them compressed and all of the wrapper's magic. Magic 0 inner offsets are absolute;
magic 1 inner offsets are relative (0, 1, ...) and the wrapper's offset is the absolute offset of the
last inner message (0 from some librdkafka producers, read as "base 0"). The wrapper's timestamp is
the largest inner timestamp, or under LogAppendTime the append time, which then is every inner
message's timestamp. Snappy is Xerial-framed, as Kafka writes it; LZ4 is the frame format, with
Kafka's wrong header checksum under magic 0 (``lz4_legacy``).

Parsing stops, without an error, at a message cut short by the end of the buffer (a fetch's byte
limit cuts the last one; Kafka drops a truncated tail of a produced set too); a bad CRC is
CorruptRecordError (CORRUPT_MESSAGE), a well-formed message breaking a rule InvalidRecordError.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterable, Iterator, NamedTuple

from brokers.protocol import compression, lz4_legacy
from brokers.protocol.errors import CorruptRecordError, InvalidRecordError
from brokers.protocol.record_batch import (  # offset + size, and where magic sits: the same in every format
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_AT,
    TIMESTAMP_TYPE_BIT,
)

MAGIC_V0, MAGIC_V1 = 0, 1
NO_TIMESTAMP = -1
RECORD_OVERHEAD = {MAGIC_V0: 14, MAGIC_V1: 22}  # crc .. value_length: what message_size counts besides key and value

_PREFIX = struct.Struct(">qi")  # offset, message_size
_CRC = struct.Struct(">I")
_HEAD_V0 = struct.Struct(">bb")  # magic, attributes
_HEAD_V1 = struct.Struct(">bbq")  # magic, attributes, timestamp
_INT32 = struct.Struct(">i")


class Message(NamedTuple):
    """One message as a consumer sees it (inner messages with absolute offsets and resolved timestamps),
    or a wrapper as stored (``value`` is then its compressed inner set)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        return self.magic >= MAGIC_V1 and bool(self.attributes & TIMESTAMP_TYPE_BIT)


# --- reading -------------------------------------------------------------------------------------


def _read_bytes(buf, position: int, end: int, what: str, where: int) -> tuple[bytes | None, int]:
    if position + 4 > end:
        raise CorruptRecordError(f"message at position {where}: {what} length runs past its end")
    (length,) = _INT32.unpack_from(buf, position)
    position += 4
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"message at position {where}: {what} length {length}")
        return None, position
    if position + length > end:
        raise CorruptRecordError(f"message at position {where}: {what} of {length} bytes runs past its end")
    return bytes(buf[position : position + length]), position + length


def read_message(buf, position: int = 0) -> Message | None:
    """The message at ``position``, CRC checked; None if the buffer ends before it does."""
    available = len(buf) - position
    if available < LOG_OVERHEAD:
        return None
    offset, size = _PREFIX.unpack_from(buf, position)
    if size < RECORD_OVERHEAD[MAGIC_V0]:
        raise CorruptRecordError(f"message at position {position} has size {size}, below the minimum 14")
    end = position + LOG_OVERHEAD + size
    if end > len(buf):
        return None
    magic = buf[position + MAGIC_AT]
    if magic not in RECORD_OVERHEAD:
        raise CorruptRecordError(f"message at position {position} has magic {magic}, not 0 or 1")
    if size < RECORD_OVERHEAD[magic]:
        raise CorruptRecordError(f"message at position {position} has size {size}, below magic {magic}'s minimum")
    (stored,) = _CRC.unpack_from(buf, position + LOG_OVERHEAD)
    computed = zlib.crc32(memoryview(buf)[position + MAGIC_AT : end])
    if stored != computed:
        raise CorruptRecordError(
            f"message at offset {offset} (position {position}) has CRC {stored:#010x}, computed {computed:#010x}")
    if magic == MAGIC_V0:
        _, attributes = _HEAD_V0.unpack_from(buf, position + MAGIC_AT)
        timestamp, cursor = NO_TIMESTAMP, position + MAGIC_AT + _HEAD_V0.size
    else:
        _, attributes, timestamp = _HEAD_V1.unpack_from(buf, position + MAGIC_AT)
        cursor = position + MAGIC_AT + _HEAD_V1.size
    key, cursor = _read_bytes(buf, cursor, end, "key", position)
    value, cursor = _read_bytes(buf, cursor, end, "value", position)
    if cursor != end:
        raise CorruptRecordError(f"message at position {position} declares {size} bytes, its fields take fewer")
    return Message(offset, magic, attributes & 0xFF, timestamp, key, value)


def shallow_messages(buf) -> tuple[list[Message], int]:
    """The top-level messages of a set (wrappers undecompressed) and how many bytes they take;
    a message cut short at the end is left out."""
    messages = []
    position, end = 0, len(buf)
    while position < end:
        message = read_message(buf, position)
        if message is None:
            break
        messages.append(message)
        position += LOG_OVERHEAD + _PREFIX.unpack_from(buf, position)[1]
    return messages, position


def decompress_inner(codec: int, magic: int, data) -> bytes:
    """A wrapper's inner message set from its value."""
    if codec == compression.LZ4:
        data = lz4_legacy.with_header_checksum(data, broken=False) if magic == MAGIC_V0 else data
    return compression.decompress(codec, data)


def compress_inner(codec: int, magic: int, data) -> bytes:
    """A wrapper's value for the inner message set ``data``, as Kafka writes it for ``magic``."""
    compressed = compression.compress(codec, data)
    if codec == compression.LZ4 and magic == MAGIC_V0:
        return lz4_legacy.with_header_checksum(compressed, broken=True)
    return compressed


def inner_messages(wrapper: Message) -> list[Message]:
    """The inner messages of a wrapper with absolute offsets and timestamps (Kafka's DeepRecordsIterator)."""
    if wrapper.compression == compression.ZSTD:
        raise InvalidRecordError(f"magic {wrapper.magic} wrapper at offset {wrapper.offset} may not use zstd")
    if wrapper.value is None:
        raise InvalidRecordError(f"compressed wrapper at offset {wrapper.offset} has a null value")
    data = decompress_inner(wrapper.compression, wrapper.magic, wrapper.value)
    inner, used = shallow_messages(data)
    if used != len(data):
        raise CorruptRecordError(f"inner message set of the wrapper at offset {wrapper.offset} is cut short")
    if not inner:
        raise InvalidRecordError(f"compressed wrapper at offset {wrapper.offset} holds no messages")
    for message in inner:
        if message.magic != wrapper.magic:
            raise InvalidRecordError(
                f"inner message magic {message.magic} does not match wrapper magic {wrapper.magic}")
        if message.compression:
            raise InvalidRecordError("inner messages must not be compressed")
    if wrapper.magic == MAGIC_V0:
        return inner
    base = 0
    if wrapper.offset != 0:
        base = wrapper.offset - inner[-1].offset
        if base < 0:
            raise InvalidRecordError(
                f"wrapper offset {wrapper.offset} is below its last inner offset {inner[-1].offset}")
    append_time = wrapper.log_append_time
    return [m._replace(offset=base + m.offset,
                       timestamp=wrapper.timestamp if append_time else m.timestamp,
                       attributes=m.attributes | (TIMESTAMP_TYPE_BIT if append_time else 0))
            for m in inner]


def iter_messages(buf) -> Iterator[Message]:
    """Every message of a set as a consumer sees it: wrappers replaced by their inner messages."""
    for message in shallow_messages(buf)[0]:
        if message.compression:
            yield from inner_messages(message)
        else:
            yield message


# --- writing -------------------------------------------------------------------------------------


def encode_message(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
                   value: bytes | None) -> bytes:
    """One message with its size and CRC filled in."""
    if magic == MAGIC_V0:
        head = _HEAD_V0.pack(MAGIC_V0, attributes)
    elif magic == MAGIC_V1:
        head = _HEAD_V1.pack(MAGIC_V1, attributes, timestamp)
    else:
        raise ValueError(f"magic {magic} is not a message-set magic")
    body = b"".join((head, _length_prefixed(key), _length_prefixed(value)))
    return b"".join((_PREFIX.pack(offset, 4 + len(body)), _CRC.pack(zlib.crc32(body)), body))


def _length_prefixed(data: bytes | None) -> bytes:
    if data is None:
        return b"\xff\xff\xff\xff"
    return _INT32.pack(len(data)) + bytes(data)


def build_message_set(entries: Iterable[tuple[int, int, bytes | None, bytes | None]], magic: int, *,
                      codec: int = compression.NONE, log_append_time: int | None = None) -> bytes:
    """A message set of ``(offset, timestamp, key, value)`` entries, as Kafka's MemoryRecordsBuilder
    writes one for ``magic``: one message each, or with a codec one wrapper holding them all.

    ``log_append_time`` (magic 1) gives every message that timestamp and the LogAppendTime bit.
    Magic 0 drops the timestamps.
    """
    entries = list(entries)
    kind = TIMESTAMP_TYPE_BIT if log_append_time is not None and magic >= MAGIC_V1 else 0
    if log_append_time is not None:
        entries = [(offset, log_append_time, key, value) for offset, _, key, value in entries]
    if codec == compression.NONE:
        return b"".join(encode_message(offset, magic, kind, timestamp, key, value)
                        for offset, timestamp, key, value in entries)
    if not entries:
        return b""
    base = entries[0][0]
    relative = magic >= MAGIC_V1
    inner = b"".join(encode_message(offset - base if relative else offset, magic, kind, timestamp, key, value)
                     for offset, timestamp, key, value in entries)
    max_timestamp = max(timestamp for _, timestamp, _, _ in entries)
    value = compress_inner(codec, magic, inner)
    return encode_message(entries[-1][0], magic, codec | kind, max_timestamp, None, value)
