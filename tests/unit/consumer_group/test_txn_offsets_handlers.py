"""The TxnOffsetCommit and OffsetFetch v7 (``require_stable``) handlers over a real group coordinator, in the
``World`` of ``tests.unit.server.test_handlers`` (its metadata has t-0..3 and u-0): versions, ACLs, loading."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.security import acls as acl
from brokers.security.authorizer import AclAuthorizer
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.handlers import handle_offset_fetch, handle_txn_offset_commit
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from tests.unit.consumer_group.test_coordinator import FakeClock, GatedStore, wait_until
from tests.unit.consumer_group.txn_fakes import PID, TP0, TP1
from tests.unit.server.test_acl_handlers import ace, grant
from tests.unit.server.test_handlers import World
from tests.unit.zk.test_acl_znodes import MemoryZk


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


def _verifying(world, txn_world) -> None:
    """The broker's KIP-890 verification hook over a real transaction coordinator (as ``BrokerTransactions.verify``
    answers it: the coordinator's code mapped for a Produce)."""
    from brokers.app.transaction_wiring import produce_error

    async def verify(transactional_id, producer_id, producer_epoch, tp):
        return produce_error(await txn_world.coordinator.verify_partition(transactional_id, producer_id,
                                                                          producer_epoch, tp))
    world.context.verify_transaction = verify


def test_a_late_txn_offset_commit_of_a_transaction_aborted_meanwhile_is_fenced_after_a_failover(tmp_path):
    """Soak seed 7: the copier's transaction timed out while the brokers were down; the coordinator aborted it
    (PrepareEpochFence, epoch + 1) and the abort marker reached the group coordinator before the copier's
    TxnOffsetCommit, so nothing was pending and the marker's epoch was recorded in memory only. The group's
    partition then failed over; the copier's retried TxnOffsetCommit (the old epoch) landed, its EndTxn was
    _FENCED, and nothing ever completed those offsets: OffsetFetch(require_stable) answered
    UNSTABLE_OFFSET_COMMIT for ever. The TxnOffsetCommit must be verified with the transaction coordinator."""
    from brokers.model import OFFSETS_TOPIC, TopicPartition
    from tests.unit.transactions.fakes import World as TxnWorld, completed, wait_for

    async def scenario(world, coordinator):
        txn = TxnWorld()
        await txn.elect_all()
        _verifying(world, txn)
        txn.producer_ids.next = PID
        pid, epoch, error = await txn.coordinator.handle_init_producer_id("tx", 60000)
        assert (pid, error) == (PID, 0)
        offsets_tp = TopicPartition(OFFSETS_TOPIC, coordinator.partition_for("g"))
        assert await txn.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {offsets_tp}) == 0
        txn.clock.advance_ms(61000)
        assert await txn.coordinator.abort_timed_out_transactions() == 1
        await wait_for(completed(txn, "tx"))
        [marker] = txn.markers.sent
        assert (marker.commit, marker.producer_epoch) == (False, epoch + 1)
        assert await coordinator.complete_transaction(offsets_tp.partition, pid, marker.producer_epoch, False,
                                                      marker.coordinator_epoch) == 0
        coordinator.on_resigned(0)
        coordinator.on_elected(0)
        await wait_until(lambda: coordinator.group_error("g") is None, what="reload")
        commit = await world.call(handle_txn_offset_commit, 28, 3, **txn_request(epoch=epoch, t_0=5))
        assert errors(commit) == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        assert coordinator.unstable_offsets("g") == set()
        topics = [dict(name="t", partition_indexes=[0])]
        stable = await world.call(handle_offset_fetch, 9, 7, group_id="g", topics=topics, require_stable=True)
        assert fetched(stable) == {("t", 0): (0, -1)}
        await txn.coordinator.shutdown()
    in_world(tmp_path, scenario)


def test_a_verified_txn_offset_commit_of_an_ongoing_transaction_is_pending(tmp_path):
    """With verification on, the offsets of the producer's Ongoing transaction (AddOffsetsToTxn done) are
    accepted; a coordinator still loading is retriable, a transaction without the group's partition is not."""
    from brokers.model import OFFSETS_TOPIC, TopicPartition
    from tests.unit.transactions.fakes import World as TxnWorld

    async def scenario(world, coordinator):
        txn = TxnWorld()
        await txn.elect_all()
        _verifying(world, txn)
        txn.producer_ids.next = PID
        pid, epoch, _ = await txn.coordinator.handle_init_producer_id("tx", 60000)
        refused = await world.call(handle_txn_offset_commit, 28, 3, **txn_request(epoch=epoch, t_0=5))
        assert errors(refused) == {("t", 0): ErrorCode.INVALID_TXN_STATE}
        offsets_tp = TopicPartition(OFFSETS_TOPIC, coordinator.partition_for("g"))
        assert await txn.coordinator.handle_add_partitions_to_transaction("tx", pid, epoch, {offsets_tp}) == 0
        commit = await world.call(handle_txn_offset_commit, 28, 3, **txn_request(epoch=epoch, t_0=5))
        assert errors(commit) == {("t", 0): 0}
        assert coordinator.unstable_offsets("g") == {TP0}
        txn.coordinator.state.loading[txn.coordinator.partition_for("tx")] = 9
        loading = await world.call(handle_txn_offset_commit, 28, 3, **txn_request(epoch=epoch, t_1=5))
        assert errors(loading) == {("t", 1): ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        await txn.coordinator.shutdown()
    in_world(tmp_path, scenario)
