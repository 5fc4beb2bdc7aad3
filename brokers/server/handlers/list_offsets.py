"""ListOffsets (API key 2, v1-v2): an offset per partition for a target timestamp (reference §4.7).

* -2 (earliest): the log start offset;
* -1 (latest): for consumers (``replica_id`` -1) the high watermark (READ_COMMITTED's last stable offset
  is the same: no transactions); for a replica id the log end offset;
* t >= 0: the first offset whose record timestamp is >= t (``Log.offset_for_timestamp``), with that
  record's timestamp, answered only if the offset is below the last fetchable offset (above);
  otherwise, or when no record qualifies, offset -1 and timestamp -1. Other negative targets have no
  answer either (-1/-1).

-1 and -2 answer timestamp -1, as Kafka does. Errors are per partition (offset and timestamp -1):
UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER unless this broker leads the partition (Kafka's
debugging replica id -2 may ask any replica). v1+ takes one timestamp per partition; ``max_num_offsets``
(v0) does not exist here.
"""
from __future__ import annotations

from typing import Any

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import leader_for

EARLIEST = -2
LATEST = -1
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
NO_TIMESTAMP = -1
NO_OFFSET = -1


def _answer(index: int, error: int, timestamp: int = NO_TIMESTAMP, offset: int = NO_OFFSET) -> dict[str, Any]:
    return dict(partition_index=index, error_code=error, timestamp=timestamp, offset=offset, old_style_offsets=None)


def _offset(context: ServerContext, replica_id: int, topic: str, index: int, target: int) -> dict[str, Any]:
    try:
        if replica_id == DEBUGGING_REPLICA_ID:
            partition = context.replica_manager.partitions.get(TopicPartition(topic, index))
            if partition is None:
                raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            partition = leader_for(context, topic, index)
    except PartitionError as exc:
        return _answer(index, exc.code)
    log = partition.log
    last_fetchable = log.high_watermark if replica_id == CONSUMER_REPLICA_ID else log.log_end_offset
    if target == EARLIEST:
        return _answer(index, ErrorCode.NONE, offset=log.log_start_offset)
    if target == LATEST:
        return _answer(index, ErrorCode.NONE, offset=last_fetchable)
    found = log.offset_for_timestamp(target) if target >= 0 else None
    if found is None or found[0] >= last_fetchable:
        return _answer(index, ErrorCode.NONE)
    offset, timestamp = found
    return _answer(index, ErrorCode.NONE, timestamp=timestamp, offset=offset)


async def handle_list_offsets(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    topics = []
    described = context.authorized_topics(DESCRIBE, {topic.name for topic in request.topics})
    for topic in request.topics:
        if topic.name not in described:
            partitions = [_answer(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
        else:
            partitions = [_offset(context, request.replica_id, topic.name, p.partition_index, p.timestamp)
                          for p in topic.partitions]
        topics.append(dict(name=topic.name, partitions=partitions))
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, throttle_time=0, topics=topics)
