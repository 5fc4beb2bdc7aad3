"""The REST proxy's two operations on a partition this broker leads, with no HTTP in them.

``append`` turns the proxy's records into one uncompressed magic-2 batch (offset deltas 0..n-1, the
smallest timestamp as the base) and appends it exactly as a Produce with ``acks=all`` would: the ISR
must hold ``min.insync.replicas`` before the append, and the answer waits until the high watermark has
passed the records. ``read`` returns the records from ``offset`` below the high watermark, at most
``max_bytes`` of log (the first batch whole, as KIP-74), decompressed and decoded: the one place
besides compaction where the broker looks inside batches, because JSON needs the records themselves.

Failures raise ``ProxyError`` with Kafka's error code and the HTTP status the proxy answers with.
"""
from __future__ import annotations

import asyncio
import time

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record import ConsumerRecord, Record, build_batch, iter_records
from brokers.protocol.record_batch import whole_batches
from brokers.replication.replica_manager import PartitionError, ReplicaManager, leader_partition
from brokers.stats import BrokerStats

HTTP_STATUS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 404, ErrorCode.OFFSET_OUT_OF_RANGE: 416,
    ErrorCode.MESSAGE_TOO_LARGE: 413, ErrorCode.RECORD_LIST_TOO_LARGE: 413,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: 503, ErrorCode.NOT_ENOUGH_REPLICAS: 503,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: 503, ErrorCode.REQUEST_TIMED_OUT: 504,
    ErrorCode.INVALID_RECORD: 400, ErrorCode.CORRUPT_MESSAGE: 400, ErrorCode.INVALID_TOPIC_EXCEPTION: 403,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: 403,
}


class ProxyError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = ErrorCode(code)

    @property
    def status(self) -> int:
        return HTTP_STATUS.get(self.code, 500)


def led_partition(manager: ReplicaManager | None, tp: TopicPartition):
    if manager is None:
        raise ProxyError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the broker is starting")
    try:
        return leader_partition(manager, tp)
    except PartitionError as exc:
        raise ProxyError(exc.code, f"{tp}: {exc.code.name}") from None


def build_proxy_batch(records, now_ms: int) -> bytearray:
    """One v2 batch of the proxy's records (each with ``key``, ``value``, ``headers``, ``timestamp_ms``)."""
    stamps = [r.timestamp_ms if r.timestamp_ms is not None else now_ms for r in records]
    base = min(stamps)
    return build_batch([Record(i, stamp - base, r.key, r.value, tuple(r.headers))
                        for i, (r, stamp) in enumerate(zip(records, stamps))], base_timestamp=base)


async def append(manager: ReplicaManager | None, stats: BrokerStats, tp: TopicPartition, records,
                 timeout_s: float) -> int:
    """Append ``records`` to the led partition ``tp`` with acks=all; return the first offset."""
    partition = led_partition(manager, tp)
    now_ms = int(time.time() * 1000)
    batch = build_proxy_batch(records, now_ms)
    try:
        info = partition.append_as_leader(batch, -1, now_ms)
    except KafkaError as exc:
        raise ProxyError(exc.code, f"{tp}: {exc}") from None
    except OSError as exc:
        raise ProxyError(ErrorCode.KAFKA_STORAGE_ERROR, f"{tp}: {exc}") from None
    stats.bytes_in(tp.topic, len(batch), info.records_count)
    try:
        outcome = await asyncio.wait_for(partition.wait_for_acks(info.last_offset + 1), timeout_s)
    except asyncio.TimeoutError:
        raise ProxyError(ErrorCode.REQUEST_TIMED_OUT,
                         f"{tp}: the ISR did not acknowledge within {timeout_s:g} s") from None
    if outcome != ErrorCode.NONE:
        raise ProxyError(outcome, f"{tp}: {ErrorCode(outcome).name}")
    return info.first_offset



def read_range(manager: ReplicaManager | None, tp: TopicPartition, offset: int, max_bytes: int):
    """(the file range to read or None, high watermark, log start) for a consumer at ``offset``."""
    partition = led_partition(manager, tp)
    log = partition.log
    try:
        info = log.read(offset, max_bytes, max_offset=log.high_watermark, min_one_message=True)
    except KafkaError as exc:
        raise ProxyError(exc.code, f"{tp}: offset {offset} is outside [{log.log_start_offset}, "
                                   f"{log.high_watermark}]" if exc.code == ErrorCode.OFFSET_OUT_OF_RANGE
                         else f"{tp}: {exc}") from None
    return info.records, log.high_watermark, log.log_start_offset


def decode_range(data: bytes, offset: int, high_watermark: int) -> list[ConsumerRecord]:
    """The records of ``data`` at or above ``offset`` and below the high watermark (runs off the loop)."""
    return [r for r in iter_records(whole_batches(data)) if offset <= r.offset < high_watermark]
