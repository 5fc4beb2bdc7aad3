"""Reader and writer for the legacy versions declared in ``legacy_schemas`` (sans-I/O: bytes in, values out).

``read(struct, buffer, offset)`` returns a dict of the base (kio) version's field names, nested structs as
dicts and arrays as lists, with the struct's defaults for the fields the old version does not carry; the
codec builds kio's base entity from it. ``write(struct, value)`` walks a base entity (or a mapping) and emits
exactly the old version's fields: kio's ``timedelta`` durations and ``datetime`` timestamps become int
milliseconds (None is -1), error codes their numbers.

Malformed input (truncated, a negative length where none may be) raises ``ValueError`` or ``struct.error``;
the codec turns both into ``ProtocolError``.
"""
from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from brokers.protocol.legacy_schemas import (
    BOOL, INT8, INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING, Array, Struct,
)

_FIXED: dict[str, struct.Struct] = {
    INT8: struct.Struct(">b"), INT16: struct.Struct(">h"), INT32: struct.Struct(">i"), INT64: struct.Struct(">q"),
    BOOL: struct.Struct(">?"),
}
_LENGTH16, _LENGTH32 = _FIXED[INT16], _FIXED[INT32]
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


# --- reading -----------------------------------------------------------------------------------------

def _read_sized(buffer, offset: int, length: int, nullable: bool, what: str) -> tuple[Any, int]:
    if length < 0:
        if nullable and length == -1:
            return None, offset
        raise ValueError(f"negative length {length} for a {what}")
    end = offset + length
    if end > len(buffer):
        raise ValueError(f"a {what} of {length} bytes runs past the end of the frame")
    return bytes(buffer[offset:end]), end


def _read_value(type_: Any, buffer, offset: int) -> tuple[Any, int]:
    if isinstance(type_, Struct):
        return read(type_, buffer, offset)
    if isinstance(type_, Array):
        (count,), offset = _LENGTH32.unpack_from(buffer, offset), offset + 4
        if count < 0:
            if type_.nullable and count == -1:
                return None, offset
            raise ValueError(f"negative array length {count}")
        items = []
        for _ in range(count):
            item, offset = _read_value(type_.item, buffer, offset)
            items.append(item)
        return items, offset
    fixed = _FIXED.get(type_)
    if fixed is not None:
        return fixed.unpack_from(buffer, offset)[0], offset + fixed.size
    if type_ in (STRING, NULLABLE_STRING):
        (length,) = _LENGTH16.unpack_from(buffer, offset)
        raw, offset = _read_sized(buffer, offset + 2, length, type_ == NULLABLE_STRING, "string")
        return (None if raw is None else raw.decode("utf-8")), offset
    (length,) = _LENGTH32.unpack_from(buffer, offset)
    return _read_sized(buffer, offset + 4, length, type_ == RECORDS, "bytes field")


def read(layout: Struct, buffer, offset: int) -> tuple[dict[str, Any], int]:
    """(values, offset after the struct): the struct's fields read from ``buffer`` at ``offset``."""
    values: dict[str, Any] = dict(layout.defaults)
    for field in layout.fields:
        value, offset = _read_value(field.type, buffer, offset)
        if field.put is not None:
            values.update(field.put(value))
        else:
            values[field.name] = value
    return values, offset


def read_all(layout: Struct, buffer, offset: int) -> dict[str, Any]:
    """The struct at ``offset``, which must end exactly at the end of ``buffer``."""
    values, end = read(layout, buffer, offset)
    if end != len(buffer):
        raise ValueError(f"{len(buffer) - end} bytes left over after the body")
    return values


# --- writing -----------------------------------------------------------------------------------------

def _number(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    return -1 if value is None else int(value)


def _write_value(type_: Any, value: Any, out: list[bytes]) -> None:
    if isinstance(type_, Struct):
        write_into(type_, value, out)
    elif isinstance(type_, Array):
        if value is None:
            if not type_.nullable:
                raise ValueError("null for a non-nullable array")
            out.append(_LENGTH32.pack(-1))
            return
        items = list(value)
        out.append(_LENGTH32.pack(len(items)))
        for item in items:
            _write_value(type_.item, item, out)
    elif type_ == BOOL:
        out.append(_FIXED[BOOL].pack(bool(value)))
    elif type_ in _FIXED:
        out.append(_FIXED[type_].pack(_number(value)))
    elif type_ in (STRING, NULLABLE_STRING):
        if value is None:
            if type_ == STRING:
                raise ValueError("null for a non-nullable string")
            out.append(_LENGTH16.pack(-1))
        else:
            raw = value.encode("utf-8")
            out += (_LENGTH16.pack(len(raw)), raw)
    elif value is None:
        if type_ != RECORDS:
            raise ValueError("null for non-nullable bytes")
        out.append(_LENGTH32.pack(-1))
    else:
        out += (_LENGTH32.pack(len(value)), bytes(value))


def _field_value(source: Any, field) -> Any:
    """The field's value: a mapping's own entry of that name, else the field's ``get``, else the attribute."""
    if isinstance(source, Mapping):
        if field.name in source or field.get is None:
            return source[field.name]
        return field.get(SimpleNamespace(**source))
    return getattr(source, field.name) if field.get is None else field.get(source)


def write_into(layout: Struct, source: Any, out: list[bytes]) -> None:
    for field in layout.fields:
        _write_value(field.type, _field_value(source, field), out)


def write(layout: Struct, source: Any) -> bytes:
    """The old version's bytes for ``source``, a base-version entity or a mapping of its fields."""
    out: list[bytes] = []
    write_into(layout, source, out)
    return b"".join(out)


__all__ = ["read", "read_all", "write", "write_into"]
