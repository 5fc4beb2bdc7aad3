"""TransactionalOffsets: TxnOffsetCommit and the transaction markers of ``__consumer_offsets`` partitions
(Kafka 2.8's ``GroupCoordinator.handleTxnCommitOffsets`` / ``scheduleHandleTxnCompletion``), on top of
``GroupMembership``; the decisions are in ``txn_offsets`` (pure).

Pending offsets are durable: each TxnOffsetCommit rewrites the producer's pending znode of the group
(``OffsetStore.write_txn_offsets``, the merged offsets of the whole transaction so far) before it is
answered, and the group keeps them in memory (``GroupMetadata.pending_txn_offsets``). A COMMIT marker
moves them into the committed offsets with one ZooKeeper multi (``commit_txn_offsets``), an ABORT marker
deletes the znode (``abort_txn_offsets``); both record the marker's producer and coordinator epochs for the
group in that multi. Electing this broker for an offsets partition loads its groups' pending offsets and
recorded epochs with their committed ones, so a marker reaching the new coordinator after a failover
completes them and the epoch fences hold there too. A TxnOffsetCommit whose partition moved away while its
write was in flight answers NOT_COORDINATOR (the producer retries at the new coordinator), and a marker that
finds nothing in memory for its producer re-reads the pending znodes, in case such a write landed after
the new coordinator's load.

Every operation on a group's pending offsets runs in the group's turn of the ``OffsetWriter`` queue (after
the commits and deletions accepted before it), and reads the group's state in that turn, so a marker never
overtakes the TxnOffsetCommit it ends and two TxnOffsetCommits never merge into stale offsets.
"""
from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import GroupMetadata, OffsetAndMetadata
from consumer_group.coordinator.membership import GroupMembership
from consumer_group.coordinator.offsets import oversized_metadata
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.txn_offsets import (
    PendingTxnOffsets,
    committed_on_marker,
    coordinator_epoch_error,
    pending_merge,
    producer_epoch_error,
    txn_member_error,
    unstable_partitions,
)

log = logging.getLogger(__name__)

TxnCommit = tuple[int, str | None, int]  # TxnOffsetCommit's (offset, metadata, committed leader epoch)


class TransactionalOffsets(GroupMembership):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._producer_epochs: dict[int, dict[int, int]] = {}  # offsets partition -> producer id -> epoch
        self._coordinator_epochs: dict[int, dict[int, int]] = {}  # offsets partition -> producer id -> epoch
        self._load_waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._txn_writes: Counter[tuple[str, int]] = Counter()  # (group, producer id) -> TxnOffsetCommits queued

    # -- TxnOffsetCommit -----------------------------------------------------------------------
    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                 group_instance_id: str | None, generation_id: int,
                                 offsets: dict[TopicPartition, TxnCommit]) -> dict[TopicPartition, ErrorCode]:
        """Make ``offsets`` pending for the producer's transaction (v0-2 pass an empty member id and
        generation -1, which skip KIP-447's checks)."""
        error = self.group_error(group_id)
        if error is None:
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = GroupMetadata(group_id, state_timestamp_ms=self.now_ms())
            error = txn_member_error(group, member_id, group_instance_id, generation_id)
        if error is not None:
            return dict.fromkeys(offsets, error)
        limit, now = self.config.offset_metadata_max_bytes, self.now_ms()
        results = oversized_metadata({tp: md for tp, (_, md, _) in offsets.items()}, limit)
        accepted = {tp: OffsetAndMetadata(offset, md or "", now, None, leader_epoch)
                    for tp, (offset, md, leader_epoch) in offsets.items() if tp not in results}
        if accepted:
            self._txn_writes[(group_id, producer_id)] += 1  # a marker arriving meanwhile queues behind this write
            member = (member_id, group_instance_id, generation_id)
            code = await self._in_group_turn(
                group_id, lambda: self._write_pending(group_id, producer_id, producer_epoch, member, accepted))
            results.update(dict.fromkeys(accepted, code))
        return results

    async def _write_pending(self, group_id: str, producer_id: int, producer_epoch: int,
                             member: tuple[str, str | None, int],
                             offsets: dict[TopicPartition, OffsetAndMetadata]) -> ErrorCode:
        try:
            return await self._write_pending_now(group_id, producer_id, producer_epoch, member, offsets)
        finally:  # counted until the write ran, even if the request stopped waiting for it
            self._txn_writes -= Counter({(group_id, producer_id): 1})

    async def _write_pending_now(self, group_id: str, producer_id: int, producer_epoch: int,
                                 member: tuple[str, str | None, int],
                                 offsets: dict[TopicPartition, OffsetAndMetadata]) -> ErrorCode:
        """In the group's turn: KIP-447's member checks and the producer epoch against the group as it is now,
        then the write; NOT_COORDINATOR when the partition moved away meanwhile (the new coordinator may have
        loaded without these offsets, so the producer must retry there)."""
        partition, group = self.partition_for(group_id), self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD) or partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        error = txn_member_error(group, *member) or producer_epoch_error(
            self._producer_epochs.setdefault(partition, {}).get(producer_id), producer_epoch)
        if error is not None:
            return error
        merged = pending_merge(group.pending_txn_offsets.get(producer_id), producer_epoch, offsets)
        await self.store.write_txn_offsets(group_id, producer_id, merged.producer_epoch, merged.stored())
        if partition not in self._owned or self.groups.get(group_id) is not group or group.is_(GroupState.DEAD):
            return ErrorCode.NOT_COORDINATOR
        epochs = self._producer_epochs.setdefault(partition, {})
        epochs[producer_id] = max(epochs.get(producer_id, producer_epoch), producer_epoch)
        group.pending_txn_offsets[producer_id] = merged
        return ErrorCode.NONE

    async def _in_group_turn(self, group_id: str, operation) -> ErrorCode:
        """Run ``operation`` in the group's writer turn: REQUEST_TIMED_OUT after ``offsets.commit.timeout.ms``,
        KAFKA_STORAGE_ERROR when the store failed (both retriable for a producer and a marker sender)."""
        try:
            return await asyncio.wait_for(self.writer.submit(group_id, operation),
                                          self.config.offsets_commit_timeout_ms / 1000)
        except asyncio.TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
        except Exception:  # noqa: BLE001 - the writer logged it
            return ErrorCode.KAFKA_STORAGE_ERROR

    async def forget_pending_partitions(self, group_id: str, partitions: list[TopicPartition]) -> None:
        """OffsetDelete: the partitions leave every producer's pending offsets of the group too (Kafka 2.8's
        ``removeOffsets``); a producer left with none loses its pending znode."""
        group = self.groups.get(group_id)
        if group is not None and unstable_partitions(group.pending_txn_offsets) & set(partitions):
            await self.writer.submit(group_id, lambda: self._forget(group_id, set(partitions)))

    async def _forget(self, group_id: str, partitions: set[TopicPartition]) -> None:
        group = self.groups.get(group_id)
        for producer_id, pending in list(({} if group is None else group.pending_txn_offsets).items()):
            kept = pending.without(partitions)
            if kept == pending:
                continue
            if kept.offsets:
                await self.store.write_txn_offsets(group_id, producer_id, kept.producer_epoch, kept.stored())
                group.pending_txn_offsets[producer_id] = kept
            else:
                await self.store.delete_txn_offsets(group_id, producer_id)
                group.pending_txn_offsets.pop(producer_id, None)

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with transactional offsets pending (OffsetFetch ``require_stable``)."""
        group = self.groups.get(group_id)
        return set() if group is None else unstable_partitions(group.pending_txn_offsets)

    # -- the transaction markers ---------------------------------------------------------------
    async def complete_transaction(self, offsets_partition: int, producer_id: int, producer_epoch: int,
                                   commit: bool, coordinator_epoch: int) -> ErrorCode:
        """The producer's transaction ended (its marker for ``__consumer_offsets-<offsets_partition>``, sent by
        the transaction coordinator of ``coordinator_epoch``): COMMIT makes its pending offsets of every group
        of that partition committed, ABORT drops them. A marker from an older coordinator epoch than the
        highest seen for the producer is TRANSACTION_COORDINATOR_FENCED, from an older producer epoch
        INVALID_PRODUCER_EPOCH; nothing is written then. Idempotent: a retried marker finds nothing pending
        (in memory nor in ZooKeeper) and answers NONE. NOT_COORDINATOR when this broker does not own the
        partition; a marker arriving during the partition's load waits for it."""
        if offsets_partition in self._loading and not await self._loaded(offsets_partition):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if offsets_partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        producer_epochs = self._producer_epochs.setdefault(offsets_partition, {})
        coordinator_epochs = self._coordinator_epochs.setdefault(offsets_partition, {})
        error = coordinator_epoch_error(coordinator_epochs.get(producer_id), coordinator_epoch) or \
            producer_epoch_error(producer_epochs.get(producer_id), producer_epoch)
        if error is not None:
            return error
        producer_epochs[producer_id] = producer_epoch
        coordinator_epochs[producer_id] = coordinator_epoch
        groups = {g.group_id for g in self.groups.values() if producer_id in g.pending_txn_offsets}
        groups.update(g for g, pid in self._txn_writes if pid == producer_id)
        groups = sorted(g for g in groups if self.partition_for(g) == offsets_partition)
        if not groups:  # a TxnOffsetCommit of a deposed coordinator may have landed after this one loaded
            try:
                groups = await self._groups_pending_in_store(offsets_partition, producer_id)
            except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: the marker is retried
                log.warning("reading the pending offsets of partition %d failed: %r", offsets_partition, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
        epochs = (producer_epoch, coordinator_epoch)
        codes = await asyncio.gather(*(
            self._in_group_turn(g, lambda g=g: self._complete(g, producer_id, commit, epochs)) for g in groups))
        return next((code for code in codes if code != ErrorCode.NONE), ErrorCode.NONE)

    async def _groups_pending_in_store(self, partition: int, producer_id: int) -> list[str]:
        group_ids = [g for g in await self.store.groups() if self.partition_for(g) == partition]
        pending = await self.store.load_txn_offsets(group_ids)
        return sorted(g for g, producers in pending.items() if producer_id in producers)

    async def _complete(self, group_id: str, producer_id: int, commit: bool, epochs: tuple[int, int]) -> ErrorCode:
        if self.partition_for(group_id) not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        group = self.groups.get(group_id)
        pending = None if group is None else group.pending_txn_offsets.get(producer_id)
        if pending is None:  # not in memory: maybe written to ZooKeeper by a deposed coordinator
            stored = (await self.store.load_txn_offsets([group_id])).get(group_id, {}).get(producer_id)
            if stored is None:
                return ErrorCode.NONE  # completed already, or the group was deleted
            pending = PendingTxnOffsets.loaded(*stored, self.now_ms())
            if group is None:
                group = self.groups[group_id] = GroupMetadata(group_id, state_timestamp_ms=self.now_ms())
        committed = committed_on_marker(pending, commit)
        if commit:
            await self.store.commit_txn_offsets(group_id, producer_id, {tp: o.offset for tp, o in committed.items()},
                                                epochs)
        else:
            await self.store.abort_txn_offsets(group_id, producer_id, epochs)
        if self.groups.get(group_id) is group and not group.is_(GroupState.DEAD):
            group.pending_txn_offsets.pop(producer_id, None)
            group.offsets.update(committed)
        log.debug("group %s: transactional offsets of producer %d %s", group_id, producer_id,
                  "committed" if commit else "aborted")
        return ErrorCode.NONE

    async def _loaded(self, partition: int) -> bool:
        """Wait (up to ``offsets.commit.timeout.ms``) for the partition's load to end; False on timeout."""
        waiter = asyncio.get_running_loop().create_future()
        self._load_waiters.setdefault(partition, []).append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.config.offsets_commit_timeout_ms / 1000)
            return True
        except asyncio.TimeoutError:
            return False

    def _wake_load_waiters(self, partition: int) -> None:
        for waiter in self._load_waiters.pop(partition, []):
            if not waiter.done():
                waiter.set_result(None)

    # -- ownership -----------------------------------------------------------------------------
    async def _load_extras(self, group_ids: list[str]) -> object:
        return await self.store.load_txn_offsets(group_ids), await self.store.load_txn_producers(group_ids)

    def _install(self, partition: int, loaded: dict[str, dict], extras: object = None) -> None:
        super()._install(partition, loaded, extras)
        pending, producers = extras or ({}, {})
        now, epochs = self.now_ms(), self._producer_epochs.setdefault(partition, {})
        coordinator_epochs = self._coordinator_epochs.setdefault(partition, {})
        for group_id, by_producer in producers.items():
            for producer_id, (producer_epoch, coordinator_epoch) in by_producer.items():
                epochs[producer_id] = max(epochs.get(producer_id, producer_epoch), producer_epoch)
                coordinator_epochs[producer_id] = max(coordinator_epochs.get(producer_id, coordinator_epoch),
                                                      coordinator_epoch)
        for group_id, by_producer in pending.items():
            group = self.groups.setdefault(group_id, GroupMetadata(group_id, state_timestamp_ms=now))
            for producer_id, (producer_epoch, stored) in by_producer.items():
                group.pending_txn_offsets[producer_id] = PendingTxnOffsets.loaded(producer_epoch, stored, now)
                epochs[producer_id] = max(epochs.get(producer_id, producer_epoch), producer_epoch)
        self._wake_load_waiters(partition)

    def on_resigned(self, partition: int) -> None:
        super().on_resigned(partition)
        self._producer_epochs.pop(partition, None)
        self._coordinator_epochs.pop(partition, None)
        self._wake_load_waiters(partition)
