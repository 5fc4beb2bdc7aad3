"""MirrorMaker 2's record formats (pure), byte for byte those of Kafka 2.8's ``OffsetSync``, ``Checkpoint``
and ``Heartbeat``.

Every key and value is a Kafka protocol ``Schema`` struct: fields back to back, no tags, no length prefix.
``STRING`` is an INT16 big-endian byte length (0..32767; never null) followed by that many UTF-8 bytes;
``INT16``/``INT32``/``INT64`` are big-endian two's complement.

* ``OffsetSync`` (topic ``mm2-offset-syncs.<target>.internal`` on the source cluster):
  key = topic STRING, partition INT32; value = upstreamOffset INT64, offset INT64 (no version header).
* ``Checkpoint`` (topic ``<source>.checkpoints.internal`` on the target cluster):
  key = group STRING, topic STRING, partition INT32;
  value = version INT16 (0), then upstreamOffset INT64, offset INT64, metadata STRING.
* ``Heartbeat`` (topic ``heartbeats``): key = sourceClusterAlias STRING, targetClusterAlias STRING;
  value = version INT16 (0), then timestamp INT64.

Decoding is strict where Kafka is lenient: a truncated field, a negative string length, bytes that are not
UTF-8, a version other than 0 or bytes left over after the last field raise ``RecordFormatError`` (a
``ValueError``) naming the record and the field; encoding a value that does not fit its type (a string over
32767 UTF-8 bytes, an offset beyond INT64) raises it too. No writer of Kafka 2.8 to 3.8 produces anything
the decoders reject.

``format_offset_sync``/``format_checkpoint``/``format_heartbeat`` print a record the way Kafka's
``OffsetSyncFormatter``/``CheckpointFormatter``/``HeartbeatFormatter`` do (each record's Java
``toString``, a partition as ``topic-partition``), Kafka's ``metatadata`` misspelling included.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0  # the only value version of Checkpoint and Heartbeat (Kafka 2.8 to 3.8)
MAX_STRING_BYTES = 0x7FFF

_INTS = {"INT16": struct.Struct(">h"), "INT32": struct.Struct(">i"), "INT64": struct.Struct(">q")}


class RecordFormatError(ValueError):
    """Bytes that are not a MirrorMaker 2 record, or a value that its schema cannot hold."""


# -- writing --------------------------------------------------------------------------------------------

def _write_int(record: str, name: str, kind: str, value: int) -> bytes:
    try:
        return _INTS[kind].pack(value)
    except struct.error:
        raise RecordFormatError(f"{record}: {name} {value!r} does not fit {kind}") from None


def _write_string(record: str, name: str, value: str) -> bytes:
    try:
        data = value.encode("utf-8")
    except (AttributeError, UnicodeEncodeError):
        raise RecordFormatError(f"{record}: {name} {value!r} is not a UTF-8 encodable string") from None
    if len(data) > MAX_STRING_BYTES:
        raise RecordFormatError(f"{record}: {name} is {len(data)} bytes long, more than the "
                                f"{MAX_STRING_BYTES} a STRING holds")
    return _INTS["INT16"].pack(len(data)) + data


# -- reading --------------------------------------------------------------------------------------------

class _Reader:
    """Reads one struct's fields in order from ``data``, naming ``record`` and ``part`` in its errors."""

    def __init__(self, record: str, part: str, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise RecordFormatError(f"{record} {part}: expected bytes, got {type(data).__name__}")
        self.record, self.part, self.data, self.pos = record, part, bytes(data), 0

    def _take(self, name: str, size: int) -> bytes:
        end = self.pos + size
        if end > len(self.data):
            raise RecordFormatError(f"{self.record} {self.part} truncated: field {name} needs {size} bytes "
                                    f"at offset {self.pos}, {len(self.data) - self.pos} left")
        chunk, self.pos = self.data[self.pos:end], end
        return chunk

    def integer(self, name: str, kind: str) -> int:
        codec = _INTS[kind]
        return codec.unpack(self._take(name, codec.size))[0]

    def string(self, name: str) -> str:
        size = self.integer(name, "INT16")
        if size < 0:
            raise RecordFormatError(f"{self.record} {self.part}: field {name} has negative length {size}")
        try:
            return self._take(name, size).decode("utf-8")
        except UnicodeDecodeError:
            raise RecordFormatError(f"{self.record} {self.part}: field {name} is not UTF-8") from None

    def version(self) -> None:
        version = self.integer("version", "INT16")
        if version != VERSION:
            raise RecordFormatError(f"{self.record} {self.part}: unsupported version {version} "
                                    f"(only {VERSION} is known)")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise RecordFormatError(f"{self.record} {self.part}: {len(self.data) - self.pos} unexpected "
                                    f"bytes after the last field")


# -- records --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OffsetSync:
    """Upstream ``topic``-``partition`` at ``upstream_offset`` was written downstream at ``downstream_offset``."""
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def key(self) -> bytes:
        return (_write_string("OffsetSync", "topic", self.topic)
                + _write_int("OffsetSync", "partition", "INT32", self.partition))

    def value(self) -> bytes:
        return (_write_int("OffsetSync", "upstreamOffset", "INT64", self.upstream_offset)
                + _write_int("OffsetSync", "offset", "INT64", self.downstream_offset))

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        k = _Reader("OffsetSync", "key", key)
        topic, partition = k.string("topic"), k.integer("partition", "INT32")
        k.end()
        v = _Reader("OffsetSync", "value", value)
        upstream, downstream = v.integer("upstreamOffset", "INT64"), v.integer("offset", "INT64")
        v.end()
        return cls(topic, partition, upstream, downstream)


@dataclass(frozen=True)
class Checkpoint:
    """Consumer ``group``'s committed offset on upstream ``topic``-``partition``, translated downstream."""
    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def key(self) -> bytes:
        return (_write_string("Checkpoint", "group", self.group)
                + _write_string("Checkpoint", "topic", self.topic)
                + _write_int("Checkpoint", "partition", "INT32", self.partition))

    def value(self) -> bytes:
        return (_write_int("Checkpoint", "version", "INT16", VERSION)
                + _write_int("Checkpoint", "upstreamOffset", "INT64", self.upstream_offset)
                + _write_int("Checkpoint", "offset", "INT64", self.downstream_offset)
                + _write_string("Checkpoint", "metadata", self.metadata))

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        k = _Reader("Checkpoint", "key", key)
        group, topic, partition = k.string("group"), k.string("topic"), k.integer("partition", "INT32")
        k.end()
        v = _Reader("Checkpoint", "value", value)
        v.version()
        upstream, downstream = v.integer("upstreamOffset", "INT64"), v.integer("offset", "INT64")
        metadata = v.string("metadata")
        v.end()
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True)
class Heartbeat:
    """The mirror from ``source_cluster_alias`` to ``target_cluster_alias`` was alive at ``timestamp_ms``."""
    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int

    def key(self) -> bytes:
        return (_write_string("Heartbeat", "sourceClusterAlias", self.source_cluster_alias)
                + _write_string("Heartbeat", "targetClusterAlias", self.target_cluster_alias))

    def value(self) -> bytes:
        return (_write_int("Heartbeat", "version", "INT16", VERSION)
                + _write_int("Heartbeat", "timestamp", "INT64", self.timestamp_ms))

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        k = _Reader("Heartbeat", "key", key)
        source, target = k.string("sourceClusterAlias"), k.string("targetClusterAlias")
        k.end()
        v = _Reader("Heartbeat", "value", value)
        v.version()
        timestamp = v.integer("timestamp", "INT64")
        v.end()
        return cls(source, target, timestamp)


# -- Kafka's formatters ---------------------------------------------------------------------------------

def format_offset_sync(sync: OffsetSync) -> str:
    return (f"OffsetSync{{topicPartition={sync.topic}-{sync.partition}, upstreamOffset={sync.upstream_offset}, "
            f"downstreamOffset={sync.downstream_offset}}}")


def format_checkpoint(checkpoint: Checkpoint) -> str:
    c = checkpoint
    return (f"Checkpoint{{consumerGroupId={c.group}, topicPartition={c.topic}-{c.partition}, "
            f"upstreamOffset={c.upstream_offset}, downstreamOffset={c.downstream_offset}, "
            f"metatadata={c.metadata}}}")


def format_heartbeat(heartbeat: Heartbeat) -> str:
    h = heartbeat
    return (f"Heartbeat{{sourceClusterAlias={h.source_cluster_alias}, "
            f"targetClusterAlias={h.target_cluster_alias}, timestamp={h.timestamp_ms}}}")
