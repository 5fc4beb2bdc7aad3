"""Partition caps (KIP-578's ``max.partitions`` and ``max.broker.partitions``; off by default).

A request that would take the cluster past ``max.partitions`` partitions, or any broker past
``max.broker.partitions`` partition replicas, is refused whole with POLICY_VIOLATION and a message naming the
cap, before anything is written: a cluster is told its ceiling instead of running into its brokers' open-file
limits (``brokers/storage/file_limits.py``). The counts are the creating broker's view (its metadata cache):
requests racing on two brokers can both pass, as two CreateTopics racing on Kafka's policy can.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from brokers.protocol.errors import ErrorCode, KafkaError

UNLIMITED = 2**31 - 1  # Kafka's Int.MaxValue default: no cap


def replicas_per_broker(assignments: Iterable[Sequence[int]]) -> Counter:
    """How many partition replicas each broker hosts under ``assignments`` (one replica list per partition)."""
    counts: Counter = Counter()
    for replicas in assignments:
        counts.update(replicas)
    return counts


def check_partition_limits(existing: Iterable[Sequence[int]], added: Mapping[int, Sequence[int]],
                           max_partitions: int = UNLIMITED, max_broker_partitions: int = UNLIMITED) -> None:
    """Raise POLICY_VIOLATION when adding ``added`` (partition -> replicas) to the cluster's ``existing``
    replica lists passes either cap."""
    if max_partitions >= UNLIMITED and max_broker_partitions >= UNLIMITED:
        return
    existing = list(existing)
    total = len(existing) + len(added)
    if total > max_partitions:
        raise KafkaError(f"adding {len(added)} partitions would bring the cluster to {total} partitions, over "
                         f"max.partitions={max_partitions}", ErrorCode.POLICY_VIOLATION)
    counts = replicas_per_broker(existing) + replicas_per_broker(added.values())
    over = sorted((b, n) for b, n in counts.items() if n > max_broker_partitions
                  and b in replicas_per_broker(added.values()))
    if over:
        named = ", ".join(f"broker {b}: {n}" for b, n in over)
        raise KafkaError(f"adding {len(added)} partitions would put more than max.broker.partitions="
                         f"{max_broker_partitions} partition replicas on a broker ({named})",
                         ErrorCode.POLICY_VIOLATION)
