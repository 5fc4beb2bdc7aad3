"""ListOffsets (API key 2, v0-v6): offsets per partition for a target timestamp (reference §4.7), as Kafka
2.8's ``KafkaApis.handleListOffsetRequest`` and ``Partition.fetchOffsetForTimestamp``.

v1+ answers one offset per partition (``offset_for_target``):

* -2 (earliest): the log start offset, with the leader epoch of the first epoch-cache entry when that entry
  starts at or before it (else -1);
* -1 (latest): the last fetchable offset with this leader's epoch: for consumers (``replica_id`` -1) the high
  watermark, READ_COMMITTED (v2+ ``isolation_level`` 1) the last stable offset (``Log.last_stable_offset``);
  for a replica id the log end offset;
* t >= 0: the first offset whose record timestamp is >= t (``Log.offset_for_timestamp``), with that
  record's timestamp and its batch's leader epoch, answered only below the last fetchable offset;
  otherwise, or when no record qualifies, offset -1 and timestamp -1. Other negative targets have no
  answer either (-1/-1).

v4+ ``current_leader_epoch`` fences (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); ``leader_epoch`` in the
answer is v4+ (-1 when unknown). A partition named twice in a v1+ request answers INVALID_REQUEST.

v0 answers the old style: Kafka's ``Log.legacyFetchOffsetsBefore`` over the segments' base offsets and
their files' last-modified times (``legacy_offsets``), plus the log end offset when the active segment
has data; -1 latest, -2 earliest, else the newest segment modified at or before the target. The answer
is the newest such offset (the codec's v0 layout carries one, ``max_num_offsets`` 1, the value every 0.8-era
client sends for latest/earliest), an empty list when none; a consumer's answer never passes the high
watermark.

Errors are per partition (offset and timestamp -1): UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER
unless this broker leads the partition (Kafka's debugging replica id -2 may ask any replica);
TOPIC_AUTHORIZATION_FAILED without Describe on the topic.
"""
from __future__ import annotations

from collections import Counter
from itertools import dropwhile
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.replication.partition import Partition
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import NO_LEADER_EPOCH, leader_epoch_error, leader_for

EARLIEST = -2
LATEST = -1
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
NO_TIMESTAMP = -1
NO_OFFSET = -1
READ_COMMITTED = 1
DEFAULT_MAX_NUM_OFFSETS = 1  # a v0 request built without the field (tests, the codec's base entity)


def _answer(index: int, error: int, timestamp: int = NO_TIMESTAMP, offset: int = NO_OFFSET,
            leader_epoch: int = NO_LEADER_EPOCH) -> dict[str, Any]:
    return dict(partition_index=index, error_code=error, timestamp=timestamp, offset=offset,
                leader_epoch=leader_epoch, old_style_offsets=[])


def legacy_offsets(segments: list[tuple[int, int]], log_end_offset: int, now_ms: int, active_has_data: bool,
                   target: int, max_num_offsets: int) -> list[int]:
    """Kafka's ``Log.legacyFetchOffsetsBefore``: ``segments`` are (base offset clamped to the log start,
    last-modified ms) oldest first; the answer is newest first, at most ``max_num_offsets`` long."""
    points = list(segments) + ([(log_end_offset, now_ms)] if active_has_data else [])
    if target == LATEST:
        start = len(points) - 1
    elif target == EARLIEST:
        start = 0
    else:
        start = next((i for i in range(len(points) - 1, -1, -1) if points[i][1] <= target), -1)
    count = max(0, min(max_num_offsets, start + 1))
    return sorted((points[start - j][0] for j in range(count)), reverse=True)


def consumer_visible(offsets: list[int], high_watermark: int) -> list[int]:
    """A consumer's v0 answer: offsets past the high watermark give way to the high watermark."""
    if any(offset > high_watermark for offset in offsets):
        return [high_watermark, *dropwhile(lambda offset: offset > high_watermark, offsets)]
    return offsets


def _legacy_offset(partition: Partition, replica_id: int, index: int, target: int,
                   max_num_offsets: int) -> dict[str, Any]:
    log = partition.log
    segments = log.segments
    points = [(max(s.base_offset, log.log_start_offset), s.last_modified_ms) for s in segments]
    offsets = legacy_offsets(points, log.log_end_offset, log.now_ms(), segments[-1].size > 0, target,
                             max_num_offsets)
    if replica_id == CONSUMER_REPLICA_ID:
        offsets = consumer_visible(offsets, log.high_watermark)
    answer = _answer(index, ErrorCode.NONE, offset=offsets[0] if offsets else NO_OFFSET)
    answer["old_style_offsets"] = offsets
    return answer


def _max_num_offsets(header: RequestHeader) -> dict[tuple[str, int], int]:
    """ListOffsets v0's per-partition max_num_offsets, as the request carried them (kio's v1 has no field)."""
    fields = header.legacy_fields or {"topics": ()}
    return {(topic["name"], partition["partition_index"]): partition["max_num_offsets"]
            for topic in fields["topics"] for partition in topic["partitions"]}


def offset_for_target(partition: Partition, last_fetchable: int, target: int) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) of a v1+ answer."""
    log, cache = partition.log, partition.log.leader_epoch_cache
    if target == EARLIEST:
        entries = cache.entries
        epoch = entries[0].epoch if entries and entries[0].start_offset <= log.log_start_offset else NO_LEADER_EPOCH
        return NO_TIMESTAMP, log.log_start_offset, epoch
    if target == LATEST:
        return NO_TIMESTAMP, last_fetchable, partition.leader_epoch
    found = log.offset_for_timestamp(target) if target >= 0 else None
    if found is None or found[0] >= last_fetchable:
        return NO_TIMESTAMP, NO_OFFSET, NO_LEADER_EPOCH
    offset, timestamp = found
    return timestamp, offset, cache.epoch_for_offset(offset)


def _partition(context: ServerContext, replica_id: int, topic: str, index: int) -> Partition:
    if replica_id == DEBUGGING_REPLICA_ID:
        partition = context.replica_manager.partitions.get(TopicPartition(topic, index))
        if partition is None:
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return partition
    return leader_for(context, topic, index)


def _offset(context: ServerContext, header: RequestHeader, request: Any, topic: str, wanted: Any,
            max_num_offsets: dict[tuple[str, int], int]) -> dict[str, Any]:
    index = wanted.partition_index
    try:
        partition = _partition(context, request.replica_id, topic, index)
    except PartitionError as exc:
        return _answer(index, exc.code)
    if header.api_version == 0:
        limit = max_num_offsets.get((topic, index), DEFAULT_MAX_NUM_OFFSETS)
        return _legacy_offset(partition, request.replica_id, index, wanted.timestamp, limit)
    fenced = leader_epoch_error(getattr(wanted, "current_leader_epoch", NO_LEADER_EPOCH), partition.leader_epoch)
    if fenced is not None:
        return _answer(index, fenced)
    log = partition.log
    last_fetchable = _last_fetchable(log, header.api_version, request)
    timestamp, offset, epoch = offset_for_target(partition, last_fetchable, wanted.timestamp)
    return _answer(index, ErrorCode.NONE, timestamp, offset, epoch)


def _last_fetchable(log: Any, version: int, request: Any) -> int:
    """Kafka's fetchOffsetForTimestamp bound: the LSO for a READ_COMMITTED consumer, the HW for others,
    the log end for a replica."""
    if request.replica_id != CONSUMER_REPLICA_ID:
        return log.log_end_offset
    if version >= 2 and getattr(request, "isolation_level", 0) == READ_COMMITTED:
        return log.last_stable_offset
    return log.high_watermark


async def handle_list_offsets(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    topics = []
    described = context.authorized_topics(DESCRIBE, {topic.name for topic in request.topics})
    named = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    max_num_offsets = _max_num_offsets(header) if header.api_version == 0 else {}
    for topic in request.topics:
        if topic.name not in described:
            partitions = [_answer(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
        else:
            partitions = [_answer(p.partition_index, ErrorCode.INVALID_REQUEST)
                          if header.api_version >= 1 and named[topic.name, p.partition_index] > 1
                          else _offset(context, header, request, topic.name, p, max_num_offsets)
                          for p in topic.partitions]
        topics.append(dict(name=topic.name, partitions=partitions))
    if header.api_version == 0:  # a list of offsets per partition: kio's base version (v1) holds one
        return [codec.encode_legacy_response(header.api_key, 0, header.correlation_id, {"topics": topics})]
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, throttle_time=0, topics=topics)
