"""GroupCoordinator: ``GroupMembership`` and ``TransactionalOffsets`` plus committed offsets and the admin APIs (Kafka 2.8's
``GroupCoordinator`` / ``GroupMetadataManager``, reference §5.7).

OffsetCommit is validated against the group's membership (generation -1 only for groups without
members), written to ZooKeeper through ``OffsetWriter`` (one multi per batch of commits) and cached
once the write succeeded; OffsetFetch reads the cache, which ``on_elected`` filled from ZooKeeper.
A store failure answers COORDINATOR_NOT_AVAILABLE (the client rediscovers and retries), and a commit
that takes longer than ``offsets.commit.timeout.ms`` answers REQUEST_TIMED_OUT, as Kafka does.

Offsets of Empty groups expire after ``offsets.retention.minutes`` (KIP-211), those of topics a live
consumer group no longer subscribes to that long after their commit (KIP-496); an Empty group left with
no offsets becomes Dead and is dropped. DeleteGroups removes Empty groups only (NON_EMPTY_GROUP);
OffsetDelete refuses partitions of topics the members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC).

Transactional offsets (``txn_offset_commits``): as Kafka 2.8's ``hasOffsets``, an Empty group with
pending transactional offsets is not dropped by retention, and pending offsets never expire (their
transaction ends them: the transaction coordinator aborts it when it times out). DeleteGroups deletes an
Empty group with its pending transactional offsets, as Kafka 2.8 does (a later marker of those producers
finds nothing to complete and answers NONE); it logs which producers' offsets it dropped. OffsetDelete
removes its partitions from the pending transactional offsets too (Kafka 2.8's ``removeOffsets``).
"""
from __future__ import annotations

import asyncio
import logging

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import GroupMetadata, OffsetAndMetadata
from consumer_group.coordinator.membership import JoinRequest
from consumer_group.coordinator.offsets import expired_offsets, oversized_metadata
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.txn_offset_commits import TransactionalOffsets

log = logging.getLogger(__name__)


def in_states(group: GroupMetadata, states: frozenset[str]) -> bool:
    """KIP-518's filter: no states means all of them; names match Kafka's exactly (case included)."""
    return not states or str(group.state) in states

__all__ = ["GroupCoordinator", "JoinRequest"]


class GroupCoordinator(TransactionalOffsets):
    async def startup(self) -> None:
        self._spawn(self._expire_offsets_periodically())

    # -- OffsetCommit --------------------------------------------------------------------------
    async def commit_offsets(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                             offsets: dict[TopicPartition, tuple[int, str]], retention_ms: int | None = None,
                             leader_epochs: dict[TopicPartition, int] | None = None,
                             commit_timestamps: dict[TopicPartition, int] | None = None,
                             ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit v1+; ``retention_ms`` is v2-v4's retention time (None: the broker's retention),
        ``leader_epochs`` v6+'s committed leader epochs (kept in memory, as the metadata strings),
        ``commit_timestamps`` v1's explicit commit timestamps (the base of a simple group's expiry; absent or
        -1: now)."""
        error = self._commit_error(group_id, generation_id, member_id, group_instance_id)
        if error is not None:
            return {tp: error for tp in offsets}
        return await self._commit(group_id, offsets, retention_ms, leader_epochs or {}, commit_timestamps or {})

    async def commit_offsets_v0(self, group_id: str,
                                offsets: dict[TopicPartition, tuple[int, str]]) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit v0, Kafka's ZooKeeper commit: no group checks and any broker, not only the
        coordinator, writes ``/consumers/<group>/offsets``. Where this broker coordinates the group its cache
        takes the commit too; elsewhere the coordinator sees it after its next load (in Kafka v0 commits are
        never seen by v1+ fetches at all: they live in another store)."""
        if not group_id:
            return dict.fromkeys(offsets, ErrorCode.INVALID_GROUP_ID)
        if self.group_error(group_id) is None and group_id not in self.groups:
            self.groups[group_id] = GroupMetadata(group_id, state_timestamp_ms=self.now_ms())  # offsets only
        return await self._commit(group_id, offsets, None, {}, {})

    async def _commit(self, group_id: str, offsets: dict[TopicPartition, tuple[int, str]], retention_ms: int | None,
                      leader_epochs: dict[TopicPartition, int],
                      commit_timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, ErrorCode]:
        limit = self.config.offset_metadata_max_bytes
        results = oversized_metadata({tp: md for tp, (_, md) in offsets.items()}, limit)
        accepted = {tp: value for tp, value in offsets.items() if tp not in results}
        code = await self._store_offsets(group_id, accepted, retention_ms, leader_epochs, commit_timestamps)
        results.update(dict.fromkeys(accepted, code))
        return results

    def _commit_error(self, group_id: str, generation_id: int, member_id: str,
                      group_instance_id: str | None) -> ErrorCode | None:
        error = self.group_error(group_id)
        if error is not None:
            return error
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            self.groups[group_id] = GroupMetadata(group_id, state_timestamp_ms=self.now_ms())  # offsets only
            return None
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if generation_id < 0 and group.is_(GroupState.EMPTY):
            return None
        if group.is_(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_session_expiry(group, group.get(member_id))  # a commit counts as a heartbeat
        return None

    async def _store_offsets(self, group_id: str, offsets: dict[TopicPartition, tuple[int, str]],
                             retention_ms: int | None, leader_epochs: dict[TopicPartition, int],
                             commit_timestamps: dict[TopicPartition, int]) -> ErrorCode:
        if not offsets:
            return ErrorCode.NONE
        try:
            await asyncio.wait_for(self.writer.commit(group_id, {tp: o for tp, (o, _) in offsets.items()}),
                                   self.config.offsets_commit_timeout_ms / 1000)
        except asyncio.TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
        except Exception:  # noqa: BLE001 - the writer logged it; the client retries elsewhere
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        group = self.groups.get(group_id)
        if group is not None and not group.is_(GroupState.DEAD) and self.owns(group_id):
            now = self.now_ms()
            expire = None if retention_ms is None else now + retention_ms
            for tp, (offset, metadata) in offsets.items():
                group.offsets[tp] = OffsetAndMetadata(offset, metadata or "", commit_timestamps.get(tp, now), expire,
                                                      leader_epochs.get(tp, -1))
        return ErrorCode.NONE

    # -- OffsetFetch ---------------------------------------------------------------------------
    def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None
                      ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets (None: nothing committed); ``partitions`` None means all of the group's."""
        error = self.group_error(group_id)
        if error is not None:
            return error, {}
        group = self.groups.get(group_id)
        offsets = {} if group is None else group.offsets
        if partitions is None:
            return ErrorCode.NONE, dict(offsets)
        return ErrorCode.NONE, {tp: offsets.get(tp) for tp in partitions}

    async def fetch_offsets_v0(self, group_id: str) -> dict[TopicPartition, int]:
        """OffsetFetch v0, Kafka's ZooKeeper fetch: the offsets as stored, read on any broker."""
        return await self.store.load(group_id)

    # -- ListGroups, DescribeGroups, DeleteGroups, OffsetDelete --------------------------------
    def list_groups(self, states: frozenset[str] = frozenset()) -> tuple[ErrorCode, list[GroupMetadata]]:
        """The groups this broker coordinates; ``states`` (ListGroups v4, KIP-518) keeps those whose state
        is named there, as Kafka spells it (``Stable``, ``Empty``, ...); empty means every state."""
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        return error, [g for g in self.groups.values() if not g.is_(GroupState.DEAD) and in_states(g, states)]

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        """The group (None when unknown: described as Dead, as Kafka does)."""
        error = self.group_error(group_id)
        if error is not None:
            return error, None
        return ErrorCode.NONE, self.groups.get(group_id)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        results = {}
        for group_id in group_ids:
            results[group_id] = self._delete_group_error(group_id)
        deleted = [g for g, error in results.items() if error is None]
        for group_id in deleted:
            group = self.groups.pop(group_id)
            if group.pending_txn_offsets:
                log.warning("group %s deleted with the pending transactional offsets of producers %s", group_id,
                            sorted(group.pending_txn_offsets))
            self._drop(group)
        for group_id in deleted:
            try:
                await self.writer.delete_group(group_id)
                results[group_id] = ErrorCode.NONE
            except Exception:  # noqa: BLE001 - the writer logged it
                results[group_id] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return results

    def _delete_group_error(self, group_id: str) -> ErrorCode | None:
        error = self.group_error(group_id)
        if error is not None:
            return error
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_(GroupState.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        return None

    def _drop(self, group: GroupMetadata) -> None:
        self.timers.cancel_group(group.group_id)
        group.transition_to(GroupState.DEAD, self.now_ms())

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                             ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        error = self.group_error(group_id)
        group = self.groups.get(group_id)
        if error is None and (group is None or group.is_(GroupState.DEAD)):
            error = ErrorCode.GROUP_ID_NOT_FOUND
        if error is not None:
            return error, {}
        subscribed = set() if group.is_(GroupState.EMPTY) else group.subscribed_topics
        if subscribed is None and not group.is_(GroupState.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP, {}
        results = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp.topic in subscribed else ErrorCode.NONE
                   for tp in partitions}
        deletable = [tp for tp, code in results.items() if code == ErrorCode.NONE]
        for tp in deletable:
            group.offsets.pop(tp, None)
        try:
            await self.writer.delete_offsets(group_id, deletable)
            await self.forget_pending_partitions(group_id, deletable)
        except Exception:  # noqa: BLE001 - the writer logged it
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, {}
        return ErrorCode.NONE, results

    # -- retention -----------------------------------------------------------------------------
    async def _expire_offsets_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            try:
                await self.expire_offsets()
            except Exception:  # noqa: BLE001 - keep the cleanup running
                log.exception("offset expiration failed")

    async def expire_offsets(self) -> int:
        """One retention pass over the groups this broker owns; returns how many offsets expired."""
        now, removed = self.now_ms(), 0
        for group in list(self.groups.values()):
            expired = expired_offsets(group, now, self.config.offsets_retention_ms)
            for tp in expired:
                del group.offsets[tp]
            if expired:
                removed += len(expired)
                log.info("group %s: %d offsets expired", group.group_id, len(expired))
            if self.groups.get(group.group_id) is not group:
                continue  # unloaded or deleted while an earlier group's write was in flight
            if (group.is_(GroupState.EMPTY) and not group.offsets and not group.pending_members
                    and not group.pending_txn_offsets):
                self._drop(self.groups.pop(group.group_id))
                await self.writer.delete_group(group.group_id)
            elif expired:
                await self.writer.delete_offsets(group.group_id, expired)
        return removed
