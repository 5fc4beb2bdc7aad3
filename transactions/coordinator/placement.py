"""Which broker coordinates a transactional id: the leader of one ``__transaction_state`` partition.

``partition_for(transactional_id, n) = abs(java_string_hash(transactional_id)) % n``, Kafka's
``TransactionStateManager.partitionFor``, so an id lands on the same partition number here as on a real cluster.
"""
from __future__ import annotations

from functools import lru_cache

from brokers.model import java_hash_partition


@lru_cache(maxsize=65536)
def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id``."""
    return java_hash_partition(transactional_id, num_partitions)
