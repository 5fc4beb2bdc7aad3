"""Committed consumer offsets in ZooKeeper (``/consumers/<group>/offsets/<topic>/<partition>``): Kafka's
``ZkUtils`` consumer-offset paths, which its old ZooKeeper-based consumers committed to.

A commit is one multi-op over the whole set of partitions, so a group's offsets never land half-written.
"""
from __future__ import annotations

from typing import Any

from brokers.model import TopicPartition
from brokers.zk.client_base import ZkClientBase, log
from brokers.zk.errors import NoNodeError
from brokers.zk.gateway import CreateOp, SetDataOp
from brokers.zk.paths import ConsumerGroupsZNode, ConsumerOffsetZNode


class ConsumerOffsetsZkMixin(ZkClientBase):
    """Consumer groups' offsets under ``/consumers`` (reference §5.1, ZK design)."""

    async def get_consumer_groups(self) -> list[str]:
        return await self._children_or_empty(ConsumerGroupsZNode.PATH)

    async def get_consumer_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every committed offset of ``group`` (unparseable znodes are skipped with a warning)."""
        offsets: dict[TopicPartition, int] = {}
        base = ConsumerOffsetZNode.group_path(group)
        for topic in await self._children_or_empty(base):
            for partition in await self._children_or_empty(f"{base}/{topic}"):
                tp = TopicPartition(topic, int(partition))
                try:
                    data, _ = await self.zk.get(ConsumerOffsetZNode.path(group, tp))
                    offsets[tp] = ConsumerOffsetZNode.decode(data)
                except NoNodeError:
                    continue
                except ValueError as exc:
                    log.warning("skipping the bad offset znode %s: %s", ConsumerOffsetZNode.path(group, tp), exc)
        return offsets

    async def set_consumer_offsets(self, group: str, offsets: dict[TopicPartition, int],
                                   existing: set[TopicPartition]) -> None:
        """One multi-op for the whole commit: set the znodes in ``existing``, create the others (and the
        topic znodes they need). MultiOpError if ``existing`` was wrong; the caller re-reads and retries."""
        ops: list[Any] = []
        base = ConsumerOffsetZNode.group_path(group)
        known_topics = {tp.topic for tp in existing}
        new_topics = sorted({tp.topic for tp in offsets if tp not in existing} - known_topics)
        if new_topics:
            await self.zk.ensure_path(base)
            for topic in new_topics:
                if await self.zk.exists(f"{base}/{topic}") is None:
                    ops.append(CreateOp(f"{base}/{topic}"))
        for tp, offset in sorted(offsets.items()):
            path, data = ConsumerOffsetZNode.path(group, tp), ConsumerOffsetZNode.encode(offset)
            ops.append(SetDataOp(path, data) if tp in existing else CreateOp(path, data))
        await self.zk.multi(ops)

    async def delete_consumer_offsets(self, group: str, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            try:
                await self.zk.delete(ConsumerOffsetZNode.path(group, tp))
            except NoNodeError:
                pass

    async def delete_consumer_group(self, group: str) -> None:
        try:
            await self.zk.delete(ConsumerGroupsZNode.path(group), recursive=True)
        except NoNodeError:
            pass
