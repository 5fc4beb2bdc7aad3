"""``__transaction_state`` records, byte for byte as Kafka 2.8 writes them (``TransactionLog``).

Key: ``TransactionLogKey`` v0 = int16 version 0, string TransactionalId (int16 length + UTF-8).
Value: ``TransactionLogValue`` v0 = int16 version 0, int64 ProducerId, int16 ProducerEpoch, int32
TransactionTimeoutMs, int8 TransactionStatus (the state's byte), TransactionPartitions (int32 count, -1 for null,
which an Empty transaction writes; each entry a string Topic and an int32 array of PartitionIds), int64
TransactionLastUpdateTimestampMs, int64 TransactionStartTimestampMs. A null value is a tombstone: the id expired.
v0 has no room for the last producer id and epoch, so a loaded transaction knows neither (-1).
Records are appended as one uncompressed v2 batch (Kafka enforces no compression on the topic).
"""
from __future__ import annotations

import struct
import time
from typing import Iterable

from brokers.model import TopicPartition
from brokers.protocol.record import Record, build_batch
from transactions.coordinator.metadata import TransactionMetadata, TxnTransitMetadata
from transactions.coordinator.state import TransactionState

KEY_VERSION = 0
VALUE_VERSION = 0
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")  # version, producer id, epoch, timeout, status
_TIMESTAMPS = struct.Struct(">qq")  # last update, start


class TransactionLogFormatError(ValueError):
    """A ``__transaction_state`` record this coordinator cannot read (unknown version, truncated)."""


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def encode_value(meta: TxnTransitMetadata) -> bytes:
    """The record of a transition's target (Kafka's ``valueToBytes``); an Empty transaction has null partitions."""
    if meta.txn_state == TransactionState.EMPTY and meta.topic_partitions:
        raise ValueError(f"an Empty transaction has no partitions: {meta}")
    out = bytearray(_VALUE_HEAD.pack(VALUE_VERSION, meta.producer_id, meta.producer_epoch, meta.txn_timeout_ms,
                                     int(meta.txn_state)))
    if meta.txn_state == TransactionState.EMPTY:
        out += _I32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(meta.topic_partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        out += _I32.pack(len(by_topic))
        for topic, partitions in by_topic.items():
            out += _string(topic) + _I32.pack(len(partitions))
            out += struct.pack(f">{len(partitions)}i", *partitions)
    out += _TIMESTAMPS.pack(meta.txn_last_update_timestamp, meta.txn_start_timestamp)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = memoryview(data), 0

    def take(self, fmt: struct.Struct) -> tuple:
        if self.pos + fmt.size > len(self.data):
            raise TransactionLogFormatError("truncated __transaction_state record")
        values = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return values

    def string(self) -> str:
        (length,) = self.take(_I16)
        if length < 0 or self.pos + length > len(self.data):
            raise TransactionLogFormatError("bad string in a __transaction_state record")
        text = bytes(self.data[self.pos:self.pos + length]).decode("utf-8")
        self.pos += length
        return text


def decode_key(key: bytes) -> str:
    reader = _Reader(key)
    (version,) = reader.take(_I16)
    if version != KEY_VERSION:
        raise TransactionLogFormatError(f"unknown TransactionLogKey version {version}")
    return reader.string()


def decode_value(transactional_id: str, value: bytes) -> TransactionMetadata:
    reader = _Reader(value)
    version, producer_id, epoch, timeout_ms, status = reader.take(_VALUE_HEAD)
    if version != VALUE_VERSION:
        raise TransactionLogFormatError(f"unknown TransactionLogValue version {version}")
    try:
        state = TransactionState.from_byte(status)
    except ValueError as exc:
        raise TransactionLogFormatError(str(exc)) from None
    partitions: set[TopicPartition] = set()
    (count,) = reader.take(_I32)
    for _ in range(max(count, 0)):
        topic = reader.string()
        (n,) = reader.take(_I32)
        partitions.update(TopicPartition(topic, p) for p in reader.take(struct.Struct(f">{max(n, 0)}i")))
    last_update_ms, start_ms = reader.take(_TIMESTAMPS)
    return TransactionMetadata(transactional_id, producer_id, producer_epoch=epoch, txn_timeout_ms=timeout_ms,
                               state=state, topic_partitions=set() if state == TransactionState.EMPTY else partitions,
                               txn_start_timestamp=start_ms, txn_last_update_timestamp=last_update_ms)


def decode(key: bytes, value: bytes | None) -> tuple[str, TransactionMetadata | None]:
    """A record of the log: its transactional id and metadata (None for a tombstone)."""
    transactional_id = decode_key(key)
    return transactional_id, None if value is None else decode_value(transactional_id, value)


def build_records_batch(entries: Iterable[tuple[bytes, bytes | None]], timestamp_ms: int | None = None) -> bytes:
    """One uncompressed v2 batch of ``(key, value)`` records (offsets are assigned on append)."""
    base = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    records = [Record(i, 0, key, value) for i, (key, value) in enumerate(entries)]
    return bytes(build_batch(records, base_timestamp=base))


def build_record_batch(key: bytes, value: bytes | None, timestamp_ms: int | None = None) -> bytes:
    """One record's batch: a transition's record, or a tombstone when ``value`` is None."""
    return build_records_batch([(key, value)], timestamp_ms)
