"""FindCoordinator (v0-v3): which broker coordinates a consumer group (reference §5.1).

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``abs(java_string_hash(G)) % offsets.topic.num.partitions`` (``context.coordinator_partition``). The
topic holds no data here (offsets live in ZooKeeper): its partitions are leadership tokens, so a group
moves with that partition's leadership, exactly as in Kafka.

* v1+ name a ``key_type`` (Kafka's CoordinatorType: 0 group, 1 transaction; v0 means group); any other
  is INVALID_REQUEST. v3 is the flexible encoding.
* Describe on the group (GROUP_AUTHORIZATION_FAILED), Describe on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked first as Kafka does.
* The first lookup creates ``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions,
  ``offsets.topic.replication.factor`` replicas capped by the live brokers, ``cleanup.policy=compact``)
  and answers COORDINATOR_NOT_AVAILABLE (15): clients retry.
* Until that partition has a live leader: COORDINATOR_NOT_AVAILABLE.
* zkafka has no transaction coordinator (and no ``__transaction_state``): a transaction key is answered
  COORDINATOR_NOT_AVAILABLE, Kafka 2.8's answer while that topic has no leader; a transactional client
  retries until its own timeout.

The API was advertised before groups existed because librdkafka enables lz4 compression only when a
broker advertises FindCoordinator (its LZ4 feature probe, wire-protocol.md §1.3).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.security.acls import DESCRIBE, GROUP, TRANSACTIONAL_ID
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1  # Kafka's CoordinatorType


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


def key_type_error(key_type: int, authorized: Callable[[int, str], bool], key: str) -> ErrorCode | None:
    """Kafka 2.8's checks before any lookup: a known key type, and Describe on the group or transactional id."""
    if key_type == GROUP_KEY_TYPE:
        return None if authorized(GROUP, key) else ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY_TYPE:
        return None if authorized(TRANSACTIONAL_ID, key) else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return ErrorCode.INVALID_REQUEST


async def handle_find_coordinator(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    cls = codec.response_class(header.api_key, header.api_version)
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)  # v0 has none: a group
    error = key_type_error(key_type, lambda resource, name: context.authorized(DESCRIBE, resource, name), request.key)
    if error is not None:
        message = f"unknown coordinator type {key_type}" if error == ErrorCode.INVALID_REQUEST else None
        return codec.build(cls, error_code=error, error_message=message, node_id=-1, host="", port=-1)
    if key_type == TRANSACTION_KEY_TYPE:
        return _unavailable(cls, "this cluster has no transaction coordinator")
    if context.coordinator_partition is None:
        return _unavailable(cls, "this broker runs no group coordinator")
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
