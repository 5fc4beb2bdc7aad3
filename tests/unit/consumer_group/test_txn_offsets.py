"""Offsets inside transactions: the pure decisions (``txn_offsets``), the coordinator's pending offsets over
the in-memory offset store (``TransactionalOffsets``: TxnOffsetCommit, markers, fencing, failover, the
writer's ordering) and the TxnOffsetCommit / OffsetFetch v7 handlers over a real coordinator."""
from __future__ import annotations

import asyncio

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.security import acls as acl
from brokers.security.authorizer import AclAuthorizer
from brokers.zk.errors import ConnectionLossError, MultiOpError, NoNodeError
from brokers.zk.paths import ConsumerTxnOffsetsZNode
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata, OffsetAndMetadata
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.handlers import handle_offset_fetch, handle_txn_offset_commit
from consumer_group.coordinator.offset_store import MemoryOffsetStore, ZkOffsetStore
from consumer_group.coordinator.placement import partition_for
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.txn_offsets import (
    PendingTxnOffsets,
    committed_on_marker,
    pending_merge,
    producer_epoch_error,
    txn_member_error,
    unstable_partitions,
)
from consumer_group.coordinator.versions import txn_offset_commit_error
from tests.unit.consumer_group.test_coordinator import Ctx, FakeClock, GatedStore, run, wait_until
from tests.unit.server.test_acl_handlers import ace, grant
from tests.unit.server.test_handlers import World
from tests.unit.zk.test_acl_znodes import MemoryZk

TP0, TP1, TP2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
PID, OTHER_PID = 4000, 4001


def om(offset: int, metadata: str = "", leader_epoch: int = -1) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, metadata, 0, None, leader_epoch)


# ======================================================================================================
# pure decisions
def test_a_later_txn_offset_commit_merges_into_the_pending_offsets_and_wins_per_partition():
    first = pending_merge(None, 3, {TP0: om(1), TP1: om(2)})
    assert first == PendingTxnOffsets(3, {TP0: om(1), TP1: om(2)})
    second = pending_merge(first, 3, {TP0: om(9), TP2: om(5)})
    assert second == PendingTxnOffsets(3, {TP0: om(9), TP1: om(2), TP2: om(5)})
    assert first.offsets == {TP0: om(1), TP1: om(2)}  # merging never changes the earlier value
    assert second.without({TP0, TP1}) == PendingTxnOffsets(3, {TP2: om(5)})
    assert second.without(set()) == second


def test_offsets_left_pending_at_a_lower_epoch_never_merge_into_a_higher_epochs_transaction():
    leftover = PendingTxnOffsets(3, {TP0: om(1), TP1: om(2)})
    assert pending_merge(leftover, 4, {TP0: om(9)}) == PendingTxnOffsets(4, {TP0: om(9)})


def test_only_a_lower_epoch_than_the_highest_seen_is_fenced():
    assert producer_epoch_error(None, 0) is None
    assert producer_epoch_error(5, 5) is None
    assert producer_epoch_error(5, 6) is None
    assert producer_epoch_error(5, 4) == ErrorCode.INVALID_PRODUCER_EPOCH


def group_with_member(instance: str | None = None) -> GroupMetadata:
    group = GroupMetadata("g", state=GroupState.STABLE, generation_id=3, protocol_type="consumer")
    group.add(MemberMetadata("m1", instance, "c", "/h", 1000, 1000, "consumer", [("range", b"")]))
    return group


def test_kip_447_member_checks_and_their_order():
    group = group_with_member("i1")
    assert txn_member_error(group, "m1", "i1", 3) is None
    assert txn_member_error(group, "", None, -1) is None  # v0-2: no member, no generation
    assert txn_member_error(group, "m9", "i1", 3) == ErrorCode.FENCED_INSTANCE_ID  # before the member check
    assert txn_member_error(group, "m9", None, 3) == ErrorCode.UNKNOWN_MEMBER_ID
    assert txn_member_error(group, "m9", None, 99) == ErrorCode.UNKNOWN_MEMBER_ID  # before the generation
    assert txn_member_error(group, "m1", "i1", 2) == ErrorCode.ILLEGAL_GENERATION
    assert txn_member_error(group, "", None, 2) == ErrorCode.ILLEGAL_GENERATION  # a given generation is checked
    group.transition_to(GroupState.PREPARING_REBALANCE, 0)
    group.transition_to(GroupState.DEAD, 0)
    assert txn_member_error(group, "m1", "i1", 3) == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_unstable_partitions_are_those_of_any_producer_pending():
    assert unstable_partitions({}) == set()
    assert unstable_partitions({1: PendingTxnOffsets(0, {TP0: om(1)}), 2: PendingTxnOffsets(0, {TP1: om(1)})}) == {
        TP0, TP1}


def test_a_commit_marker_commits_everything_pending_an_abort_nothing():
    pending = PendingTxnOffsets(1, {TP0: om(1), TP1: om(2)})
    assert committed_on_marker(pending, True) == {TP0: om(1), TP1: om(2)}
    assert committed_on_marker(pending, False) == {}
    assert committed_on_marker(None, True) == {}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_load_in_progress_is_coordinator_not_available_before_v2(version):
    expected = ErrorCode.COORDINATOR_NOT_AVAILABLE if version < 2 else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert txn_offset_commit_error(version, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) == expected
    for other in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR, ErrorCode.INVALID_PRODUCER_EPOCH):
        assert txn_offset_commit_error(version, other) == other


def test_pending_offsets_round_trip_through_their_znode():
    pending = PendingTxnOffsets(7, {TP0: om(10, "m", 2), TopicPartition("a.b", 11): om(3)})
    epoch, stored = ConsumerTxnOffsetsZNode.decode(ConsumerTxnOffsetsZNode.encode(7, pending.stored()))
    assert PendingTxnOffsets.loaded(epoch, stored, 0) == pending
    assert ConsumerTxnOffsetsZNode.path("g", 5) == "/consumers/g/txn_offsets/5"
    for bad in (b"", b"[]", b'{"version":1}', b'{"producer_epoch":1,"offsets":{"t":{"x":[1,"",0]}}}'):
        with pytest.raises(ValueError):
            ConsumerTxnOffsetsZNode.decode(bad)


# ======================================================================================================
# the coordinator over the in-memory store
async def txn_commit(c: Ctx, offsets: dict, *, pid: int = PID, epoch: int = 0, group: str = "g", member: str = "",
                     instance: str | None = None, generation: int = -1) -> dict:
    offsets = {tp: value if len(value) == 3 else (*value, -1) for tp, value in offsets.items()}
    return await c.coordinator.commit_txn_offsets(group, pid, epoch, member, instance, generation, offsets)


def test_txn_offsets_stay_pending_until_the_commit_marker_then_become_committed_once():
    async def scenario(c: Ctx):
        assert await txn_commit(c, {TP0: (5, "meta", 2), TP1: (6, None, -1)}) == {
            TP0: ErrorCode.NONE, TP1: ErrorCode.NONE}
        assert c.store.offsets == {} and c.store.txn_offsets == {"g": {PID: (0, {TP0: (5, "meta", 2),
                                                                                 TP1: (6, "", -1)})}}
        assert c.coordinator.fetch_offsets("g", [TP0])[1] == {TP0: None}
        assert c.coordinator.unstable_offsets("g") == {TP0, TP1}
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {"g": {TP0: 5, TP1: 6}} and c.store.txn_offsets == {}
        assert len(c.store.commits) == 1  # one multi
        committed = c.coordinator.fetch_offsets("g", [TP0, TP1])[1]
        assert (committed[TP0].offset, committed[TP0].metadata, committed[TP0].leader_epoch) == (5, "meta", 2)
        assert committed[TP1].offset == 6 and c.coordinator.unstable_offsets("g") == set()
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE  # a retried marker
        assert len(c.store.commits) == 1
    run(scenario)


def test_an_abort_marker_drops_the_pending_offsets_and_keeps_the_committed_ones():
    async def scenario(c: Ctx):
        await c.coordinator.commit_offsets("g", -1, "", None, {TP0: (3, "")})
        await txn_commit(c, {TP0: (5, "")})
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 3  # the last committed one
        assert await c.coordinator.complete_transaction(0, PID, 0, False, 0) == ErrorCode.NONE
        assert c.store.txn_offsets == {} and c.store.offsets == {"g": {TP0: 3}}
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 3
        assert c.coordinator.unstable_offsets("g") == set()
    run(scenario)


def test_commits_of_one_transaction_merge_and_a_marker_ends_only_its_producer():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")})
        await txn_commit(c, {TP0: (2, ""), TP1: (7, "")})
        await txn_commit(c, {TP2: (4, "")}, pid=OTHER_PID)
        assert c.store.txn_offsets["g"][PID] == (0, {TP0: (2, "", -1), TP1: (7, "", -1)})
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {"g": {TP0: 2, TP1: 7}}
        assert c.coordinator.unstable_offsets("g") == {TP2} and set(c.store.txn_offsets["g"]) == {OTHER_PID}
    run(scenario)


def test_a_zombie_producer_epoch_is_fenced_and_writes_nothing():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")}, epoch=5)
        before = dict(c.store.txn_offsets["g"])
        assert await txn_commit(c, {TP0: (9, ""), TP1: (9, "")}, epoch=4) == {
            TP0: ErrorCode.INVALID_PRODUCER_EPOCH, TP1: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert c.store.txn_offsets["g"] == before
        assert await c.coordinator.complete_transaction(0, PID, 4, True, 0) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert c.store.offsets == {} and c.coordinator.unstable_offsets("g") == {TP0}
        assert await c.coordinator.complete_transaction(0, PID, 6, False, 0) == ErrorCode.NONE  # epoch-fence abort
        assert await txn_commit(c, {TP0: (2, "")}, epoch=5) == {TP0: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert c.store.txn_offsets == {} and c.store.offsets == {}
        assert await txn_commit(c, {TP0: (3, "")}, epoch=6) == {TP0: ErrorCode.NONE}
    run(scenario)


def groups_of_partitions(n: int) -> dict[int, str]:
    found: dict[int, str] = {}
    for i in range(1000):
        found.setdefault(partition_for(f"g{i}", n), f"g{i}")
        if len(found) == n:
            return found
    raise AssertionError("no group ids for every partition")


def test_a_marker_completes_only_the_groups_of_its_offsets_partition():
    g0, g1 = (groups_of_partitions(2)[p] for p in (0, 1))

    async def scenario(c: Ctx):
        c.coordinator.on_elected(0)
        c.coordinator.on_elected(1)
        await wait_until(lambda: c.coordinator.group_error(g0) is None and c.coordinator.group_error(g1) is None,
                         what="load of both partitions")
        await txn_commit(c, {TP0: (1, "")}, group=g0)
        await txn_commit(c, {TP0: (2, "")}, group=g1)
        assert await c.coordinator.complete_transaction(1, PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {g1: {TP0: 2}} and set(c.store.txn_offsets) == {g0}
        assert await c.coordinator.complete_transaction(2, PID, 0, True, 0) == ErrorCode.NOT_COORDINATOR
        c.coordinator.on_resigned(1)
        assert await c.coordinator.complete_transaction(1, PID, 0, True, 0) == ErrorCode.NOT_COORDINATOR
        assert await txn_commit(c, {TP0: (3, "")}, group=g1) == {TP0: ErrorCode.NOT_COORDINATOR}
    run(scenario, elect=False, offsets_topic_num_partitions=2)


def test_v3_commits_are_checked_against_the_group_membership():
    async def scenario(c: Ctx):
        member = await c.single_stable()
        assert await txn_commit(c, {TP0: (1, "")}, member=member, generation=2) == {TP0: ErrorCode.ILLEGAL_GENERATION}
        assert await txn_commit(c, {TP0: (1, "")}, member="nobody", generation=1) == {
            TP0: ErrorCode.UNKNOWN_MEMBER_ID}
        assert c.store.txn_offsets == {}
        assert await txn_commit(c, {TP0: (1, "")}, member=member, generation=1) == {TP0: ErrorCode.NONE}
        assert await txn_commit(c, {TP1: (1, "")}) == {TP1: ErrorCode.NONE}  # v0-2: no member checks
    run(scenario)


def test_too_large_metadata_is_refused_per_partition():
    async def scenario(c: Ctx):
        assert await txn_commit(c, {TP0: (1, "x" * 11), TP1: (2, "ok")}) == {
            TP0: ErrorCode.OFFSET_METADATA_TOO_LARGE, TP1: ErrorCode.NONE}
        assert c.coordinator.unstable_offsets("g") == {TP1}
    run(scenario, offset_metadata_max_bytes=10)


def test_a_store_failure_leaves_nothing_pending():
    async def scenario(c: Ctx):
        c.store.fail = RuntimeError("zookeeper down")
        assert await txn_commit(c, {TP0: (1, "")}) == {TP0: ErrorCode.KAFKA_STORAGE_ERROR}
        assert c.coordinator.unstable_offsets("g") == set() and c.store.txn_offsets == {}
    run(scenario)


class HeldTxnWrites(MemoryOffsetStore):
    """Holds ``write_txn_offsets`` until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def write_txn_offsets(self, *args):
        await self.gate.wait()
        await super().write_txn_offsets(*args)


def test_a_marker_never_overtakes_the_txn_offset_commit_in_flight_before_it():
    store = HeldTxnWrites()

    async def scenario(c: Ctx):
        commit = asyncio.get_running_loop().create_task(txn_commit(c, {TP0: (8, "")}))
        await wait_until(lambda: "g" in c.coordinator.groups, what="commit accepted")
        marker = asyncio.get_running_loop().create_task(c.coordinator.complete_transaction(0, PID, 0, True, 0))
        await asyncio.sleep(0.01)
        assert not commit.done() and not marker.done()
        store.gate.set()
        assert await commit == {TP0: ErrorCode.NONE}
        assert await marker == ErrorCode.NONE
        assert store.offsets == {"g": {TP0: 8}} and store.txn_offsets == {}
    run(scenario, store=store)


def test_a_new_coordinator_loads_the_pending_offsets_and_completes_them_on_the_marker():
    store = MemoryOffsetStore()
    store.txn_offsets = {"g": {PID: (3, {TP0: (11, "m", 1)})}}
    store.offsets = {"g": {TP1: 4}}

    async def scenario(c: Ctx):
        assert c.coordinator.unstable_offsets("g") == {TP0}
        assert c.coordinator.fetch_offsets("g", [TP0, TP1])[1][TP1].offset == 4
        assert await txn_commit(c, {TP0: (1, "")}, epoch=2) == {TP0: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert await c.coordinator.complete_transaction(0, PID, 3, True, 0) == ErrorCode.NONE
        assert store.offsets == {"g": {TP0: 11, TP1: 4}} and store.txn_offsets == {}
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].metadata == "m"
    run(scenario, store=store)


def test_a_marker_arriving_during_the_load_waits_for_it():
    store = GatedStore(hold_load=True)
    store.txn_offsets = {"g": {PID: (0, {TP0: (11, "", -1)})}}

    async def scenario(c: Ctx):
        c.coordinator.on_elected(0)
        assert c.coordinator.group_error("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        marker = asyncio.get_running_loop().create_task(c.coordinator.complete_transaction(0, PID, 0, True, 0))
        await asyncio.sleep(0.01)
        assert not marker.done()
        store.load_gate.set()
        assert await marker == ErrorCode.NONE
        assert store.offsets == {"g": {TP0: 11}}
    run(scenario, store=store, elect=False)


def test_retention_keeps_a_group_with_pending_offsets_and_delete_groups_drops_them():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")})
        c.clock.advance_ms(10_000)
        await c.coordinator.expire_offsets()
        assert c.state() is GroupState.EMPTY and "g" in c.store.txn_offsets
        assert await c.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert c.store.txn_offsets == {} and "g" not in c.coordinator.groups
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {}
    run(scenario, offsets_retention_ms=1000)


# ======================================================================================================
# the handlers over a real coordinator (the World of test_handlers: its metadata has t-0..3 and u-0)
def txn_request(group: str = "g", transactional_id: str = "tx", epoch: int = 0, **partitions) -> dict:
    topics: dict[str, list] = {}
    for key, offset in partitions.items():
        topic, partition = key.rsplit("_", 1)
        topics.setdefault(topic, []).append(dict(partition_index=int(partition), committed_offset=offset,
                                                 committed_leader_epoch=1, committed_metadata="md"))
    return dict(transactional_id=transactional_id, group_id=group, producer_id=PID, producer_epoch=epoch,
                generation_id=-1, member_id="", group_instance_id=None,
                topics=[dict(name=n, partitions=p) for n, p in topics.items()])


def errors(response) -> dict:
    return {(t.name, p.partition_index): int(p.error_code) for t in response.topics for p in t.partitions}


def fetched(response) -> dict:
    return {(t.name, p.partition_index): (int(p.error_code), p.committed_offset) for t in response.topics
            for p in t.partitions}


def in_world(tmp_path, scenario, store: MemoryOffsetStore | None = None, elect: bool = True, authorizer=False):
    world = World(tmp_path)
    if authorizer:
        world.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)

    async def main():
        coordinator = GroupCoordinator(1, GroupConfig(offsets_topic_num_partitions=1), store or MemoryOffsetStore(),
                                       clock=FakeClock())
        world.context.group_coordinator = coordinator
        if elect:
            coordinator.on_elected(0)
            await wait_until(lambda: coordinator.group_error("g") is None, what="load")
        try:
            await scenario(world, coordinator)
        finally:
            await coordinator.shutdown()
    try:
        asyncio.run(asyncio.wait_for(main(), 15))
    finally:
        world.log_manager.shutdown()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_txn_offset_commit_then_offset_fetch_require_stable_through_the_handlers(tmp_path, version):
    async def scenario(world, coordinator):
        commit = await world.call(handle_txn_offset_commit, 28, version, **txn_request(t_0=5, t_9=1, nope_0=2))
        assert errors(commit) == {("t", 0): 0, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert coordinator.unstable_offsets("g") == {TP0}
        pending = coordinator.groups["g"].pending_txn_offsets[PID].offsets[TP0]
        assert (pending.metadata, pending.leader_epoch) == ("md", 1 if version >= 2 else -1)
        await coordinator.commit_offsets("g", -1, "", None, {TP1: (3, "")})
        topics = [dict(name="t", partition_indexes=[0, 1])]
        stable = await world.call(handle_offset_fetch, 9, 7, group_id="g", topics=topics, require_stable=True)
        assert fetched(stable) == {("t", 0): (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1), ("t", 1): (0, 3)}
        every = await world.call(handle_offset_fetch, 9, 7, group_id="g", topics=None, require_stable=True)
        assert fetched(every) == {("t", 1): (0, 3)}  # only committed partitions are listed, as Kafka
        plain = await world.call(handle_offset_fetch, 9, 7, group_id="g", topics=topics, require_stable=False)
        assert fetched(plain) == {("t", 0): (0, -1), ("t", 1): (0, 3)}
        assert await coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        stable = await world.call(handle_offset_fetch, 9, 7, group_id="g", topics=topics, require_stable=True)
        assert fetched(stable) == {("t", 0): (0, 5), ("t", 1): (0, 3)}
    in_world(tmp_path, scenario)


def test_txn_offset_commit_needs_write_on_the_transactional_id_read_on_the_group_and_topics(tmp_path):
    async def scenario(world, coordinator):
        request = txn_request(t_0=5, u_0=6)
        denied = await world.call(handle_txn_offset_commit, 28, 3, **request)
        assert set(errors(denied).values()) == {ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        grant(world.context.authorizer, acl.TRANSACTIONAL_ID, "tx", ace(acl.WRITE))
        denied = await world.call(handle_txn_offset_commit, 28, 3, **request)
        assert set(errors(denied).values()) == {ErrorCode.GROUP_AUTHORIZATION_FAILED}
        grant(world.context.authorizer, acl.GROUP, "g", ace(acl.READ))
        grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.READ))
        assert "g" not in coordinator.groups
        partly = await world.call(handle_txn_offset_commit, 28, 3, **request)
        assert errors(partly) == {("t", 0): 0, ("u", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert coordinator.unstable_offsets("g") == {TP0}
    in_world(tmp_path, scenario, authorizer=True)


@pytest.mark.parametrize("version,expected", [(0, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                              (1, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                              (2, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                                              (3, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)])
def test_a_loading_coordinator_answers_old_clients_coordinator_not_available(tmp_path, version, expected):
    async def scenario(world, coordinator):
        coordinator.on_elected(0)
        response = await world.call(handle_txn_offset_commit, 28, version, **txn_request(t_0=5))
        assert errors(response) == {("t", 0): expected}
    in_world(tmp_path, scenario, store=GatedStore(hold_load=True), elect=False)


def test_offset_delete_removes_its_partitions_from_the_pending_offsets_too():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, ""), TP1: (2, "")})
        await txn_commit(c, {TP0: (3, "")}, pid=OTHER_PID)
        assert await c.coordinator.delete_offsets("g", [TP0]) == (ErrorCode.NONE, {TP0: ErrorCode.NONE})
        assert c.store.txn_offsets == {"g": {PID: (0, {TP1: (2, "", -1)})}}
        assert c.coordinator.unstable_offsets("g") == {TP1}
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert await c.coordinator.complete_transaction(0, OTHER_PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {"g": {TP1: 2}}
    run(scenario)


def test_a_marker_after_a_timed_out_txn_offset_commit_still_completes_it_once_written():
    store = HeldTxnWrites()

    async def scenario(c: Ctx):
        assert await txn_commit(c, {TP0: (8, "")}) == {TP0: ErrorCode.REQUEST_TIMED_OUT}  # the write still runs
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.REQUEST_TIMED_OUT
        store.gate.set()
        await wait_until(lambda: store.offsets == {"g": {TP0: 8}} and store.txn_offsets == {},
                         what="the queued marker completed the late write")
        assert c.coordinator.unstable_offsets("g") == set()
    run(scenario, store=store, offsets_commit_timeout_ms=50)


# ======================================================================================================
# completing is idempotent, fenced by both epochs, and survives failovers and deposed coordinators
async def failover(c: Ctx) -> None:
    """The partition moves away and back: the coordinator forgets it and loads it again from the store."""
    c.coordinator.on_resigned(0)
    c.coordinator.on_elected(0)
    await wait_until(lambda: c.coordinator.group_error("g") is None, what="reload")


def test_a_marker_whose_answer_was_lost_is_retried_until_it_completes_once():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (5, "")})
        c.store.lose_reply = ConnectionLossError("connection lost after the multi was applied")
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.KAFKA_STORAGE_ERROR
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {"g": {TP0: 5}} and len(c.store.commits) == 1
        assert c.coordinator.unstable_offsets("g") == set()
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 5
    run(scenario)


class LandedThenLostKzc:
    """A KafkaZkClient whose commit multi landed once already: every attempt now fails on the pending znode
    (gone), as a retry does after a connection loss that hid the first attempt's success."""

    def __init__(self, pending_exists: bool) -> None:
        self.pending_exists, self.attempts = pending_exists, 0

    async def get_consumer_offsets(self, group):
        return {TP0: 5}

    async def commit_txn_offsets(self, group, producer_id, offsets, existing, epochs):
        self.attempts += 1
        raise MultiOpError(1, NoNodeError(f"/consumers/{group}/txn_offsets/{producer_id}"))

    async def txn_offsets_exist(self, group, producer_id):
        return self.pending_exists


def test_the_zookeeper_store_treats_a_commit_whose_pending_znode_is_gone_as_landed():
    async def main():
        landed = LandedThenLostKzc(pending_exists=False)
        await ZkOffsetStore(landed).commit_txn_offsets("g", PID, {TP0: 5}, (0, 0))  # no error: it landed
        assert landed.attempts == 1
        racing = LandedThenLostKzc(pending_exists=True)
        with pytest.raises(MultiOpError):
            await ZkOffsetStore(racing).commit_txn_offsets("g", PID, {TP0: 5}, (0, 0))
        assert racing.attempts == 2  # a stale idea of the offset znodes: re-read and retried once
    asyncio.run(main())


def test_losing_the_partition_during_the_write_is_not_coordinator_and_the_late_write_still_commits():
    store = HeldTxnWrites()

    async def scenario(c: Ctx):
        commit = asyncio.get_running_loop().create_task(txn_commit(c, {TP0: (8, "")}))
        await wait_until(lambda: "g" in c.coordinator.groups, what="commit accepted")
        await failover(c)  # the new coordinator loads before the deposed one's write lands
        store.gate.set()
        assert await commit == {TP0: ErrorCode.NOT_COORDINATOR}
        assert c.coordinator.unstable_offsets("g") == set() and store.txn_offsets == {"g": {PID: (0, {TP0: (8, "", -1)})}}
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 0) == ErrorCode.NONE
        assert store.offsets == {"g": {TP0: 8}} and store.txn_offsets == {}
        assert c.coordinator.fetch_offsets("g", [TP0])[1][TP0].offset == 8
    run(scenario, store=store)


def test_a_marker_finds_pending_offsets_written_to_the_store_after_the_load():
    async def scenario(c: Ctx):
        c.store.txn_offsets = {"late": {PID: (0, {TP0: (3, "", -1)})}}  # a deposed coordinator's late write
        assert await c.coordinator.complete_transaction(0, PID, 0, False, 0) == ErrorCode.NONE
        assert c.store.txn_offsets == {} and c.store.txn_producers == {"late": {PID: (0, 0)}}
        c.store.txn_offsets = {"late": {OTHER_PID: (0, {TP0: (4, "", -1)})}}
        assert await c.coordinator.complete_transaction(0, OTHER_PID, 0, True, 0) == ErrorCode.NONE
        assert c.store.offsets == {"late": {TP0: 4}}
        assert c.coordinator.fetch_offsets("late", [TP0])[1][TP0].offset == 4
    run(scenario)


def test_a_deposed_transaction_coordinators_late_marker_is_fenced_also_after_a_failover():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")})
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 5) == ErrorCode.NONE  # T1 by the new one
        await txn_commit(c, {TP0: (2, "")})  # T2, same producer id and epoch
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 4) == \
            ErrorCode.TRANSACTION_COORDINATOR_FENCED  # the deposed one retries T1's COMMIT
        assert c.store.offsets == {"g": {TP0: 1}} and c.coordinator.unstable_offsets("g") == {TP0}
        await failover(c)
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 4) == \
            ErrorCode.TRANSACTION_COORDINATOR_FENCED
        assert c.store.offsets == {"g": {TP0: 1}} and c.coordinator.unstable_offsets("g") == {TP0}
        assert await c.coordinator.complete_transaction(0, PID, 0, True, 5) == ErrorCode.NONE
        assert c.store.offsets == {"g": {TP0: 2}} and c.store.txn_producers == {"g": {PID: (0, 5)}}
    run(scenario)


def test_a_zombie_fenced_by_an_abort_stays_fenced_after_a_failover():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")}, epoch=5)
        assert await c.coordinator.complete_transaction(0, PID, 6, False, 0) == ErrorCode.NONE  # fencing abort
        assert c.store.txn_offsets == {} and c.store.txn_producers == {"g": {PID: (6, 0)}}
        await failover(c)
        assert await txn_commit(c, {TP0: (2, "")}, epoch=5) == {TP0: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert c.store.txn_offsets == {} and c.coordinator.unstable_offsets("g") == set()
        assert await txn_commit(c, {TP0: (3, "")}, epoch=6) == {TP0: ErrorCode.NONE}
    run(scenario)


def test_delete_groups_removes_the_recorded_producer_epochs_with_the_group():
    async def scenario(c: Ctx):
        await txn_commit(c, {TP0: (1, "")}, epoch=2)
        assert await c.coordinator.complete_transaction(0, PID, 2, True, 1) == ErrorCode.NONE
        assert c.store.txn_producers == {"g": {PID: (2, 1)}}
        assert await c.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert c.store.txn_producers == {}
    run(scenario)


def test_the_member_checks_are_redone_in_the_groups_turn():
    store = HeldTxnWrites()

    async def scenario(c: Ctx):
        member = await c.single_stable()
        first = asyncio.get_running_loop().create_task(txn_commit(c, {TP1: (1, "")}, pid=OTHER_PID))
        await wait_until(lambda: c.coordinator._txn_writes, what="the first write queued")
        second = asyncio.get_running_loop().create_task(
            txn_commit(c, {TP0: (1, "")}, member=member, generation=1))
        await asyncio.sleep(0.01)
        assert not second.done()  # accepted at arrival, queued behind the first write
        assert c.coordinator.leave_group("g", [(member, None)])[0] == ErrorCode.NONE
        store.gate.set()
        assert await first == {TP1: ErrorCode.NONE}
        assert await second == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
        assert c.coordinator.unstable_offsets("g") == {TP1} and PID not in store.txn_offsets["g"]
    run(scenario, store=store)
