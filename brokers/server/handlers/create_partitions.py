"""CreatePartitions (37, v0-v3; v2+ flexible): grow topics, as Kafka 2.8's
``KafkaApis.handleCreatePartitionsRequest`` and ``ZkAdminManager.createPartitions``.

Per topic: a name given twice is INVALID_REQUEST ("Duplicate topic in request."); everything else is
``AdminOps.create_partitions`` (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT,
INVALID_TOPIC_EXCEPTION for a topic queued for deletion, REASSIGNMENT_IN_PROGRESS), whose message becomes
``error_message``. ``assignments`` null means Kafka's round robin; a list gives one replica list per new
partition. ``validate_only`` answers once the checks pass, writing nothing. After a real addition the
handler waits, up to the request's timeout, until this broker's metadata cache shows the topic with
``count`` partitions, each with a leader (DelayedCreatePartitions); else REQUEST_TIMED_OUT (the addition
still completes). With a timeout <= 0 it does not wait, so it answers REQUEST_TIMED_OUT unless the cache
already shows them, as Kafka does.

Clients: librdkafka 2.16 (confluent-kafka's ``create_partitions``) sends v2, kafka-python 3.0 the
highest advertised (v3). Any broker answers (the work is a ZooKeeper write), not only the controller.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import ALTER
from brokers.server.context import ServerContext
from brokers.server.handlers import error_message, response, timeout_seconds, wait_for_leaders
from brokers.server.handlers.mutation_quota import ControllerMutations

log = logging.getLogger(__name__)

STRICT_VERSION = 3  # KIP-599: a strict controller mutation quota (THROTTLING_QUOTA_EXCEEDED) from v3


async def handle_create_partitions(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    results: list[dict[str, Any]] = []
    added: list[tuple[dict[str, Any], int]] = []
    alterable = context.authorized_topics(ALTER, counts)
    mutations = ControllerMutations(context, header, STRICT_VERSION)
    for topic in request.topics:
        result = dict(name=topic.name, error_code=ErrorCode.NONE, error_message=None)
        results.append(result)
        if counts[topic.name] > 1:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic in request.")
            continue
        if topic.name not in alterable:  # Kafka: Alter on the topic
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message="Authorization failed.")
            continue
        assignments = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
        added_count = 0 if request.validate_only else topic.count - len(context.metadata_cache.partitions_of(topic.name))
        try:
            mutations.take(added_count)  # KIP-599: THROTTLING_QUOTA_EXCEEDED before anything is written
            await context.admin.create_partitions(topic.name, topic.count, assignments, request.validate_only)
        except KafkaError as exc:
            if exc.code != ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                mutations.give_back(added_count)
            log.info("CreatePartitions %r from %s: %s", topic.name, header.client_id, exc)
            result.update(error_code=exc.code, error_message=error_message(exc))
            continue
        if not request.validate_only:
            added.append((result, topic.count))
    await wait_for_leaders(context, added, timeout_seconds(request.timeout),
                           "the partitions were added but do not all have a leader in this broker's metadata yet")
    return response(header, results=results)
