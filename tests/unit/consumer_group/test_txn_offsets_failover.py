"""Completing transactional offsets is idempotent (a lost ZooKeeper answer), fenced by both the producer and
the transaction coordinator epochs, and survives failovers and deposed group coordinators; KIP-447's member
checks are redone in the group's turn."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.zk.errors import ConnectionLossError, MultiOpError, NoNodeError
from consumer_group.coordinator.offset_store import ZkOffsetStore
from tests.unit.consumer_group.test_coordinator import Ctx, run, wait_until
from tests.unit.consumer_group.txn_fakes import OTHER_PID, PID, TP0, TP1, HeldTxnWrites, failover, txn_commit


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
        await wait_until(lambda: c.coordinator._txn_writes[("g", PID)] == 1, what="the second write queued")
        assert not second.done()  # accepted at arrival, queued behind the first write
        assert c.coordinator.leave_group("g", [(member, None)])[0] == ErrorCode.NONE
        store.gate.set()
        assert await first == {TP1: ErrorCode.NONE}
        assert await second == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
        assert c.coordinator.unstable_offsets("g") == {TP1} and PID not in store.txn_offsets["g"]
    run(scenario, store=store)
