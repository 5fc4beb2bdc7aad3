"""Record bodies of the broker's HTTP REST proxy: parsing produce bodies, rendering fetched records,
and choosing a partition the way Kafka's DefaultPartitioner does. Pure: no I/O, no event loop.

Content types (``body_format``; parameters such as ``; charset=utf-8`` are ignored, case does not
matter, a missing or empty Content-Type means JSON; anything else is a 400 on "Content-Type")::

    JSON     application/json, application/vnd.kafka.json.v2+json,
             application/vnd.kafka.binary.v2+json  (Confluent's binary format: see "default encoding")
    msgpack  application/x-msgpack, application/msgpack, application/vnd.msgpack

Produce body: an object with exactly one key, ``records``, a list of 1..MAX_RECORDS records::

    {"records": [
        {"key": "k1", "value": {"amount": 3}, "partition": 0, "timestamp": 1700000000000,
         "headers": [{"key": "trace", "value": "AAEC", "value_encoding": "base64"}]},
        {"key": null, "value": "aGk=", "value_encoding": "base64", "headers": {"source": "web"}}
    ]}

Record keys (all optional; any other key is a 400 naming ``records[i].<key>``)::

    key, value       null -> null; a string -> its UTF-8 bytes, or its base64-decoded bytes when the
                     matching *_encoding is "base64"; any other JSON value (object, array, number,
                     bool) -> its compact JSON text, json.dumps(v, separators=(",", ":"),
                     ensure_ascii=False) in UTF-8. A missing key/value is null.
                     In msgpack: bin -> the bytes as-is (whatever the encoding), str -> as a JSON
                     string above, nil -> null; anything else is a 400.
    key_encoding,    "utf-8" or "base64"; absent or null means the default encoding. With "base64"
    value_encoding   a non-null JSON key/value must be a string (standard alphabet, padded).
    headers          null, a list of {"key": non-empty string, "value": string | null | bin,
                     "value_encoding": "utf-8" | "base64"} (key and value required), or an object
                     {name: string | null | bin} whose values use the default encoding. Values are
                     decoded as key/value strings are; other JSON values are a 400. Order is kept.
    partition        null or an int 0..2^31-1 (booleans and floats are not ints). null: the proxy
                     picks one (``choose_partition``).
    timestamp        null or an int 0..2^63-1, in ms since the epoch. null: the broker's clock.

Default encoding: "utf-8", except under application/vnd.kafka.binary.v2+json, where key, value and
header strings are base64 unless the record says ``"*_encoding": "utf-8"``.

Errors: ``BodyError`` with ``field`` naming where (``body``, ``records``, ``records[2].partition``,
``records[0].headers[1].key``, ``records[0].headers.<name>``, ...) and ``to_dict()`` the 400 body
``{"error_code": 400, "field": ..., "message": "<field>: <what>"}``. Non-finite numbers (NaN,
Infinity, 1e999) are not valid JSON here.

Fetched records (``render_records``), one object per record::

    {"offset": 42, "timestamp": 1700000000000, "key": "k1", "value": "AAEC",
     "value_encoding": "base64", "headers": [{"key": "trace", "value": "x"}]}

With encoding "auto" a key, value or header value that is valid UTF-8 is given as text with no
*_encoding field; one that is not is base64 with ``"key_encoding"``/``"value_encoding": "base64"``
beside it (in the header's own object for a header value). With encoding "base64" every non-null
one is base64 and carries its *_encoding. null stays null, with no *_encoding. Without "offset",
such an object is a valid produce record under application/json and gives back the same bytes.
``render_records_msgpack`` gives the same objects with raw bytes and no *_encoding fields.

Partitioner: a record with a key goes to ``(murmur2(key) & 0x7fffffff) % num_partitions`` (Kafka's
DefaultPartitioner, so the same key lands where a Java producer would put it); a null key goes to
``round_robin % num_partitions``.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable


from brokers.control import unpack
from brokers.protocol.record import ConsumerRecord

JSON_TYPES = (
    "application/json",
    "application/vnd.kafka.json.v2+json",
    "application/vnd.kafka.binary.v2+json",
)
MSGPACK_TYPES = ("application/x-msgpack", "application/msgpack", "application/vnd.msgpack")
BINARY_TYPE = "application/vnd.kafka.binary.v2+json"
MAX_RECORDS = 10_000

UTF8, BASE64 = "utf-8", "base64"
_ENCODINGS = (UTF8, BASE64)
_RECORD_KEYS = frozenset(
    {"key", "value", "key_encoding", "value_encoding", "headers", "partition", "timestamp"}
)
_HEADER_KEYS = frozenset({"key", "value", "value_encoding"})
_INT32_MAX = (1 << 31) - 1
_INT64_MAX = (1 << 63) - 1
_M32 = 0xFFFFFFFF


class BodyError(ValueError):
    """A bad request body: ``field`` names where (e.g. "records[2].partition"), str(exc) says what."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def to_dict(self) -> dict:
        return {"error_code": 400, "field": self.field, "message": f"{self.field}: {self.message}"}


@dataclass(frozen=True, slots=True)
class ProduceRecord:
    """One record of a produce body, decoded to bytes."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    partition: int | None = None
    timestamp_ms: int | None = None


# --- content types -------------------------------------------------------------------------------


def _media_type(content_type: str | None) -> str:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media and media not in JSON_TYPES and media not in MSGPACK_TYPES:
        raise BodyError("Content-Type", f"unsupported {media!r}: use one of {', '.join(JSON_TYPES + MSGPACK_TYPES)}")
    return media or "application/json"


def body_format(content_type: str | None) -> str:
    """``"json"`` or ``"msgpack"`` for a Content-Type header value; BodyError on any other type."""
    return "msgpack" if _media_type(content_type) in MSGPACK_TYPES else "json"


# --- produce bodies ------------------------------------------------------------------------------


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def _decode_body(body: bytes, fmt: str) -> Any:
    if fmt == "msgpack":
        try:
            return unpack(body)
        except ValueError as exc:
            raise BodyError("body", f"not valid msgpack: {exc}") from None
    try:
        return json.loads(body, parse_constant=_no_constants, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise BodyError("body", f"not valid JSON: {exc}") from None


def parse_produce_body(body: bytes, content_type: str | None) -> list[ProduceRecord]:
    """The records of a produce body (format in the module docstring); BodyError if it is bad."""
    media = _media_type(content_type)
    doc = _decode_body(body, "msgpack" if media in MSGPACK_TYPES else "json")
    if not isinstance(doc, dict):
        raise BodyError("body", 'must be an object {"records": [...]}')
    for name in doc:
        if name != "records":
            raise BodyError(str(name), "unknown field: the body takes only \"records\"")
    if "records" not in doc:
        raise BodyError("records", "missing")
    records = doc["records"]
    if not isinstance(records, list) or not records:
        raise BodyError("records", "must be a non-empty list")
    if len(records) > MAX_RECORDS:
        raise BodyError("records", f"{len(records)} records: at most {MAX_RECORDS} per request")
    default = BASE64 if media == BINARY_TYPE else UTF8
    is_json = media in JSON_TYPES
    return [_parse_record(record, f"records[{i}]", default, is_json) for i, record in enumerate(records)]


def _parse_record(record: Any, where: str, default: str, is_json: bool) -> ProduceRecord:
    if not isinstance(record, dict):
        raise BodyError(where, "must be an object")
    for name in record:
        if name not in _RECORD_KEYS:
            raise BodyError(f"{where}.{name}", f"unknown field: use {', '.join(sorted(_RECORD_KEYS))}")
    key_encoding = _encoding(record.get("key_encoding"), f"{where}.key_encoding", default)
    value_encoding = _encoding(record.get("value_encoding"), f"{where}.value_encoding", default)
    return ProduceRecord(
        key=_payload(record.get("key"), key_encoding, f"{where}.key", any_json=is_json),
        value=_payload(record.get("value"), value_encoding, f"{where}.value", any_json=is_json),
        headers=_headers(record.get("headers"), f"{where}.headers", default),
        partition=_optional_int(record.get("partition"), f"{where}.partition", _INT32_MAX),
        timestamp_ms=_optional_int(record.get("timestamp"), f"{where}.timestamp", _INT64_MAX),
    )


def _encoding(name: Any, where: str, default: str) -> str:
    if name is None:
        return default
    if name not in _ENCODINGS:
        raise BodyError(where, f'must be "utf-8" or "base64", not {name!r}')
    return name


def _payload(item: Any, encoding: str, where: str, *, any_json: bool) -> bytes | None:
    """Bytes of a key, value or header value; ``any_json`` lets other JSON values in as JSON text."""
    if item is None or isinstance(item, bytes):
        return item
    if isinstance(item, str):
        if encoding == UTF8:
            return _utf8(item, where)
        try:
            return base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError):
            raise BodyError(where, "not valid base64") from None
    if encoding == BASE64:
        raise BodyError(where, "must be a base64 string or null")
    if any_json and isinstance(item, (dict, list, int, float)):  # bool is an int
        return _utf8(json.dumps(item, separators=(",", ":"), ensure_ascii=False), where)
    raise BodyError(where, "must be bytes, a string or null")


def _utf8(text: str, where: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, e.g. "\ud800" in JSON
        raise BodyError(where, "not encodable as UTF-8 (lone surrogate)") from None


def _headers(headers: Any, where: str, default: str) -> tuple[tuple[str, bytes | None], ...]:
    if headers is None:
        return ()
    if isinstance(headers, dict):
        out = []
        for name, item in headers.items():
            if not isinstance(name, str) or not name:
                raise BodyError(where, f"header names must be non-empty strings, not {name!r}")
            _utf8(name, f"{where}.{name}")
            out.append((name, _payload(item, default, f"{where}.{name}", any_json=False)))
        return tuple(out)
    if isinstance(headers, list):
        return tuple(_header(header, f"{where}[{j}]", default) for j, header in enumerate(headers))
    raise BodyError(where, 'must be a list of {"key", "value"} objects, an object or null')


def _header(header: Any, where: str, default: str) -> tuple[str, bytes | None]:
    if not isinstance(header, dict):
        raise BodyError(where, 'must be an object {"key": ..., "value": ...}')
    for name in header:
        if name not in _HEADER_KEYS:
            raise BodyError(f"{where}.{name}", "unknown field: use key, value, value_encoding")
    name = header.get("key")
    if not isinstance(name, str) or not name:
        raise BodyError(f"{where}.key", "required: a non-empty string")
    _utf8(name, f"{where}.key")
    if "value" not in header:
        raise BodyError(f"{where}.value", "required: a string, bytes or null")
    encoding = _encoding(header.get("value_encoding"), f"{where}.value_encoding", default)
    return name, _payload(header["value"], encoding, f"{where}.value", any_json=False)


def _optional_int(item: Any, where: str, maximum: int) -> int | None:
    if item is None:
        return None
    if not isinstance(item, int) or isinstance(item, bool) or not 0 <= item <= maximum:
        raise BodyError(where, f"must be null or an integer 0..{maximum}, not {item!r}")
    return item


# --- rendering -----------------------------------------------------------------------------------


def _text(data: bytes, encoding: str) -> tuple[str, bool]:
    """(the JSON string for ``data``, whether it is base64)."""
    if encoding == "auto":
        try:
            return data.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(data).decode("ascii"), True


def _render_one(record: ConsumerRecord, encoding: str) -> dict:
    out: dict[str, Any] = {"offset": record.offset, "timestamp": record.timestamp}
    for name, data in (("key", record.key), ("value", record.value)):
        if data is None:
            out[name] = None
            continue
        out[name], is_base64 = _text(data, encoding)
        if is_base64:
            out[f"{name}_encoding"] = BASE64
    headers = []
    for name, data in record.headers:
        header: dict[str, Any] = {"key": name, "value": None}
        if data is not None:
            header["value"], is_base64 = _text(data, encoding)
            if is_base64:
                header["value_encoding"] = BASE64
        headers.append(header)
    out["headers"] = headers
    return out


def render_records(records: Iterable[ConsumerRecord], *, encoding: str = "auto") -> list[dict]:
    """Fetched records as JSON-ready objects; ``encoding`` is "auto" or "base64" (module docstring)."""
    if encoding not in ("auto", BASE64):
        raise ValueError(f'encoding must be "auto" or "base64", not {encoding!r}')
    return [_render_one(record, encoding) for record in records]


def render_records_msgpack(records: Iterable[ConsumerRecord]) -> list[dict]:
    """Fetched records as msgpack-ready objects: raw bytes, no *_encoding fields."""
    return [
        {
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": record.key,
            "value": record.value,
            "headers": [{"key": name, "value": data} for name, data in record.headers],
        }
        for record in records
    ]


# --- partitioner ---------------------------------------------------------------------------------


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c) as the signed 32-bit int Java returns."""
    m = 0x5BD1E995
    h = (0x9747B28C ^ len(data)) & _M32
    whole = len(data) & ~3
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i:i + 4], "little") * m) & _M32
        k ^= k >> 24
        k = (k * m) & _M32
        h = ((h * m) & _M32) ^ k
    if whole < len(data):  # Java's fall-through switch over the last 1-3 bytes
        h ^= int.from_bytes(data[whole:], "little")
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def choose_partition(key: bytes | None, num_partitions: int, round_robin: int) -> int:
    """Kafka's DefaultPartitioner for a key; ``round_robin % num_partitions`` for a null key."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, not {num_partitions}")
    if key is None:
        return round_robin % num_partitions
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
