"""Kafka's vocabulary as plain types: ids, offsets and epochs.

Imports nothing of ours (ARCHITECTURE §2); every other package may import it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

BrokerId = NewType("BrokerId", int)
Offset = NewType("Offset", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ControllerEpoch = NewType("ControllerEpoch", int)
ZkVersion = NewType("ZkVersion", int)

NO_LEADER_EPOCH = LeaderEpoch(-1)
NO_TIMESTAMP = -1


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    """A partition of a topic; its directory name is ``<topic>-<partition>``."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def dir_name(self) -> str:
        return str(self)

    @classmethod
    def from_dir_name(cls, name: str) -> "TopicPartition":
        """Parse ``<topic>-<partition>``; the topic itself may contain dashes."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"not a partition directory name: {name!r}")
        return cls(topic, int(partition))
