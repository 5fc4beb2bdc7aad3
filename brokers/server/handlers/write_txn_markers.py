"""WriteTxnMarkers (API key 27, v0-1): a transaction coordinator ends a transaction on the partitions
this broker leads (Kafka 2.8's ``KafkaApis.handleWriteTxnMarkersRequest``).

* the sender needs ClusterAction on the cluster (only brokers send it), else every partition answers
  CLUSTER_AUTHORIZATION_FAILED (31);
* per partition: this broker must lead it (NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION);
* a partition of ``__consumer_offsets`` completes the producer's pending transactional offset commits
  in the group coordinator (``complete_transaction``: made visible on COMMIT, dropped on ABORT, with the
  marker's coordinator epoch, TRANSACTION_COORDINATOR_FENCED when older than the producer's last) and
  answers its ErrorCode;
* any other partition gets the marker appended as an acks=all write (``Partition.append_marker``:
  min.insync.replicas first, NOT_ENOUGH_REPLICAS) and answers once the high watermark passes it, or
  REQUEST_TIMED_OUT after the broker's ``request.timeout.ms``. A marker from an older coordinator
  epoch than the partition has seen for the producer is TRANSACTION_COORDINATOR_FENCED (52), from an
  older producer epoch INVALID_PRODUCER_EPOCH (47); nothing is written then.

Every marker of the request is written before any is waited for, so all partitions wait together.
v0 and v1 carry the same fields; v1 is flexible (v0 is a legacy layout, ``protocol.legacy_schemas``).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from brokers.model import OFFSETS_TOPIC
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import CLUSTER_ACTION
from brokers.server.context import ServerContext
from brokers.server.handlers import leader_for, response

log = logging.getLogger(__name__)



def _marker_error(context: ServerContext, marker: Any, topic: str, index: int) -> tuple[int, asyncio.Future | None]:
    """Append one partition's marker: (error code, the acks=all wait or None)."""
    try:
        partition = leader_for(context, topic, index)
        info = partition.append_marker(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                       marker.coordinator_epoch, int(time.time() * 1000))
    except PartitionError as exc:
        return exc.code, None
    except KafkaError as exc:
        log.info("refusing marker for producer %d on %s-%d: %s", marker.producer_id, topic, index, exc)
        return exc.code, None
    except OSError as exc:
        log.error("marker append to %s-%d failed: %s", topic, index, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, None
    return ErrorCode.NONE, partition.wait_for_acks(info.last_offset + 1)


async def _complete_offsets(context: ServerContext, marker: Any, index: int) -> int:
    """A ``__consumer_offsets`` partition: the group coordinator completes the transaction's offsets."""
    try:
        leader_for(context, OFFSETS_TOPIC, index)
    except PartitionError as exc:
        return exc.code
    coordinator = context.group_coordinator
    if coordinator is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    try:
        return await coordinator.complete_transaction(index, marker.producer_id, marker.producer_epoch,
                                                      marker.transaction_result, marker.coordinator_epoch)
    except Exception:  # noqa: BLE001 - a coordinator bug answers this partition, not the connection
        log.exception("completing producer %d's offsets on %s-%d failed", marker.producer_id,
                      OFFSETS_TOPIC, index)
        return ErrorCode.UNKNOWN_SERVER_ERROR


async def _wait(waits: list[tuple[dict[str, Any], asyncio.Future]], timeout: float) -> None:
    await asyncio.wait([future for _, future in waits], timeout=timeout)
    for answer, future in waits:
        if future.done():
            answer["error_code"] = future.result()
        else:
            future.cancel()
            answer["error_code"] = ErrorCode.REQUEST_TIMED_OUT


async def handle_write_txn_markers(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    allowed = context.authorized_on_cluster(CLUSTER_ACTION)
    markers, waits, offsets = [], [], []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                answer: dict[str, Any] = dict(partition_index=index, error_code=ErrorCode.NONE)
                if not allowed:
                    answer["error_code"] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif topic.name == OFFSETS_TOPIC:
                    offsets.append((answer, _complete_offsets(context, marker, index)))
                else:
                    answer["error_code"], wait = _marker_error(context, marker, topic.name, index)
                    if wait is not None:
                        waits.append((answer, wait))
                partitions.append(answer)
            topics.append(dict(name=topic.name, partitions=partitions))
        markers.append(dict(producer_id=marker.producer_id, topics=topics))
    if offsets:
        codes = await asyncio.gather(*(completion for _, completion in offsets))
        for (answer, _), code in zip(offsets, codes):
            answer["error_code"] = code
    if waits:
        await _wait(waits, context.config["request.timeout.ms"] / 1000)
    return response(header, markers=markers)
