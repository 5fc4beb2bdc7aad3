"""Metadata (API key 3, v4): brokers, cluster id, controller and topic/partition leadership.

Answered from the MetadataCache alone, as Kafka does (``KafkaApis.handleTopicMetadataRequest`` and
``MetadataCache.getTopicMetadata`` in 2.8):

* brokers: every live broker that has an endpoint on this listener (``context.listener_name``);
* ``topics`` null: every topic in the cache; an empty list: none; else the named ones, in order;
* an unknown topic is auto-created when ``auto.create.topics.enable`` and the request's
  ``allow_auto_topic_creation`` are both true, with ``num.partitions`` and ``default.replication.factor``
  (an INVALID_REPLICATION_FACTOR, e.g. more than the live brokers, surfaces as the topic's error). The
  first answer for it is LEADER_NOT_AVAILABLE (5), also if another broker created it first; an invalid
  name answers INVALID_TOPIC_EXCEPTION (17). Without auto-creation: UNKNOWN_TOPIC_OR_PARTITION (3);
* with an authorizer (Kafka 2.8): topics the principal may not Describe are left out of an all-topics
  answer and answer TOPIC_AUTHORIZATION_FAILED (29) when named; auto-creation needs Create on the cluster
  or on the topic, else TOPIC_AUTHORIZATION_FAILED;
* per partition: leader, replicas and ISR as the controller last sent them. A leader that is -1 or not
  a live broker (or lacks this listener) is reported as leader -1 with LEADER_NOT_AVAILABLE (v1+ lists
  replicas and ISR unfiltered, so there is no REPLICA_NOT_AVAILABLE).
"""
from __future__ import annotations

import logging
from typing import Any

from brokers.model import INTERNAL_TOPICS
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import CREATE, DESCRIBE
from brokers.server.context import ServerContext

log = logging.getLogger(__name__)
NO_LEADER = -1


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


def _topic(context: ServerContext, name: str, reachable: set[int]) -> dict[str, Any]:
    partitions = []
    for index, state in sorted(context.metadata_cache.partitions_of(name).items()):
        leader, error = state.leader, ErrorCode.NONE
        if leader not in reachable:
            leader, error = NO_LEADER, ErrorCode.LEADER_NOT_AVAILABLE
        partitions.append(dict(error_code=error, partition_index=index, leader_id=leader,
                               leader_epoch=state.leader_epoch, replica_nodes=state.replicas,
                               isr_nodes=state.isr, offline_replicas=state.offline_replicas))
    return dict(error_code=ErrorCode.NONE, name=name, is_internal=name in INTERNAL_TOPICS, partitions=partitions)


async def _missing_topic(context: ServerContext, name: str, allow_auto_creation: bool) -> dict[str, Any]:
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
    return dict(error_code=error, name=name, is_internal=name in INTERNAL_TOPICS, partitions=[])


def _denied(context: ServerContext, names: list[str], known: set[str], allow_auto_creation: bool) -> set[str]:
    """Named topics answered TOPIC_AUTHORIZATION_FAILED: no Describe, or missing and to be auto-created
    without Create on the cluster or the topic (Kafka 2.8)."""
    denied = set(names) - context.authorized_topics(DESCRIBE, names)
    missing = [n for n in names if n not in known and n not in denied]
    if (missing and allow_auto_creation and context.config["auto.create.topics.enable"]
            and not context.authorized_on_cluster(CREATE)):
        denied |= set(missing) - context.authorized_topics(CREATE, missing)
    return denied


async def handle_metadata(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    brokers, reachable = _brokers(context)
    known = context.metadata_cache.topics()
    if request.topics is None:
        names = sorted(context.authorized_topics(DESCRIBE, known))  # the ones it may not see are left out
    else:
        names = list(dict.fromkeys(topic.name for topic in request.topics))
    allow = getattr(request, "allow_auto_topic_creation", True)  # v0-v3 have no flag: always allowed
    denied = _denied(context, names, known, allow)
    topics = []
    for name in names:
        if name in denied:
            topics.append(dict(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                               is_internal=name in INTERNAL_TOPICS, partitions=[]))
        elif name in known:
            topics.append(_topic(context, name, reachable))
        else:
            topics.append(await _missing_topic(context, name, allow))
    controller = context.metadata_cache.controller_id
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, throttle_time=0, brokers=brokers, cluster_id=context.cluster_id(),
                       controller_id=NO_LEADER if controller is None else controller, topics=topics)
