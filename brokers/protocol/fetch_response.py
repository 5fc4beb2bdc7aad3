"""The Fetch response, v0-v11 (non-flexible), encoded by hand as a list of segments.

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
            int32 aborted_transactions count: always -1 (null; we have no transactions)
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

Records ``None`` is written as an empty records field (length 0), not as null (-1): Kafka itself
sends empty records, and librdkafka rejects a negative MessageSetSize as a parse failure. A null
aborted_transactions (-1) is what Kafka sends for non-transactional reads; every client accepts it
(librdkafka reads the transactions only when the count is > 0). kio encodes the same fields the same
way, and the tests compare against it byte for byte.
"""
from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, NamedTuple

MIN_VERSION = 4
MAX_VERSION = 11
NULL_ARRAY = -1

_INT32 = struct.Struct(">i")
_TOP_V4 = struct.Struct(">iii")  # correlation_id, throttle_time_ms, topic count
_TOP_V7 = struct.Struct(">iihii")  # correlation_id, throttle_time_ms, error_code, session_id, topic count
_TOPIC = struct.Struct(">h")
_PARTITION_V4 = struct.Struct(">ihqqii")  # index, error, high watermark, LSO, aborted (-1), records length
_PARTITION_V5 = struct.Struct(">ihqqqii")  # ... + log_start_offset before aborted
_PARTITION_V11 = struct.Struct(">ihqqqiii")  # ... + preferred_read_replica before the records length
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


def _partition(version: int, p: FetchPartitionData, size: int) -> bytes:
    if version >= 11:
        return _PARTITION_V11.pack(
            p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset,
            NULL_ARRAY, p.preferred_read_replica, size,
        )
    if version >= 5:
        return _PARTITION_V5.pack(
            p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset,
            NULL_ARRAY, size,
        )
    return _PARTITION_V4.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, NULL_ARRAY, size)


def _top(version: int, correlation_id: int, throttle_time_ms: int, error_code: int, session_id: int,
         topics: int) -> bytes:
    if version >= 7:
        return _TOP_V7.pack(correlation_id, throttle_time_ms, error_code, session_id, topics)
    return _TOP_V4.pack(correlation_id, throttle_time_ms, topics)


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
    if fixed:
        total += len(fixed)
        segments.append(fixed if fixed is first else bytes(fixed))
    _INT32.pack_into(first, 0, total - 4)
    segments[0] = bytes(first)
    return segments


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
    if fixed:
        total += len(fixed)
        segments.append(fixed if fixed is first else bytes(fixed))
    _INT32.pack_into(first, 0, total - 4)
    segments[0] = bytes(first)
    return segments
