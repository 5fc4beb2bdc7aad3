"""FindCoordinator (v0-v3): which broker coordinates a consumer group (reference §5.1) or a transactional id
(KIP-98).

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``abs(java_string_hash(G)) % offsets.topic.num.partitions`` (``context.coordinator_partition``). The
topic holds no data here (offsets live in ZooKeeper): its partitions are leadership tokens, so a group
moves with that partition's leadership, exactly as in Kafka. The coordinator of transactional id T is the
leader of ``__transaction_state`` partition ``abs(java_string_hash(T)) % transaction.state.log.num.partitions``
(``context.transaction_partition``, wired by the composition root from the transaction coordinator).

* v1+ name a ``key_type`` (Kafka's CoordinatorType: 0 group, 1 transaction; v0 means group); any other
  is INVALID_REQUEST. v3 is the flexible encoding.
* Describe on the group (GROUP_AUTHORIZATION_FAILED), Describe on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked first as Kafka does.
* The first lookup of a key type creates its topic and answers COORDINATOR_NOT_AVAILABLE (15): clients
  retry. ``__consumer_offsets``: ``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
  replicas capped by the live brokers, ``cleanup.policy=compact``. ``__transaction_state`` (Kafka's
  ``TransactionLog`` topic configs): ``transaction.state.log.num.partitions`` partitions,
  ``transaction.state.log.replication.factor`` replicas capped by the live brokers, compacted,
  ``min.insync.replicas`` = ``transaction.state.log.min.isr`` capped by the replication factor,
  ``segment.bytes`` = ``transaction.state.log.segment.bytes``, no unclean leader election. (Kafka also sets
  ``compression.type=uncompressed``; zkafka topics have no such config and the coordinator's batches are
  written uncompressed.)
* Until that partition has a live leader: COORDINATOR_NOT_AVAILABLE. A broker that runs no coordinator of
  that type (no ``coordinator_partition`` / ``transaction_partition``) answers COORDINATOR_NOT_AVAILABLE too.

The API was advertised before groups existed because librdkafka enables lz4 compression only when a
broker advertises FindCoordinator (its LZ4 feature probe, wire-protocol.md §1.3).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from brokers.model import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.security.acls import DESCRIBE, GROUP, TRANSACTIONAL_ID
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext

log = logging.getLogger(__name__)

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1  # Kafka's CoordinatorType


def _unavailable(cls, message: str) -> Any:
    return codec.build(cls, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=message, node_id=-1,
                       host="", port=-1)


def _live_capped(context: ServerContext, replication_factor: int) -> int:
    return min(replication_factor, max(1, len(context.metadata_cache.live_brokers)))


def offsets_topic_spec(context: ServerContext) -> tuple[int, int, dict[str, str]]:
    """(partitions, replication factor, topic configs) of ``__consumer_offsets``."""
    config = context.config
    return (config["offsets.topic.num.partitions"], _live_capped(context, config["offsets.topic.replication.factor"]),
            {"cleanup.policy": "compact"})


def transaction_topic_spec(context: ServerContext) -> tuple[int, int, dict[str, str]]:
    """(partitions, replication factor, topic configs) of ``__transaction_state`` (Kafka's TransactionLog)."""
    config = context.config
    replication = _live_capped(context, config["transaction.state.log.replication.factor"])
    return (config["transaction.state.log.num.partitions"], replication, {
        "cleanup.policy": "compact", "unclean.leader.election.enable": "false",
        "min.insync.replicas": str(min(config["transaction.state.log.min.isr"], replication)),
        "segment.bytes": str(config["transaction.state.log.segment.bytes"])})


async def _create_internal_topic(context: ServerContext, topic: str, spec: tuple[int, int, dict[str, str]]) -> None:
    partitions, replication, configs = spec
    try:
        await context.admin.create_topic(topic, partitions, replication, configs, None, False)
        log.info("created %s (%d partitions, RF %d)", topic, partitions, replication)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("cannot create %s: %s", topic, exc)


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
        topic, partition_of, spec = TRANSACTION_STATE_TOPIC, context.transaction_partition, transaction_topic_spec
    else:
        topic, partition_of, spec = OFFSETS_TOPIC, context.coordinator_partition, offsets_topic_spec
    if partition_of is None:
        kind = "transaction" if key_type == TRANSACTION_KEY_TYPE else "group"
        return _unavailable(cls, f"this broker runs no {kind} coordinator")
    if not context.metadata_cache.contains_topic(topic):
        await _create_internal_topic(context, topic, spec(context))
        return _unavailable(cls, f"{topic} is being created")
    partition = partition_of(request.key)
    leader = context.metadata_cache.leader_of(TopicPartition(topic, partition))
    if leader is None:
        return _unavailable(cls, f"{topic}-{partition} has no live leader")
    try:
        endpoint = leader.endpoint(context.listener_name)
    except KeyError:
        return _unavailable(cls, f"broker {leader.id} has no {context.listener_name} listener")
    return codec.build(cls, error_code=ErrorCode.NONE, error_message=None, node_id=leader.id, host=endpoint.host,
                       port=endpoint.port)
