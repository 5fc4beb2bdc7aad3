"""Where committed offsets live: ZooKeeper's ``/consumers/<group>/offsets/<topic>/<partition>`` (reference
§5.1, the classic ZK design), one multi-op per OffsetCommit request.

``ZkOffsetStore`` remembers which offset znodes exist (learned from ``load`` and its own commits) so a
commit is a single atomic multi of SetData (existing) and Create (new) operations. If that knowledge
was stale (a znode deleted or created by someone else since), the multi fails as a whole, nothing is
written, and the commit is retried once after re-reading the group: never a half-written commit.
Metadata strings are not stored (the ZK layout has no place for them); the coordinator keeps them
in memory.

``MemoryOffsetStore`` is the same contract in memory, for unit tests of the coordinator.
"""
from __future__ import annotations

import logging
from typing import Protocol

from brokers.model import TopicPartition
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError

log = logging.getLogger(__name__)


class OffsetStore(Protocol):
    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None: ...

    async def load(self, group_id: str) -> dict[TopicPartition, int]: ...

    async def groups(self) -> list[str]: ...

    async def delete_group(self, group_id: str) -> None: ...

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None: ...


class ZkOffsetStore:
    def __init__(self, kzc: KafkaZkClient):
        self.kzc = kzc
        self._existing: dict[str, set[TopicPartition]] = {}

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        if not offsets:
            return
        existing = self._existing.get(group_id)
        if existing is None:
            existing = set(await self.kzc.get_consumer_offsets(group_id))
        try:
            await self.kzc.set_consumer_offsets(group_id, offsets, existing)
        except ZkError as exc:  # our idea of which znodes exist was stale: re-read, try once more
            log.info("offset commit for group %s raced (%s); re-reading and retrying", group_id, exc)
            existing = set(await self.kzc.get_consumer_offsets(group_id))
            await self.kzc.set_consumer_offsets(group_id, offsets, existing)
        self._existing[group_id] = existing | set(offsets)

    async def load(self, group_id: str) -> dict[TopicPartition, int]:
        offsets = await self.kzc.get_consumer_offsets(group_id)
        self._existing[group_id] = set(offsets)
        return offsets

    async def groups(self) -> list[str]:
        return await self.kzc.get_consumer_groups()

    async def delete_group(self, group_id: str) -> None:
        await self.kzc.delete_consumer_group(group_id)
        self._existing.pop(group_id, None)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        await self.kzc.delete_consumer_offsets(group_id, partitions)
        self._existing.get(group_id, set()).difference_update(partitions)


class MemoryOffsetStore:
    """The OffsetStore contract in a dict; ``fail`` makes the next commits raise (store outage)."""

    def __init__(self) -> None:
        self.offsets: dict[str, dict[TopicPartition, int]] = {}
        self.commits: list[tuple[str, dict[TopicPartition, int]]] = []
        self.fail: Exception | None = None

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        if self.fail is not None:
            raise self.fail
        self.commits.append((group_id, dict(offsets)))
        self.offsets.setdefault(group_id, {}).update(offsets)

    async def load(self, group_id: str) -> dict[TopicPartition, int]:
        return dict(self.offsets.get(group_id, {}))

    async def groups(self) -> list[str]:
        return sorted(self.offsets)

    async def delete_group(self, group_id: str) -> None:
        self.offsets.pop(group_id, None)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.offsets.get(group_id, {}).pop(tp, None)
