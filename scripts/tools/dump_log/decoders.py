"""kafka-dump-log's record parsers (Kafka 2.8's ``DumpLogSegments.MessageParser``s): a record's key and value
-> the text printed after ``key:`` and ``payload:`` (None: not printed). Pure.

* ``string_record`` (``kafka.serializer.StringDecoder``, the default): the bytes as UTF-8.
* ``offsets_record`` (``--offsets-decoder``, ``GroupMetadataManager.formatRecordKeyAndValue``): a
  ``__consumer_offsets`` record in Kafka's own format (OffsetCommitKey v0-1 / OffsetCommitValue v0-3;
  GroupMetadataKey v2 / GroupMetadataValue v0-3). Keys ``offset_commit::group=G,partition=T-0`` and
  ``group_metadata::group=G``; values ``offset=5`` / ``offset=5,metadata=M`` and the group as JSON
  ``{"protocolType":"consumer","protocol":"range","generationId":3,"assignment":"{m1=[t-0, t-1]}"}``
  (a consumer member's user data in hex after ``:``; other protocols' assignments in hex); a tombstone
  ``<DELETE>``. (zkafka's own group coordinator keeps offsets and group metadata in ZooKeeper, so its
  ``__consumer_offsets`` holds transaction markers only; this reads what Kafka writes.)
* ``transaction_record`` (``--transaction-log-decoder``, ``TransactionLog.formatRecordKeyAndValue``):
  ``transaction_metadata::transactionalId=T`` and ``producerId:P,producerEpoch:E,state=Ongoing,
  partitions=[t-0,t-1],txnLastUpdateTimestamp=MS,txnTimeoutMs=MS`` (partitions sorted; Kafka prints its set's
  order), or ``<DELETE>``; the records are decoded by the transaction coordinator's own reader.

A record a parser cannot read raises ``DecodeError`` with Kafka's message (Kafka's tool stops there too).
"""
from __future__ import annotations

import json
import struct
from typing import Callable

from brokers.model import TopicPartition
from transactions.coordinator.log_records import TransactionLogFormatError, decode

Parsed = tuple[str | None, str | None]
CONSUMER_PROTOCOL = "consumer"


class DecodeError(ValueError):
    pass


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def _take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise DecodeError("the record is shorter than its schema")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def int64(self) -> int:
        return self._take(">q")

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise DecodeError("the record is shorter than its schema")
        self.pos += length
        return self.data[self.pos - length:self.pos]

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0 and nullable:
            return None
        return self.raw(length).decode("utf-8", errors="replace")

    def bytes(self, nullable: bool = False) -> bytes | None:
        length = self.int32()
        if length < 0 and nullable:
            return None
        return self.raw(length)


def string_record(key: bytes | None, value: bytes | None) -> Parsed:
    return (None if key is None else key.decode("utf-8", errors="replace"),
            None if value is None else value.decode("utf-8", errors="replace"))


def hex_text(data: bytes) -> str:
    """Kafka's ``"%X".format(BigInt(1, bytes))``: upper-case hex without leading zeros ("" for no bytes)."""
    return format(int.from_bytes(data, "big"), "X") if data else ""


def _offset_value(value: bytes | None) -> str:
    if value is None:
        return "<DELETE>"
    reader = _Reader(value)
    version = reader.int16()
    if not 0 <= version <= 3:
        raise DecodeError(f"Unknown offset message version: {version}")
    offset = reader.int64()
    if version >= 3:
        reader.int32()  # leader epoch
    metadata = reader.string()
    return f"offset={offset}" if not metadata else f"offset={offset},metadata={metadata}"


def assignment_text(member_id: str, assignment: bytes, protocol_type: str) -> str:
    """One member of the group's ``assignment``: ``m=[t-0, t-1]`` (``:USERDATA`` in hex), or ``m=HEX``."""
    if protocol_type != CONSUMER_PROTOCOL:
        return f"{member_id}={hex_text(assignment)}"
    reader = _Reader(assignment)
    if reader.int16() < 0:
        raise DecodeError("Unsupported assignment version")
    partitions = []
    for _ in range(max(reader.int32(), 0)):
        topic = reader.string()
        partitions += [f"{topic}-{reader.int32()}" for _ in range(max(reader.int32(), 0))]
    user_data = reader.bytes(nullable=True)
    text = f"{member_id}=[{', '.join(partitions)}]"
    return f"{text}:{hex_text(user_data)}" if user_data else text


def _group_value(value: bytes | None) -> str:
    if value is None:
        return "<DELETE>"
    reader = _Reader(value)
    version = reader.int16()
    if not 0 <= version <= 3:
        raise DecodeError(f"Unknown group metadata message version: {version}")
    protocol_type, generation = reader.string(), reader.int32()
    protocol, _leader = reader.string(nullable=True), reader.string(nullable=True)
    if version >= 2:
        reader.int64()  # current state timestamp
    members = []
    for _ in range(max(reader.int32(), 0)):
        member_id = reader.string()
        if version >= 3:
            reader.string(nullable=True)  # group instance id
        reader.string(), reader.string()  # client id, client host
        if version >= 1:
            reader.int32()  # rebalance timeout
        reader.int32()  # session timeout
        reader.bytes()  # subscription
        members.append(assignment_text(member_id, reader.bytes(), protocol_type or ""))
    return json.dumps({"protocolType": protocol_type or "", "protocol": protocol, "generationId": generation,
                       "assignment": "{" + ",".join(members) + "}"}, separators=(",", ":"), ensure_ascii=False)


def offsets_record(key: bytes | None, value: bytes | None) -> Parsed:
    if key is None:
        raise DecodeError("Failed to decode message using offset topic decoder (message had a missing key)")
    reader = _Reader(key)
    version = reader.int16()
    if version in (0, 1):
        group, topic, partition = reader.string(), reader.string(), reader.int32()
        return f"offset_commit::group={group},partition={TopicPartition(topic, partition)}", _offset_value(value)
    if version == 2:
        return f"group_metadata::group={reader.string()}", _group_value(value)
    raise DecodeError(f"Unknown group metadata message version: {version}")


def transaction_record(key: bytes | None, value: bytes | None) -> Parsed:
    if key is None:
        raise DecodeError("Failed to decode message using transaction log decoder (message had a missing key)")
    try:
        transactional_id, meta = decode(key, value)
    except TransactionLogFormatError as exc:
        raise DecodeError(str(exc)) from None
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if meta is None:
        return key_text, "<DELETE>"
    partitions = ",".join(str(tp) for tp in sorted(meta.topic_partitions, key=lambda tp: (tp.topic, tp.partition)))
    return key_text, (f"producerId:{meta.producer_id},producerEpoch:{meta.producer_epoch},"
                      f"state={meta.state.kafka_name},partitions=[{partitions}],"
                      f"txnLastUpdateTimestamp={meta.txn_last_update_timestamp},txnTimeoutMs={meta.txn_timeout_ms}")


PARSERS: dict[str, Callable[[bytes | None, bytes | None], Parsed]] = {
    "string": string_record, "offsets": offsets_record, "transaction": transaction_record,
}
