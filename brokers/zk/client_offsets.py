"""Committed consumer offsets in ZooKeeper (``/consumers/<group>/offsets/<topic>/<partition>``): Kafka's
``ZkUtils`` consumer-offset paths, which its old ZooKeeper-based consumers committed to.

A commit is one multi-op over the whole set of partitions, so a group's offsets never land half-written.
A transactional producer's offsets wait in ``/consumers/<group>/txn_offsets/<producer id>`` until its
transaction ends; committing them is one multi-op too, which writes the offsets, deletes that znode and
records the producer's epochs in ``/consumers/<group>/txn_producers/<producer id>`` (aborting: the last two).
The group coordinator's record of a group's membership is ``/consumers/<group>/metadata``, written at the znode
version last seen (BadVersionError / NodeExistsError: someone else wrote it since).
"""
from __future__ import annotations

from typing import Any

from brokers.model import TopicPartition
from brokers.zk.client_base import ZkClientBase, log
from brokers.zk.errors import NoNodeError, ZkError
from brokers.zk.gateway import CreateOp, DeleteOp, SetDataOp
from brokers.zk.paths import (
    ConsumerGroupMetadataZNode,
    ConsumerGroupsZNode,
    ConsumerOffsetZNode,
    ConsumerTxnOffsetsZNode,
    ConsumerTxnProducerZNode,
)

TxnOffsets = dict[TopicPartition, tuple[int, str, int]]  # partition -> (offset, metadata, leader epoch)
ProducerEpochs = tuple[int, int]  # (producer epoch, transaction coordinator epoch) of a producer's last marker


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
        await self.zk.multi(await self._offset_ops(group, offsets, existing))

    async def _offset_ops(self, group: str, offsets: dict[TopicPartition, int],
                          existing: set[TopicPartition]) -> list[Any]:
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
        return ops

    # -- transactional offsets (TxnOffsetCommit, pending until the transaction's marker) ------------
    async def set_txn_offsets(self, group: str, producer_id: int, producer_epoch: int, offsets: TxnOffsets) -> None:
        """Write (create or replace) the producer's pending offsets of ``group``."""
        path, data = ConsumerTxnOffsetsZNode.path(group, producer_id), ConsumerTxnOffsetsZNode.encode(
            producer_epoch, offsets)
        try:
            await self.zk.set(path, data)
        except NoNodeError:
            await self.zk.ensure_path(ConsumerTxnOffsetsZNode.group_path(group))
            await self.zk.create(path, data)

    async def get_txn_offsets(self, group: str) -> dict[int, tuple[int, TxnOffsets]]:
        """Every producer's pending offsets of ``group``: producer id -> (producer epoch, offsets); unparseable
        znodes are skipped with a warning."""
        pending: dict[int, tuple[int, TxnOffsets]] = {}
        for child in await self._children_or_empty(ConsumerTxnOffsetsZNode.group_path(group)):
            path = f"{ConsumerTxnOffsetsZNode.group_path(group)}/{child}"
            try:
                data, _ = await self.zk.get(path)
                pending[int(child)] = ConsumerTxnOffsetsZNode.decode(data, path)
            except NoNodeError:
                continue
            except ValueError as exc:
                log.warning("skipping the bad transactional offsets znode %s: %s", path, exc)
        return pending

    async def get_groups_txn_offsets(self, groups: list[str]) -> dict[str, dict[int, tuple[int, TxnOffsets]]]:
        """The pending offsets of each of ``groups`` that has some (the groups of one offsets partition)."""
        found = {}
        for group in groups:
            pending = await self.get_txn_offsets(group)
            if pending:
                found[group] = pending
        return found

    async def commit_txn_offsets(self, group: str, producer_id: int, offsets: dict[TopicPartition, int],
                                 existing: set[TopicPartition], epochs: ProducerEpochs) -> None:
        """The transaction committed: ONE multi-op writes ``offsets`` as the group's committed offsets (set
        the znodes in ``existing``, create the others), deletes the producer's pending znode and records its
        ``epochs``, so the offsets appear and stop being pending at once. MultiOpError (nothing written) if
        ``existing`` was wrong or the pending znode is gone."""
        ops = await self._offset_ops(group, offsets, existing)
        ops.append(DeleteOp(ConsumerTxnOffsetsZNode.path(group, producer_id)))
        ops.append(await self._txn_producer_op(group, producer_id, epochs))
        await self.zk.multi(ops)

    async def abort_txn_offsets(self, group: str, producer_id: int, epochs: ProducerEpochs) -> None:
        """The transaction aborted: ONE multi-op drops the producer's pending offsets and records its
        ``epochs``; with the pending znode gone already, only the epochs are written."""
        record = await self._txn_producer_op(group, producer_id, epochs)
        try:
            await self.zk.multi([DeleteOp(ConsumerTxnOffsetsZNode.path(group, producer_id)), record])
        except ZkError:
            if await self.txn_offsets_exist(group, producer_id):
                raise
            await self.zk.multi([await self._txn_producer_op(group, producer_id, epochs)])

    async def _txn_producer_op(self, group: str, producer_id: int, epochs: ProducerEpochs) -> Any:
        path, data = ConsumerTxnProducerZNode.path(group, producer_id), ConsumerTxnProducerZNode.encode(*epochs)
        if await self.zk.exists(path) is not None:
            return SetDataOp(path, data)
        await self.zk.ensure_path(ConsumerTxnProducerZNode.group_path(group))
        return CreateOp(path, data)

    async def txn_offsets_exist(self, group: str, producer_id: int) -> bool:
        """Whether the producer's pending offsets of ``group`` are still in ZooKeeper."""
        return await self.zk.exists(ConsumerTxnOffsetsZNode.path(group, producer_id)) is not None

    async def delete_txn_offsets(self, group: str, producer_id: int) -> None:
        """Drop the producer's pending offsets, its epochs untouched (OffsetDelete; absent already is fine)."""
        try:
            await self.zk.delete(ConsumerTxnOffsetsZNode.path(group, producer_id))
        except NoNodeError:
            pass

    async def get_groups_txn_producers(self, groups: list[str]) -> dict[str, dict[int, ProducerEpochs]]:
        """The recorded epochs of the producers of each of ``groups`` that has some; unparseable znodes are
        skipped with a warning."""
        found: dict[str, dict[int, ProducerEpochs]] = {}
        for group in groups:
            base = ConsumerTxnProducerZNode.group_path(group)
            for child in await self._children_or_empty(base):
                try:
                    data, _ = await self.zk.get(f"{base}/{child}")
                    found.setdefault(group, {})[int(child)] = ConsumerTxnProducerZNode.decode(data, f"{base}/{child}")
                except NoNodeError:
                    continue
                except ValueError as exc:
                    log.warning("skipping the bad transactional producer znode %s/%s: %s", base, child, exc)
        return found

    # -- group metadata (the membership of the group's last completed rebalance) ----------------------
    async def get_group_metadata(self, group: str) -> tuple[dict[str, Any], int] | None:
        """The group's stored metadata record and its znode version; None when there is none. ValueError when
        the znode does not parse."""
        path = ConsumerGroupMetadataZNode.path(group)
        found = await self.zk.get_or_none(path)
        if found is None:
            return None
        data, stat = found
        return ConsumerGroupMetadataZNode.decode(data, path), stat.version

    async def group_metadata_version(self, group: str) -> int:
        """The znode version of the group's stored record (-1: none stored)."""
        stat = await self.zk.exists(ConsumerGroupMetadataZNode.path(group))
        return -1 if stat is None else stat.version

    async def set_group_metadata(self, group: str, value: dict[str, Any], version: int | None) -> int:
        """Write the group's record at znode ``version`` (None: the znode must not exist yet); returns the new
        version. BadVersionError / NodeExistsError / NoNodeError when the znode changed since that version."""
        path, data = ConsumerGroupMetadataZNode.path(group), ConsumerGroupMetadataZNode.encode(value)
        if version is not None:
            return (await self.zk.set(path, data, version=version)).version
        await self.zk.ensure_path(ConsumerGroupsZNode.path(group))
        await self.zk.create(path, data)
        return 0

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
