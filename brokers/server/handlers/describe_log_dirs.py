"""DescribeLogDirs (api 35, v0-v2; v2 is flexible; v1 is v0 with throttling).

As Kafka 2.8's ``KafkaApis.handleDescribeLogDirsRequest`` + ``ReplicaManager.describeLogDirs``: one result
per dir of ``log.dirs``. An online dir lists the partitions asked for (``topics`` null: every one) that
have a log there, each with its size in bytes, ``offset_lag`` 0 and ``is_future_key`` false (no
AlterReplicaLogDirs here); an offline dir (KIP-112) answers KAFKA_STORAGE_ERROR and no partitions.
Without Describe on the cluster every dir is left out and the answer is empty, as Kafka answers
(Kafka 2.8 has no top-level error code yet).
"""
from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import DESCRIBE
from brokers.server.context import ServerContext
from brokers.server.handlers import response


def wanted_partitions(request: Any) -> set[TopicPartition] | None:
    """The partitions asked for; None for every one (a null topic list)."""
    if request.topics is None:
        return None
    return {TopicPartition(t.topic, int(p)) for t in request.topics for p in t.partitions}


def log_dir_results(dirs: list[tuple[Any, str | None, dict[TopicPartition, int]]],
                    wanted: set[TopicPartition] | None) -> list[dict[str, Any]]:
    """``LogManager.describe_log_dirs`` as DescribeLogDirs results (pure)."""
    results = []
    for path, offline_reason, sizes in dirs:
        if offline_reason is not None:
            results.append({"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(path), "topics": []})
            continue
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp, size in sorted(sizes.items()):
            if wanted is None or tp in wanted:
                by_topic[tp.topic].append({"partition_index": tp.partition, "partition_size": size,
                                           "offset_lag": 0, "is_future_key": False})
        results.append({"error_code": ErrorCode.NONE, "log_dir": str(path),
                        "topics": [{"name": topic, "partitions": parts} for topic, parts in by_topic.items()]})
    return results


async def handle_describe_log_dirs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized_on_cluster(DESCRIBE):
        return response(header, results=[])
    dirs = await asyncio.to_thread(context.replica_manager.log_manager.describe_log_dirs)  # sizes stat files
    return response(header, results=log_dir_results(dirs, wanted_partitions(request)))
