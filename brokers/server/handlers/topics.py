"""The topic APIs: CreateTopics (19, v2-v4) and DeleteTopics (20, v3). With an authorizer each checks Kafka
2.8's operation: Create on the cluster or the topic (CreateTopics), Delete on the topic (DeleteTopics;
UNKNOWN_TOPIC_OR_PARTITION without Describe). The work itself is ``context.admin`` (``AdminOps``, ZooKeeper and
the controller); these handlers validate the request and wait for the result as Kafka 2.8 does.

**CreateTopics** (``ZkAdminManager.createTopics``): a name given twice is INVALID_REQUEST for each
entry; ``num_partitions`` / ``replication_factor`` -1 take ``num.partitions`` /
``default.replication.factor``; explicit ``assignments`` may not be combined with counts
(INVALID_REQUEST) and give the partition count and replication factor; a config with a null value is
INVALID_REQUEST. ``AdminOps.create_topic`` raises everything else (TOPIC_ALREADY_EXISTS, INVALID_CONFIG,
...), whose message becomes ``error_message``. After a real creation the handler waits, up to the
request's timeout, until this broker's metadata cache shows every partition with a leader
(DelayedCreatePartitions); if it does not, REQUEST_TIMED_OUT (the creation still completes). With a
timeout <= 0 it does not wait, so a creation answers REQUEST_TIMED_OUT unless the cache already shows
it, as in Kafka; ``validate_only`` answers at once.

**DeleteTopics**: a name given twice is INVALID_REQUEST; ``delete.topic.enable=false`` is
TOPIC_DELETION_DISABLED (73; v3 has no older INVALID_REQUEST variant); a topic absent from the
metadata cache is UNKNOWN_TOPIC_OR_PARTITION; after the deletion request the handler waits, up to the
timeout, until the topic has left the metadata cache, else REQUEST_TIMED_OUT (also at once when the
timeout is <= 0, as in Kafka).
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import CREATE, DELETE, DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import error_message, response, timeout_seconds, wait_for_leaders, wait_for_metadata

log = logging.getLogger(__name__)

NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1


def _creation_args(context: ServerContext, topic: Any) -> tuple[int, int, dict[str, str], dict[int, list[int]] | None]:
    null_configs = [c.name for c in topic.configs if c.value is None]
    if null_configs:
        raise KafkaError(f"null value not supported for topic configs: {', '.join(null_configs)}",
                         ErrorCode.INVALID_REQUEST)
    configs = {c.name: c.value for c in topic.configs}
    if topic.assignments:
        if topic.num_partitions != NO_NUM_PARTITIONS or topic.replication_factor != NO_REPLICATION_FACTOR:
            raise KafkaError("both num_partitions or replication_factor and replica assignments were set; "
                             "both cannot be used at the same time", ErrorCode.INVALID_REQUEST)
        assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
        replicas = len(topic.assignments[0].broker_ids)
        return len(assignment), replicas, configs, assignment
    partitions = topic.num_partitions
    replication = topic.replication_factor
    if partitions == NO_NUM_PARTITIONS:
        partitions = context.config["num.partitions"]
    if replication == NO_REPLICATION_FACTOR:
        replication = context.config["default.replication.factor"]
    return partitions, replication, configs, None


async def handle_create_topics(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    timeout = timeout_seconds(request.timeout)
    results: list[dict[str, Any]] = []
    created: list[tuple[dict[str, Any], int]] = []
    names = {topic.name for topic in request.topics}
    creatable = names if context.authorized_on_cluster(CREATE) else context.authorized_topics(CREATE, names)
    for topic in request.topics:
        result = dict(name=topic.name, error_code=ErrorCode.NONE, error_message=None,
                      num_partitions=-1, replication_factor=-1, configs=None)
        results.append(result)
        if counts[topic.name] > 1:
            result.update(error_code=ErrorCode.INVALID_REQUEST,
                          error_message=f"topic {topic.name!r} appears more than once in the request")
            continue
        if topic.name not in creatable:
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message="Authorization failed.")
            continue
        try:
            partitions, replication, configs, assignment = _creation_args(context, topic)
            await context.admin.create_topic(topic.name, partitions, replication, configs, assignment,
                                             request.validate_only)
        except KafkaError as exc:
            log.info("CreateTopics %r from %s: %s", topic.name, header.client_id, exc)
            result.update(error_code=exc.code, error_message=error_message(exc))
            continue
        result.update(num_partitions=partitions, replication_factor=replication)
        if not request.validate_only:
            created.append((result, partitions))
    await wait_for_leaders(context, created, timeout, "topic creation was started but its partitions have no "
                                                      "leader in this broker's metadata yet")
    return response(header, topics=results)


async def handle_delete_topics(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    names = list(request.topic_names)
    counts = Counter(names)
    results = [dict(name=name, error_code=ErrorCode.NONE) for name in names]
    deleting: list[dict[str, Any]] = []
    describable, deletable = context.authorized_topics(DESCRIBE, names), context.authorized_topics(DELETE, names)
    for result in results:
        name = result["name"]
        if counts[name] > 1:
            result["error_code"] = ErrorCode.INVALID_REQUEST
        elif not context.config["delete.topic.enable"]:
            result["error_code"] = ErrorCode.TOPIC_DELETION_DISABLED
        elif name not in describable:  # Kafka 2.8: a topic it may not see does not exist for it
            result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif name not in deletable:
            result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif name not in context.metadata_cache.topics():
            result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            try:
                await context.admin.delete_topic(name)
            except KafkaError as exc:
                log.info("DeleteTopics %r from %s: %s", name, header.client_id, exc)
                result["error_code"] = exc.code
            else:
                deleting.append(result)
    timeout = timeout_seconds(request.timeout)
    if deleting:
        gone = lambda result: result["name"] not in context.metadata_cache.topics()  # noqa: E731
        if not await wait_for_metadata(lambda: all(gone(r) for r in deleting), timeout):
            for result in deleting:
                if not gone(result):
                    result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
    return response(header, responses=results)
