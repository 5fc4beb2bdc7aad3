"""The log dir APIs: DescribeLogDirs (api 35, v0-v2) and AlterReplicaLogDirs (api 34, v0-v2); v2 is flexible in
both, v1 is v0 with throttling.

DescribeLogDirs, as Kafka 2.8's ``KafkaApis.handleDescribeLogDirsRequest`` + ``ReplicaManager.describeLogDirs``:
one result per dir of ``log.dirs``. An online dir lists the partitions asked for (``topics`` null: every
one) that have a log there, each with its size in bytes, ``offset_lag`` 0 and ``is_future_key`` false,
and the future logs of replicas moving into it (``is_future_key`` true, ``offset_lag`` how far the copy
is behind the current log's end); an offline dir (KIP-112) answers KAFKA_STORAGE_ERROR and no partitions.
Without Describe on the cluster every dir is left out and the answer is empty, as Kafka answers
(Kafka 2.8 has no top-level error code yet).

AlterReplicaLogDirs, as Kafka 2.8's ``handleAlterReplicaLogDirsRequest``: each partition's replica on this
broker moves to the dir named (``brokers.replication.log_dir_mover``); per partition NONE (moving, or
already there), LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR, REPLICA_NOT_AVAILABLE (not hosted here yet: the
log is created in that dir when it comes). Without Alter on the cluster every partition answers
CLUSTER_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import ALTER, DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import by_topic, response


def wanted_partitions(request: Any) -> set[TopicPartition] | None:
    """The partitions asked for; None for every one (a null topic list)."""
    if request.topics is None:
        return None
    return {TopicPartition(t.topic, int(p)) for t in request.topics for p in t.partitions}


def log_dir_results(dirs: list[tuple[Any, str | None, dict[TopicPartition, int]]],
                    wanted: set[TopicPartition] | None,
                    futures: dict[Any, dict[TopicPartition, tuple[int, int]]] | None = None) -> list[dict[str, Any]]:
    """``LogManager.describe_log_dirs`` (and ``future_logs``: per dir, each future log's size and lag) as
    DescribeLogDirs results (pure)."""
    results = []
    for path, offline_reason, sizes in dirs:
        if offline_reason is not None:
            results.append({"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(path), "topics": []})
            continue
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        entries = [(tp, size, 0, False) for tp, size in sizes.items()]
        entries += [(tp, size, lag, True) for tp, (size, lag) in (futures or {}).get(path, {}).items()]
        for tp, size, lag, is_future in sorted(entries):
            if wanted is None or tp in wanted:
                by_topic[tp.topic].append({"partition_index": tp.partition, "partition_size": size,
                                           "offset_lag": lag, "is_future_key": is_future})
        results.append({"error_code": ErrorCode.NONE, "log_dir": str(path),
                        "topics": [{"name": topic, "partitions": parts} for topic, parts in by_topic.items()]})
    return results


async def handle_describe_log_dirs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized_on_cluster(DESCRIBE):
        return response(header, results=[])
    manager = context.replica_manager.log_manager
    dirs, futures = await asyncio.to_thread(lambda: (manager.describe_log_dirs(), manager.future_logs()))  # stats
    return response(header, results=log_dir_results(dirs, wanted_partitions(request), futures))


def requested_moves(request: Any) -> dict[TopicPartition, str]:
    """Each partition's destination dir (a partition named twice: the last one)."""
    return {TopicPartition(t.name, int(p)): d.path for d in request.dirs for t in d.topics for p in t.partitions}


async def handle_alter_replica_log_dirs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    moves = requested_moves(request)
    if not context.authorized_on_cluster(ALTER):
        outcomes = {tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in moves}
    else:
        mover = context.replica_manager.log_dir_mover
        outcomes = {tp: mover.alter(tp, path) for tp, path in moves.items()}
    return response(header, results=by_topic(((tp, {"error_code": code}) for tp, code in sorted(outcomes.items())),
                                             name_field="topic_name"))
