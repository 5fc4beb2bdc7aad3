"""FindCoordinator (v0-v1): which broker coordinates a consumer group (reference §5.1).

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``abs(java_string_hash(G)) % offsets.topic.num.partitions`` (``context.coordinator_partition``). The
topic holds no data here (offsets live in ZooKeeper): its partitions are leadership tokens, so a group
moves with that partition's leadership, exactly as in Kafka.

* The first lookup creates ``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions,
  ``offsets.topic.replication.factor`` replicas capped by the live brokers, ``cleanup.policy=compact``)
  and answers COORDINATOR_NOT_AVAILABLE (15): clients retry.
* Until that partition has a live leader: COORDINATOR_NOT_AVAILABLE.
* Transaction coordinators (key_type 1) are not offered: COORDINATOR_NOT_AVAILABLE.

The API was advertised before groups existed because librdkafka enables lz4 compression only when a
broker advertises FindCoordinator (its LZ4 feature probe, wire-protocol.md §1.3).
"""
from __future__ import annotations

import logging
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.security.acls import DESCRIBE, GROUP
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_KEY_TYPE = 0


def _unavailable(cls, message: str) -> Any:
    return codec.build(cls, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=message, node_id=-1,
                       host="", port=-1)


async def _create_offsets_topic(context: ServerContext) -> None:
    config = context.config
    replication = min(config["offsets.topic.replication.factor"], max(1, len(context.metadata_cache.live_brokers)))
    try:
        await context.admin.create_topic(OFFSETS_TOPIC, config["offsets.topic.num.partitions"], replication,
                                         {"cleanup.policy": "compact"}, None, False)
        log.info("created %s (%d partitions, RF %d)", OFFSETS_TOPIC, config["offsets.topic.num.partitions"],
                 replication)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("cannot create %s: %s", OFFSETS_TOPIC, exc)


async def handle_find_coordinator(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    cls = codec.response_class(header.api_key, header.api_version)
    if getattr(request, "key_type", GROUP_KEY_TYPE) != GROUP_KEY_TYPE or context.coordinator_partition is None:
        return _unavailable(cls, "only group coordinators are offered")
    if not context.authorized(DESCRIBE, GROUP, request.key):
        return codec.build(cls, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None, node_id=-1,
                           host="", port=-1)
    if not context.metadata_cache.contains_topic(OFFSETS_TOPIC):
        await _create_offsets_topic(context)
        return _unavailable(cls, f"{OFFSETS_TOPIC} is being created")
    partition = context.coordinator_partition(request.key)
    leader = context.metadata_cache.leader_of(TopicPartition(OFFSETS_TOPIC, partition))
    if leader is None:
        return _unavailable(cls, f"{OFFSETS_TOPIC}-{partition} has no live leader")
    try:
        endpoint = leader.endpoint(context.listener_name)
    except KeyError:
        return _unavailable(cls, f"broker {leader.id} has no {context.listener_name} listener")
    return codec.build(cls, error_code=ErrorCode.NONE, error_message=None, node_id=leader.id, host=endpoint.host,
                       port=endpoint.port)
