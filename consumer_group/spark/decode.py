"""Decoding Kafka values into columns without UDF boilerplate: ``from_json`` (Spark's own, native) and
``from_msgpack`` (a Python UDF), both into a declared schema (a DDL string or a ``StructType``).

    events = df.select(from_msgpack("value", "page string, user string, ts timestamp").alias("e")).select("e.*")

msgpack maps become structs by field name (missing fields are null); a timestamp field accepts epoch
milliseconds, as producers usually write them; a value that does not decode becomes a null struct.
"""
from __future__ import annotations

import datetime

import msgpack
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructType, TimestampType

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _struct(schema: str | StructType) -> StructType:
    if isinstance(schema, StructType):
        return schema
    parsed = StructType.fromDDL(schema)
    if not isinstance(parsed, StructType):
        raise ValueError(f"not a struct schema: {schema!r}")
    return parsed


def _column(col: str | Column) -> Column:
    return F.col(col) if isinstance(col, str) else col


def from_json(col: str | Column, schema: str | StructType) -> Column:
    """A JSON value (binary or string) as a struct of ``schema``."""
    return F.from_json(_column(col).cast("string"), _struct(schema))


def from_msgpack(col: str | Column, schema: str | StructType) -> Column:
    """A msgpack-encoded map as a struct of ``schema``."""
    struct = _struct(schema)
    converters = [_converter(field.dataType) for field in struct.fields]
    names = [field.name for field in struct.fields]

    def decode(data: bytes | None):
        if data is None:
            return None
        try:
            obj = msgpack.unpackb(bytes(data), raw=False)
        except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
            return None
        if not isinstance(obj, dict):
            return None
        return tuple(convert(obj.get(name)) for name, convert in zip(names, converters))

    return F.udf(decode, struct)(_column(col))


def _converter(data_type):
    if isinstance(data_type, TimestampType):
        return lambda v: _EPOCH + datetime.timedelta(milliseconds=v) if isinstance(v, (int, float)) else v
    return lambda v: v
