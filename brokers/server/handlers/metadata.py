"""Metadata (API key 3, v0-v11): brokers, cluster id, controller and topic/partition leadership.

Answered from the MetadataCache alone, as Kafka does (``KafkaApis.handleTopicMetadataRequest`` and
``MetadataCache.getTopicMetadata`` in 2.8):

* brokers: every live broker that has an endpoint on this listener (``context.listener_name``);
* which topics (``all_topics_requested``): v0's empty list means every topic; from v1 ``topics`` null means
  every topic and an empty list none; else the named ones, in order. A v10+ entry naming a topic id is
  INVALID_REQUEST for every entry (2.8 looks topics up by name only);
* an unknown topic is auto-created when ``auto.create.topics.enable`` and the request's
  ``allow_auto_topic_creation`` (v4+; always true before) are both true and the topics were named, with
  ``num.partitions`` and ``default.replication.factor`` (an INVALID_REPLICATION_FACTOR, e.g. more than the
  live brokers, surfaces as the topic's error). The first answer for it is LEADER_NOT_AVAILABLE (5), also if
  another broker created it first; an invalid name answers INVALID_TOPIC_EXCEPTION (17). Without
  auto-creation: UNKNOWN_TOPIC_OR_PARTITION (3);
* with an authorizer (Kafka 2.8): topics the principal may not Describe are left out of an all-topics
  answer and answer TOPIC_AUTHORIZATION_FAILED (29) when named; auto-creation needs Create on the cluster
  or on the topic, else TOPIC_AUTHORIZATION_FAILED;
* per partition (``partition_answer``): leader, replicas and ISR as the controller last sent them. A leader
  that is not a live broker is -1 with LEADER_NOT_AVAILABLE; a live leader without this listener is -1 with
  LISTENER_NOT_FOUND (72) from v6, LEADER_NOT_AVAILABLE before. v0 lists only the replicas and ISR members
  that are live on this listener and answers REPLICA_NOT_AVAILABLE (9) when it left some out;
* v8-v10 ``include_cluster_authorized_operations``: the bit field of the cluster operations the principal
  may do (0 without Describe on the cluster); v8+ ``include_topic_authorized_operations``: per answered
  topic, the bit field of its topic operations. Not requested (and always for denied topics, and v11's
  absent cluster field): -2147483648;
* v10+: each topic's id (all zeros while the controller has given it none).

Until the controller's first UpdateMetadata (a restarted broker whose controller is slow, partitioned or
being re-elected) the cache knows no live broker, not even this one (``knows_cluster``). Kafka 2.8 then answers
every named topic UNKNOWN_TOPIC_OR_PARTITION with an empty broker list; librdkafka (2.10+) takes that as the
truth: it marks the topics deleted and decommissions every broker it learned, so a consumer loses its
coordinator and its fetchers until it re-bootstraps (minutes), and its group rebalances. Here such a broker
answers no brokers and no topics: librdkafka retries that elsewhere ("No brokers or topics in metadata"), the
Java client ignores a response without brokers, and nothing is auto-created from an empty view.
"""
from __future__ import annotations

import logging
from typing import Any

from brokers.model import INTERNAL_TOPICS, ZERO_UUID
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.protocol.metadata_response import TOPIC_IDS_VERSION, encode_metadata_response, encode_topic, topic_tail
from brokers.security.acls import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, NO_AUTHORIZED_OPERATIONS, TOPIC
from brokers.server.context import ServerContext
from brokers.server.handlers import response, throttle_time_ms

log = logging.getLogger(__name__)
NO_LEADER = -1
LISTENER_NOT_FOUND_VERSION = 6


def all_topics_requested(version: int, topics: Any) -> bool:
    """Kafka's ``MetadataRequest.isAllTopics``: null, or v0's empty list."""
    return topics is None or (version == 0 and not topics)


def partition_answer(state: Any, live: set[int], reachable: set[int], version: int) -> dict[str, Any]:
    """One partition's answer (``MetadataCache.getPartitionMetadata``): ``live`` are the live brokers,
    ``reachable`` those of them with an endpoint on this listener."""
    replicas, isr = list(state.replicas), list(state.isr)
    if version == 0:  # errorUnavailableEndpoints
        replicas, isr = [b for b in replicas if b in reachable], [b for b in isr if b in reachable]
    leader, error = state.leader, ErrorCode.NONE
    if leader not in reachable:
        listener_missing = leader in live and version >= LISTENER_NOT_FOUND_VERSION
        leader, error = NO_LEADER, ErrorCode.LISTENER_NOT_FOUND if listener_missing else ErrorCode.LEADER_NOT_AVAILABLE
    elif len(replicas) < len(state.replicas) or len(isr) < len(state.isr):
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    return dict(error_code=error, partition_index=state.partition, leader_id=leader, leader_epoch=state.leader_epoch,
                replica_nodes=replicas, isr_nodes=isr, offline_replicas=state.offline_replicas)


def knows_cluster(cache: Any) -> bool:
    """Whether the controller has sent this broker metadata yet (every UpdateMetadata lists a live broker)."""
    return bool(cache.live_brokers)


def _brokers(context: ServerContext) -> tuple[list[dict[str, Any]], set[int]]:
    brokers, reachable = [], set()
    for broker_id, info in sorted(context.metadata_cache.live_brokers.items()):
        try:
            endpoint = info.endpoint(context.listener_name)
        except KeyError:
            continue
        brokers.append(dict(node_id=broker_id, host=endpoint.host, port=endpoint.port, rack=info.rack))
        reachable.add(broker_id)
    return brokers, reachable


def _error_topic(version: int, name: str, error: int) -> bytes:
    return encode_topic(version, error, name, ZERO_UUID, name in INTERNAL_TOPICS, [])


def _topic(context: ServerContext, name: str, reachable: set[int], version: int) -> bytes:
    """A known topic's entry (without its per-principal tail), from the memo while neither the topic nor the
    live brokers changed: an all-topics answer costs a join of cached entries, not a walk of the partitions."""
    cache = context.metadata_cache
    key, generation = (name, version, context.listener_name), cache.topic_generation(name)
    memo = cache.encoded_topics.get(key)
    if memo is not None and memo[0] == generation:
        return memo[1]
    live = set(cache.live_brokers)
    partitions = [partition_answer(state, live, reachable, version)
                  for _, state in sorted(cache.partitions_of(name).items())]
    entry = encode_topic(version, ErrorCode.NONE, name, cache.topic_id(name), name in INTERNAL_TOPICS, partitions)
    cache.encoded_topics[key] = (generation, entry)
    return entry


async def _missing_topic(context: ServerContext, name: str, allow_auto_creation: bool, version: int) -> bytes:
    config = context.config
    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if allow_auto_creation and config["auto.create.topics.enable"] and name not in INTERNAL_TOPICS:
        try:
            await context.admin.create_topic(name, config["num.partitions"], config["default.replication.factor"],
                                             {}, None, False)
            log.info("auto-created topic %r (%d partitions, replication factor %d)", name,
                     config["num.partitions"], config["default.replication.factor"])
            error = ErrorCode.LEADER_NOT_AVAILABLE
        except KafkaError as exc:
            error = ErrorCode.LEADER_NOT_AVAILABLE if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS else exc.code
            if error != ErrorCode.LEADER_NOT_AVAILABLE:
                log.info("auto-creation of topic %r failed: %s", name, exc)
    return _error_topic(version, name, error)


def _denied(context: ServerContext, names: list[str], known: set[str], allow_auto_creation: bool) -> set[str]:
    """Named topics answered TOPIC_AUTHORIZATION_FAILED: no Describe, or missing and to be auto-created
    without Create on the cluster or the topic (Kafka 2.8)."""
    denied = set(names) - context.authorized_topics(DESCRIBE, names)
    missing = [n for n in names if n not in known and n not in denied]
    if (missing and allow_auto_creation and context.config["auto.create.topics.enable"]
            and not context.authorized_on_cluster(CREATE)):
        denied |= set(missing) - context.authorized_topics(CREATE, missing)
    return denied


def _names(context: ServerContext, header: RequestHeader, request: Any, known: set[str]) -> list[str]:
    if all_topics_requested(header.api_version, request.topics):
        return sorted(context.authorized_topics(DESCRIBE, known))  # the ones it may not see are left out
    return list(dict.fromkeys(topic.name for topic in request.topics))


def _cluster_operations(context: ServerContext, request: Any) -> int:
    """v8-v10: the cluster's authorized operations when asked for, 0 without Describe on the cluster."""
    if not getattr(request, "include_cluster_authorized_operations", False):
        return NO_AUTHORIZED_OPERATIONS
    if not context.authorized_on_cluster(DESCRIBE):
        return 0
    return context.authorized_operations(CLUSTER, CLUSTER_NAME)


def _named_by_id(header: RequestHeader, request: Any) -> bool:
    return (header.api_version >= TOPIC_IDS_VERSION and request.topics is not None
            and any(t.topic_id not in (None, ZERO_UUID) or t.name is None for t in request.topics))


async def _topics(context: ServerContext, header: RequestHeader, request: Any, reachable: set[int]) -> list[bytes]:
    """Each answered topic's whole entry."""
    version = header.api_version
    known = context.metadata_cache.topics()
    names = _names(context, header, request, known)
    allow = (getattr(request, "allow_auto_topic_creation", True)  # v0-v3 have no flag: always allowed
             and not all_topics_requested(header.api_version, request.topics))
    denied = _denied(context, names, known, allow)
    with_operations = getattr(request, "include_topic_authorized_operations", False)
    topics = []
    no_operations = topic_tail(version, NO_AUTHORIZED_OPERATIONS)
    for name in names:
        if name in denied:
            topics.append(_error_topic(version, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED) + no_operations)
            continue
        if name in known:
            topic = _topic(context, name, reachable, version)
        else:
            topic = await _missing_topic(context, name, allow, version)
        tail = topic_tail(version, context.authorized_operations(TOPIC, name)) if with_operations else no_operations
        topics.append(topic + tail)
    return topics


async def handle_metadata(context: ServerContext, header: RequestHeader, request: Any) -> list[bytes]:
    """The framed answer (``brokers/protocol/metadata_response.py``), as one segment."""
    version = header.api_version
    brokers, reachable = _brokers(context)
    if not knows_cluster(context.metadata_cache):
        topics = []
    elif _named_by_id(header, request):
        tail = topic_tail(version, NO_AUTHORIZED_OPERATIONS)
        topics = [_error_topic(version, t.name or "", ErrorCode.INVALID_REQUEST) + tail for t in request.topics]
    else:
        topics = await _topics(context, header, request, reachable)
    controller = context.metadata_cache.controller_id
    return [encode_metadata_response(version, header.correlation_id, brokers, context.cluster_id(),
                                     NO_LEADER if controller is None else controller, topics,
                                     _cluster_operations(context, request), throttle_time_ms())]


async def handle_describe_cluster(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    """DescribeCluster (api 60, v0, flexible; KIP-700): Metadata's cluster part alone -- the live brokers with
    an endpoint on this listener, the cluster id, the controller (-1 when none is known) and, when asked, the
    cluster's authorized operations (0 without Describe on the cluster), as Kafka 2.8's handleDescribeCluster."""
    brokers, _ = _brokers(context)
    controller = context.metadata_cache.controller_id
    return response(header, error_code=ErrorCode.NONE, error_message=None, cluster_id=context.cluster_id(),
                    controller_id=NO_LEADER if controller is None else controller,
                    brokers=[dict(broker_id=b["node_id"], host=b["host"], port=b["port"], rack=b["rack"])
                             for b in brokers],
                    cluster_authorized_operations=_cluster_operations(context, request))

