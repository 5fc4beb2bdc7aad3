"""The message codec: Kafka request and response bodies via kio, the only module that imports kio.

kio (Aiven, generated from Kafka's own JSON schemas) gives one frozen, slotted, keyword-only
dataclass per (API, version, request/response), plus nested classes per version. Its conventions,
which every handler sees:

* field names are Kafka's in snake_case, **without the ``_ms`` suffix**: ``throttle_time``,
  ``timeout``, ``max_wait``, ``session_timeout``, ``retention_time`` ... and those fields are
  ``datetime.timedelta`` (``build`` also accepts an int of milliseconds for them);
* ``log_append_time`` (Produce response) is a timezone-aware ``datetime`` or None for -1 (``build``
  accepts an int of milliseconds, -1 meaning None); so is DescribeTransactions' ``transaction_start_time``
  (kio declares it non-nullable and refuses to read Kafka's -1 for a transaction not started:
  ``response_class`` gives a subclass declaring it nullable, which reads -1 as None and writes None as -1);
* error codes are ``kio.schema.errors.ErrorCode`` members (``error_code(n)``; ``build`` accepts ints
  and our own ``errors.ErrorCode``);
* topic ids are ``uuid.UUID``; arrays are tuples; nullable fields are ``X | None``;
* records fields are ``bytes`` subclasses, nullable, and are **copied** on decode;
* ids are ``int`` subclasses (``BrokerId``, ``ProducerId``, ``i32``): plain ints are fine.

kio gotchas handled here: readers want read-only buffers (a ``bytearray`` is passed as a read-only
memoryview, no copy); unknown tagged fields raise ``KeyError`` instead of being skipped, and
truncated bodies raise kio's own errors: all of them become ``ProtocolError``.

kio has no classes below Kafka 4's minimum versions (KIP-896: Produce v0-2, Fetch v0-3, ...). Those
versions Kafka 2.8 speaks are declared in ``legacy_schemas``: for them ``request_class`` and
``response_class`` give kio's class of the API's lowest version (the *base* version), a request decodes
into that entity and a response entity of the base class encodes into the old layout (``legacy_codec``).
Handlers keep reading ``header.api_version`` for what the version means. The Fetch response is not
encoded here (see ``fetch_response``), nor ApiVersions (see ``api_versions``).
"""
from __future__ import annotations

import datetime
import io
import struct
import uuid
from collections.abc import Callable, Mapping
import dataclasses
from dataclasses import MISSING, fields, is_dataclass, make_dataclass
from functools import cache
from typing import Any, NamedTuple

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.describe_transactions.v0 import response as describe_transactions_v0
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (  # private, but the only way to read kio's field kinds
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)
from kio.serial.errors import SerialError
from kio.static.primitive import TZAware

from brokers.protocol import legacy_codec
from brokers.protocol.framing import ProtocolError, RequestHeader
from brokers.protocol.legacy_schemas import BASE_VERSION, REQUESTS, RESPONSES

_INT32 = struct.Struct(">i")
_DECODE_ERRORS = (KeyError, ValueError, IndexError, struct.error, OverflowError, SerialError)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def error_code(code: int) -> ErrorCode:
    """kio's ErrorCode member for a numeric Kafka error code (ValueError if kio does not know it)."""
    return code if type(code) is ErrorCode else ErrorCode(int(code))


def is_legacy(api_key: int, api_version: int) -> bool:
    """A Kafka 2.8 version kio has no classes for (its layout is in ``legacy_schemas``)."""
    return (api_key, api_version) in REQUESTS


def _kio_version(api_key: int, api_version: int) -> int:
    return BASE_VERSION[api_key] if is_legacy(api_key, api_version) else api_version


@cache
def request_class(api_key: int, api_version: int) -> type:
    """kio's request body class for (key, version), the base version's for a legacy version; KeyError if none."""
    try:
        return load_request_schema(api_key, _kio_version(api_key, api_version))
    except KioIndexError:
        raise KeyError(f"kio has no request schema for API key {api_key} v{api_version}") from None


# Declared with make_dataclass: kio reads field types as objects, and this module's annotations are strings.
_DescribedTransactionState = make_dataclass(
    "TransactionState", [("transaction_start_time", TZAware | None,
                          dataclasses.field(metadata={"kafka_type": "datetime_i64"}))],
    bases=(describe_transactions_v0.TransactionState,), frozen=True, slots=True, kw_only=True)
_DescribeTransactionsResponse = make_dataclass(
    "DescribeTransactionsResponse", [("transaction_states", tuple[_DescribedTransactionState, ...])],
    bases=(describe_transactions_v0.DescribeTransactionsResponse,), frozen=True, slots=True, kw_only=True)
_NULLABLE_TIMESTAMPS = {(65, 0): _DescribeTransactionsResponse}  # -1 timestamps kio's own class cannot read


@cache
def response_class(api_key: int, api_version: int) -> type:
    """kio's response body class for (key, version), the base version's for a legacy version; KeyError if none."""
    if (api_key, api_version) in _NULLABLE_TIMESTAMPS:
        return _NULLABLE_TIMESTAMPS[api_key, api_version]
    try:
        return load_response_schema(api_key, _kio_version(api_key, api_version))
    except KioIndexError:
        raise KeyError(f"kio has no response schema for API key {api_key} v{api_version}") from None


@cache
def _request_reader(api_key: int, api_version: int) -> Callable:
    return entity_reader(request_class(api_key, api_version))


def _read_only(frame):
    if isinstance(frame, bytes):
        return frame
    view = memoryview(frame)
    return view if view.readonly else view.toreadonly()


def decode_request(header: RequestHeader, frame) -> Any:
    """Decode the request body that follows ``header`` in ``frame`` into kio's entity.

    ``frame`` is the frame payload the header was parsed from (bytes, bytearray or memoryview).
    Raises ProtocolError if kio has no schema for the version or the body does not decode.
    """
    key, version = header.api_key, header.api_version
    if is_legacy(key, version):
        return decode_legacy_request(header, frame)[0]
    try:
        reader = _request_reader(key, version)
    except KeyError as exc:
        raise ProtocolError(f"cannot decode a request for API key {key} v{version}: {exc.args[0]}") from None
    try:
        body, _size = reader(_read_only(frame), header.body_offset)
    except _DECODE_ERRORS as exc:
        what = "unknown tagged field" if isinstance(exc, KeyError) else type(exc).__name__
        raise ProtocolError(
            f"malformed request body for API key {key} v{version} (correlation id {header.correlation_id}): "
            f"{what}: {exc}"
        ) from exc
    return body


def decode_legacy_request(header: RequestHeader, frame) -> tuple[Any, dict[str, Any]]:
    """(kio's base-version entity, every field as the old layout carried it) of a legacy-version request."""
    key, version = header.api_key, header.api_version
    values = _read_legacy(REQUESTS[key, version], frame, header.body_offset,
                          f"request body for API key {key} v{version} (correlation id {header.correlation_id})")
    return build(request_class(key, version), **values), values


def _read_legacy(layout, frame, offset: int, what: str) -> dict[str, Any]:
    try:
        return legacy_codec.read_all(layout, _read_only(frame), offset)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"malformed {what}: {type(exc).__name__}: {exc}") from exc


class _Writer(NamedTuple):
    write: Callable
    flexible_header: bool  # response/request header with a tagged-field section


@cache
def _writer(cls: type) -> _Writer:
    return _Writer(entity_writer(cls), bool(cls.__header_schema__.__flexible__))


def _check_class(body: Any, api_key: int, api_version: int) -> type:
    cls = type(body)
    kio_version = _kio_version(api_key, api_version)
    if getattr(cls, "__api_key__", None) != api_key or getattr(cls, "__version__", None) != kio_version:
        raise ValueError(f"{cls.__qualname__} is not the body of API key {api_key} v{api_version}")
    return cls


def _framed(header: bytes, write: Callable, body: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    buffer.write(header)
    write(buffer, body)
    with buffer.getbuffer() as view:
        _INT32.pack_into(view, 0, len(view) - 4)
    return buffer.getvalue()


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """The framed response: size prefix, response header (v1 if the version is flexible, except for
    ApiVersions, else v0: kio's ``__header_schema__``), then ``body``, a kio response entity of exactly
    that API and version (ValueError otherwise)."""
    cls = _check_class(body, api_key, api_version)
    if is_legacy(api_key, api_version):  # always response header v0
        return _framed(_INT32.pack(correlation_id), _legacy_writer(RESPONSES[api_key, api_version]), body)
    writer = _writer(cls)
    header = _INT32.pack(correlation_id) + (b"\x00" if writer.flexible_header else b"")
    return _framed(header, writer.write, body)


def encode_legacy_response(api_key: int, api_version: int, correlation_id: int, values: Mapping[str, Any]) -> bytes:
    """The framed response of a legacy version from a mapping of its own fields (for answers kio's base
    version cannot hold, such as ListOffsets v0's list of offsets)."""
    return _framed(_INT32.pack(correlation_id), _legacy_writer(RESPONSES[api_key, api_version]), values)


def _legacy_writer(layout) -> Callable:
    return lambda buffer, body: buffer.write(legacy_codec.write(layout, body))


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """The framed request (size prefix, request header v1/v2, body), for clients and tests."""
    cls = _check_class(body, api_key, api_version)
    # legacy versions are never flexible: request header v1 (even where kio's base version is flexible)
    header_cls = RequestHeaderV1 if is_legacy(api_key, api_version) else cls.__header_schema__
    header = io.BytesIO()
    entity_writer(header_cls)(
        header,
        header_cls(
            request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id, client_id=client_id
        ),
    )
    if is_legacy(api_key, api_version):
        return _framed(header.getvalue(), _legacy_writer(REQUESTS[api_key, api_version]), body)
    return _framed(header.getvalue(), _writer(cls).write, body)


def decode_response(api_key: int, api_version: int, frame) -> tuple[int, Any]:
    """(correlation id, body entity) of a response frame payload; ProtocolError if it does not decode."""
    cls = response_class(api_key, api_version)
    frame = _read_only(frame)
    if is_legacy(api_key, api_version):
        if len(frame) < 4:
            raise ProtocolError(f"malformed response for API key {api_key} v{api_version}: no header")
        correlation_id = _INT32.unpack_from(frame, 0)[0]
        return correlation_id, build(cls, **_read_legacy(RESPONSES[api_key, api_version], frame, 4,
                                                         f"response for API key {api_key} v{api_version}"))
    try:
        header, offset = entity_reader(cls.__header_schema__)(frame, 0)
        body, _size = entity_reader(cls)(frame, offset)
    except _DECODE_ERRORS as exc:
        raise ProtocolError(f"malformed response for API key {api_key} v{api_version}: {exc}") from exc
    return header.correlation_id, body


# --- build: one handler, every version ---------------------------------------------------------------

_REQUIRED = object()
_ZEROS: dict[str, Any] = {
    "bool": False,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "records": b"",
    "uuid": uuid.UUID(int=0),
    "error_code": ErrorCode.none,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "datetime_i64": _EPOCH,
}


class _Field(NamedTuple):
    name: str
    convert: Callable[[Any], Any] | None  # None: pass the value through
    zero: Any  # the value for a missing field, or _REQUIRED when the dataclass has a default


def _to_timedelta(value):
    return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=value)


def _to_datetime(value):
    if value is None or isinstance(value, datetime.datetime):
        return value
    return None if value == -1 else _EPOCH + datetime.timedelta(milliseconds=value)


def _entity_converter(nested: type) -> Callable[[Any], Any]:
    def convert(value):
        if value is None or type(value) is nested:
            return value
        if isinstance(value, Mapping):
            return build(nested, **value)
        if is_dataclass(value):  # the same struct from another version: keep the shared fields
            return build(nested, **{f.name: getattr(value, f.name) for f in fields(value)})
        raise TypeError(f"cannot build {nested.__qualname__} from {type(value).__name__}")

    return convert


def _converter(field, kind) -> Callable[[Any], Any] | None:
    kafka_type = field.metadata.get("kafka_type")
    if isinstance(kind, EntityField):
        return _entity_converter(kind.type_)
    if isinstance(kind, EntityTupleField):
        item = _entity_converter(kind.type_)
        return lambda value: None if value is None else tuple(map(item, value))
    if isinstance(kind, PrimitiveTupleField):
        return lambda value: None if value is None else tuple(value)
    if kafka_type == "error_code":
        return error_code
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return _to_timedelta
    if kafka_type == "datetime_i64":
        return _to_datetime
    return None


def _zero(field, kind) -> Any:
    if field.default is not MISSING or field.default_factory is not MISSING:
        return _REQUIRED
    if is_optional(field):
        return None
    if isinstance(kind, (EntityTupleField, PrimitiveTupleField)):
        return ()
    if isinstance(kind, EntityField):
        return build(kind.type_)
    return _ZEROS.get(field.metadata.get("kafka_type"), 0)  # every int kind


@cache
def _plan(cls: type) -> tuple[_Field, ...]:
    plan = []
    for field in fields(cls):
        kind = classify_field(field)
        plan.append(_Field(field.name, _converter(field, kind), _zero(field, kind)))
    return tuple(plan)


def build(cls: type, /, **values: Any) -> Any:
    """An instance of the kio entity class ``cls`` from a superset of its fields.

    Fields ``cls`` does not have are dropped; missing fields take the dataclass default, or the zero
    value of their Kafka type (0, "", b"", False, empty tuple, None where nullable, a zero-filled nested
    struct). Nested struct fields accept a mapping or another version's instance (built recursively);
    arrays accept any iterable; error codes accept ints; durations accept int milliseconds.
    """
    kwargs = {}
    for name, convert, zero in _plan(cls):
        if name in values:
            value = values[name]
            kwargs[name] = value if convert is None else convert(value)
        elif zero is not _REQUIRED:
            kwargs[name] = zero
    return cls(**kwargs)


__all__ = [
    "ProtocolError",
    "build",
    "decode_legacy_request",
    "decode_request",
    "decode_response",
    "encode_legacy_response",
    "encode_request",
    "encode_response",
    "error_code",
    "is_legacy",
    "request_class",
    "response_class",
]


def build_response(header: Any, /, **values: Any) -> Any:
    """The response entity of ``header``'s API and version (``response_class``) built from ``values`` (``build``)."""
    return build(response_class(header.api_key, header.api_version), **values)


def duration_ms(value: Any) -> int:
    """A kio duration field (``timedelta``), or an int already in milliseconds, as int milliseconds."""
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)
