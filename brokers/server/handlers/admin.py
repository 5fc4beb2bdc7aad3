"""The admin APIs: CreateTopics (19, v2-v4), DeleteTopics (20, v3), InitProducerId (22, v0) and
DescribeConfigs (32, v1-v3). With an authorizer each checks Kafka 2.8's operation: Create on the cluster
or the topic (CreateTopics), Delete on the topic (DeleteTopics; UNKNOWN_TOPIC_OR_PARTITION without Describe),
IdempotentWrite on the cluster or Write
on some topic (InitProducerId, else CLUSTER_AUTHORIZATION_FAILED), DescribeConfigs on the topic or the
cluster (DescribeConfigs). The work itself is ``context.admin`` (``AdminOps``, ZooKeeper and the
controller); these handlers validate the request and wait for the result as Kafka 2.8 does.

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

**InitProducerId** (idempotent producers): with a null ``transactional_id`` a new producer id from
``AdminOps.allocate_producer_id`` and epoch 0. There is no transaction coordinator: an empty
transactional id is INVALID_REQUEST (42) and any other is NOT_COORDINATOR (16), which is what a Kafka
broker answers when it coordinates no ``__transaction_state`` partition (producer id and epoch -1).

**DescribeConfigs**: resource type 2 (topic) lists every topic-level key, valued by the topic's
override (source DYNAMIC_TOPIC_CONFIG, 1) or else by the broker's current default for it: a dynamic
broker config (DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3), server.properties
(STATIC_BROKER_CONFIG 4) or Kafka's default (DEFAULT_CONFIG 5); an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION. Resource type 4 with this broker's id lists the broker's own keys that
have a value, source STATIC_BROKER_CONFIG (4) when it differs from the default and DEFAULT_CONFIG (5)
when it is the default (as Kafka reports them), read-only, plus the dynamic broker keys
(``brokers.dynamic_config.broker_config``) with their current source, not read-only; the empty name (the cluster
default) lists only the cluster-default dynamic overrides, as Kafka does. Another broker's id is
INVALID_REQUEST, other resource types too. ``configuration_keys`` null means every key (librdkafka
sends null), a list filters. With ``include_synonyms`` each entry carries its synonyms, highest
precedence first (a topic key's broker-level synonyms under their broker names, ``log.retention.ms``).
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from brokers.security.acls import (
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
)
from brokers.config import SCHEMA, is_sensitive
from brokers.dynamic_config.config_ops import BROKER_RESOURCE, TOPIC_RESOURCE
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.server.context import ServerContext
from brokers.server.handlers import config_resource_denied, timeout_seconds, wait_for_metadata

log = logging.getLogger(__name__)

NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def _response(header: RequestHeader, **fields: Any) -> Any:
    return codec.build(codec.response_class(header.api_key, header.api_version), throttle_time=0, **fields)


def _message(exc: KafkaError) -> str:
    return str(exc.args[0]) if exc.args else exc.code.name


# -- CreateTopics --------------------------------------------------------------------------------------
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


def _has_leaders(context: ServerContext, name: str, partitions: int) -> bool:
    states = context.metadata_cache.partitions_of(name)
    return len(states) >= partitions and all(state.leader >= 0 for state in states.values())


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
            result.update(error_code=exc.code, error_message=_message(exc))
            continue
        result.update(num_partitions=partitions, replication_factor=replication)
        if not request.validate_only:
            created.append((result, partitions))
    if created:
        ready = await wait_for_metadata(lambda: all(_has_leaders(context, r["name"], n) for r, n in created), timeout)
        if not ready:
            for result, partitions in created:
                if not _has_leaders(context, result["name"], partitions):
                    result.update(error_code=ErrorCode.REQUEST_TIMED_OUT,
                                  error_message="topic creation was started but its partitions have no leader "
                                                "in this broker's metadata yet")
    return _response(header, topics=results)


# -- DeleteTopics --------------------------------------------------------------------------------------
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
    return _response(header, responses=results)


# -- InitProducerId ------------------------------------------------------------------------------------
def _may_write_idempotently(context: ServerContext) -> bool:
    """Kafka 2.8: IdempotentWrite on the cluster, or Write on some topic (authorizeByResourceType)."""
    return context.authorized_on_cluster(IDEMPOTENT_WRITE) or context.authorized_by_resource_type(WRITE, TOPIC)


async def handle_init_producer_id(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if request.transactional_id is not None:
        error = ErrorCode.INVALID_REQUEST if request.transactional_id == "" else ErrorCode.NOT_COORDINATOR
        if error == ErrorCode.NOT_COORDINATOR and not context.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
            error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # Kafka: Write on the transactional id first
        return _response(header, error_code=error, producer_id=-1, producer_epoch=-1)
    if not _may_write_idempotently(context):
        return _response(header, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)
    try:
        producer_id = await context.admin.allocate_producer_id()
    except KafkaError as exc:
        log.warning("cannot allocate a producer id: %s", exc)
        return _response(header, error_code=exc.code, producer_id=-1, producer_epoch=-1)
    return _response(header, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


# -- DescribeConfigs -----------------------------------------------------------------------------------
def _config_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{key}:{item}" for key, item in value.items())
    return str(value)


Synonym = tuple[str, str, int]  # name, value, config source
Entry = tuple[str, int, bool, list[Synonym]]  # value, config source, read-only, synonyms (best first)


def _entry(synonyms: list[Synonym], read_only: bool) -> Entry:
    return synonyms[0][1], synonyms[0][2], read_only, synonyms


async def _topic_entries(context: ServerContext, name: str) -> dict[str, Entry]:
    if name not in context.metadata_cache.topics():
        raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    overrides = await context.admin.topic_config(name)
    entries = {}
    for key, value in context.admin.log_config_defaults().items():
        synonyms = context.admin.topic_config_synonyms(key) or [(key, value, DEFAULT_CONFIG)]
        if key in overrides:
            synonyms = [(key, overrides[key], DYNAMIC_TOPIC_CONFIG), *synonyms]
        entries[key] = _entry(synonyms, False)
    return entries


def _broker_entries(context: ServerContext, name: str) -> dict[str, Entry]:
    if name not in ("", str(context.broker_id)):
        raise KafkaError(f"unexpected broker id, expected {context.broker_id} or empty string, but received {name}",
                         ErrorCode.INVALID_REQUEST)
    entries = {}
    for key, value in context.config.values.items():
        if value is None:
            continue
        default = SCHEMA.get(key, (None, None))[1]
        text, source = _config_text(value), DEFAULT_CONFIG if value == default else STATIC_BROKER_CONFIG
        text = None if is_sensitive(key) else text  # a password is never shown (Kafka: value null, sensitive)
        entries[key] = (text, source, True, [(key, text, source)])
    if name == "":  # the cluster default: only its dynamic overrides
        entries = {}
    for key, synonyms in context.admin.dynamic_broker_entries(per_broker=name != "").items():
        if synonyms:
            entries[key] = _entry(synonyms, False)
    return entries



async def _describe(context: ServerContext, resource: Any, synonyms: bool) -> dict[str, Any]:
    result = dict(error_code=ErrorCode.NONE, error_message=None, resource_type=resource.resource_type,
                  resource_name=resource.resource_name, configs=[])
    try:
        if resource.resource_type == TOPIC_RESOURCE:
            entries = await _topic_entries(context, resource.resource_name)
        elif resource.resource_type == BROKER_RESOURCE:
            entries = _broker_entries(context, resource.resource_name)
        else:
            raise KafkaError(f"unsupported resource type {resource.resource_type}", ErrorCode.INVALID_REQUEST)
    except KafkaError as exc:
        result.update(error_code=exc.code, error_message=_message(exc))
        return result
    keys = resource.configuration_keys
    wanted = sorted(entries) if keys is None else [key for key in dict.fromkeys(keys) if key in entries]
    for key in wanted:
        value, source, read_only, entry_synonyms = entries[key]
        secret = is_sensitive(key)
        result["configs"].append(dict(
            name=key, value=None if secret else value, read_only=read_only, config_source=source, is_sensitive=secret,
            synonyms=[dict(name=n, value=None if secret else v, source=s) for n, v, s in entry_synonyms]
            if synonyms else [],
            config_type=0, documentation=None))
    return result


def _denied_config_result(resource: Any, error: ErrorCode) -> dict[str, Any]:
    return dict(error_code=error, error_message=None, resource_type=resource.resource_type,
                resource_name=resource.resource_name, configs=[])


async def handle_describe_configs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    synonyms = getattr(request, "include_synonyms", False)
    results = []
    for resource in request.resources:
        denied = config_resource_denied(context, DESCRIBE_CONFIGS, resource)
        results.append(_denied_config_result(resource, denied) if denied is not None
                       else await _describe(context, resource, synonyms))
    return _response(header, results=results)
