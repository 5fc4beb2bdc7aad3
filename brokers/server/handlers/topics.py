"""The topic APIs: CreateTopics (19, v0-v7) and DeleteTopics (20, v0-v6). With an authorizer each checks Kafka
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
it, as in Kafka; ``validate_only`` (v1+) answers at once. From v5 a created (or validated) topic's answer
carries what it got (``ZkAdminManager.maybePopulateMetadataAndConfigs``): ``num_partitions``,
``replication_factor`` and every topic config with its value, source and sensitivity — only with
DescribeConfigs on the topic, else ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED; a failed
creation answers no configs and -1 counts. v7 answers the topic id the creation wrote into
``/brokers/topics/<t>`` (zeros for ``validate_only`` and failures).

**DeleteTopics**: v6 names each topic by name or by id: an id resolves through the metadata cache
(UNKNOWN_TOPIC_ID if none has it), an entry with both is INVALID_REQUEST for the whole request (Kafka's
InvalidRequestException), v6 answers each topic's id; a name given twice is INVALID_REQUEST;
``delete.topic.enable=false`` is TOPIC_DELETION_DISABLED (73; INVALID_REQUEST before v3); a topic absent
from the metadata cache is UNKNOWN_TOPIC_OR_PARTITION; v5+ carries the error's text; after the deletion request the handler waits, up to the
timeout, until the topic has left the metadata cache, else REQUEST_TIMED_OUT (also at once when the
timeout is <= 0, as in Kafka).
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from brokers.config import is_sensitive
from brokers.model import ZERO_UUID, topic_id_from_text
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS
from brokers.server.context import ServerContext
from brokers.server.handlers import error_message, response, timeout_seconds, wait_for_leaders, wait_for_metadata
from brokers.server.handlers.describe_configs import topic_entries
from brokers.server.handlers.mutation_quota import ControllerMutations

log = logging.getLogger(__name__)

NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1
TOPIC_IDS_VERSION = 7  # CreateTopics v7 answers topic ids
DELETE_BY_ID_VERSION = 6  # DeleteTopics v6 names topics by name or id
STRICT_CREATE_TOPICS_VERSION, STRICT_DELETE_TOPICS_VERSION = 6, 5  # KIP-599: THROTTLING_QUOTA_EXCEEDED from these


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


def created_configs(context: ServerContext, configs: dict[str, str]) -> list[dict[str, Any]]:
    """CreateTopics v5+'s ``configs``: every topic config of a topic created with these overrides."""
    return [dict(name=key, value=None if is_sensitive(key) else value, read_only=read_only, config_source=source,
                 is_sensitive=is_sensitive(key))
            for key, (value, source, read_only, _) in sorted(topic_entries(context, configs).items())]


def _failed(result: dict[str, Any], code: int, message: str | None) -> None:
    """A failed creation answers no configs and -1 counts (Kafka resets them)."""
    result.update(error_code=code, error_message=message, configs=[], num_partitions=-1, replication_factor=-1,
                  topic_config_error_code=ErrorCode.NONE, topic_id=ZERO_UUID)


async def _create(context: ServerContext, header: RequestHeader, request: Any, topic: Any,
                  result: dict[str, Any], describable: bool, mutations: ControllerMutations) -> int | None:
    """Create (or validate) one topic into ``result``; the partition count to wait for, None if nothing to wait for."""
    taken = 0
    try:
        partitions, replication, configs, assignment = _creation_args(context, topic)
        if not request.validate_only:
            mutations.take(partitions)  # KIP-599: THROTTLING_QUOTA_EXCEEDED before anything is written
            taken = partitions
        await context.admin.create_topic(topic.name, partitions, replication, configs, assignment,
                                         request.validate_only)
    except KafkaError as exc:
        mutations.give_back(taken)
        log.info("CreateTopics %r from %s: %s", topic.name, header.client_id, exc)
        _failed(result, exc.code, error_message(exc))
        return None
    if describable:
        result.update(num_partitions=partitions, replication_factor=replication,
                      configs=created_configs(context, configs))
    if request.validate_only:
        return None
    if header.api_version >= TOPIC_IDS_VERSION:
        result["topic_id"] = topic_id_from_text(await context.admin.topic_id(topic.name))
    return partitions


async def handle_create_topics(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    timeout = timeout_seconds(request.timeout)
    results: list[dict[str, Any]] = []
    created: list[tuple[dict[str, Any], int]] = []
    names = {topic.name for topic in request.topics}
    creatable = names if context.authorized_on_cluster(CREATE) else context.authorized_topics(CREATE, names)
    describable = context.authorized_topics(DESCRIBE_CONFIGS, names)
    mutations = ControllerMutations(context, header, STRICT_CREATE_TOPICS_VERSION)
    for topic in request.topics:
        result = dict(name=topic.name, topic_id=ZERO_UUID, error_code=ErrorCode.NONE, error_message=None,
                      num_partitions=-1, replication_factor=-1, configs=[], topic_config_error_code=ErrorCode.NONE)
        results.append(result)
        if topic.name not in describable:
            result["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if counts[topic.name] > 1:
            _failed(result, ErrorCode.INVALID_REQUEST, f"topic {topic.name!r} appears more than once in the request")
        elif topic.name not in creatable:
            _failed(result, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
        elif (count := await _create(context, header, request, topic, result, topic.name in describable,
                                     mutations)) is not None:
            created.append((result, count))
    await wait_for_leaders(context, created, timeout, "topic creation was started but its partitions have no "
                                                      "leader in this broker's metadata yet")
    return response(header, topics=results)


def _delete_entries(context: ServerContext, header: RequestHeader, request: Any) -> list[dict[str, Any]] | None:
    """(name, topic id) per entry; v6 ids resolved through the metadata cache (name None if unknown).
    None when an entry names both (INVALID_REQUEST for the whole request)."""
    if header.api_version < DELETE_BY_ID_VERSION:
        cache = context.metadata_cache
        return [dict(name=name, topic_id=cache.topic_id(name), error_code=ErrorCode.NONE) for name in request.topic_names]
    entries = []
    for topic in request.topics:
        topic_id = topic.topic_id or ZERO_UUID
        if topic.name is not None and topic_id != ZERO_UUID:
            return None
        name = topic.name if topic_id == ZERO_UUID else context.metadata_cache.topic_name(topic_id)
        if topic_id == ZERO_UUID and name is not None:
            topic_id = context.metadata_cache.topic_id(name)
        entries.append(dict(name=name, topic_id=topic_id, error_code=ErrorCode.NONE))
    return entries


def _deletion_error(context: ServerContext, header: RequestHeader, result: dict[str, Any], count: int,
                    describable: set[str], deletable: set[str]) -> int | None:
    """The error a DeleteTopics entry answers before anything is written, None if it may be deleted."""
    name = result["name"]
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if count > 1:
        return ErrorCode.INVALID_REQUEST
    if not context.config["delete.topic.enable"]:
        return ErrorCode.TOPIC_DELETION_DISABLED if header.api_version >= 3 else ErrorCode.INVALID_REQUEST
    if name not in describable:  # Kafka 2.8: a topic it may not see does not exist for it
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if name not in deletable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if name not in context.metadata_cache.topics():
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


async def handle_delete_topics(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    results = _delete_entries(context, header, request)
    if results is None:
        return response(header, responses=[dict(name=t.name, topic_id=t.topic_id or ZERO_UUID,
                                                 error_code=ErrorCode.INVALID_REQUEST,
                                                 error_message="Topic name and topic ID can not both be specified.")
                                            for t in request.topics])
    names = [r["name"] for r in results if r["name"] is not None]
    counts = Counter(names)
    deleting: list[dict[str, Any]] = []
    describable, deletable = context.authorized_topics(DESCRIBE, names), context.authorized_topics(DELETE, names)
    mutations = ControllerMutations(context, header, STRICT_DELETE_TOPICS_VERSION)
    for result in results:
        error = _deletion_error(context, header, result, counts[result["name"]], describable, deletable)
        if error is not None:
            result["error_code"] = error
            continue
        partitions = len(context.metadata_cache.partitions_of(result["name"]))
        try:
            mutations.take(partitions)
            await context.admin.delete_topic(result["name"])
        except KafkaError as exc:
            if exc.code != ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                mutations.give_back(partitions)
            log.info("DeleteTopics %r from %s: %s", result["name"], header.client_id, exc)
            result.update(error_code=exc.code, error_message=error_message(exc))
        else:
            deleting.append(result)
    timeout = timeout_seconds(request.timeout)
    if deleting:
        gone = lambda result: result["name"] not in context.metadata_cache.topics()  # noqa: E731
        if not await wait_for_metadata(lambda: all(gone(r) for r in deleting), timeout):
            for result in deleting:
                if not gone(result):
                    result.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                                  error_message="the topic is marked for deletion but its partitions are not gone yet")
    return response(header, responses=results)
