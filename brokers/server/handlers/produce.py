"""Produce (API key 0, v0-v7): append each partition's batch to the local leader log.

Per partition, in Kafka 2.8's order (``KafkaApis.handleProduceRequest``, ``ProduceRequest.validateRecords``,
``ReplicaManager.appendToLocalLog``):

1. ``acks`` must be 0, 1 or -1, else INVALID_REQUIRED_ACKS (21) for every partition; with an authorizer,
   the principal needs Write on the topic, else TOPIC_AUTHORIZATION_FAILED (29) and nothing is written;
2. a topic the metadata cache does not know: UNKNOWN_TOPIC_OR_PARTITION (3);
3. the record set must hold exactly one magic-2 batch (v3+): null or empty records, another magic or a
   second batch are INVALID_RECORD (87), as Kafka's ``validateRecords`` answers (not CORRUPT_MESSAGE);
   zstd before v7 is UNSUPPORTED_COMPRESSION_TYPE (76). v0-2 carry a magic 0/1 message set, which
   the leader up-converts to one v2 batch before the usual append (``protocol.format_conversion``):
   a bad message CRC is CORRUPT_MESSAGE, mixed magics, a wrapper plus other messages or no whole
   message INVALID_RECORD, a producer claiming LogAppendTime INVALID_TIMESTAMP (32);
4. internal topics (``__consumer_offsets``) take produce only from Kafka's admin client id:
   INVALID_TOPIC_EXCEPTION (17) otherwise;
5. this broker must lead the partition: NOT_LEADER_OR_FOLLOWER (6) / UNKNOWN_TOPIC_OR_PARTITION (3);
6. ``Log.append_as_leader`` validates the batch (CRC32C -> CORRUPT_MESSAGE (2), counts -> INVALID_RECORD,
   size -> MESSAGE_TOO_LARGE (10)), assigns offsets and writes the producer's bytes; records are never
   decoded here. A disk error is KAFKA_STORAGE_ERROR (56).

A successful partition answers its base offset, ``log_append_time`` (-1 unless the topic uses
LogAppendTime) and log start offset; a failed one answers -1 for all three. Records the log validator
rejects one by one (a keyless record on a compacted topic) answer INVALID_RECORD with, from v8, each
record's ``batch_index`` and message in ``record_errors`` and Kafka's summary in ``error_message``.

``acks=-1`` (all), reference §3.5: before the append the ISR must hold ``min.insync.replicas``
replicas, else NOT_ENOUGH_REPLICAS (19) and nothing is written; after it the partition parks in the
purgatory until the high watermark passes the appended records (every ISR member has them). Then
NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) if the ISR has shrunk below the minimum meanwhile (the data *is*
written), NOT_LEADER_OR_FOLLOWER if leadership moved, REQUEST_TIMED_OUT (7) if the request's
``timeout_ms`` passes first. All partitions of one request wait together, under one deadline.
A duplicate batch of an idempotent producer is answered with its original offsets (and, for
acks=all, waits for them like any other append).

Transactions (KIP-98): a request holding a transactional batch (attribute bit 0x10) needs Write on
its v3+ ``transactional_id`` (null counts as refused), else every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53); control batches (markers) come only from WriteTxnMarkers:
a client's is INVALID_RECORD. KIP-890 part 1: when ``context.verify_transaction`` is set and the
producer has no open transaction on the partition (its first batch there), the transaction
coordinator is asked first whether the partition is in the transaction; any answer but NONE refuses
the partition with that code (INVALID_TXN_STATE when it is not), and nothing is written. As in Kafka
3.6, the log hands out a ``VerificationGuard`` before the coordinator is asked and the append carries
it: a marker of the producer landing meanwhile (its EndTxn, a fencing abort) voids it, so the late
batch answers INVALID_TXN_STATE instead of opening a transaction no coordinator knows about.

``acks=0`` gets no response at all (the client registered nothing in flight). As in Kafka, a failed
acks=0 produce closes the connection instead, so the client notices and refreshes its metadata; the
handler signals that by raising ProtocolError, which the listener turns into a close.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from brokers.model import INTERNAL_TOPICS
from brokers.protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from brokers.protocol.format_conversion import up_convert
from brokers.protocol.framing import ProtocolError, RequestHeader
from brokers.protocol.produce_response import encode_produce_response
from brokers.protocol.record_batch import (
    ATTRIBUTES_AT,
    COMPRESSION_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    MAGIC_AT,
    MAGIC_V2,
    TRANSACTIONAL_BIT,
    BatchHeader,
    batch_size_at,
    read_header,
)
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import TRANSACTIONAL_ID, WRITE
from brokers.server.context import ServerContext
from brokers.server.handlers import ADMIN_CLIENT_ID, leader_for, throttle_time_ms, timeout_seconds
from brokers.storage.producer_state import SENTINEL_VERIFICATION_GUARD, VerificationGuard

log = logging.getLogger(__name__)

VALID_ACKS = (0, 1, -1)
LEGACY_MAX_VERSION = 2  # Produce v0-2 carry magic 0/1 message sets
ZSTD = 4
ZSTD_MIN_VERSION = 7


def _failed(index: int, error: int, exc: KafkaError | None = None) -> dict[str, Any]:
    """A failed partition's answer; a RecordValidationError (Kafka's LogValidator rejecting records one by one)
    also answers v8+'s ``record_errors`` (batch index and message per record) and ``error_message``."""
    record_errors = getattr(exc, "record_errors", None)
    return dict(index=index, error_code=error, base_offset=-1, log_append_time=-1, log_start_offset=-1,
                record_errors=[dict(batch_index=i, batch_index_error_message=m) for i, m in record_errors or ()],
                error_message=str(exc.args[0]) if record_errors else None)


def _check_records(records: bytes | None, version: int) -> tuple[int, str] | None:
    """Kafka's ``ProduceRequest.validateRecords`` for v3+: (error code, reason) or None."""
    size = batch_size_at(records) if records else None
    if size is None or len(records) < MAGIC_AT + 1:
        return ErrorCode.INVALID_RECORD, f"produce v{version} needs one record batch per partition"
    if records[MAGIC_AT] != MAGIC_V2:
        return (ErrorCode.INVALID_RECORD,
                f"produce v{version} takes only magic-2 record batches, got magic {records[MAGIC_AT]}")
    if len(records) > size:
        return ErrorCode.INVALID_RECORD, f"produce v{version} takes exactly one record batch per partition"
    if (version < ZSTD_MIN_VERSION and len(records) > ATTRIBUTES_AT + 1
            and records[ATTRIBUTES_AT + 1] & COMPRESSION_MASK == ZSTD):
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"produce v{version} may not use zstd (v7+ only)"
    return None


def _is_message_set(records: bytes | None, version: int) -> bool:
    """Produce v0-2 takes magic 0/1 message sets (and v2 batches, which go the v3+ way)."""
    return version <= LEGACY_MAX_VERSION and not (records and len(records) > MAGIC_AT and records[MAGIC_AT] == MAGIC_V2)


def _batch_to_append(records: bytes, message_set: bool) -> bytearray:
    """The v2 batch the log appends: the producer's own, or a message set up-converted (Kafka's LogValidator)."""
    return up_convert(records or b"") if message_set else bytearray(records)


def _append(context: ServerContext, header: RequestHeader, acks: int, topic: str, index: int,
            records: bytes | None, guard: VerificationGuard | None) -> tuple[dict[str, Any], asyncio.Future | None]:
    """Append one partition's batch: (its response, the acks=all wait or None)."""
    response = _append_locally(context, header, acks, topic, index, records, guard)
    if not isinstance(response, tuple):
        return response, None
    response, partition, required_offset = response
    return response, partition.wait_for_acks(required_offset) if acks == -1 else None


def _append_locally(context: ServerContext, header: RequestHeader, acks: int, topic: str, index: int,
                    records: bytes | None, guard: VerificationGuard | None):
    version = header.api_version
    message_set = _is_message_set(records, version)
    invalid = None if message_set else _check_records(records, version)
    if invalid is not None:
        log.info("rejecting produce to %s-%d from %s: %s", topic, index, header.client_id, invalid[1])
        return _failed(index, invalid[0])
    if topic in INTERNAL_TOPICS and header.client_id != ADMIN_CLIENT_ID:
        return _failed(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:
        partition = leader_for(context, topic, index)
    except PartitionError as exc:
        return _failed(index, exc.code)
    log_ = partition.log
    try:
        info = partition.append_as_leader(_batch_to_append(records, message_set), acks, int(time.time() * 1000),
                                          guard)
    except KafkaError as exc:
        log.info("rejecting produce to %s-%d from %s: %s", topic, index, header.client_id, exc)
        return _failed(index, exc.code, exc)
    except OSError as exc:
        log.error("append to %s-%d failed: %s", topic, index, exc)
        return _failed(index, ErrorCode.KAFKA_STORAGE_ERROR)
    except Exception:  # noqa: BLE001 - a broker bug answers this partition, as Kafka does, not the socket
        log.exception("append to %s-%d failed", topic, index)
        return _failed(index, ErrorCode.UNKNOWN_SERVER_ERROR)
    if not info.duplicate:
        context.stats.bytes_in(topic, len(records), info.records_count)
        if message_set:
            context.stats.message_conversions(topic, produced=info.records_count)
    response = dict(index=index, error_code=ErrorCode.NONE, base_offset=info.first_offset,
                    log_append_time=info.log_append_time, log_start_offset=log_.log_start_offset)
    return response, partition, info.last_offset + 1


async def _await_acks(waits: list[tuple[dict[str, Any], asyncio.Future]], timeout: float) -> None:
    """Park until every ISR member has the records (or ``timeout``); set each partition's outcome."""
    futures = [future for _, future in waits]
    await asyncio.wait(futures, timeout=timeout)
    for response, future in waits:
        if future.done():
            outcome = future.result()
        else:
            outcome = ErrorCode.REQUEST_TIMED_OUT
            future.cancel()
        if outcome != ErrorCode.NONE:
            response["error_code"] = outcome
            if outcome != ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
                response.update(base_offset=-1, log_append_time=-1, log_start_offset=-1)


def transactional_header(records: bytes | None) -> BatchHeader | None:
    """The header of a transactional data batch (v2, bit 0x10, not a marker), else None."""
    if not records or len(records) < HEADER_SIZE or records[MAGIC_AT] != MAGIC_V2:
        return None
    attributes = records[ATTRIBUTES_AT + 1]
    if not attributes & TRANSACTIONAL_BIT or attributes & CONTROL_BIT:
        return None
    try:
        return read_header(records)
    except CorruptRecordError:
        return None  # the append answers it


TransactionalBatches = dict[tuple[str, int], BatchHeader]  # (topic, partition) -> its transactional batch's header


def transactional_batches(request: Any) -> TransactionalBatches:
    """The header of each partition's transactional batch, read once per request."""
    found = {}
    for topic in request.topic_data:
        for p in topic.partition_data:
            header = transactional_header(p.records)
            if header is not None:
                found[(topic.name, p.index)] = header
    return found


def _transactional_id_refused(context: ServerContext, request: Any, batches: TransactionalBatches) -> bool:
    """Kafka's check of a request with transactional records: Write on its (non-null) transactional id."""
    if not batches:
        return False
    transactional_id = getattr(request, "transactional_id", None)
    return transactional_id is None or not context.authorized(WRITE, TRANSACTIONAL_ID, transactional_id)


async def _verify(context: ServerContext, request: Any, topic: str, index: int,
                  batch: BatchHeader) -> tuple[int | None, VerificationGuard | None]:
    """KIP-890 for one partition's transactional batch: (the coordinator's refusal code or None, the guard the
    append must carry)."""
    verify, transactional_id = context.verify_transaction, request.transactional_id
    try:
        partition = leader_for(context, topic, index)
    except PartitionError as exc:
        return exc.code, None  # as Kafka's Partition.maybeStartTransactionVerification: not the leader
    tp = partition.topic_partition
    guard = partition.log.start_transaction_verification(batch.producer_id)
    if guard is SENTINEL_VERIFICATION_GUARD:
        return None, guard  # already in a transaction here: the coordinator added the partition before
    code = await verify(transactional_id, batch.producer_id, batch.producer_epoch, tp)
    return (None if code == ErrorCode.NONE else code), guard


async def _verifications(context: ServerContext, request: Any, batches: TransactionalBatches,
                         topics: set[str]) -> dict[tuple[str, int], tuple[int | None, VerificationGuard | None]]:
    """KIP-890's (refusal, guard) for the transactional batches of ``topics``, the coordinator asked for all at
    once; a partition without a transactional batch is not in the answer."""
    if context.verify_transaction is None or getattr(request, "transactional_id", None) is None:
        return {}
    wanted = [(key, batch) for key, batch in batches.items() if key[0] in topics]
    answers = await asyncio.gather(*(_verify(context, request, name, index, batch)
                                     for (name, index), batch in wanted))
    return {key: answer for (key, _), answer in zip(wanted, answers)}


async def handle_produce(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    acks = request.acks
    known = context.metadata_cache.topics()
    writable = context.authorized_topics(WRITE, {t.name for t in request.topic_data})
    batches = transactional_batches(request)
    txn_refused = _transactional_id_refused(context, request, batches)

    def topic_error(name: str) -> int | None:
        if acks not in VALID_ACKS:
            return ErrorCode.INVALID_REQUIRED_ACKS
        if txn_refused:
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if name not in writable:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return None if name in known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    errors = {topic.name: topic_error(topic.name) for topic in request.topic_data}
    verified = await _verifications(context, request, batches, {t.name for t in request.topic_data
                                                                  if errors[t.name] is None})
    responses, waits = [], []
    for topic in request.topic_data:
        error = errors[topic.name]
        if error is not None:
            partitions = [_failed(p.index, error) for p in topic.partition_data]
        else:
            partitions = []
            for p in topic.partition_data:
                code, guard = verified.get((topic.name, p.index), (None, None))
                if code is not None:
                    partitions.append(_failed(p.index, code))
                    continue
                response, wait = _append(context, header, acks, topic.name, p.index, p.records, guard)
                partitions.append(response)
                if wait is not None:
                    waits.append((response, wait))
        responses.append(dict(name=topic.name, partition_responses=partitions))
    if waits:
        await _await_acks(waits, timeout_seconds(request.timeout))
    if acks == 0:
        failed = [(t["name"], p["index"], p["error_code"]) for t in responses for p in t["partition_responses"]
                  if p["error_code"] != ErrorCode.NONE]
        if failed:
            raise ProtocolError(f"acks=0 produce failed for {failed}: closing the connection as Kafka does")
        return None
    topics = [(topic["name"], topic["partition_responses"]) for topic in responses]
    # the request's bytes were counted against its producer quota as it arrived (KafkaApis)
    return [encode_produce_response(header.api_version, header.correlation_id, topics, throttle_time_ms())]
