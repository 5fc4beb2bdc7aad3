"""OffsetsForLeaderEpoch (API key 23, v0-v4): where a leader epoch ended in this leader's log (KIP-101).

Followers ask it on becoming follower (``replica_id`` = their broker id, v3+; Kafka 2.8 answers every asker
from the leader alike) to find where to truncate; consumers (``replica_id`` -1) ask it to detect log
truncation (KIP-320). v0 answers only the end offset, v1+ also the epoch it belongs to; v2+ carries
``current_leader_epoch`` (before v2 it is -1: no fencing); v4 is flexible. Per partition, as Kafka 2.8's
``Partition.lastOffsetForLeaderEpoch``:

* this broker must lead it (NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION);
* ``current_leader_epoch`` (when not -1) must equal the leader epoch: older is FENCED_LEADER_EPOCH (74),
  newer UNKNOWN_LEADER_EPOCH (75);
* the answer ``(leader_epoch, end_offset)`` comes from the leader-epoch cache (reference §3.6):
  the latest epoch ends at the log end offset; an older one where the next higher epoch starts,
  reported under the largest known epoch <= the requested one; unknown is (-1, -1) with no error.

With an authorizer: ClusterAction on the cluster, or else Describe on the topic (TOPIC_AUTHORIZATION_FAILED).
Errored partitions answer (-1, -1).
"""
from __future__ import annotations

from typing import Any

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import CLUSTER_ACTION, DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import leader_epoch_error, leader_for


def _answer(index: int, error: int, leader_epoch: int = -1, end_offset: int = -1) -> dict[str, Any]:
    return dict(partition=index, error_code=error, leader_epoch=leader_epoch, end_offset=end_offset)


def _end_offset(context: ServerContext, topic: str, wanted: Any) -> dict[str, Any]:
    index = wanted.partition
    try:
        partition = leader_for(context, topic, index)
    except PartitionError as exc:
        return _answer(index, exc.code)
    fenced = leader_epoch_error(wanted.current_leader_epoch, partition.leader_epoch)
    if fenced is not None:
        return _answer(index, fenced)
    log = partition.log
    epoch, end_offset = log.leader_epoch_cache.end_offset_for(wanted.leader_epoch, log.log_end_offset)
    return _answer(index, ErrorCode.NONE, epoch, end_offset)


def _described(context: ServerContext, request: Any) -> set[str]:
    """Kafka 2.8: every topic with ClusterAction on the cluster (followers), else those with Describe."""
    names = {topic.topic for topic in request.topics}
    return names if context.authorized_on_cluster(CLUSTER_ACTION) else context.authorized_topics(DESCRIBE, names)


async def handle_offsets_for_leader_epoch(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    described = _described(context, request)
    topics = [dict(topic=topic.topic, partitions=[
        _end_offset(context, topic.topic, p) if topic.topic in described
        else _answer(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions])
        for topic in request.topics]
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, throttle_time=0, topics=topics)
