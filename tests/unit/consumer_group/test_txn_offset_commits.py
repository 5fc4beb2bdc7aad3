"""The group coordinator's pending transactional offsets over the in-memory offset store
(``TransactionalOffsets``): TxnOffsetCommit, the COMMIT and ABORT markers, producer-epoch fencing, the
ownership of offsets partitions, a marker never overtaking the TxnOffsetCommit before it, loading,
retention, OffsetDelete."""
from __future__ import annotations

import asyncio

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from consumer_group.coordinator.placement import partition_for
from consumer_group.coordinator.state import GroupState
from tests.unit.consumer_group.test_coordinator import Ctx, GatedStore, run, wait_until
from tests.unit.consumer_group.txn_fakes import OTHER_PID, PID, TP0, TP1, TP2, HeldTxnWrites, txn_commit


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


def test_a_marker_never_overtakes_the_txn_offset_commit_in_flight_before_it():
    store = HeldTxnWrites()

    async def scenario(c: Ctx):
        commit = asyncio.get_running_loop().create_task(txn_commit(c, {TP0: (8, "")}))
        await wait_until(lambda: "g" in c.coordinator.groups, what="commit accepted")
        marker = asyncio.get_running_loop().create_task(c.coordinator.complete_transaction(0, PID, 0, True, 0))
        await wait_until(lambda: len(c.coordinator.writer._queues.get("g", ())) == 1,
                         what="the marker queued in the group's turn, behind the write the store holds")
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
        await wait_until(lambda: c.coordinator._load_waiters.get(0), what="the marker waiting for the load")
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
