"""Which broker coordinates a group (reference §5.1): the leader of one ``__consumer_offsets`` partition.

``partition_for(group, n) = abs(java_string_hash(group)) % n``: the same mapping as Kafka, so a group id
lands on the same partition number here as on a real cluster. The topic holds no data in zkafka
(offsets live in ZooKeeper); its partitions are leadership tokens with exactly one live owner each.
"""
from __future__ import annotations

from functools import lru_cache

from brokers.model import OFFSETS_TOPIC, java_hash_partition, java_string_hash

__all__ = ["OFFSETS_TOPIC", "java_string_hash", "partition_for"]



@lru_cache(maxsize=65536)  # every group request asks; a py-spy profile of offset commits showed 1.7 % here
def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``Utils.abs`` maps INT32_MIN to 0)."""
    return java_hash_partition(group_id, num_partitions)
