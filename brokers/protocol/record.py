"""Records inside a RecordBatch v2 (Kafka's DefaultRecord), and whole batches built from them.

A records section (after the 61-byte batch header; compressed as a whole when the codec is not 0)
is ``records_count`` records back to back, each::

    length            varint   bytes of the record after this field
    attributes        int8     unused, 0
    timestamp_delta   varlong  from the batch's base_timestamp
    offset_delta      varint   from the batch's base_offset
    key_length        varint   -1 for a null key
    key               bytes
    value_length      varint   -1 for a null value
    value             bytes
    header_count      varint
    headers           header_count x { key_length varint, key UTF-8 bytes,
                                       value_length varint (-1 for null), value bytes }

Varints and varlongs are zigzag-encoded (``(n << 1) ^ (n >> 31|63)``) base-128 little-endian groups,
at most 5 bytes for an int32 and 10 for an int64, as in protobuf's sint32/sint64.
Header layout and batch-level helpers are in ``records.py``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Iterator

from brokers.protocol.compression import NONE, compress, decompress
from brokers.protocol.errors import CorruptRecordError
from brokers.protocol.record_batch import (
    CONTROL_BIT,
    CRC_AT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    crc32c,
    iter_batches,
)

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_VARINT_MAX_BYTES = 5
_VARLONG_MAX_BYTES = 10
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Record:
    """One record as stored: offset and timestamp relative to its batch."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """One record as a consumer sees it: absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


# --- varints -------------------------------------------------------------------------------------


def _write_unsigned(out: bytearray, z: int) -> None:
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def encode_varint(value: int) -> bytes:
    """Zigzag varint of an int32 (1-5 bytes)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{value} does not fit a varint (int32)")
    out = bytearray()
    _write_unsigned(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    """Zigzag varlong of an int64 (1-10 bytes)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{value} does not fit a varlong (int64)")
    out = bytearray()
    _write_unsigned(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)
    return bytes(out)


def _read_unsigned(buf, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    z = 0
    shift = 0
    end = len(buf)
    for i in range(pos, pos + max_bytes):
        if i >= end:
            raise CorruptRecordError(f"{what} at byte {pos} is cut short")
        b = buf[i]
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return z, i + 1
        shift += 7
    raise CorruptRecordError(f"{what} at byte {pos} is longer than {max_bytes} bytes")


def _short_varint(buf, pos: int) -> tuple[int, int] | None:
    """The zigzag value of a one- or two-byte varint at ``pos`` (every length and delta of a record
    under 8 KiB), or None to take the general path."""
    if pos + 1 < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        b2 = buf[pos + 1]
        if b2 < 0x80:
            z = (b & 0x7F) | (b2 << 7)
            return (z >> 1) ^ -(z & 1), pos + 2
    return None


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag varint at ``pos``; return ``(value, position after it)``."""
    short = _short_varint(buf, pos)
    if short is not None:
        return short
    z, pos = _read_unsigned(buf, pos, _VARINT_MAX_BYTES, "varint")
    if z > 0xFFFFFFFF:
        raise CorruptRecordError(f"varint ending at byte {pos} overflows an int32")
    return (z >> 1) ^ -(z & 1), pos


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag varlong at ``pos``; return ``(value, position after it)``."""
    short = _short_varint(buf, pos)
    if short is not None:
        return short
    z, pos = _read_unsigned(buf, pos, _VARLONG_MAX_BYTES, "varlong")
    if z > 0xFFFFFFFFFFFFFFFF:
        raise CorruptRecordError(f"varlong ending at byte {pos} overflows an int64")
    return (z >> 1) ^ -(z & 1), pos


# --- records -------------------------------------------------------------------------------------


def _read_bytes(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buf, pos)
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"{what} at byte {pos} has negative length {length}")
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"{what} at byte {pos} claims {length} bytes past the end of its record")
    return buf[pos : pos + length], pos + length


def _read_headers(buf: bytes, pos: int, end: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = decode_varint(buf, pos)
    if count < 0:
        raise CorruptRecordError(f"record header count {count} is negative")
    headers = []
    for _ in range(count):
        key, pos = _read_bytes(buf, pos, end, "header key")
        if key is None:
            raise CorruptRecordError("record header key is null")
        try:
            name = key.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptRecordError(f"record header key is not UTF-8: {exc}") from exc
        value, pos = _read_bytes(buf, pos, end, "header value")
        headers.append((name, value))
    return tuple(headers), pos


def _read_record(buf: bytes, pos: int) -> tuple[Record, int]:
    start = pos
    length, pos = decode_varint(buf, pos)
    body, end = pos, pos + length
    if length < 1 or end > len(buf):
        raise CorruptRecordError(f"record at byte {start} claims {length} bytes, {len(buf) - pos} remain")
    attributes = buf[pos]
    timestamp_delta, pos = decode_varlong(buf, pos + 1)
    offset_delta, pos = decode_varint(buf, pos)
    key, pos = _read_bytes(buf, pos, end, "record key")
    value, pos = _read_bytes(buf, pos, end, "record value")
    headers, pos = _read_headers(buf, pos, end)
    if pos != end:
        raise CorruptRecordError(f"record at byte {start} declares {length} bytes but its fields take {pos - body}")
    return Record(offset_delta, timestamp_delta, key, value, headers, attributes), end


def record_timestamps(buf, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record in a batch, skipping keys, values and headers unread.

    For ListOffsets by timestamp, which only needs the first record at or after a time.
    """
    section = memoryview(buf)[header.position + HEADER_SIZE : header.end]
    data = decompress(header.compression, section) if header.compression else bytes(section)
    log_append = header.attributes & TIMESTAMP_TYPE_BIT
    pos, end = 0, len(data)
    for _ in range(header.records_count):
        if pos >= end:
            raise CorruptRecordError(f"batch at offset {header.base_offset} ends before its {header.records_count} records")
        length, body = decode_varint(data, pos)
        timestamp_delta, after = decode_varlong(data, body + 1)
        offset_delta, _ = decode_varint(data, after)
        timestamp = header.max_timestamp if log_append else header.base_timestamp + timestamp_delta
        yield header.base_offset + offset_delta, timestamp
        pos = body + length


def decode_records(data, count: int | None = None) -> list[Record]:
    """Decode an uncompressed records section holding exactly ``count`` records (None: until it ends)."""
    buf = data if isinstance(data, bytes) else bytes(data)
    if count is not None and count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    records = []
    pos = 0
    end = len(buf)
    while pos < end and (count is None or len(records) < count):
        record, pos = _read_record(buf, pos)
        records.append(record)
    if count is not None and len(records) != count:
        raise CorruptRecordError(f"records section ({end} bytes) holds {len(records)} records, batch says {count}")
    if pos != end:
        raise CorruptRecordError(f"records section has {end - pos} bytes after its {len(records)} records")
    return records


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += b"\x01"  # zigzag -1
    else:
        _write_unsigned(out, len(data) << 1)
        out += data


def _encode_record(record: Record) -> bytearray:
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += encode_varlong(record.timestamp_delta)
    body += encode_varint(record.offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    _write_unsigned(body, len(record.headers) << 1)
    for name, value in record.headers:
        _write_bytes(body, name.encode("utf-8"))
        _write_bytes(body, value)
    out = bytearray()
    _write_unsigned(out, len(body) << 1)
    out += body
    return out


def encode_records(records: Iterable[Record]) -> bytes:
    """The uncompressed records section for ``records``, in the order given."""
    out = bytearray()
    for record in records:
        out += _encode_record(record)
    return bytes(out)


# --- batches -------------------------------------------------------------------------------------


def batch_records(buf, header: BatchHeader, position: int | None = None) -> list[Record]:
    """Decompress and decode the records of ``header``'s batch, found in ``buf`` at ``position``
    (default: header.position, as for ``records.check_crc``). The CRC is not checked here."""
    start = header.position if position is None else position
    section = memoryview(buf)[start + HEADER_SIZE : start + header.size]
    return decode_records(decompress(header.compression, section), header.records_count)


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int = 0,
    base_timestamp: int,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    codec: int = NONE,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type_log_append: bool = False,
    transactional: bool = False,
    control: bool = False,
) -> bytearray:
    """A complete v2 batch of ``records`` with its batch_length and CRC32C filled in.

    ``max_timestamp`` defaults to the largest record timestamp, ``last_offset_delta`` to the largest
    offset delta (pass the original batch's value to keep compaction gaps). A batch with no records
    is written uncompressed, as Kafka's empty batches are, and needs an explicit ``last_offset_delta``.
    """
    records = list(records)
    if records:
        if max_timestamp is None:
            max_timestamp = base_timestamp + max(r.timestamp_delta for r in records)
        if last_offset_delta is None:
            last_offset_delta = max(r.offset_delta for r in records)
        section = compress(codec, encode_records(records))
    else:
        if last_offset_delta is None:
            raise ValueError("an empty batch needs an explicit last_offset_delta")
        max_timestamp = base_timestamp if max_timestamp is None else max_timestamp
        codec, section = NONE, b""
    attributes = codec | (TIMESTAMP_TYPE_BIT if timestamp_type_log_append else 0)
    attributes |= (TRANSACTIONAL_BIT if transactional else 0) | (CONTROL_BIT if control else 0)
    batch = bytearray(HEADER_SIZE + len(section))
    fields = (base_offset, len(batch) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0, attributes)
    fields += (last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence)
    try:
        HEADER.pack_into(batch, 0, *fields, len(records))
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from exc
    batch[HEADER_SIZE:] = section
    _CRC.pack_into(batch, CRC_AT, crc32c(memoryview(batch)[CRC_START:]))
    return batch


def iter_records(
    buf, *, include_control: bool = False, verify_crc: bool = True
) -> Iterator[ConsumerRecord]:
    """Every record of every batch in ``buf``, with absolute offsets and timestamps.

    Control batches (transaction markers) are skipped unless ``include_control``; in a LogAppendTime
    batch every record's timestamp is the batch's max_timestamp.
    """
    for header in iter_batches(buf, verify_crc=verify_crc):
        if header.is_control and not include_control:
            continue
        log_append = header.attributes & TIMESTAMP_TYPE_BIT
        for record in batch_records(buf, header):
            timestamp = header.max_timestamp if log_append else header.base_timestamp + record.timestamp_delta
            yield ConsumerRecord(
                header.base_offset + record.offset_delta, timestamp, record.key, record.value, record.headers
            )
