"""Kafka API handlers, one module per API: ``async def handle_<api>(context, header, request)``.

``request`` is the decoded kio entity; a handler returns a kio response entity (built with
``codec.build`` so that one handler serves every advertised version), a list of wire segments
(Fetch), or None (Produce with acks=0). This package module holds what several handlers share.
"""
from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Callable, Iterable

from brokers.dynamic_config.config_ops import TOPIC_RESOURCE
from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.replication.partition import Partition
from brokers.replication.replica_manager import PartitionError, leader_partition
from brokers.security.acls import TOPIC
from brokers.server.context import REQUEST_THROTTLE, ServerContext

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.AdminClientId: may produce to internal topics
METADATA_POLL_SECONDS = 0.01


def response(header: RequestHeader, **fields: Any) -> Any:
    """The response entity of the request's API and version, never throttled (``throttle_time`` 0)."""
    return codec.build_response(header, throttle_time=0, **fields)


def throttle_time_ms() -> int:
    """The request's client quota throttle time, for an answer encoded by hand (Produce, Metadata; KafkaApis puts
    it into response entities itself): decided here, at the first call."""
    throttle = REQUEST_THROTTLE.get()
    return throttle.throttle_time_ms() if throttle is not None else 0


def by_topic(answers: Iterable[tuple[TopicPartition, dict[str, Any]]], name_field: str = "name") -> list[dict[str, Any]]:
    """Per-partition answers grouped as a response's topic entries: ``{name_field: topic, "partitions":
    [{"partition_index": p, **fields}, ...]}``, topics and partitions in the order given."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, fields in answers:
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, **fields})
    return [{name_field: topic, "partitions": partitions} for topic, partitions in topics.items()]


def error_message(exc: KafkaError) -> str:
    """A KafkaError's text for a response's ``error_message``: its message, else the error's name."""
    return str(exc.args[0]) if exc.args else exc.code.name


# one TopicPartition per (topic, partition) looked up: a Fetch names every session partition each time
_topic_partition = functools.lru_cache(maxsize=1 << 16)(TopicPartition)


def leader_for(context: ServerContext, topic: str, partition: int) -> Partition:
    """The partition this broker leads, else PartitionError with the code a client must see.

    As Kafka's ``getPartitionOrException``: a partition the metadata cache knows but this broker does
    not host is NOT_LEADER_OR_FOLLOWER (the client's metadata is stale), one nobody knows is
    UNKNOWN_TOPIC_OR_PARTITION.
    """
    tp = _topic_partition(topic, partition)
    try:
        return leader_partition(context.replica_manager, tp)
    except PartitionError as exc:
        if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and tp in context.metadata_cache.partitions:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER) from None
        raise


NO_LEADER_EPOCH = -1  # a request's current_leader_epoch when the client knows none: no fencing


def leader_epoch_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode | None:
    """Kafka's ``Partition.localLogWithEpochOrException`` check of a client's ``current_leader_epoch`` (KIP-320):
    None when it is -1 or this leader's epoch; FENCED_LEADER_EPOCH when older (the client's metadata is
    stale), UNKNOWN_LEADER_EPOCH when newer (this broker's is)."""
    if current_leader_epoch == NO_LEADER_EPOCH or current_leader_epoch == leader_epoch:
        return None
    return ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH


def timeout_seconds(value) -> float:
    """A kio duration (timedelta) or int milliseconds, in seconds."""
    return value.total_seconds() if hasattr(value, "total_seconds") else value / 1000


async def wait_for_metadata(condition: Callable[[], bool], timeout: float) -> bool:
    """Wait until ``condition()`` holds (checked against the metadata cache) or ``timeout`` seconds
    pass; return whether it held. The cache has no change notification yet, so this polls every
    10 ms (Kafka re-checks its delayed admin operations on every UpdateMetadata)."""
    deadline = time.monotonic() + timeout
    while not condition():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(METADATA_POLL_SECONDS, remaining))
    return True


def has_leaders(context: ServerContext, topic: str, count: int) -> bool:
    """This broker's metadata shows partitions 0..count-1 of ``topic``, each with a leader."""
    states = context.metadata_cache.partitions_of(topic)
    return all(p in states and states[p].leader >= 0 for p in range(count))


async def wait_for_leaders(context: ServerContext, pending: list[tuple[dict[str, Any], int]], timeout: float,
                           message: str) -> None:
    """Kafka's DelayedCreatePartitions: wait, up to ``timeout``, until every ``(result, partition count)`` topic
    has its leaders in this broker's metadata; each result still without them gets REQUEST_TIMED_OUT."""
    if not pending:
        return
    if await wait_for_metadata(lambda: all(has_leaders(context, r["name"], n) for r, n in pending), timeout):
        return
    for result, count in pending:
        if not has_leaders(context, result["name"], count):
            result.update(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=message)


def config_resource_denied(context: ServerContext, operation: int, resource) -> ErrorCode | None:
    """The config APIs' authorization (Kafka 2.8): ``operation`` (DescribeConfigs / AlterConfigs) on the topic,
    or on the cluster for a broker resource. None when allowed (always, without an authorizer), else the
    resource's error: TOPIC_ or CLUSTER_AUTHORIZATION_FAILED."""
    if resource.resource_type == TOPIC_RESOURCE:
        allowed = context.authorized(operation, TOPIC, resource.resource_name)
        return None if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    allowed = context.authorized_on_cluster(operation)
    return None if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
