"""The Produce response, v0-v9, encoded by hand: the answer to every produce request is on the hot path.

kio builds and writes the same bytes about ten times slower (a dataclass per partition, a generic writer
walking the schema; v9's flexible writer more so), which at one response per producer request is a
measurable share of a producing broker's CPU (BENCHMARKS.md, issue 22). The tests compare every version
against kio's encoder (v3-v9) and the legacy layouts (v0-v2) byte for byte.

Wire layout (big-endian; v9 is flexible: compact arrays and strings (uvarint length + 1, 0 = null), and a
tagged-field section, always empty here, after each struct)::

    int32 size, int32 correlation_id, v9: tagged fields
    array responses, per topic:
        string name
        array partition_responses, per partition:
            int32 index, int16 error_code, int64 base_offset
            v2+: int64 log_append_time_ms        (-1: CreateTime)
            v5+: int64 log_start_offset
            v8+: array record_errors (int32 batch_index, nullable string batch_index_error_message)
                 nullable string error_message
    v1+: int32 throttle_time_ms

A partition is a mapping with ``index``, ``error_code``, ``base_offset`` and, where the version has them,
``log_append_time`` (int ms, -1), ``log_start_offset``, ``record_errors`` (mappings of ``batch_index`` and
``batch_index_error_message``; absent: none) and ``error_message`` (absent: null).
"""
from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

from brokers.protocol.framing import uvarint

MAX_VERSION = 9
FIRST_FLEXIBLE_VERSION = 9
_INT16, _INT32, _INT64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_HEAD = struct.Struct(">ihq")  # index, error_code, base_offset
NO_TAGGED_FIELDS = b"\x00"


def _array_length(count: int, flexible: bool) -> bytes:
    return uvarint(count + 1) if flexible else _INT32.pack(count)


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else _INT16.pack(-1)
    raw = value.encode("utf-8")
    return (uvarint(len(raw) + 1) if flexible else _INT16.pack(len(raw))) + raw


def _partition(version: int, partition: Mapping[str, Any], flexible: bool) -> bytes:
    parts = [_HEAD.pack(partition["index"], partition["error_code"], partition["base_offset"])]
    if version >= 2:
        parts.append(_INT64.pack(partition.get("log_append_time", -1)))
    if version >= 5:
        parts.append(_INT64.pack(partition.get("log_start_offset", -1)))
    if version >= 8:
        errors = partition.get("record_errors") or ()
        parts.append(_array_length(len(errors), flexible))
        for error in errors:
            parts += (_INT32.pack(error["batch_index"]), _string(error.get("batch_index_error_message"), flexible))
            if flexible:
                parts.append(NO_TAGGED_FIELDS)
        parts.append(_string(partition.get("error_message"), flexible))
    if flexible:
        parts.append(NO_TAGGED_FIELDS)
    return b"".join(parts)


def encode_produce_response(version: int, correlation_id: int,
                            topics: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                            throttle_time_ms: int = 0) -> bytes:
    """The framed response (size prefix, response header v0, or v1 for v9, then the body)."""
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"Produce v{version} is not encoded here (v0-v{MAX_VERSION})")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    parts = [_INT32.pack(correlation_id)]
    if flexible:
        parts.append(NO_TAGGED_FIELDS)
    parts.append(_array_length(len(topics), flexible))
    for name, partitions in topics:
        parts += (_string(name, flexible), _array_length(len(partitions), flexible))
        parts += (_partition(version, partition, flexible) for partition in partitions)
        if flexible:
            parts.append(NO_TAGGED_FIELDS)
    if version >= 1:
        parts.append(_INT32.pack(throttle_time_ms))
    if flexible:
        parts.append(NO_TAGGED_FIELDS)
    body = b"".join(parts)
    return _INT32.pack(len(body)) + body
