"""Kafka framing and the request header's fixed prefix (sans-I/O).

Every message on a Kafka connection is a big-endian ``int32`` size followed by that many bytes; the
size does not count itself. A request frame starts with a request header:

* v1 (non-flexible request versions): ``api_key int16, api_version int16, correlation_id int32,
  client_id`` (nullable string with an ``int16`` length, -1 = null);
* v2 (flexible request versions): v1 followed by a tagged-field section (unsigned-varint count, then
  per field an unsigned-varint tag, an unsigned-varint size and that many bytes). ``client_id`` stays a
  non-compact string even in v2, so any request's key, version, correlation id and client id can be
  read without knowing its schema.

Whether a version is flexible is the table's business (``api_versions.is_flexible``); this module only
reads bytes. ``FrameDecoder`` splits a byte stream into frame payloads; after it raises
``ProtocolError`` its state is undefined and the connection must be closed (that is what Kafka does
with a bad size prefix: it closes before allocating anything).
"""
from __future__ import annotations

import struct
from typing import Any, NamedTuple

DEFAULT_MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes (100 MiB)
MIN_FRAME_BYTES = 8  # api_key + api_version + correlation_id: anything shorter cannot be a request
MIN_RESPONSE_FRAME_BYTES = 4  # a response's correlation id (its body may be as short as an error code)
SIZE_PREFIX_BYTES = 4
MAX_FRAME_SIZE = 2**31 - 1

_INT32 = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_MAX_UVARINT_BYTES = 5  # a uint32 needs at most 5 varint bytes


class ProtocolError(Exception):
    """Bytes that break the Kafka protocol: a bad size prefix, a truncated or malformed header or
    body. The connection they came from cannot be trusted any more and should be closed."""


def frame_size_prefix(total: int) -> bytes:
    """The 4-byte size prefix of a frame whose payload (header + body) is ``total`` bytes."""
    if not 0 <= total <= MAX_FRAME_SIZE:
        raise ValueError(f"frame size {total} does not fit the int32 size prefix")
    return _INT32.pack(total)


class FrameDecoder:
    """Turns a TCP byte stream into complete frame payloads (without their size prefixes).

    ``feed`` accepts any bytes-like chunk (it is copied where kept, so a reused receive buffer is
    safe) and returns the payloads completed by it, as ``bytes``, in order. Cost is linear in the bytes
    fed: frames wholly inside one chunk are sliced out of it directly; a frame spread over many
    chunks keeps them in a list and joins them once, when the last one arrives.

    A size prefix below ``min_frame_bytes`` (8 for requests, MIN_RESPONSE_FRAME_BYTES for a client
    reading responses) or above ``max_frame_bytes`` raises ``ProtocolError`` as soon as its four bytes
    are seen, before any of the body is buffered.
    """

    __slots__ = ("_min", "_max", "_prefix", "_size", "_parts", "_have")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, min_frame_bytes: int = MIN_FRAME_BYTES) -> None:
        if not min_frame_bytes <= max_frame_bytes <= MAX_FRAME_SIZE:
            raise ValueError(f"max_frame_bytes must be in [{min_frame_bytes}, {MAX_FRAME_SIZE}]")
        self._min = min_frame_bytes
        self._max = max_frame_bytes
        self._prefix = b""  # up to 3 bytes of a size prefix not yet complete
        self._size = -1  # payload size of the frame in progress once its prefix is known, else -1
        self._parts: list[bytes] = []  # payload bytes received so far for that frame
        self._have = 0  # their total length

    @property
    def buffered(self) -> int:
        """Bytes held for the incomplete frame (prefix included)."""
        if self._size < 0:
            return len(self._prefix)
        return SIZE_PREFIX_BYTES + self._have

    def feed(self, data) -> list[bytes]:
        frames: list[bytes] = []
        if not data:
            return frames
        if self._size >= 0:
            data = self._continue_frame(data, frames)
            if data is None:
                return frames
        elif self._prefix:
            data = self._prefix + bytes(data)
            self._prefix = b""
        self._split(data, frames)
        return frames

    def _check_size(self, size: int) -> None:
        if size < self._min:
            raise ProtocolError(f"frame size {size} is below {self._min}, too small for a "
                                f"{'request' if self._min == MIN_FRAME_BYTES else 'response'} header")
        if size > self._max:
            raise ProtocolError(f"frame size {size} exceeds the limit of {self._max} bytes")

    def _continue_frame(self, data, frames: list[bytes]):
        """Add ``data`` to the frame in progress; return what is left after it completes, or None."""
        missing = self._size - self._have
        if len(data) < missing:
            self._parts.append(bytes(data))
            self._have += len(data)
            return None
        view = memoryview(data)
        self._parts.append(bytes(view[:missing]))
        frames.append(self._parts[0] if len(self._parts) == 1 else b"".join(self._parts))
        self._size, self._parts, self._have = -1, [], 0
        return view[missing:]

    def _split(self, data, frames: list[bytes]) -> None:
        """Slice every complete frame out of ``data``; keep the incomplete tail."""
        view = memoryview(data)
        end = len(view)
        pos = 0
        unpack = _INT32.unpack_from
        while end - pos >= SIZE_PREFIX_BYTES:
            size = unpack(view, pos)[0]
            self._check_size(size)
            start = pos + SIZE_PREFIX_BYTES
            if end - start < size:
                tail = bytes(view[start:])
                self._size, self._parts, self._have = size, [tail] if tail else [], len(tail)
                return
            frames.append(bytes(view[start : start + size]))
            pos = start + size
        if pos < end:
            self._prefix = bytes(view[pos:])


class RequestHeader(NamedTuple):
    """A request header's fields and where the request body starts in the frame. ``legacy_fields``: for a
    version kio lacks, every field the old layout carried, as read (``codec.decode_legacy_request``), for
    the few whose meaning kio's base version has no field for (ListOffsets v0's max_num_offsets,
    OffsetCommit v1's commit_timestamp)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int
    legacy_fields: Any = None


def _read_uvarint(frame, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``: (value, position after it)."""
    value = shift = 0
    for _ in range(_MAX_UVARINT_BYTES):
        if pos >= end:
            raise ProtocolError("request header is truncated inside a varint")
        byte = frame[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ProtocolError(f"unsigned varint longer than {_MAX_UVARINT_BYTES} bytes in the request header")


def _skip_tagged_fields(frame, pos: int, end: int) -> int:
    count, pos = _read_uvarint(frame, pos, end)
    for _ in range(count):
        _tag, pos = _read_uvarint(frame, pos, end)
        size, pos = _read_uvarint(frame, pos, end)
        if size > end - pos:
            raise ProtocolError(f"tagged field of {size} bytes overruns the request header")
        pos += size
    return pos


def parse_request_header(frame, flexible: bool) -> RequestHeader:
    """Read the request header at the start of ``frame`` (a frame payload, without the size prefix).

    ``flexible`` selects request header v2 (skip the tagged-field section after ``client_id``);
    otherwise v1. Raises ProtocolError for a truncated or malformed header.
    """
    end = len(frame)
    if end < _HEADER_PREFIX.size:
        raise ProtocolError(f"request header needs at least {_HEADER_PREFIX.size} bytes, frame has {end}")
    api_key, api_version, correlation_id, id_length = _HEADER_PREFIX.unpack_from(frame, 0)
    pos = _HEADER_PREFIX.size
    if id_length == -1:
        client_id = None
    elif id_length < -1:
        raise ProtocolError(f"invalid client_id length {id_length}")
    elif id_length > end - pos:
        raise ProtocolError(f"client_id of {id_length} bytes overruns the {end}-byte frame")
    else:
        try:
            client_id = bytes(frame[pos : pos + id_length]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"client_id is not valid UTF-8: {exc}") from None
        pos += id_length
    if flexible:
        pos = _skip_tagged_fields(frame, pos, end)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)
