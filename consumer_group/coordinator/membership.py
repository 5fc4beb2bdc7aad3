"""GroupMembership: the classic group protocol for the groups this broker owns (the membership half of
Kafka 2.8's ``GroupCoordinator``, reference §5; offsets and the admin APIs are in ``coordinator.py``).

Ownership follows ``__consumer_offsets`` leadership: ``on_elected(p)`` loads the committed offsets and the
stored metadata records of every group mapped to partition ``p`` (requests for them answer
COORDINATOR_LOAD_IN_PROGRESS meanwhile), ``on_resigned(p)`` unloads them and answers their parked JoinGroup /
SyncGroup calls NOT_COORDINATOR. Membership is persisted as Kafka's group metadata record (``group_record``,
``GroupStore``): stored when the leader's SyncGroup completes a rebalance (the members are answered, and the
group turns Stable, only once the record is stored; a failed store answers every member its error and the
group rebalances) and when the group becomes Empty. A loaded group is Stable with its members, generation and
assignments (each member's session deadline starting at the load) or Empty, so a coordinator move costs no
rebalance.

Everything here runs on the broker's event loop and never awaits between reading a group and changing
it: JoinGroup and SyncGroup park a callback on the member (``GroupMetadata``) and await a future that the
callback resolves; timers (``Timers``) fire the session, join, KIP-394 pending-member and KAFKA-12890
pending-sync deadlines. Only offset and group metadata writes await ZooKeeper (``OffsetWriter``,
``GroupStore``); the cache is updated, and the members answered, after the write succeeds.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import GroupMetadata, JoinResult, MemberMetadata, OffsetAndMetadata, SyncResult
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.group_record import GroupRecord, group_from_record, record_of
from consumer_group.coordinator.group_store import GroupStore
from consumer_group.coordinator.offset_store import OffsetStore
from consumer_group.coordinator.offsets import OffsetWriter
from consumer_group.coordinator.placement import partition_for
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.timers import Timers

log = logging.getLogger(__name__)
LOAD_RETRY_MS = 1000


@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    require_known_member_id: bool  # JoinGroup v4+ (KIP-394)
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


@dataclass(frozen=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: dict[str, bytes]
    protocol_type: str | None  # SyncGroup v5+: checked against the group's (INCONSISTENT_GROUP_PROTOCOL)
    protocol_name: str | None


class GroupMembership:
    def __init__(self, broker_id: int, config: GroupConfig, store: OffsetStore,
                 clock: Callable[[], float] = time.time):
        self.broker_id = broker_id
        self.config = config
        self.store = store
        self.writer = OffsetWriter(store)
        self.group_store = GroupStore(store, self.writer, config.offsets_commit_timeout_ms)
        self._storing: set[tuple[str, int]] = set()  # (group, generation) whose assignment is being stored
        self.clock = clock
        self.groups: dict[str, GroupMetadata] = {}
        self.timers = Timers()
        self._owned: set[int] = set()
        self._loading: dict[int, object] = {}  # partition -> token of the load in progress
        self._tasks: set[asyncio.Task] = set()
        self._initial_delay: dict[str, int] = {}  # group -> remaining ms of KIP-134's initial rebalance delay
        self.rebalances = 0  # rebalances this coordinator started (for /metrics)

    # -- life cycle and ownership --------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def shutdown(self) -> None:
        for partition in sorted(self._owned | set(self._loading)):
            self.on_resigned(partition)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.writer.shutdown()
        self.timers.cancel_all()

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def owns(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned

    def group_error(self, group_id: str) -> ErrorCode | None:
        """Kafka's ``validateGroupStatus``: INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def on_elected(self, partition: int) -> None:
        """This broker now leads ``__consumer_offsets-<partition>``: load its groups' offsets."""
        if partition in self._owned or partition in self._loading:
            return
        token = self._loading[partition] = object()
        self._spawn(self._load(partition, token))

    async def _load(self, partition: int, token: object) -> None:
        while self._loading.get(partition) is token:
            try:
                loaded = {}
                for group_id in await self.store.groups():
                    if self.partition_for(group_id) == partition:
                        loaded[group_id] = await self.store.load(group_id)
                records = await self.group_store.load(list(loaded))
                extras = await self._load_extras(list(loaded))
            except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: retry while we still lead
                log.warning("loading groups of partition %d failed (%r); retrying", partition, exc)
                await asyncio.sleep(LOAD_RETRY_MS / 1000)
                continue
            if self._loading.get(partition) is not token:
                return
            self._restore(records)
            self._install(partition, loaded, extras)

    async def _load_extras(self, group_ids: list[str]) -> object:
        """What a subclass loads besides the committed offsets of the partition's groups (handed to ``_install``)."""
        return None

    def _install(self, partition: int, loaded: dict[str, dict], extras: object = None) -> None:
        now = self.now_ms()
        for group_id, offsets in loaded.items():
            group = self.groups.setdefault(group_id, GroupMetadata(group_id, state_timestamp_ms=now))
            for tp, offset in offsets.items():
                group.offsets.setdefault(tp, OffsetAndMetadata(offset, "", now))
        del self._loading[partition]
        self._owned.add(partition)
        log.info("broker %d coordinates the groups of partition %d (%d with offsets)", self.broker_id, partition,
                 len(loaded))

    def _restore(self, records: dict[str, GroupRecord]) -> None:
        """The loaded groups in their stored state; each member's session deadline starts now (Kafka schedules
        the heartbeat expiration of every loaded member)."""
        now = self.now_ms()
        for group_id, record in records.items():
            if group_id in self.groups:
                continue
            group = self.groups[group_id] = group_from_record(group_id, record, now)
            for member in group.members.values():
                self._schedule_session_expiry(group, member)
            log.info("group %s loaded: %s, generation %d, %d members", group_id, group.state, group.generation_id,
                     group.size())

    def on_resigned(self, partition: int) -> None:
        """Leadership of the partition moved away: unload its groups, answer parked calls NOT_COORDINATOR."""
        self._loading.pop(partition, None)
        self._owned.discard(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            self._unload(self.groups.pop(group_id))

    def _unload(self, group: GroupMetadata) -> None:
        self.timers.cancel_group(group.group_id)
        self._initial_delay.pop(group.group_id, None)
        group.transition_to(GroupState.DEAD, self.now_ms())
        for member in list(group.members.values()):
            group.answer_join(member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
            group.answer_sync(member, SyncResult(ErrorCode.NOT_COORDINATOR))

    # -- JoinGroup -----------------------------------------------------------------------------
    async def join_group(self, request: JoinRequest) -> JoinResult:
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self._join(request, lambda result: future.done() or future.set_result(result))
        return await future

    def _join(self, req: JoinRequest, respond: Callable[[JoinResult], object]) -> None:
        error = self.group_error(req.group_id) or self._session_timeout_error(req.session_timeout_ms)
        if error is not None:
            respond(JoinResult(error, req.member_id))
            return
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return
            group = self.groups[req.group_id] = GroupMetadata(req.group_id, state_timestamp_ms=self.now_ms())
        if not self._accepts_joining_member(group, req.member_id):
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, req.member_id))
            return
        if req.member_id:
            self._join_known_member(group, req, respond)
        else:
            self._join_new_member(group, req, respond)
        self._try_complete_join(group)

    def _session_timeout_error(self, session_timeout_ms: int) -> ErrorCode | None:
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return None

    def _accepts_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """KIP-389: ``group.max.size`` members at most; members already in the group may always rejoin."""
        if group.is_(GroupState.EMPTY) or group.is_(GroupState.DEAD):
            return True
        if group.is_(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join() < self.config.max_size
        return group.has(member_id) or group.size() < self.config.max_size

    def _join_new_member(self, group: GroupMetadata, req: JoinRequest, respond) -> None:
        if group.is_(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id))
        elif not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
        else:
            member_id = f"{req.group_instance_id or req.client_id}-{uuid.uuid4()}"
            old_member_id = group.static_member_id(req.group_instance_id)
            if old_member_id is not None:
                self._rejoin_static_member(group, req, old_member_id, member_id, respond)
            elif req.require_known_member_id and req.group_instance_id is None:
                group.pending_members.add(member_id)  # KIP-394: the client must come back with this id
                self.timers.schedule(("pending", group.group_id, member_id), req.session_timeout_ms,
                                     lambda: self._expire_pending_member(group, member_id))
                respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            else:
                self._add_member_and_rebalance(group, req, member_id, respond)

    def _join_known_member(self, group: GroupMetadata, req: JoinRequest, respond) -> None:
        member_id = req.member_id
        if group.is_(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif member_id in group.pending_members and req.group_instance_id is None:
            self.timers.cancel(("pending", group.group_id, member_id))
            self._add_member_and_rebalance(group, req, member_id, respond)
        elif group.is_static_member_fenced(member_id, req.group_instance_id):
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
        elif not group.has(member_id) or group.is_(GroupState.EMPTY):
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
        else:
            member = group.get(member_id)
            unchanged = member.matches(req.protocols)
            if group.is_(GroupState.COMPLETING_REBALANCE) and unchanged:
                respond(group.join_result(member))  # a retried join: the same answer again
            elif group.is_(GroupState.STABLE) and unchanged and not group.is_leader(member_id):
                respond(group.join_result(member))
            else:
                self._update_member_and_rebalance(group, member, req, respond)

    def _rejoin_static_member(self, group: GroupMetadata, req: JoinRequest, old_member_id: str, member_id: str,
                              respond) -> None:
        """KIP-345: a known ``group.instance.id`` with an empty member id takes a new id, fencing the old one.
        In Stable with an unchanged protocol choice there is no rebalance: the answer names the *old*
        leader id so the member does not assign, and its SyncGroup returns the stored assignment."""
        old_leader = group.leader_id or ""
        self.timers.cancel(("member", group.group_id, old_member_id))
        old = group.get(old_member_id)
        group.answer_join(old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        group.answer_sync(old, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member = group.replace_static_member(req.group_instance_id, old_member_id, member_id)
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms)
        member.join_callback = respond
        self._schedule_session_expiry(group, member)
        if group.is_(GroupState.STABLE) and group.select_protocol() == group.protocol_name:
            self._spawn(self._store_static_member(group, member_id, JoinResult(
                ErrorCode.NONE, member_id, group.generation_id, group.protocol_type, group.protocol_name, old_leader)))
        elif group.is_(GroupState.STABLE):
            self._maybe_prepare_rebalance(group, f"static member {req.group_instance_id} changed protocols")
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")

    def _add_member_and_rebalance(self, group: GroupMetadata, req: JoinRequest, member_id: str, respond) -> None:
        member = MemberMetadata(member_id, req.group_instance_id, req.client_id, req.client_host,
                                req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                                list(req.protocols), join_callback=respond, is_new=True)
        group.add(member)
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # extends KIP-134's initial delay
        self._schedule_session_expiry(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata, req: JoinRequest,
                                     respond) -> None:
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms)
        member.join_callback = respond
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    # -- rebalancing ---------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        self.rebalances += 1
        if group.is_(GroupState.COMPLETING_REBALANCE):
            group.reset_and_propagate_assignment_error(ErrorCode.REBALANCE_IN_PROGRESS)
        self.timers.cancel(("sync", group.group_id))
        group.pending_sync.clear()
        was_empty = group.is_(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self.now_ms())
        log.info("group %s: preparing to rebalance (generation %d): %s", group.group_id, group.generation_id, reason)
        if was_empty:  # KIP-134: wait for more members before the first generation
            delay = self.config.initial_rebalance_delay_ms
            self._initial_delay[group.group_id] = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(("join", group.group_id), delay, lambda: self._initial_delay_expired(group))
        else:
            self.timers.schedule(("join", group.group_id), group.rebalance_timeout_ms(),
                                 lambda: self._complete_join(group))

    def _initial_delay_expired(self, group: GroupMetadata) -> None:
        remaining = self._initial_delay.get(group.group_id, 0)
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, remaining)
            self._initial_delay[group.group_id] = max(remaining - delay, 0)
            self.timers.schedule(("join", group.group_id), delay, lambda: self._initial_delay_expired(group))
        else:
            self._initial_delay.pop(group.group_id, None)
            self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (group.is_(GroupState.PREPARING_REBALANCE) and group.group_id not in self._initial_delay
                and group.has_all_members_joined()):
            self.timers.cancel(("join", group.group_id))
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        if not group.is_(GroupState.PREPARING_REBALANCE) or self.groups.get(group.group_id) is not group:
            return
        for member in group.not_yet_rejoined_members():
            if member.group_instance_id is None:  # static members stay until their session expires
                self._remove_member(group, member)
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.info("group %s: no member rejoined (only static members, whose sessions are still running); "
                     "waiting another rebalance timeout", group.group_id)
            self.timers.schedule(("join", group.group_id), group.rebalance_timeout_ms(),
                                 lambda: self._complete_join(group))
            return
        group.init_next_generation(self.now_ms())
        if group.is_(GroupState.EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._spawn(self._store_empty(group, group.generation_id))
            return
        log.info("group %s: generation %d with %d members, protocol %s, leader %s", group.group_id,
                 group.generation_id, group.size(), group.protocol_name, group.leader_id)
        for member in group.members.values():
            group.answer_join(member, group.join_result(member))  # static members that missed it: nothing
            self._schedule_session_expiry(group, member)
        generation = group.generation_id
        self.timers.schedule(("sync", group.group_id), group.rebalance_timeout_ms(),
                             lambda: self._expire_pending_sync(group, generation))

    def _expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        """KAFKA-12890: members that never sent SyncGroup for this generation are removed."""
        if group.generation_id != generation or not group.pending_sync:
            return
        if group.is_(GroupState.COMPLETING_REBALANCE) or group.is_(GroupState.STABLE):
            late = [group.get(m) for m in group.pending_sync if group.has(m)]
            log.info("group %s: members %s sent no SyncGroup in time", group.group_id, [m.member_id for m in late])
            for member in late:
                self._remove_member(group, member)
            self._prepare_rebalance(group, "members did not sync")

    # -- liveness ------------------------------------------------------------------------------
    def _schedule_session_expiry(self, group: GroupMetadata, member: MemberMetadata,
                                 timeout_ms: int | None = None) -> None:
        member_id = member.member_id
        self.timers.schedule(("member", group.group_id, member_id),
                             member.session_timeout_ms if timeout_ms is None else timeout_ms,
                             lambda: self._session_expired(group, member_id))

    def _session_expired(self, group: GroupMetadata, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if (member.awaiting_join and not member.is_new) or member.awaiting_sync:
            self._schedule_session_expiry(group, member)  # a parked request keeps a member alive
            return
        log.info("group %s: member %s failed (session timeout %d ms), removing it", group.group_id, member_id,
                 member.session_timeout_ms)
        self._remove_member_and_update_group(group, member)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    def _remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.timers.cancel(("member", group.group_id, member.member_id))
        group.answer_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        group.answer_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._remove_member(group, member)
        if group.is_(GroupState.STABLE) or group.is_(GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"member {member.member_id} left")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------------
    async def sync_group(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                         assignments: dict[str, bytes], protocol_type: str | None = None,
                         protocol_name: str | None = None) -> SyncResult:
        """SyncGroup; ``protocol_type`` / ``protocol_name`` are v5's (None for older versions)."""
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._sync(SyncRequest(group_id, generation_id, member_id, group_instance_id, assignments, protocol_type,
                               protocol_name), lambda result: future.done() or future.set_result(result))
        return await future

    def _member_error(self, group: GroupMetadata | None, generation_id: int, member_id: str,
                      group_instance_id: str | None) -> ErrorCode | None:
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def _sync(self, req: SyncRequest, respond) -> None:
        group_id, member_id = req.group_id, req.member_id
        error = self.group_error(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.REBALANCE_IN_PROGRESS  # the rebalance state is gone: rejoin, no rediscovery
        group = self.groups.get(group_id)
        error = error or self._member_error(group, req.generation_id, member_id, req.group_instance_id)
        if error is None:
            error = group.sync_protocol_error(req.protocol_type, req.protocol_name)
        if error is None and group.is_(GroupState.PREPARING_REBALANCE):
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is not None:
            respond(SyncResult(error))
            return
        member = group.get(member_id)
        group.pending_sync.discard(member_id)
        self._schedule_session_expiry(group, member)
        if group.is_(GroupState.STABLE):
            respond(group.sync_result(member))
        else:
            member.sync_callback = respond
            if group.is_leader(member_id) and (group_id, group.generation_id) not in self._storing:
                self._storing.add((group_id, group.generation_id))
                self._spawn(self._store_assignment(group, group.generation_id, dict(req.assignments)))
        if not group.pending_sync:
            self.timers.cancel(("sync", group_id))

    def _completing(self, group: GroupMetadata, generation: int) -> bool:
        return (self.groups.get(group.group_id) is group and group.is_(GroupState.COMPLETING_REBALANCE)
                and group.generation_id == generation)

    async def _store_assignment(self, group: GroupMetadata, generation: int, assignments: dict[str, bytes]) -> None:
        """The leader's SyncGroup: store the group with its assignment, then answer the members and turn
        Stable (Kafka's ``storeGroup`` callback); unless the group moved on meanwhile."""
        assignments = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        try:
            error = await self.group_store.store_group(
                group.group_id, lambda: record_of(group, self.now_ms(), assignments)
                if self._completing(group, generation) else None)
        finally:
            self._storing.discard((group.group_id, generation))
        if error is None or not self._completing(group, generation):
            return
        if error is not ErrorCode.NONE:
            group.reset_and_propagate_assignment_error(error)
            self._maybe_prepare_rebalance(group, f"storing generation {generation} failed ({error.name})")
            return
        group.set_and_propagate_assignment(assignments)
        group.transition_to(GroupState.STABLE, self.now_ms())
        log.info("group %s: generation %d is stable", group.group_id, generation)

    async def _store_static_member(self, group: GroupMetadata, member_id: str, result: JoinResult) -> None:
        """KIP-345 in Stable: the static member's new id is stored before its join is answered (Kafka stores the
        group with the current assignment), so the next coordinator knows it; a failed store answers the join
        its error. Nothing to answer when the group moved on meanwhile (a rebalance answers the parked join)."""
        generation = group.generation_id

        def current() -> bool:
            return (self.groups.get(group.group_id) is group and group.is_(GroupState.STABLE)
                    and group.generation_id == generation and group.has(member_id))

        error = await self.group_store.store_group(group.group_id,
                                                   lambda: record_of(group, self.now_ms()) if current() else None)
        if error is not None and current():
            member = group.get(member_id)
            group.answer_join(member, result if error is ErrorCode.NONE else JoinResult(error, member_id))

    async def _store_empty(self, group: GroupMetadata, generation: int) -> None:
        """The group became Empty: store it so (its generation and protocol type survive a coordinator move)."""
        await self.group_store.store_group(
            group.group_id, lambda: record_of(group, self.now_ms())
            if self.groups.get(group.group_id) is group and group.is_(GroupState.EMPTY)
            and group.generation_id == generation else None)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> ErrorCode:
        error = self.group_error(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # as Kafka: the member carries on once the group is loaded
        group = self.groups.get(group_id)
        error = error or self._member_error(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        self._schedule_session_expiry(group, group.get(member_id))
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup (v3+ batch form): the top-level error and one error per leaving member."""
        error = self.group_error(group_id)
        if error is not None:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, [self._leave(group, member_id, instance_id) for member_id, instance_id in members]

    def _leave(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> ErrorCode:
        if not member_id and instance_id is not None:
            member_id = group.static_member_id(instance_id) or ""
        if group.is_static_member_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id in group.pending_members:
            self.timers.cancel(("pending", group.group_id, member_id))
            self._expire_pending_member(group, member_id)
            return ErrorCode.NONE
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("group %s: member %s leaves", group.group_id, member_id)
        self._remove_member_and_update_group(group, group.get(member_id))
        return ErrorCode.NONE
