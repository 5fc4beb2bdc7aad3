"""The group coordinator persists group metadata (Kafka's ``storeGroup`` / group loading): a group's record is
stored when the leader's SyncGroup completes a rebalance and when it becomes Empty, and the coordinator
elected next for its offsets partition loads it, so members carry on with the same member ids and
generation, no rejoin; a failed store answers the SyncGroup with its error and the group rebalances."""
from __future__ import annotations

import asyncio

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.errors import ZkError
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group import SyncResult
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.group_record import GroupMetadataFenced, from_json
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from consumer_group.coordinator.state import GroupState
from tests.unit.consumer_group.test_coordinator import RANGE, Ctx, FakeClock, assigned, run, wait_until

TP0 = TopicPartition("t", 0)
SETTINGS = dict(offsets_topic_num_partitions=1, initial_rebalance_delay_ms=0, min_session_timeout_ms=10,
                max_session_timeout_ms=60_000)


async def successor(ctx: Ctx) -> Ctx:
    """The coordinator elected next for the same offsets partition, over the same store: the old one resigned."""
    ctx.coordinator.on_resigned(0)
    new = Ctx(GroupCoordinator(2, GroupConfig(**SETTINGS), ctx.store, clock=ctx.clock), ctx.clock, ctx.store)
    new.coordinator.on_elected(0)
    await wait_until(lambda: new.coordinator.group_error("g") is None, what="load")
    return new


def stored(ctx: Ctx):
    return from_json(ctx.store.metadata["g"])


def test_a_completed_sync_stores_the_group_with_its_assignment():
    async def scenario(ctx: Ctx):
        ids, generation = await ctx.stable_group({}, {})
        record = stored(ctx)
        assert (record.generation, record.protocol_type, record.protocol, record.leader) == (
            generation, "consumer", "range", ids[0])
        assert {m.member_id: m.assignment for m in record.members} == {m: m.encode() for m in ids}
        assert all(m.subscription == RANGE[0][1] for m in record.members)
    run(scenario)


def test_a_successor_serves_the_loaded_group_without_a_rejoin():
    async def scenario(ctx: Ctx):
        ids, generation = await ctx.stable_group({}, {})
        assert await ctx.commit(generation, ids[0], {TP0: (5, "")}) == {TP0: ErrorCode.NONE}
        new = await successor(ctx)
        try:
            group = new.group()
            assert group.state is GroupState.STABLE and group.generation_id == generation
            assert set(group.members) == set(ids)
            assert group.leader_id == ids[0]
            for member_id in ids:
                assert new.heartbeat(member_id, generation) is ErrorCode.NONE
            assert await new.commit(generation, ids[1], {TP0: (9, "")}) == {TP0: ErrorCode.NONE}
            assert new.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 9
            assert await new.sync(ids[1], generation) == assigned(ids[1].encode())
            follower = await new.join(ids[1])  # an unchanged follower's rejoin in Stable: no rebalance
            assert (follower.error, follower.generation_id) == (ErrorCode.NONE, generation)
            assert new.state() is GroupState.STABLE and new.coordinator.rebalances == 0
            assert new.heartbeat(ids[0], generation - 1) is ErrorCode.ILLEGAL_GENERATION
            assert new.heartbeat("stranger", generation) is ErrorCode.UNKNOWN_MEMBER_ID
        finally:
            await new.coordinator.shutdown()
    run(scenario)


def test_loaded_members_sessions_start_at_the_load_and_expire_into_an_empty_group():
    async def scenario(ctx: Ctx):
        ids, generation = await ctx.stable_group({"session": 150}, {"session": 150})
        new = await successor(ctx)
        try:
            await wait_until(lambda: new.state() is GroupState.EMPTY, what="sessions expired")
            assert new.group().generation_id == generation + 1
            await wait_until(lambda: stored(new).generation == generation + 1, what="Empty stored")
            assert stored(new).members == () and stored(new).protocol_type == "consumer"
        finally:
            await new.coordinator.shutdown()
    run(scenario)


def test_a_group_that_became_empty_loads_empty_with_its_generation():
    async def scenario(ctx: Ctx):
        member = await ctx.single_stable()
        assert ctx.coordinator.leave_group("g", [(member, None)])[1] == [ErrorCode.NONE]
        await wait_until(lambda: stored(ctx).members == (), what="Empty stored")
        new = await successor(ctx)
        try:
            assert new.state() is GroupState.EMPTY and new.group().generation_id == 2
            assert new.heartbeat(member, 1) is ErrorCode.UNKNOWN_MEMBER_ID
            joined = await new.join()
            assert (joined.error, joined.generation_id) == (ErrorCode.NONE, 3)
        finally:
            await new.coordinator.shutdown()
    run(scenario)


def _failed_store(failure: Exception, error: ErrorCode) -> None:
    async def scenario(ctx: Ctx):
        (leader, follower), generation = await ctx.stable_group({}, {})
        ctx.store.metadata_fail = failure
        rejoined = await asyncio.gather(ctx.join_task(leader), ctx.join_task(follower))
        assert [r.generation_id for r in rejoined] == [generation + 1] * 2
        follower_sync = ctx.sync_task(follower, generation + 1)
        await wait_until(lambda: ctx.group().get(follower).awaiting_sync, what="follower parked")
        assert await ctx.sync(leader, generation + 1, {leader: b"L", follower: b"F"}) == SyncResult(error)
        assert (await follower_sync).error is error
        assert ctx.state() is GroupState.PREPARING_REBALANCE  # the members rejoin
        assert stored(ctx).generation == generation  # the record is still the last stored generation's
        assert all(m.assignment == b"" for m in ctx.group().members.values())
    run(scenario)


def test_a_store_failure_answers_coordinator_not_available_and_the_group_rebalances():
    _failed_store(ZkError("connection loss"), ErrorCode.COORDINATOR_NOT_AVAILABLE)


def test_a_fenced_store_answers_not_coordinator():
    _failed_store(GroupMetadataFenced("another coordinator wrote it"), ErrorCode.NOT_COORDINATOR)


class HeldStore(MemoryOffsetStore):
    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.held = False

    async def store_group(self, group_id, value):
        self.held = True
        await self.gate.wait()
        await super().store_group(group_id, value)


def test_resigning_while_the_assignment_is_stored_answers_not_coordinator():
    async def scenario(ctx: Ctx):
        joined = await ctx.join()
        sync = ctx.sync_task(joined.member_id, 1, {joined.member_id: b"a"})
        await wait_until(lambda: ctx.store.held, what="store in flight")
        assert not sync.done()
        ctx.coordinator.on_resigned(0)
        assert (await sync).error is ErrorCode.NOT_COORDINATOR
        ctx.store.gate.set()
    run(scenario, store=HeldStore())


def test_deleting_an_empty_group_deletes_its_record():
    async def scenario(ctx: Ctx):
        member = await ctx.single_stable()
        ctx.coordinator.leave_group("g", [(member, None)])
        await wait_until(lambda: "g" in ctx.store.metadata and stored(ctx).members == (), what="Empty stored")
        assert await ctx.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert "g" not in ctx.store.metadata
        new = await successor(ctx)
        try:
            assert "g" not in new.coordinator.groups
        finally:
            await new.coordinator.shutdown()
    run(scenario)


def test_a_record_that_does_not_parse_loads_no_group():
    store = MemoryOffsetStore()
    store.metadata["g"] = {"generation": "bad"}

    async def scenario(ctx: Ctx):
        assert ctx.state() is GroupState.EMPTY and ctx.group().generation_id == 0  # starts over
        assert ctx.heartbeat("m", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario, store=store)


def test_fake_clock_is_the_record_timestamp():
    async def scenario(ctx: Ctx):
        await ctx.single_stable()
        assert stored(ctx).current_state_timestamp_ms == FakeClock().ms()
    run(scenario)


def test_a_static_members_new_id_is_stored_before_its_join_is_answered():
    async def scenario(ctx: Ctx):
        old = await ctx.single_stable(assignment=b"mine", instance="i1")
        rejoin = await ctx.join(instance="i1")
        assert rejoin.error is ErrorCode.NONE and rejoin.member_id != old
        assert [m.member_id for m in stored(ctx).members] == [rejoin.member_id]
        assert stored(ctx).leader == rejoin.member_id and stored(ctx).members[0].assignment == b"mine"
        new = await successor(ctx)
        try:
            assert new.heartbeat(rejoin.member_id, 1, instance="i1") is ErrorCode.NONE
            assert new.heartbeat(old, 1, instance="i1") is ErrorCode.FENCED_INSTANCE_ID
            assert await new.sync(rejoin.member_id, 1, instance="i1") == assigned(b"mine")
        finally:
            await new.coordinator.shutdown()
    run(scenario)


def test_a_static_member_whose_new_id_cannot_be_stored_gets_the_error():
    async def scenario(ctx: Ctx):
        await ctx.single_stable(instance="i1")
        ctx.store.metadata_fail = ZkError("connection loss")
        assert (await ctx.join(instance="i1")).error is ErrorCode.COORDINATOR_NOT_AVAILABLE
        ctx.store.metadata_fail = None
        again = await ctx.join(instance="i1")
        assert again.error is ErrorCode.NONE and ctx.state() is GroupState.STABLE
        assert [m.member_id for m in stored(ctx).members] == [again.member_id]
    run(scenario)


def test_a_store_longer_than_the_commit_timeout_answers_rebalance_in_progress():
    async def scenario(ctx: Ctx):
        joined = await ctx.join()
        assert (await ctx.sync(joined.member_id, 1, {joined.member_id: b"a"})).error is ErrorCode.REBALANCE_IN_PROGRESS
        assert ctx.state() is GroupState.PREPARING_REBALANCE and "g" not in ctx.store.metadata
        ctx.store.gate.set()
    run(scenario, store=HeldStore(), offsets_commit_timeout_ms=50)
