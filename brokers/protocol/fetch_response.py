"""The Fetch response, v0-v12, encoded by hand as a list of segments.

Record bytes are never copied: the encoder emits the fixed parts as ``bytes`` and passes each
partition's records object through untouched, so the I/O layer can write a memoryview or
``sendfile`` a file range. Every records length is known up front (``len()``, or ``.size`` for a file
range), so the size prefix is computed before anything is sent (reference/wire-protocol.md section 5).

Wire layout (big-endian; size prefix and response header v0 first)::

    int32 size, int32 correlation_id
    int32 throttle_time_ms
    v7+: int16 error_code, int32 session_id
    int32 topic count, per topic:
        int16-length string name
        int32 partition count, per partition:
            int32 partition_index, int16 error_code, int64 high_watermark
            int64 last_stable_offset
            v5+: int64 log_start_offset
            int32 aborted_transactions count (-1: null), per aborted transaction:
                int64 producer_id, int64 first_offset
            v11: int32 preferred_read_replica
            int32 records length, then the records bytes      <- the records segment

v0-v3 (``encode_legacy_fetch_response``) carry the magic 0/1 message sets of a down-converted read::

    int32 size, int32 correlation_id
    v1+: int32 throttle_time_ms
    int32 topic count, per topic:
        int16-length string name
        int32 partition count, per partition:
            int32 partition_index, int16 error_code, int64 high_watermark
            int32 records length, then the message set bytes

v12 is flexible (KIP-482): response header v1 (a tagged-field section after the correlation id),
compact arrays and strings (unsigned varint length + 1), and a tagged-field section after the body,
each topic and each partition::

    int32 size, int32 correlation_id, tagged fields (0x00)
    int32 throttle_time_ms, int16 error_code, int32 session_id
    uvarint topic count + 1, per topic:
        uvarint name length + 1, name
        uvarint partition count + 1, per partition:
            int32 partition_index, int16 error_code, int64 high_watermark
            int64 last_stable_offset, int64 log_start_offset
            uvarint aborted_transactions count + 1 (0: null), per aborted transaction:
                int64 producer_id, int64 first_offset, tagged fields (0x00)
            int32 preferred_read_replica
            uvarint records length + 1, then the records bytes  <- the records segment
            tagged fields: count, then per tag present (in tag order) uvarint tag, uvarint size, value:
                0 diverging_epoch (KIP-320): int32 epoch, int64 end_offset, 0x00
                1 current_leader: int32 leader_id, int32 leader_epoch, 0x00
                (2 snapshot_id is KRaft's: never sent)
        tagged fields (0x00)
    tagged fields (0x00)

A tagged field is sent only when it differs from its default (Kafka's generated writer), so a
partition without divergence and without a leader hint ends in one 0x00.

Records ``None`` is written as an empty records field (length 0; in v12 uvarint 1), not as null (-1;
in v12 uvarint 0): Kafka itself sends empty records, and librdkafka rejects a negative MessageSetSize
as a parse failure (in v12 too: it reads the compact length as a count and fails on -1). A null
aborted_transactions (-1) is what Kafka sends for READ_UNCOMMITTED reads; every client accepts it
(librdkafka reads the transactions only when the count is > 0). READ_COMMITTED reads carry a list,
possibly empty: the (producer id, first offset) of every aborted transaction overlapping the read. kio encodes the same fields the same
way, and the tests compare against it byte for byte.
"""
from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, NamedTuple

from brokers.protocol.framing import uvarint

MIN_VERSION = 4
MAX_VERSION = 12
NULL_ARRAY = -1
FIRST_FLEXIBLE_VERSION = 12

_INT32 = struct.Struct(">i")
_TOP_V4 = struct.Struct(">iii")  # correlation_id, throttle_time_ms, topic count
_TOP_V7 = struct.Struct(">iihii")  # correlation_id, throttle_time_ms, error_code, session_id, topic count
_TOPIC = struct.Struct(">h")
_PARTITION_V4 = struct.Struct(">ihqq")  # index, error, high watermark, LSO
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... + log_start_offset
_ABORTED = struct.Struct(">qq")  # producer_id, first_offset
LEGACY_MAX_VERSION = 3
_TOP_V0 = struct.Struct(">ii")  # correlation_id, topic count
_PARTITION_V0 = struct.Struct(">ihqi")  # index, error, high watermark, records length


class FetchPartitionData(NamedTuple):
    """One partition of a Fetch response.

    ``records`` is None (sent as empty), a bytes-like object (bytes, bytearray, memoryview) or a
    file range: any object with a ``size`` attribute, which the I/O layer knows how to send.
    """

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: Any
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None  # v12 (KIP-320): (epoch, end_offset)
    current_leader: tuple[int, int] | None = None  # v12: (leader_id, leader_epoch)
    aborted_transactions: list[tuple[int, int]] | None = None  # v4+: (producer_id, first_offset); None is null


def records_size(records: Any) -> int:
    """How many bytes ``records`` puts on the wire."""
    if records is None:
        return 0
    if isinstance(records, (bytes, bytearray)):
        return len(records)
    if isinstance(records, memoryview):
        return records.nbytes
    size = getattr(records, "size", None)
    return len(records) if size is None else size


def segments_size(segments: list) -> int:
    """Bytes on the wire for a segment list, size prefix included."""
    return sum(map(records_size, segments))


@lru_cache(maxsize=4096)
def _topic_name(name: str) -> bytes:
    encoded = name.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise ValueError(f"topic name of {len(encoded)} bytes does not fit an int16 length")
    return _TOPIC.pack(len(encoded)) + encoded


def _aborted(aborted: list[tuple[int, int]] | None) -> bytes:
    if aborted is None:
        return _INT32.pack(NULL_ARRAY)
    return _INT32.pack(len(aborted)) + b"".join(_ABORTED.pack(pid, first) for pid, first in aborted)


def _compact_aborted(aborted: list[tuple[int, int]] | None) -> bytes:
    if aborted is None:
        return b"\x00"
    return uvarint(len(aborted) + 1) + b"".join(_ABORTED.pack(pid, first) + NO_TAGGED_FIELDS for pid, first in aborted)


def _partition(version: int, p: FetchPartitionData, size: int) -> bytes:
    if version >= 5:
        fixed = _PARTITION_V5.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                                   p.log_start_offset)
    else:
        fixed = _PARTITION_V4.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset)
    fixed += _aborted(p.aborted_transactions)
    if version >= 11:
        fixed += _INT32.pack(p.preferred_read_replica)
    return fixed + _INT32.pack(size)


def _top(version: int, correlation_id: int, throttle_time_ms: int, error_code: int, session_id: int,
         topics: int) -> bytes:
    if version >= 7:
        return _TOP_V7.pack(correlation_id, throttle_time_ms, error_code, session_id, topics)
    return _TOP_V4.pack(correlation_id, throttle_time_ms, topics)


def _finish(first: bytearray, fixed: bytearray, segments: list, total: int) -> list:
    """Close a segment list: the fixed bytes after the last records, then the size prefix (the bytes after
    it: ``total`` so far plus that tail) patched into the first segment."""
    if fixed:
        total += len(fixed)
        segments.append(fixed if fixed is first else bytes(fixed))
    _INT32.pack_into(first, 0, total - 4)
    segments[0] = bytes(first)
    return segments


def encode_fetch_response(
    version: int,
    correlation_id: int,
    partitions_by_topic: list[tuple[str, list[FetchPartitionData]]],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
) -> list:
    """The framed Fetch response as segments in wire order.

    Fixed parts are ``bytes`` (the first one starts with the size prefix); between them, each
    non-empty records object is passed through as given. Joining the segments (with file ranges
    replaced by their bytes) gives exactly the bytes kio would encode. Empty records add no segment.
    """
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Fetch v{version} is not encoded here (only v{MIN_VERSION}-v{MAX_VERSION})")
    if version >= FIRST_FLEXIBLE_VERSION:
        return _encode_flexible(correlation_id, partitions_by_topic, throttle_time_ms, error_code, session_id)
    segments: list = []
    fixed = bytearray(4)  # the size prefix, patched once the total is known
    fixed += _top(version, correlation_id, throttle_time_ms, error_code, session_id, len(partitions_by_topic))
    first = fixed
    total = 0
    for topic, partitions in partitions_by_topic:
        fixed += _topic_name(topic)
        fixed += _INT32.pack(len(partitions))
        for partition in partitions:
            size = records_size(partition.records)
            fixed += _partition(version, partition, size)
            if size:
                total += len(fixed) + size
                segments.append(fixed if fixed is first else bytes(fixed))
                segments.append(partition.records)
                fixed = bytearray()
    return _finish(first, fixed, segments, total)


def encode_legacy_fetch_response(
    version: int,
    correlation_id: int,
    partitions_by_topic: list[tuple[str, list[FetchPartitionData]]],
    *,
    throttle_time_ms: int = 0,
) -> list:
    """The framed Fetch v0-v3 response as segments, like ``encode_fetch_response``: no last stable
    offset, log start offset, aborted transactions or error/session at the top (those came in v4-v7);
    ``throttle_time_ms`` from v1."""
    if not 0 <= version <= LEGACY_MAX_VERSION:
        raise ValueError(f"Fetch v{version} is not a legacy version (v0-v{LEGACY_MAX_VERSION})")
    fixed = bytearray(4)
    if version >= 1:
        fixed += _TOP_V4.pack(correlation_id, throttle_time_ms, len(partitions_by_topic))
    else:
        fixed += _TOP_V0.pack(correlation_id, len(partitions_by_topic))
    first, segments, total = fixed, [], 0
    for topic, partitions in partitions_by_topic:
        fixed += _topic_name(topic)
        fixed += _INT32.pack(len(partitions))
        for p in partitions:
            size = records_size(p.records)
            fixed += _PARTITION_V0.pack(p.partition_index, p.error_code, p.high_watermark, size)
            if size:
                total += len(fixed) + size
                segments += [fixed if fixed is first else bytes(fixed), p.records]
                fixed = bytearray()
    return _finish(first, fixed, segments, total)


# -- v12: flexible ---------------------------------------------------------------------------------
_TOP_V12 = struct.Struct(">ibihi")  # correlation_id, header tags (0), throttle_time_ms, error_code, session_id
_PARTITION_V12 = struct.Struct(">ihqqq")  # index, error, HW, LSO, log start
_EPOCH_END_OFFSET = struct.Struct(">iqb")  # epoch, end_offset, the struct's own tags (0)
_LEADER_ID_AND_EPOCH = struct.Struct(">iib")  # leader_id, leader_epoch, the struct's own tags (0)
NO_TAGGED_FIELDS = b"\x00"
DIVERGING_EPOCH_TAG, CURRENT_LEADER_TAG = 0, 1




@lru_cache(maxsize=4096)
def _compact_topic_name(name: str) -> bytes:
    encoded = name.encode("utf-8")
    if len(encoded) > 0x7FFF:
        raise ValueError(f"topic name of {len(encoded)} bytes does not fit a string field")
    return uvarint(len(encoded) + 1) + encoded


def partition_tagged_fields(p: FetchPartitionData) -> bytes:
    """The partition's tagged-field section: diverging_epoch (tag 0) and current_leader (tag 1), each
    only when set, in tag order."""
    if p.diverging_epoch is None and p.current_leader is None:
        return NO_TAGGED_FIELDS
    fields = []
    if p.diverging_epoch is not None and tuple(p.diverging_epoch) != (-1, -1):
        value = _EPOCH_END_OFFSET.pack(*p.diverging_epoch, 0)
        fields.append(uvarint(DIVERGING_EPOCH_TAG) + uvarint(len(value)) + value)
    if p.current_leader is not None and tuple(p.current_leader) != (-1, -1):
        value = _LEADER_ID_AND_EPOCH.pack(*p.current_leader, 0)
        fields.append(uvarint(CURRENT_LEADER_TAG) + uvarint(len(value)) + value)
    if not fields:
        return NO_TAGGED_FIELDS
    return uvarint(len(fields)) + b"".join(fields)


def _encode_flexible(correlation_id: int, partitions_by_topic: list[tuple[str, list[FetchPartitionData]]],
                     throttle_time_ms: int, error_code: int, session_id: int) -> list:
    """Fetch v12 as segments: the same contract as :func:`encode_fetch_response`."""
    segments: list = []
    first = fixed = bytearray(4)  # the size prefix, patched once the total is known
    fixed += _TOP_V12.pack(correlation_id, 0, throttle_time_ms, error_code, session_id)
    fixed += uvarint(len(partitions_by_topic) + 1)
    total = 0
    for topic, partitions in partitions_by_topic:
        fixed += _compact_topic_name(topic)
        fixed += uvarint(len(partitions) + 1)
        for p in partitions:
            size = records_size(p.records)
            fixed += _PARTITION_V12.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                                         p.log_start_offset)
            fixed += _compact_aborted(p.aborted_transactions)
            fixed += _INT32.pack(p.preferred_read_replica)
            fixed += uvarint(size + 1)
            if size:
                total += len(fixed) + size
                segments.append(fixed if fixed is first else bytes(fixed))
                segments.append(p.records)
                fixed = bytearray()
            fixed += partition_tagged_fields(p)
        fixed += NO_TAGGED_FIELDS
    fixed += NO_TAGGED_FIELDS
    return _finish(first, fixed, segments, total)
