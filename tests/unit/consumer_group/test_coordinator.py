"""GroupCoordinator through its public async API on a real event loop (reference §5): ownership and
loading, JoinGroup / SyncGroup / Heartbeat / LeaveGroup, KIP-394, KIP-345, KIP-134, KAFKA-12890, offsets,
the admin APIs and retention.

Timeouts are tens of milliseconds; the tests wait for conditions with a deadline, never for a fixed
time, except where the point is that a deadline passed (waited for explicitly). Timestamps come from a
fake clock, timers from the loop."""
from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from consumer_group.coordinator import handlers as group_handlers
from consumer_group.coordinator.coordinator import GroupCoordinator, JoinRequest
from consumer_group.coordinator.group import GroupMetadata, JoinResult, OffsetAndMetadata, SyncResult
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from consumer_group.coordinator.placement import partition_for
from consumer_group.coordinator.state import GroupState

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
OTHER = TopicPartition("u", 0)
SESSION_MS = 1000
REBALANCE_MS = 1000


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, int32 count, int16-length topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


RANGE = [("range", subscription("t"))]


def assigned(assignment: bytes, protocol_name: str = "range") -> SyncResult:
    """A successful SyncGroup answer: the assignment, with the group's protocol type and name (v5+)."""
    return SyncResult(ErrorCode.NONE, assignment, "consumer", protocol_name)


class FakeClock:
    def __init__(self, seconds: float = 1_000_000.0) -> None:
        self.seconds = seconds

    def __call__(self) -> float:
        return self.seconds

    def advance_ms(self, ms: int) -> None:
        self.seconds += ms / 1000

    def ms(self) -> int:
        return int(self.seconds * 1000)


async def wait_until(predicate, timeout: float = 3.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        await asyncio.sleep(0.002)


async def parked(task: asyncio.Task, predicate, what: str) -> None:
    """Wait until a request is parked in the coordinator (``predicate``), and check it is unanswered."""
    await wait_until(predicate, what=what)
    assert not task.done(), f"{what}: answered instead of parked"


@dataclass
class Ctx:
    coordinator: GroupCoordinator
    clock: FakeClock
    store: MemoryOffsetStore
    tasks: list = field(default_factory=list)

    # -- requests ---------------------------------------------------------------------------
    def request(self, member_id: str = "", *, group: str = "g", instance: str | None = None, protocols=None,
                session: int = SESSION_MS, rebalance: int = REBALANCE_MS, require_known: bool = False,
                protocol_type: str = "consumer", client_id: str = "client") -> JoinRequest:
        return JoinRequest(group, member_id, instance, require_known, client_id, "/127.0.0.1", session, rebalance,
                           protocol_type, list(RANGE if protocols is None else protocols))

    async def join(self, member_id: str = "", **kwargs) -> JoinResult:
        return await self.coordinator.join_group(self.request(member_id, **kwargs))

    def join_task(self, member_id: str = "", **kwargs) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(self.join(member_id, **kwargs))
        self.tasks.append(task)
        return task

    async def sync(self, member_id: str, generation: int, assignments: dict | None = None, *,
                   group: str = "g", instance: str | None = None) -> SyncResult:
        return await self.coordinator.sync_group(group, generation, member_id, instance, assignments or {})

    def sync_task(self, *args, **kwargs) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(self.sync(*args, **kwargs))
        self.tasks.append(task)
        return task

    def heartbeat(self, member_id: str, generation: int, *, group: str = "g",
                  instance: str | None = None) -> ErrorCode:
        return self.coordinator.heartbeat(group, generation, member_id, instance)

    async def commit(self, generation: int, member_id: str, offsets: dict, *, group: str = "g",
                     instance: str | None = None) -> dict:
        return await self.coordinator.commit_offsets(group, generation, member_id, instance, offsets)

    # -- state ------------------------------------------------------------------------------
    def group(self, group_id: str = "g") -> GroupMetadata:
        return self.coordinator.groups[group_id]

    def state(self, group_id: str = "g") -> GroupState | None:
        group = self.coordinator.groups.get(group_id)
        return None if group is None else group.state

    # -- composite steps --------------------------------------------------------------------
    async def single_stable(self, assignment: bytes = b"a", **kwargs) -> str:
        """One member joins (generation 1, its own leader) and syncs: the group is Stable."""
        joined = await self.join(**kwargs)
        assert joined.error == ErrorCode.NONE and joined.generation_id == 1, joined
        synced = await self.sync(joined.member_id, 1, {joined.member_id: assignment},
                                 instance=kwargs.get("instance"))
        assert (synced.error, synced.assignment) == (ErrorCode.NONE, assignment), synced
        return joined.member_id

    async def stable_group(self, *specs: dict) -> tuple[list[str], int]:
        """Members join one after another (each arrival is a rebalance every earlier member rejoins),
        then all sync; returns the member ids (the first is the leader) and the generation."""
        ids: list[str] = []
        results: list[JoinResult] = []
        for spec in specs:
            tasks = [self.join_task(**spec)] + [self.join_task(m, **specs[i]) for i, m in enumerate(ids)]
            results = list(await asyncio.gather(*tasks))
            assert all(r.error == ErrorCode.NONE for r in results), results
            assert len({r.generation_id for r in results}) == 1
            ids = [r.member_id for r in results[1:]] + [results[0].member_id]
        generation = results[0].generation_id
        assert generation == len(specs)
        assignments = {m: m.encode() for m in ids}
        syncs = await asyncio.gather(*[self.sync(m, generation, assignments if m == ids[0] else None,
                                                 instance=specs[i].get("instance")) for i, m in enumerate(ids)])
        assert [s.assignment for s in syncs] == [m.encode() for m in ids]
        assert self.state() is GroupState.STABLE and self.group().leader_id == ids[0]
        return ids, generation


def run(scenario, store: MemoryOffsetStore | None = None, elect: bool = True, **config) -> None:
    settings = dict(offsets_topic_num_partitions=1, initial_rebalance_delay_ms=0, min_session_timeout_ms=10,
                    max_session_timeout_ms=60_000)
    settings.update(config)

    async def main() -> None:
        clock, offset_store = FakeClock(), store or MemoryOffsetStore()
        ctx = Ctx(GroupCoordinator(1, GroupConfig(**settings), offset_store, clock=clock), clock, offset_store)
        if elect:
            ctx.coordinator.on_elected(0)
            await wait_until(lambda: ctx.coordinator.group_error("g") is None, what="load")
        try:
            await scenario(ctx)
        finally:
            await ctx.coordinator.shutdown()
            for task in ctx.tasks:
                task.cancel()
            await asyncio.gather(*ctx.tasks, return_exceptions=True)

    asyncio.run(asyncio.wait_for(main(), 15))


class GatedStore(MemoryOffsetStore):
    """Holds ``groups()`` (the load) and/or ``commit`` until their events are set."""

    def __init__(self, hold_load: bool = False, hold_commit: bool = False) -> None:
        super().__init__()
        self.load_gate = asyncio.Event()
        self.commit_gate = asyncio.Event()
        if not hold_load:
            self.load_gate.set()
        if not hold_commit:
            self.commit_gate.set()

    async def groups(self):
        await self.load_gate.wait()
        return await super().groups()

    async def commit(self, group_id, offsets):
        await self.commit_gate.wait()
        await super().commit(group_id, offsets)


# ======================================================================================================
# ownership and loading
# ======================================================================================================
def test_group_not_owned_is_not_coordinator():
    async def scenario(c: Ctx):
        assert c.coordinator.group_error("g") == ErrorCode.NOT_COORDINATOR
        assert (await c.join()).error == ErrorCode.NOT_COORDINATOR
        assert (await c.sync("m", 1)).error == ErrorCode.NOT_COORDINATOR
        assert c.heartbeat("m", 1) == ErrorCode.NOT_COORDINATOR
        assert c.coordinator.leave_group("g", [("m", None)]) == (ErrorCode.NOT_COORDINATOR, [])
        assert await c.commit(-1, "", {TP0: (1, "")}) == {TP0: ErrorCode.NOT_COORDINATOR}
        assert c.coordinator.fetch_offsets("g", [TP0]) == (ErrorCode.NOT_COORDINATOR, {})
        assert c.coordinator.describe_group("g") == (ErrorCode.NOT_COORDINATOR, None)
        assert await c.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NOT_COORDINATOR}
        assert c.coordinator.groups == {}
    run(scenario, elect=False)


def test_only_groups_of_elected_partitions_are_owned():
    groups = {partition_for(name, 2): name for name in ("a", "b", "c", "d")}
    mine, theirs = groups[0], groups[1]

    async def scenario(c: Ctx):
        c.coordinator.on_elected(0)
        await wait_until(lambda: c.coordinator.group_error(mine) is None)
        assert c.coordinator.group_error(theirs) == ErrorCode.NOT_COORDINATOR
        assert (await c.join(group=theirs)).error == ErrorCode.NOT_COORDINATOR
        assert (await c.join(group=mine)).error == ErrorCode.NONE
    run(scenario, elect=False, offsets_topic_num_partitions=2)


def test_loading_answers_coordinator_load_in_progress():
    store = GatedStore(hold_load=True)

    async def scenario(c: Ctx):
        c.coordinator.on_elected(0)
        assert c.coordinator.group_error("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert (await c.join()).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert c.heartbeat("m", 1) == ErrorCode.NONE  # Kafka answers heartbeats blindly while loading
        assert (await c.sync("m", 1)).error == ErrorCode.REBALANCE_IN_PROGRESS  # rejoin, no rediscovery
        assert await c.commit(-1, "", {TP0: (1, "")}) == {TP0: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        assert c.coordinator.fetch_offsets("g", [TP0]) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, {})
        assert c.coordinator.list_groups() == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])
        store.load_gate.set()
        await wait_until(lambda: c.coordinator.group_error("g") is None, what="load")
        assert (await c.join()).error == ErrorCode.NONE
    run(scenario, store=store, elect=False)


def test_on_elected_loads_offsets_the_store_already_holds():
    store = MemoryOffsetStore()
    store.offsets = {"g": {TP0: 42, TP1: 7}, "h": {TP0: 1}}

    async def scenario(c: Ctx):
        error, offsets = c.coordinator.fetch_offsets("g", [TP0, TP1, OTHER])
        assert error == ErrorCode.NONE
        assert offsets[TP0].offset == 42 and offsets[TP1].offset == 7 and offsets[OTHER] is None
        assert offsets[TP0].metadata == ""
        assert c.coordinator.fetch_offsets("h", None)[1][TP0].offset == 1
        assert c.state("g") is GroupState.EMPTY
    run(scenario, store=store)


def test_on_resigned_answers_a_parked_join_with_not_coordinator():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({}, {})
        rejoin = c.join_task(a)  # the leader rejoins: parked until b rejoins or the rebalance times out
        await parked(rejoin, lambda: c.group().get(a).awaiting_join, "leader's rejoin")
        c.coordinator.on_resigned(0)
        assert (await rejoin).error == ErrorCode.NOT_COORDINATOR
        assert c.coordinator.group_error("g") == ErrorCode.NOT_COORDINATOR
        assert "g" not in c.coordinator.groups
        assert c.heartbeat(b, generation) == ErrorCode.NOT_COORDINATOR
    run(scenario)


def test_on_resigned_answers_a_parked_sync_with_not_coordinator():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        joiner = c.join_task()
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        ra, rb = await asyncio.gather(c.join(a), joiner)
        follower_sync = c.sync_task(rb.member_id, rb.generation_id)
        await parked(follower_sync, lambda: c.group().get(rb.member_id).awaiting_sync, "follower's sync")
        c.coordinator.on_resigned(0)
        assert (await follower_sync).error == ErrorCode.NOT_COORDINATOR
    run(scenario)


# ======================================================================================================
# JoinGroup validation
# ======================================================================================================
def test_empty_group_id_is_invalid():
    async def scenario(c: Ctx):
        assert c.coordinator.group_error("") == ErrorCode.INVALID_GROUP_ID
        assert (await c.join(group="")).error == ErrorCode.INVALID_GROUP_ID
        assert await c.commit(-1, "", {TP0: (1, "")}, group="") == {TP0: ErrorCode.INVALID_GROUP_ID}
    run(scenario)


@pytest.mark.parametrize("session", [9, 60_001])
def test_session_timeout_outside_the_brokers_bounds_is_invalid(session):
    async def scenario(c: Ctx):
        result = await c.join(session=session)
        assert result.error == ErrorCode.INVALID_SESSION_TIMEOUT
    run(scenario)


def test_session_timeout_bounds_are_inclusive():
    async def scenario(c: Ctx):
        assert (await c.join(session=10, group="lo")).error == ErrorCode.NONE
        assert (await c.join(session=60_000, group="hi")).error == ErrorCode.NONE
    run(scenario)


def test_unknown_member_id_on_unknown_group():
    async def scenario(c: Ctx):
        assert (await c.join("ghost")).error == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


def test_kip394_first_join_requires_a_member_id():
    async def scenario(c: Ctx):
        first = await c.join(require_known=True, client_id="app")
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("app-") and len(first.member_id) > len("app-")
        assert c.group().pending_members == {first.member_id} and c.group().size() == 0
        joined = await c.join(first.member_id, require_known=True)
        assert joined.error == ErrorCode.NONE and joined.generation_id == 1
        assert joined.member_id == first.member_id == joined.leader_id
        assert c.group().pending_members == set()
    run(scenario)


def test_kip394_pending_member_holds_the_rebalance_until_it_expires():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        pending = await c.join(require_known=True, session=40)
        assert pending.error == ErrorCode.MEMBER_ID_REQUIRED
        assert c.state() is GroupState.STABLE  # handing out an id does not rebalance
        rejoin = await c.join(a)  # completes only once the pending id expired (session timeout)
        assert rejoin.error == ErrorCode.NONE and rejoin.generation_id == 2
        assert [m for m, _, _ in rejoin.members] == [a]
        assert c.group().pending_members == set()
    run(scenario)


def test_inconsistent_protocol_names():
    async def scenario(c: Ctx):
        await c.single_stable()
        result = await c.join(protocols=[("roundrobin", subscription("t"))])
        assert result.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert c.state() is GroupState.STABLE and c.group().size() == 1
    run(scenario)


def test_inconsistent_protocol_type():
    async def scenario(c: Ctx):
        await c.single_stable()
        result = await c.join(protocol_type="connect")
        assert result.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    run(scenario)


def test_group_max_size():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        assert (await c.join()).error == ErrorCode.GROUP_MAX_SIZE_REACHED
        assert c.state() is GroupState.STABLE and c.group().size() == 1
        rejoined = await c.join(a)  # a member already in the group may always rejoin
        assert rejoined.error == ErrorCode.NONE and rejoined.generation_id == 2
    run(scenario, max_size=1)


# ======================================================================================================
# JoinGroup / SyncGroup / Heartbeat
# ======================================================================================================
def test_single_member_join_is_generation_one_and_its_own_leader():
    async def scenario(c: Ctx):
        result = await c.join(protocols=[("range", b"meta")])
        assert result.error == ErrorCode.NONE
        assert result.generation_id == 1
        assert result.protocol_type == "consumer" and result.protocol_name == "range"
        assert result.leader_id == result.member_id and result.member_id.startswith("client-")
        assert result.members == ((result.member_id, None, b"meta"),)
        assert c.state() is GroupState.COMPLETING_REBALANCE
    run(scenario)


def test_leader_sync_makes_the_group_stable_and_returns_its_assignment():
    async def scenario(c: Ctx):
        joined = await c.join()
        synced = await c.sync(joined.member_id, 1, {joined.member_id: b"assignment"})
        assert synced == assigned(b"assignment")
        assert c.state() is GroupState.STABLE
        assert c.heartbeat(joined.member_id, 1) == ErrorCode.NONE
        again = await c.sync(joined.member_id, 1)  # Stable: the stored assignment
        assert again == assigned(b"assignment")
    run(scenario)


def test_second_member_triggers_a_rebalance_only_the_leader_gets_members():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        b_join = c.join_task(protocols=[("range", b"mb")])
        await parked(b_join, lambda: c.state() is GroupState.PREPARING_REBALANCE, "second member's join")
        assert c.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
        ra = await c.join(a, protocols=[("range", b"ma")])
        rb = await b_join
        assert ra.error == rb.error == ErrorCode.NONE
        assert ra.generation_id == rb.generation_id == 2
        assert ra.leader_id == rb.leader_id == a
        assert sorted(ra.members) == sorted([(a, None, b"ma"), (rb.member_id, None, b"mb")])
        assert rb.members == ()
        assert c.state() is GroupState.COMPLETING_REBALANCE
        assert c.heartbeat(a, 2) == ErrorCode.NONE  # heartbeats are fine while completing
    run(scenario)


def test_follower_sync_parks_until_the_leader_syncs():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        joiner = c.join_task()
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        _, rb = await asyncio.gather(c.join(a), joiner)
        b = rb.member_id
        follower = c.sync_task(b, 2)
        await parked(follower, lambda: c.group().get(b).awaiting_sync, "follower's sync")
        leader = await c.sync(a, 2, {a: b"pa", b: b"pb"})
        assert leader == assigned(b"pa")
        assert await follower == assigned(b"pb")
        assert c.state() is GroupState.STABLE
    run(scenario)


def test_leader_assignment_missing_a_member_gives_it_an_empty_assignment():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        joiner = c.join_task()
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        _, rb = await asyncio.gather(c.join(a), joiner)
        await c.sync(a, 2, {a: b"pa"})
        assert await c.sync(rb.member_id, 2) == assigned(b"")
    run(scenario)


def test_sync_errors():
    async def scenario(c: Ctx):
        assert (await c.sync("m", 0)).error == ErrorCode.UNKNOWN_MEMBER_ID  # unknown group
        a = await c.single_stable()
        assert (await c.sync(a, 7)).error == ErrorCode.ILLEGAL_GENERATION
        assert (await c.sync("ghost", 1)).error == ErrorCode.UNKNOWN_MEMBER_ID
        joiner = c.join_task()
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        assert (await c.sync(a, 1)).error == ErrorCode.REBALANCE_IN_PROGRESS
        await asyncio.gather(c.join(a), joiner)
    run(scenario)


def test_heartbeat_errors():
    async def scenario(c: Ctx):
        assert c.heartbeat("m", 0) == ErrorCode.UNKNOWN_MEMBER_ID  # unknown group
        a = await c.single_stable()
        assert c.heartbeat(a, 0) == ErrorCode.ILLEGAL_GENERATION
        assert c.heartbeat(a, 2) == ErrorCode.ILLEGAL_GENERATION
        assert c.heartbeat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
        assert c.heartbeat(a, 1) == ErrorCode.NONE
    run(scenario)


def test_follower_rejoining_unchanged_in_stable_gets_the_current_generation():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({}, {})
        again = await c.join(b)
        assert again.error == ErrorCode.NONE and again.generation_id == generation
        assert again.leader_id == a and again.members == ()
        assert c.state() is GroupState.STABLE
    run(scenario)


def test_leave_group_triggers_a_rebalance():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({}, {})
        assert c.coordinator.leave_group("g", [(b, None)]) == (ErrorCode.NONE, [ErrorCode.NONE])
        assert not c.group().has(b)
        assert c.state() is GroupState.PREPARING_REBALANCE
        assert c.heartbeat(a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        rejoined = await c.join(a)
        assert rejoined.generation_id == generation + 1 and [m for m, _, _ in rejoined.members] == [a]
        assert c.coordinator.leave_group("g", [("ghost", None)]) == (ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID])
        assert c.coordinator.leave_group("nope", [("m", None)]) == (ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID])
    run(scenario)


def test_last_member_leaving_empties_the_group():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        assert c.coordinator.leave_group("g", [(a, None)]) == (ErrorCode.NONE, [ErrorCode.NONE])
        await wait_until(lambda: c.state() is GroupState.EMPTY, what="Empty")
        assert c.group().generation_id == 2 and c.group().protocol_name is None
        assert c.heartbeat(a, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


def test_session_expiry_removes_a_member_that_stops_heartbeating():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({"session": 5000}, {"session": 80})
        await wait_until(lambda: not c.group().has(b), what="b expired")
        assert c.state() is GroupState.PREPARING_REBALANCE
        assert c.heartbeat(a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        assert c.heartbeat(b, generation) == ErrorCode.UNKNOWN_MEMBER_ID
        rejoined = await c.join(a, session=5000)
        assert rejoined.generation_id == generation + 1 and [m for m, _, _ in rejoined.members] == [a]
    run(scenario)


def test_heartbeats_keep_a_member_alive():
    async def scenario(c: Ctx):
        a = await c.single_stable(session=250)
        loop = asyncio.get_running_loop()
        end = loop.time() + 0.6  # more than two session timeouts
        while loop.time() < end:
            assert c.heartbeat(a, 1) == ErrorCode.NONE
            await asyncio.sleep(0.02)
        assert c.group().has(a) and c.state() is GroupState.STABLE
    run(scenario)


def test_rebalance_timeout_removes_members_that_do_not_rejoin():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({"session": 5000, "rebalance": 100},
                                                   {"session": 5000, "rebalance": 100})
        rejoin = await c.join(a, session=5000, rebalance=100)  # b never rejoins: answered at the timeout
        assert rejoin.error == ErrorCode.NONE and rejoin.generation_id == generation + 1
        assert rejoin.leader_id == a and [m for m, _, _ in rejoin.members] == [a]
        assert not c.group().has(b)
        assert c.heartbeat(b, generation) == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


def test_new_leader_elected_when_the_leader_does_not_rejoin():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({"session": 5000, "rebalance": 100},
                                                   {"session": 5000, "rebalance": 100})
        assert c.group().leader_id == a
        # b rejoins with changed metadata (a rebalance); the leader a never rejoins
        result = await c.join(b, protocols=[("range", b"changed")], session=5000, rebalance=100)
        assert result.generation_id == generation + 1 and result.leader_id == b
        assert not c.group().has(a)
    run(scenario)


def test_kafka_12890_member_that_never_syncs_is_removed():
    async def scenario(c: Ctx):
        a = await c.single_stable(session=5000, rebalance=100)
        joiner = c.join_task(session=5000, rebalance=100)
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        _, rb = await asyncio.gather(c.join(a, session=5000, rebalance=100), joiner)
        assert await c.sync(a, 2, {a: b"pa", rb.member_id: b"pb"}) == assigned(b"pa")
        assert c.state() is GroupState.STABLE
        # b never sends SyncGroup: removed after the 100 ms rebalance timeout (not its 5 s session timeout)
        await wait_until(lambda: not c.group().has(rb.member_id), what="b removed")
        assert c.state() is GroupState.PREPARING_REBALANCE
        assert c.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    run(scenario)


def test_kip134_initial_rebalance_delay_collects_members_into_generation_one():
    delay_ms = 150

    async def scenario(c: Ctx):
        loop = asyncio.get_running_loop()
        start = loop.time()
        a_join = c.join_task(rebalance=5000)
        await parked(a_join, lambda: c.state() is GroupState.PREPARING_REBALANCE, "first join (delayed)")
        b_join = c.join_task(rebalance=5000)
        await parked(b_join, lambda: c.group().size() == 2, "second join")
        ra, rb = await asyncio.gather(a_join, b_join)
        elapsed_ms = (loop.time() - start) * 1000
        assert ra.generation_id == rb.generation_id == 1
        assert ra.leader_id == ra.member_id and len(ra.members) == 2 and rb.members == ()
        # the second arrival extended the delay once: two delays in all (minus timer granularity)
        assert elapsed_ms >= 2 * delay_ms - 5, elapsed_ms
    run(scenario, initial_rebalance_delay_ms=delay_ms)


def test_kip134_delay_applies_only_to_the_first_generation():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({"rebalance": 5000}, {"rebalance": 5000})
        assert generation == 2
        loop = asyncio.get_running_loop()
        start = loop.time()
        ra, rb = await asyncio.gather(c.join(a, rebalance=5000), c.join(b, protocols=[("range", b"x")],
                                                                         rebalance=5000))
        assert ra.generation_id == 3
        assert loop.time() - start < 0.2  # completed when both rejoined, no initial delay
    run(scenario, initial_rebalance_delay_ms=300)


# ======================================================================================================
# static membership (KIP-345)
# ======================================================================================================
def test_static_member_rejoin_in_stable_takes_a_new_id_without_rebalance():
    async def scenario(c: Ctx):
        old = await c.single_stable(assignment=b"stored", instance="i1")
        rejoin = await c.join(instance="i1")
        assert rejoin.error == ErrorCode.NONE
        assert rejoin.member_id != old and rejoin.member_id.startswith("i1-")
        assert rejoin.generation_id == 1
        assert rejoin.leader_id == old and rejoin.members == ()  # names the old leader: no assignment run
        assert c.state() is GroupState.STABLE
        assert c.group().static_member_id("i1") == rejoin.member_id
        assert c.heartbeat(old, 1, instance="i1") == ErrorCode.FENCED_INSTANCE_ID
        assert (await c.sync(old, 1, instance="i1")).error == ErrorCode.FENCED_INSTANCE_ID
        assert await c.sync(rejoin.member_id, 1, instance="i1") == assigned(b"stored")
        assert c.heartbeat(rejoin.member_id, 1, instance="i1") == ErrorCode.NONE
    run(scenario)


def test_static_member_with_a_stale_id_is_fenced_on_join_and_commit():
    async def scenario(c: Ctx):
        old = await c.single_stable(instance="i1")
        new = (await c.join(instance="i1")).member_id
        assert (await c.join(old, instance="i1")).error == ErrorCode.FENCED_INSTANCE_ID
        assert await c.commit(1, old, {TP0: (1, "")}, instance="i1") == {TP0: ErrorCode.FENCED_INSTANCE_ID}
        assert await c.commit(1, new, {TP0: (1, "")}, instance="i1") == {TP0: ErrorCode.NONE}
    run(scenario)


def test_static_member_leaving_by_instance_id():
    async def scenario(c: Ctx):
        (a, s), generation = await c.stable_group({}, {"instance": "i1"})
        assert c.coordinator.leave_group("g", [("", "i1")]) == (ErrorCode.NONE, [ErrorCode.NONE])
        assert not c.group().has(s) and c.state() is GroupState.PREPARING_REBALANCE
        assert c.coordinator.leave_group("g", [("", "i1")]) == (ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID])
    run(scenario)


def test_static_member_rejoin_changing_the_selected_protocol_rebalances_with_its_new_protocols():
    # KIP-345: if the rejoining static member's protocols change the group's protocol choice, Kafka
    # rebalances with the *new* protocols (updateMember ran before the Stable check).
    async def scenario(c: Ctx):
        both = [("range", subscription("t")), ("roundrobin", subscription("t"))]
        await c.single_stable(instance="i1", protocols=both)
        assert c.group().protocol_name == "range"
        flipped = [("roundrobin", subscription("t")), ("range", subscription("t"))]
        rejoin = await c.join(instance="i1", protocols=flipped)
        assert rejoin.error == ErrorCode.NONE
        assert rejoin.generation_id == 2
        assert rejoin.protocol_name == "roundrobin"
        assert c.group().get(rejoin.member_id).protocols == flipped
    run(scenario)


def test_static_members_that_all_miss_the_rebalance_do_not_advance_the_generation():
    # Kafka's onCompleteJoin: if no member rejoined (static members are kept), the join is postponed
    # ("could not complete rebalance because no members rejoined") instead of starting a generation
    # nobody was told about.
    async def scenario(c: Ctx):
        (d, s), generation = await c.stable_group({"session": 5000, "rebalance": 40},
                                                   {"session": 5000, "rebalance": 40, "instance": "i1"})
        c.coordinator.leave_group("g", [(d, None)])
        assert c.state() is GroupState.PREPARING_REBALANCE
        await asyncio.sleep(0.15)  # let the 40 ms rebalance timeout pass (more than three times)
        assert c.group().has(s)  # static members are not removed for missing a rebalance
        assert c.group().generation_id == generation
        assert c.state() is GroupState.PREPARING_REBALANCE
        assert c.heartbeat(s, generation, instance="i1") == ErrorCode.REBALANCE_IN_PROGRESS
        rejoined = await c.join(s, instance="i1", session=5000, rebalance=40)
        assert rejoined.error == ErrorCode.NONE and rejoined.generation_id == generation + 1
    run(scenario)


# ======================================================================================================
# SyncGroup v5: the protocol type and name checked against the group's
# ======================================================================================================
@pytest.mark.parametrize("protocol_type, protocol_name", [("connect", "range"), ("consumer", "roundrobin")])
def test_sync_naming_another_protocol_type_or_name_is_inconsistent_group_protocol(protocol_type, protocol_name):
    async def scenario(c: Ctx):
        joined = await c.join()
        synced = await c.coordinator.sync_group("g", 1, joined.member_id, None, {joined.member_id: b"a"},
                                                protocol_type, protocol_name)
        assert synced == SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        assert c.state() is GroupState.COMPLETING_REBALANCE  # the leader's assignment was not taken
    run(scenario)


def test_sync_naming_the_groups_protocol_gets_the_assignment_with_them():
    async def scenario(c: Ctx):
        joined = await c.join()
        assert await c.coordinator.sync_group("g", 1, joined.member_id, None, {joined.member_id: b"a"},
                                              "consumer", "range") == assigned(b"a")
        again = await c.coordinator.sync_group("g", 1, joined.member_id, None, {}, "consumer", "range")
        assert again == assigned(b"a")  # Stable: the stored assignment
    run(scenario)


def test_sync_protocol_errors_come_after_member_and_generation_errors():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        assert (await c.coordinator.sync_group("g", 9, a, None, {}, "x", "y")).error == ErrorCode.ILLEGAL_GENERATION
        assert (await c.coordinator.sync_group("g", 1, "z", None, {}, "x", "y")).error == ErrorCode.UNKNOWN_MEMBER_ID
    run(scenario)


# ======================================================================================================
# OffsetCommit / OffsetFetch
# ======================================================================================================
def test_simple_consumer_commit_on_unknown_group_is_stored():
    async def scenario(c: Ctx):
        assert await c.commit(-1, "", {TP0: (5, "md"), TP1: (6, None)}, group="s") == {
            TP0: ErrorCode.NONE, TP1: ErrorCode.NONE}
        assert c.store.offsets == {"s": {TP0: 5, TP1: 6}}
        error, offsets = c.coordinator.fetch_offsets("s", [TP0, TP1])
        assert error == ErrorCode.NONE
        assert offsets == {TP0: OffsetAndMetadata(5, "md", c.clock.ms()), TP1: OffsetAndMetadata(6, "", c.clock.ms())}
        assert c.state("s") is GroupState.EMPTY and c.group("s").protocol_type is None
    run(scenario)


def test_commit_with_a_generation_on_unknown_group_is_illegal_generation():
    async def scenario(c: Ctx):
        assert await c.commit(0, "m", {TP0: (5, "")}, group="s") == {TP0: ErrorCode.ILLEGAL_GENERATION}
        assert c.store.offsets == {} and "s" not in c.coordinator.groups
    run(scenario)


def test_member_commit_in_stable():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        assert await c.commit(1, a, {TP0: (10, "x")}) == {TP0: ErrorCode.NONE}
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 10
    run(scenario)


def test_commit_with_a_stale_generation_is_illegal_generation():
    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({}, {})
        assert await c.commit(generation - 1, a, {TP0: (1, "")}) == {TP0: ErrorCode.ILLEGAL_GENERATION}
        assert c.store.commits == []
    run(scenario)


def test_commit_from_unknown_member_is_unknown_member_id():
    async def scenario(c: Ctx):
        await c.single_stable()
        assert await c.commit(1, "ghost", {TP0: (1, "")}) == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
        # a manual committer (generation -1) sharing the id of an active group fails as well
        assert await c.commit(-1, "", {TP0: (1, "")}) == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
    run(scenario)


def test_commit_while_completing_rebalance_is_rebalance_in_progress():
    async def scenario(c: Ctx):
        joined = await c.join()
        assert c.state() is GroupState.COMPLETING_REBALANCE
        assert await c.commit(1, joined.member_id, {TP0: (1, "")}) == {TP0: ErrorCode.REBALANCE_IN_PROGRESS}
    run(scenario)


def test_commit_from_current_generation_while_preparing_rebalance_is_stored():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        joiner = c.join_task()
        await wait_until(lambda: c.state() is GroupState.PREPARING_REBALANCE)
        assert await c.commit(1, a, {TP0: (3, "")}) == {TP0: ErrorCode.NONE}
        await asyncio.gather(c.join(a), joiner)
    run(scenario)


def test_commit_metadata_too_large_rejects_only_that_partition():
    async def scenario(c: Ctx):
        result = await c.commit(-1, "", {TP0: (1, "x" * 11), TP1: (2, "y" * 10)}, group="s")
        assert result == {TP0: ErrorCode.OFFSET_METADATA_TOO_LARGE, TP1: ErrorCode.NONE}
        assert c.store.offsets == {"s": {TP1: 2}}
        assert c.coordinator.fetch_offsets("s", [TP0])[1] == {TP0: None}
    run(scenario, offset_metadata_max_bytes=10)


def test_commit_metadata_limit_counts_utf8_bytes():
    async def scenario(c: Ctx):
        result = await c.commit(-1, "", {TP0: (1, "é" * 6)}, group="s")  # 6 characters, 12 bytes
        assert result == {TP0: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    run(scenario, offset_metadata_max_bytes=10)


def test_store_failure_is_coordinator_not_available_and_leaves_the_cache():
    async def scenario(c: Ctx):
        assert await c.commit(-1, "", {TP0: (5, "ok")}, group="s") == {TP0: ErrorCode.NONE}
        c.store.fail = RuntimeError("zookeeper down")
        assert await c.commit(-1, "", {TP0: (6, "new"), TP1: (1, "")}, group="s") == {
            TP0: ErrorCode.COORDINATOR_NOT_AVAILABLE, TP1: ErrorCode.COORDINATOR_NOT_AVAILABLE}
        _, offsets = c.coordinator.fetch_offsets("s", None)
        assert {tp: (o.offset, o.metadata) for tp, o in offsets.items()} == {TP0: (5, "ok")}
    run(scenario)


def test_commit_slower_than_the_commit_timeout_is_request_timed_out():
    store = GatedStore(hold_commit=True)

    async def scenario(c: Ctx):
        assert await c.commit(-1, "", {TP0: (5, "")}, group="s") == {TP0: ErrorCode.REQUEST_TIMED_OUT}
        assert c.coordinator.fetch_offsets("s", [TP0])[1] == {TP0: None}
        store.commit_gate.set()
    run(scenario, store=store, offsets_commit_timeout_ms=30)


def test_fetch_offsets_from_cache_and_for_all_partitions():
    async def scenario(c: Ctx):
        await c.commit(-1, "", {TP0: (5, "a"), TP1: (6, "b")}, group="s")
        error, some = c.coordinator.fetch_offsets("s", [TP1, OTHER])
        assert error == ErrorCode.NONE and some == {TP1: OffsetAndMetadata(6, "b", c.clock.ms()), OTHER: None}
        error, every = c.coordinator.fetch_offsets("s", None)
        assert error == ErrorCode.NONE and set(every) == {TP0, TP1} and every[TP0].offset == 5
        assert c.coordinator.fetch_offsets("unknown", [TP0]) == (ErrorCode.NONE, {TP0: None})
        assert c.coordinator.fetch_offsets("unknown", None) == (ErrorCode.NONE, {})
    run(scenario)


def test_commit_counts_as_a_heartbeat():
    async def scenario(c: Ctx):
        a = await c.single_stable(session=250)
        loop = asyncio.get_running_loop()
        end = loop.time() + 0.5
        offset = 0
        while loop.time() < end:
            offset += 1
            assert await c.commit(1, a, {TP0: (offset, "")}) == {TP0: ErrorCode.NONE}
            await asyncio.sleep(0.02)
        assert c.group().has(a)
    run(scenario)


# ======================================================================================================
# ListGroups / DescribeGroups / DeleteGroups / OffsetDelete
# ======================================================================================================
def test_list_and_describe_groups():
    async def scenario(c: Ctx):
        a = await c.single_stable(assignment=b"pa", protocols=[("range", b"meta")])
        await c.commit(-1, "", {TP0: (1, "")}, group="s")
        error, groups = c.coordinator.list_groups()
        assert error == ErrorCode.NONE
        assert {(g.group_id, g.protocol_type) for g in groups} == {("g", "consumer"), ("s", None)}
        error, group = c.coordinator.describe_group("g")
        assert error == ErrorCode.NONE and group.state is GroupState.STABLE
        assert group.protocol_type == "consumer" and group.protocol_name == "range" and group.leader_id == a
        (member,) = group.members.values()
        assert member.member_id == a and member.assignment == b"pa" and member.metadata("range") == b"meta"
        assert c.coordinator.describe_group("unknown") == (ErrorCode.NONE, None)
        assert c.coordinator.describe_group("") == (ErrorCode.INVALID_GROUP_ID, None)
    run(scenario)


def test_delete_groups():
    async def scenario(c: Ctx):
        await c.commit(-1, "", {TP0: (1, "")}, group="s")
        await c.single_stable()
        results = await c.coordinator.delete_groups(["s", "g", "x"])
        assert results == {"s": ErrorCode.NONE, "g": ErrorCode.NON_EMPTY_GROUP, "x": ErrorCode.GROUP_ID_NOT_FOUND}
        assert "s" not in c.store.offsets and "s" not in c.coordinator.groups
        assert c.coordinator.fetch_offsets("s", [TP0]) == (ErrorCode.NONE, {TP0: None})
        assert [g.group_id for g in c.coordinator.list_groups()[1]] == ["g"]
        assert await c.coordinator.delete_groups(["s"]) == {"s": ErrorCode.GROUP_ID_NOT_FOUND}
    run(scenario)


def test_delete_group_after_its_members_left():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        await c.commit(1, a, {TP0: (1, "")})
        c.coordinator.leave_group("g", [(a, None)])
        await wait_until(lambda: c.state() is GroupState.EMPTY)
        assert await c.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert c.store.offsets == {}
    run(scenario)


def test_delete_offsets_refuses_subscribed_topics_while_members_exist():
    async def scenario(c: Ctx):
        a = await c.single_stable(protocols=[("range", subscription("t"))])
        assert await c.commit(1, a, {TP0: (1, ""), OTHER: (2, "")}) == {TP0: ErrorCode.NONE, OTHER: ErrorCode.NONE}
        error, results = await c.coordinator.delete_offsets("g", [TP0, OTHER])
        assert error == ErrorCode.NONE
        assert results == {TP0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, OTHER: ErrorCode.NONE}
        assert set(c.coordinator.fetch_offsets("g", None)[1]) == {TP0}
        assert c.store.offsets == {"g": {TP0: 1}}
    run(scenario)


def test_delete_offsets_of_an_empty_group_deletes_every_partition():
    async def scenario(c: Ctx):
        await c.commit(-1, "", {TP0: (1, ""), TP1: (2, "")}, group="s")
        assert await c.coordinator.delete_offsets("s", [TP0, TP1]) == (
            ErrorCode.NONE, {TP0: ErrorCode.NONE, TP1: ErrorCode.NONE})
        assert c.coordinator.fetch_offsets("s", None) == (ErrorCode.NONE, {})
        assert c.store.offsets == {"s": {}}
        assert await c.coordinator.delete_offsets("unknown", [TP0]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
    run(scenario)


def test_delete_offsets_of_a_non_consumer_group_with_members_is_non_empty_group():
    async def scenario(c: Ctx):
        await c.single_stable(protocol_type="connect", protocols=[("v0", b"opaque")])
        assert await c.coordinator.delete_offsets("g", [TP0]) == (ErrorCode.NON_EMPTY_GROUP, {})
    run(scenario)


def test_delete_offsets_while_rebalancing_after_a_member_dropped_the_current_protocol():
    # Kafka computes the subscribed topics once per generation (initNextGeneration); a member that
    # rejoins with protocols no longer including the generation's protocol must not break OffsetDelete.
    both = [("range", subscription("t")), ("roundrobin", subscription("t"))]

    async def scenario(c: Ctx):
        (a, b), generation = await c.stable_group({"protocols": both}, {"protocols": both})
        assert c.group().protocol_name == "range"
        await c.commit(generation, a, {TP0: (1, "")})
        rejoin = c.join_task(a, protocols=[("roundrobin", subscription("t"))])  # parked: waits for b
        await parked(rejoin, lambda: c.group().get(a).awaiting_join, "leader's rejoin")
        error, results = await c.coordinator.delete_offsets("g", [TP0])
        assert error == ErrorCode.NONE and results == {TP0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC}
    run(scenario)


# ======================================================================================================
# retention (KIP-211)
# ======================================================================================================
RETENTION_MS = 60_000


def test_simple_consumer_offsets_expire_after_retention_since_commit():
    async def scenario(c: Ctx):
        await c.commit(-1, "", {TP0: (1, "")}, group="s")
        c.clock.advance_ms(RETENTION_MS // 2)
        await c.commit(-1, "", {TP1: (2, "")}, group="s")
        c.clock.advance_ms(RETENTION_MS // 2 - 1)
        assert await c.coordinator.expire_offsets() == 0
        c.clock.advance_ms(1)
        assert await c.coordinator.expire_offsets() == 1
        assert set(c.coordinator.fetch_offsets("s", None)[1]) == {TP1}
        assert c.store.offsets == {"s": {TP1: 2}}
        c.clock.advance_ms(RETENTION_MS // 2)
        assert await c.coordinator.expire_offsets() == 1
        assert "s" not in c.coordinator.groups and "s" not in c.store.offsets  # Empty without offsets: dropped
    run(scenario, offsets_retention_ms=RETENTION_MS)


def test_offset_commit_v1_commit_timestamp_is_the_base_of_a_simple_groups_expiry():
    """Kafka 2.8: an explicit v1 commit_timestamp is the offset's commit time (else the time of the commit)."""
    async def scenario(c: Ctx):
        now = c.coordinator.now_ms()
        await c.coordinator.commit_offsets("s", -1, "", None, {TP0: (1, ""), TP1: (2, "")},
                                           commit_timestamps={TP0: now - RETENTION_MS})
        offsets = c.coordinator.fetch_offsets("s", None)[1]
        assert (offsets[TP0].commit_timestamp_ms, offsets[TP1].commit_timestamp_ms) == (now - RETENTION_MS, now)
        assert await c.coordinator.expire_offsets() == 1  # TP0's retention ran out at once
        assert set(c.coordinator.fetch_offsets("s", None)[1]) == {TP1}
    run(scenario, offsets_retention_ms=RETENTION_MS)


def test_the_commit_timestamps_of_an_offset_commit_v1_come_from_the_legacy_fields():
    fields = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "commit_timestamp": 1234, "committed_metadata": None},
        {"partition_index": 1, "committed_offset": 6, "commit_timestamp": -1, "committed_metadata": None}]}]}
    header = RequestHeader(8, 1, 1, "c", 0, fields)
    assert group_handlers._commit_timestamps(header) == {TopicPartition("t", 0): 1234}
    assert group_handlers._commit_timestamps(header._replace(api_version=2)) == {}


def test_no_offsets_expire_while_the_group_has_members():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        await c.commit(1, a, {TP0: (1, "")})
        c.clock.advance_ms(RETENTION_MS * 10)
        assert await c.coordinator.expire_offsets() == 0
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 1
    run(scenario, offsets_retention_ms=RETENTION_MS)


def test_group_offsets_expire_retention_after_the_group_became_empty():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        await c.commit(1, a, {TP0: (1, "")})
        c.clock.advance_ms(RETENTION_MS // 2)
        c.coordinator.leave_group("g", [(a, None)])
        await wait_until(lambda: c.state() is GroupState.EMPTY)
        c.clock.advance_ms(RETENTION_MS - 1)  # 1.5 retentions after the commit, not one since Empty
        assert await c.coordinator.expire_offsets() == 0
        c.clock.advance_ms(1)
        assert await c.coordinator.expire_offsets() == 1
        assert "g" not in c.coordinator.groups and c.store.offsets == {}
        assert c.coordinator.fetch_offsets("g", [TP0]) == (ErrorCode.NONE, {TP0: None})
    run(scenario, offsets_retention_ms=RETENTION_MS)


def test_empty_group_without_offsets_is_dropped_at_the_next_retention_pass():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        c.coordinator.leave_group("g", [(a, None)])
        await wait_until(lambda: c.state() is GroupState.EMPTY)
        assert await c.coordinator.expire_offsets() == 0
        assert "g" not in c.coordinator.groups
    run(scenario, offsets_retention_ms=RETENTION_MS)


# ======================================================================================================
# OffsetCommit v0 / OffsetFetch v0 (ZooKeeper offsets, any broker), v2-v4 retention, ListGroups v4
# ======================================================================================================
def test_commit_v0_skips_every_group_check_and_is_cached_by_the_coordinator():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        assert await c.commit(-1, "", {TP0: (4, "")}) == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}  # v1+: a member's
        assert await c.coordinator.commit_offsets_v0("g", {TP0: (5, "md")}) == {TP0: ErrorCode.NONE}
        assert c.store.offsets["g"] == {TP0: 5} and c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 5
        assert await c.coordinator.fetch_offsets_v0("g") == {TP0: 5}
        assert c.group().has(a) and c.state() is GroupState.STABLE
        assert await c.coordinator.commit_offsets_v0("new", {TP1: (1, None)}) == {TP1: ErrorCode.NONE}
        assert c.state("new") is GroupState.EMPTY and c.group("new").protocol_type is None
    run(scenario)


def test_commit_v0_on_a_broker_that_does_not_coordinate_the_group_writes_the_store_only():
    async def scenario(c: Ctx):
        assert c.coordinator.group_error("g") == ErrorCode.NOT_COORDINATOR
        assert await c.commit(-1, "", {TP0: (4, "")}) == {TP0: ErrorCode.NOT_COORDINATOR}
        assert await c.coordinator.commit_offsets_v0("g", {TP0: (5, "")}) == {TP0: ErrorCode.NONE}
        assert c.store.offsets == {"g": {TP0: 5}} and c.coordinator.groups == {}
        assert await c.coordinator.fetch_offsets_v0("g") == {TP0: 5}
        assert await c.coordinator.commit_offsets_v0("", {TP0: (5, "")}) == {TP0: ErrorCode.INVALID_GROUP_ID}
    run(scenario, elect=False)


def test_commit_with_a_retention_time_expires_at_commit_time_plus_retention():
    async def scenario(c: Ctx):
        start = c.clock.ms()
        await c.coordinator.commit_offsets("s", -1, "", None, {TP0: (1, "")}, retention_ms=1000)
        await c.commit(-1, "", {TP1: (2, "")}, group="s")
        assert c.coordinator.fetch_offsets("s", [TP0])[1][TP0].expire_timestamp_ms == start + 1000
        c.clock.advance_ms(1000)
        assert await c.coordinator.expire_offsets() == 1
        assert set(c.coordinator.fetch_offsets("s", None)[1]) == {TP1} and c.store.offsets == {"s": {TP1: 2}}
    run(scenario, offsets_retention_ms=RETENTION_MS)


def test_list_groups_keeps_the_groups_in_the_named_states():
    async def scenario(c: Ctx):
        await c.single_stable()
        await c.commit(-1, "", {TP0: (1, "")}, group="s")
        def listed(*states):
            return sorted(g.group_id for g in c.coordinator.list_groups(frozenset(states))[1])
        assert listed() == ["g", "s"]
        assert listed("Stable") == ["g"] and listed("Empty") == ["s"] and listed("Stable", "Empty") == ["g", "s"]
        assert listed("stable") == [] and listed("PreparingRebalance") == []
    run(scenario)


def test_commit_keeps_the_committed_leader_epoch_for_fetch():
    async def scenario(c: Ctx):
        a = await c.single_stable()
        await c.coordinator.commit_offsets("g", 1, a, None, {TP0: (5, ""), TP1: (6, "")}, leader_epochs={TP0: 3})
        offsets = c.coordinator.fetch_offsets("g", [TP0, TP1])[1]
        assert (offsets[TP0].leader_epoch, offsets[TP1].leader_epoch) == (3, -1)
        assert c.store.offsets == {"g": {TP0: 5, TP1: 6}}  # ZooKeeper keeps the offset only
    run(scenario)


def test_a_stable_groups_offsets_of_a_topic_it_no_longer_subscribes_to_expire():
    async def scenario(c: Ctx):
        a = await c.single_stable()  # subscribes to "t"
        await c.commit(1, a, {TP0: (1, ""), OTHER: (2, "")})
        c.clock.advance_ms(RETENTION_MS)
        assert await c.coordinator.expire_offsets() == 1  # KIP-496: "u" only
        assert set(c.coordinator.fetch_offsets("g", None)[1]) == {TP0} and c.store.offsets == {"g": {TP0: 1}}
        assert c.state() is GroupState.STABLE
    run(scenario, offsets_retention_ms=RETENTION_MS)
