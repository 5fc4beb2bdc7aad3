"""RecordBatch v2: a zero-copy view over the batch headers in a buffer.

On-wire and on-disk layout of one batch (big-endian; Kafka's DefaultRecordBatch)::

     0  base_offset             int64   rewritten by the leader on append
     8  batch_length            int32   bytes after this field (batch size = 12 + batch_length)
    12  partition_leader_epoch  int32   rewritten by the leader on append
    16  magic                   int8    always 2 here
    17  crc                     uint32  CRC32C of bytes [21, end of batch)
    21  attributes              int16   bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
    23  last_offset_delta       int32
    27  base_timestamp          int64
    35  max_timestamp           int64
    43  producer_id             int64
    51  producer_epoch          int16
    53  base_sequence           int32
    57  records_count           int32
    61  records ...             (compressed as a whole when codec != 0)

Because ``base_offset`` and ``partition_leader_epoch`` sit outside the CRC, the broker assigns offsets
by rewriting 12 bytes per batch and never decodes, recompresses or re-checksums the records. Everything
here reads headers only; record-level work lives in ``record.py``.
"""
from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

import crc32c as _crc32c

from brokers.protocol.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
assert HEADER_SIZE == 61
LOG_OVERHEAD = 12  # base_offset + batch_length
MAGIC_V2 = 2

BASE_OFFSET_AT = 0
LENGTH_AT = 8
LEADER_EPOCH_AT = 12
MAGIC_AT = 16
CRC_AT = 17
ATTRIBUTES_AT = 21
MAX_TIMESTAMP_AT = 35
CRC_START = ATTRIBUTES_AT

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_MAX_CODEC = max(CODEC_NAMES)


def crc32c(data) -> int:
    return _crc32c.crc32c(data)


class BatchHeader(NamedTuple):
    """The 61-byte header of one batch and where it starts in its buffer (or file).

    A NamedTuple: built straight from ``struct.unpack_from`` with no per-field Python work, since
    one is made per batch on the append path.
    """

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.compression, f"unknown({self.compression})")

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_BIT else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


_make_header = BatchHeader._make


def batch_size_at(buf, position: int = 0) -> int | None:
    """Total size of the batch starting at ``position`` from its length field; None if under 12 bytes."""
    if len(buf) - position < LOG_OVERHEAD:
        return None
    return LOG_OVERHEAD + _INT32.unpack_from(buf, position + LENGTH_AT)[0]


def whole_batches(records: bytes | None) -> bytes:
    """The prefix of ``records`` made of complete batches (a read's or a leader's last batch may be cut short)."""
    if not records:
        return b""
    end, total = 0, len(records)
    while True:
        size = batch_size_at(records, end)
        if size is None or end + size > total:
            break
        end += size
    return records if end == total else records[:end]


def read_header(buf, position: int = 0, file_position: int | None = None, room: int | None = None) -> BatchHeader:
    """Parse the header at ``position``; raise CorruptRecordError if it is not a v2 header that fits.

    ``file_position``, when given, is recorded as the header's position instead of ``position``
    (for buffers that are a chunk of a file). ``room`` is how many bytes the whole batch may take
    (default: the rest of ``buf``); a header-only scan of a file passes the bytes left in the file.
    """
    available = len(buf) - position
    if available < LOG_OVERHEAD:
        raise CorruptRecordError(f"{available} bytes at position {position} are too few for a batch")
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"batch header at position {position} is cut short ({available} bytes)")
    header = _make_header((position if file_position is None else file_position,) + HEADER.unpack_from(buf, position))
    where = header.position
    if header.magic != MAGIC_V2:
        raise CorruptRecordError(f"batch at position {where} has magic {header.magic}, only v2 is supported")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch at position {where} has length {header.batch_length}, below the header")
    room = available if room is None else room
    if header.size > room:
        raise CorruptRecordError(f"batch at position {where} claims {header.size} bytes but only {room} remain")
    return header


def check_crc(buf, header: BatchHeader, position: int | None = None) -> None:
    """Check the CRC32C of ``header``'s batch, found in ``buf`` at ``position`` (default: header.position)."""
    start = header.position if position is None else position
    actual = _crc32c.crc32c(memoryview(buf)[start + CRC_START : start + header.size])
    if actual != header.crc:
        raise CorruptRecordError(
            f"batch at offset {header.base_offset} (position {header.position}) has CRC {header.crc:#010x}, "
            f"computed {actual:#010x}"
        )


def check_counts(header: BatchHeader) -> None:
    """A producer's batch holds exactly ``last_offset_delta + 1`` records."""
    if header.records_count <= 0 or header.last_offset_delta != header.records_count - 1:
        raise InvalidRecordError(
            f"batch at position {header.position} has {header.records_count} records but last offset delta "
            f"{header.last_offset_delta}"
        )


def iter_batches(buf, start: int = 0, end: int | None = None, *, verify_crc: bool = False) -> Iterator[BatchHeader]:
    """Yield the header of every batch in ``buf[start:end]``; raise at the first one that is malformed."""
    end = len(buf) if end is None else end
    view = memoryview(buf)[:end]
    position = start
    while position < end:
        header = read_header(view, position)
        if verify_crc:
            check_crc(view, header)
        yield header
        position = header.end


class BatchSetInfo(NamedTuple):
    """What a log needs to know about a validated set of batches, gathered from headers only."""

    headers: tuple[BatchHeader, ...]
    size: int
    records_count: int
    max_timestamp: int
    shallow_offset_delta_of_max_timestamp: int  # offset delta (from the first batch's base) of that batch's last record
    max_batch_size: int

    @property
    def offsets_count(self) -> int:
        """Offsets the set spans once numbered consecutively (sum of last_offset_delta + 1)."""
        return sum(h.last_offset_delta + 1 for h in self.headers)


def validate_batches(buf, *, producer: bool = True) -> BatchSetInfo:
    """Validate a produce request's record set: v2 magic, lengths, CRC32C, codec and, for
    producers, counts and no control batches.

    Rejects the set whole: one bad batch raises CorruptRecordError, InvalidRecordError or
    UnsupportedCompressionError. This runs once per append, so it is one flat loop.
    """
    end = len(buf)
    if end == 0:
        raise InvalidRecordError("empty record set")
    view = memoryview(buf)
    crc = _crc32c.crc32c
    headers = []
    records = max_size = delta = max_ts_delta = 0
    max_ts = -1
    position = 0
    while position < end:
        header = read_header(view, position)
        size = LOG_OVERHEAD + header.batch_length
        if crc(view[position + CRC_START : position + size]) != header.crc:
            check_crc(view, header)  # raises with the details
        attributes = header.attributes
        if attributes & COMPRESSION_MASK > _MAX_CODEC:
            raise UnsupportedCompressionError(f"batch at position {position} uses unknown codec {attributes & COMPRESSION_MASK}")
        if producer:
            check_counts(header)
            if attributes & CONTROL_BIT:
                raise InvalidRecordError("producers may not send control batches")
        headers.append(header)
        records += header.records_count
        delta += header.last_offset_delta + 1
        if header.max_timestamp > max_ts:
            max_ts, max_ts_delta = header.max_timestamp, delta - 1
        max_size = max(max_size, size)
        position += size
    return BatchSetInfo(tuple(headers), end, records, max_ts, max_ts_delta, max_size)


def assign_offsets(buf, info: BatchSetInfo, first_offset: int, leader_epoch: int) -> tuple[BatchHeader, ...]:
    """Rewrite base_offset and partition_leader_epoch of every batch in place; return the new headers.

    ``buf`` must be writable (the bytearray the listener read from the socket). The CRC does not
    cover these fields, so it stays valid.
    """
    offset = first_offset
    pack64, pack32, _make = _INT64.pack_into, _INT32.pack_into, _make_header
    headers = []
    for h in info.headers:
        pack64(buf, h.position + BASE_OFFSET_AT, offset)
        pack32(buf, h.position + LEADER_EPOCH_AT, leader_epoch)
        headers.append(_make((h[0], offset, h[2], leader_epoch) + h[4:]))
        offset += h.last_offset_delta + 1
    return tuple(headers)


def stamp_max_timestamp(buf, header: BatchHeader, max_timestamp: int, attributes: int | None = None) -> BatchHeader:
    """Write a batch's max_timestamp (and its attributes, when given) into ``buf`` (writable) and recompute
    its CRC32C: both fields are inside it."""
    if attributes is None:
        attributes = header.attributes
    else:
        _INT16.pack_into(buf, header.position + ATTRIBUTES_AT, attributes)
    _INT64.pack_into(buf, header.position + MAX_TIMESTAMP_AT, max_timestamp)
    crc = _crc32c.crc32c(memoryview(buf)[header.position + CRC_START : header.end])
    _UINT32.pack_into(buf, header.position + CRC_AT, crc)
    return header._replace(attributes=attributes, max_timestamp=max_timestamp, crc=crc)


def set_log_append_time(buf, info: BatchSetInfo, now_ms: int) -> BatchSetInfo:
    """``message.timestamp.type=LogAppendTime``: stamp every batch's max_timestamp with ``now_ms`` and set
    the timestamp-type bit."""
    headers = [stamp_max_timestamp(buf, header, now_ms, header.attributes | TIMESTAMP_TYPE_BIT)
               for header in info.headers]
    return info._replace(headers=tuple(headers), max_timestamp=now_ms,
                         shallow_offset_delta_of_max_timestamp=info.offsets_count - 1)
