"""DeleteRecords (api 21, v0-v2; v2 is flexible; v1 is v0 with throttling).

As Kafka 2.8's ``KafkaApis.handleDeleteRecordsRequest`` + ``ReplicaManager.deleteRecords``: per partition,
the leader moves its log start offset to the requested offset (-1: the high watermark) and the answer
waits until the partition's low watermark reaches it (``brokers.replication.delete_records``), within the
request's ``timeout_ms``; each partition answers its ``low_watermark`` and error code:

- TOPIC_AUTHORIZATION_FAILED without Delete on the topic; UNKNOWN_TOPIC_OR_PARTITION /
  NOT_LEADER_OR_FOLLOWER unless this broker leads the partition;
- OFFSET_OUT_OF_RANGE above the high watermark (or below -1); POLICY_VIOLATION on a compacted topic;
- REQUEST_TIMED_OUT when the followers on live brokers have not moved their log start in time (the
  leader's has moved: a retry answers at once once they have);
- a partition named twice answers once (the last offset asked wins, as Kafka's map does).
"""
from __future__ import annotations

import asyncio
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.replication import delete_records as deletion
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import DELETE
from brokers.server.context import ServerContext
from brokers.server.handlers import by_topic, leader_for, response, timeout_seconds

NO_LOW_WATERMARK = -1
Outcome = "int | ErrorCode | asyncio.Future"


def requested_offsets(request: Any) -> dict[TopicPartition, int]:
    """Each partition's requested offset (a partition named twice: the last one)."""
    return {TopicPartition(t.name, int(p.partition_index)): int(p.offset) for t in request.topics for p in t.partitions}


def _start(context: ServerContext, tp: TopicPartition, requested: int, live: set[int]) -> Outcome:
    """Validate and move the log start; an ErrorCode, or the future of the low watermark."""
    try:
        partition = leader_for(context, tp.topic, tp.partition)
    except PartitionError as exc:
        return exc.code
    log = partition.log
    offset = deletion.delete_offset(requested, log.high_watermark, log.config.cleanup_policy)
    if isinstance(offset, ErrorCode):
        return offset
    try:
        return partition.delete_records(offset, live)
    except KafkaError as exc:  # the log's dir went offline, or the HW check raced
        return exc.code


async def _settle(outcomes: dict[TopicPartition, Outcome], timeout: float) -> dict[TopicPartition, tuple[int, int]]:
    """(low watermark, error code) per partition, waiting at most ``timeout`` for the futures."""
    futures = [o for o in outcomes.values() if isinstance(o, asyncio.Future)]
    if futures:
        await asyncio.wait(futures, timeout=max(timeout, 0.0))
    settled = {}
    for tp, outcome in outcomes.items():
        if isinstance(outcome, asyncio.Future):
            if not outcome.done():
                outcome.cancel()
                outcome = ErrorCode.REQUEST_TIMED_OUT
            else:
                outcome = outcome.result()
        if isinstance(outcome, ErrorCode):
            settled[tp] = (NO_LOW_WATERMARK, int(outcome))
        else:
            settled[tp] = (int(outcome), int(ErrorCode.NONE))
    return settled


async def handle_delete_records(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    wanted = requested_offsets(request)
    allowed = context.authorized_topics(DELETE, {tp.topic for tp in wanted})
    live = set(context.metadata_cache.live_brokers)
    outcomes: dict[TopicPartition, Outcome] = {}
    for tp, offset in wanted.items():  # no await in between: each check and its log start move are one step
        outcomes[tp] = (_start(context, tp, offset, live) if tp.topic in allowed
                        else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    settled = await _settle(outcomes, timeout_seconds(request.timeout))
    return response(header, topics=by_topic((tp, {"low_watermark": low_watermark, "error_code": code})
                                            for tp, (low_watermark, code) in settled.items()))
