"""AlterPartitionReassignments (45, v0) and ListPartitionReassignments (46, v0): KIP-455's API to the
controller's reassignment procedure (``context.reassignments``, wired by ``brokers.app``).

Both are answered by the active controller only: elsewhere the top-level error is NOT_CONTROLLER (41) and
clients (which send these to the controller named in Metadata) refresh and retry. Alter: per partition,
a replica list starts (or replaces) a move and null cancels one; the per-partition errors are the
controller's (INVALID_REPLICA_ASSIGNMENT naming the problem, NO_REASSIGNMENT_IN_PROGRESS for a cancel
with nothing to cancel, UNKNOWN_TOPIC_OR_PARTITION). A partition named twice is INVALID_REQUEST for
both entries, as Kafka's request validation does. List: the partitions being reassigned with their
full replica set, adding and removing replicas; null topics means all, partitions not moving are
left out.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import ALTER, DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import response


async def handle_alter_partition_reassignments(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    requested = [(TopicPartition(t.name, p.partition_index), None if p.replicas is None else [int(r) for r in p.replicas])
                 for t in request.topics for p in t.partitions]
    counts = Counter(tp for tp, _ in requested)
    results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {
        tp: (ErrorCode.INVALID_REQUEST, f"partition {tp} appears more than once in the request")
        for tp, n in counts.items() if n > 1}
    targets = {tp: replicas for tp, replicas in requested if counts[tp] == 1}
    if not context.authorized_on_cluster(ALTER):
        return response(header, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         error_message="Cluster authorization failed.", responses=[])
    outcome: Any = ErrorCode.NOT_CONTROLLER
    if context.reassignments is not None:
        outcome = await context.reassignments.alter_partition_reassignments(targets) if targets else {}
    if isinstance(outcome, ErrorCode):
        return response(header, error_code=outcome, error_message=None, responses=[])
    results.update(outcome)
    by_topic: dict[str, list[dict]] = {}
    for tp, _ in requested:
        code, message = results[tp]
        entries = by_topic.setdefault(tp.topic, [])
        if all(e["partition_index"] != tp.partition for e in entries):
            entries.append(dict(partition_index=tp.partition, error_code=code, error_message=message))
    responses = [dict(name=topic, partitions=entries) for topic, entries in by_topic.items()]
    return response(header, error_code=ErrorCode.NONE, error_message=None, responses=responses)


async def handle_list_partition_reassignments(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized_on_cluster(DESCRIBE):
        return response(header, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         error_message="Cluster authorization failed.", topics=[])
    partitions = None
    if request.topics is not None:
        partitions = [TopicPartition(t.name, int(p)) for t in request.topics for p in t.partition_indexes]
    outcome: Any = ErrorCode.NOT_CONTROLLER
    if context.reassignments is not None:
        outcome = await context.reassignments.list_partition_reassignments(partitions)
    if isinstance(outcome, ErrorCode):
        return response(header, error_code=outcome, error_message=None, topics=[])
    by_topic: dict[str, list[dict]] = {}
    for tp, move in sorted(outcome.items()):
        by_topic.setdefault(tp.topic, []).append(dict(
            partition_index=tp.partition, replicas=list(move.replicas), adding_replicas=list(move.adding),
            removing_replicas=list(move.removing)))
    topics = [dict(name=topic, partitions=entries) for topic, entries in by_topic.items()]
    return response(header, error_code=ErrorCode.NONE, error_message=None, topics=topics)
