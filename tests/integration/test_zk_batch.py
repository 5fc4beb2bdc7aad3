"""ZkGateway's pipelined batch calls against a real ZooKeeper: per-item outcomes (absent znodes, version
conflicts, existing znodes) beside successes, a window smaller than the batch, watches set by a batch
read, and the controller-epoch fencing of pipelined multis."""
from __future__ import annotations

import asyncio

import pytest

from brokers.zk.errors import BadVersionError, ControllerMovedError, MultiOpError, NodeExistsError, NoNodeError
from brokers.zk.gateway import CreateOp, SetDataOp, ZkGateway


def run(coro):
    return asyncio.run(coro)


async def gateway(zookeeper, chroot: str, window: int = 3) -> ZkGateway:
    zk = ZkGateway(zookeeper.connect_string + chroot, session_timeout_ms=4000, max_in_flight_requests=window)
    await zk.start()
    return zk


def test_batch_reads_give_none_for_absent_znodes(zookeeper):
    async def main():
        zk = await gateway(zookeeper, "/batch-reads")
        try:
            for i in range(0, 10, 2):
                await zk.create(f"/r/{i}", f"v{i}".encode(), makepath=True)
            await zk.create("/r/0/child")
            paths = [f"/r/{i}" for i in range(10)]
            got = await zk.get_many(paths)
            assert [g[0] if g else None for g in got] == [b"v0", None, b"v2", None, b"v4", None, b"v6", None,
                                                           b"v8", None]
            assert got[0][1].num_children == 1
            assert await zk.get_children_many(["/r/0", "/r/1", "/r"]) == [
                ["child"], None, ["0", "2", "4", "6", "8"]]
            stats = await zk.exists_many(paths)
            assert [s is not None for s in stats] == [i % 2 == 0 for i in range(10)]
            assert await zk.get_many([]) == []
        finally:
            await zk.close()

    run(main())


def test_batch_writes_report_each_items_outcome(zookeeper):
    async def main():
        zk = await gateway(zookeeper, "/batch-writes")
        try:
            await zk.create("/w", makepath=True)
            await zk.create("/w/taken", b"old")
            created = await zk.create_many([CreateOp("/w/a", b"1"), CreateOp("/w/taken", b"x"),
                                            CreateOp("/w/missing/b", b"2"), CreateOp("/w/c", b"3")])
            assert created[0] == "/w/a" and created[3] == "/w/c"
            assert isinstance(created[1], NodeExistsError) and isinstance(created[2], NoNodeError)
            assert (await zk.get("/w/taken"))[0] == b"old"
            stats = await zk.set_many([SetDataOp("/w/a", b"1'", 0), SetDataOp("/w/c", b"3'", 7),
                                       SetDataOp("/w/gone", b"?", -1)])
            assert stats[0].version == 1
            assert isinstance(stats[1], BadVersionError) and isinstance(stats[2], NoNodeError)
            assert [d for d, _ in await zk.get_many(["/w/a", "/w/c"])] == [b"1'", b"3"]
        finally:
            await zk.close()

    run(main())


def test_batch_reads_set_watches_that_fire_on_the_loop(zookeeper):
    async def main():
        zk = await gateway(zookeeper, "/batch-watch")
        try:
            await zk.create("/x/a", b"", makepath=True)
            fired = asyncio.Queue()
            loop = asyncio.get_running_loop()
            await zk.get_many(["/x/a", "/x/none"], watches=[lambda e: fired.put_nowait((e, loop)), None])
            await zk.set("/x/a", b"changed")
            event, on = await asyncio.wait_for(fired.get(), 10)
            assert event.type == "CHANGED" and event.path.endswith("/x/a") and on is asyncio.get_running_loop()
        finally:
            await zk.close()

    run(main())


def test_fenced_multis_are_per_group_and_fenced_by_the_controller_epoch(zookeeper):
    async def main():
        zk = await gateway(zookeeper, "/batch-fenced")
        try:
            await zk.create("/controller_epoch", b"1")
            epoch_version = (await zk.get("/controller_epoch"))[1].version
            await zk.create("/p/0", b"a", makepath=True)
            await zk.create("/p/1", b"a")
            outcomes = await zk.fenced_multi_many(epoch_version, [
                [SetDataOp("/p/0", b"b", 0)], [SetDataOp("/p/1", b"b", 5)], [CreateOp("/p/2", b"new")]])
            assert outcomes[0][0].version == 1 and outcomes[2] == ["/p/2"]
            assert isinstance(outcomes[1], MultiOpError) and outcomes[1].index == 0
            assert isinstance(outcomes[1].cause, BadVersionError)
            await zk.set("/controller_epoch", b"2")  # another controller was elected
            with pytest.raises(ControllerMovedError):
                await zk.fenced_multi_many(epoch_version, [[SetDataOp("/p/0", b"zombie", 1)],
                                                           [CreateOp("/p/3", b"zombie")]])
            assert (await zk.get("/p/0"))[0] == b"b" and await zk.exists("/p/3") is None
        finally:
            await zk.close()

    run(main())


def test_fenced_groups_share_multis_and_a_failed_one_is_tried_again_alone(zookeeper):
    """250 groups go out as 3 multis (each one ZooKeeper transaction: one zxid); the multi holding a
    conflicting group applied nothing and its groups go again one by one: each outcome is its own."""
    async def main():
        zk = await gateway(zookeeper, "/batch-chunks", window=50)
        try:
            await zk.create("/controller_epoch", b"1")
            epoch_version = (await zk.get("/controller_epoch"))[1].version
            await zk.create("/c", makepath=True)
            await zk.create("/c/taken", b"old")
            first = (await zk.create_many([CreateOp("/c/mark-0")]))[0]
            zxid_before = (await zk.exists(first)).czxid
            groups = [[CreateOp(f"/c/{i}", b"v")] for i in range(250)]
            outcomes = await zk.fenced_multi_many(epoch_version, groups)
            assert all(outcome == [f"/c/{i}"] for i, outcome in enumerate(outcomes))
            after = (await zk.create_many([CreateOp("/c/mark-1")]))[0]
            # 3 multis (a zxid each) and the marker; a few more if another client's session ended meanwhile
            assert 4 <= (await zk.exists(after)).czxid - zxid_before < 20  # not 250 + 1
            groups = [[SetDataOp(f"/c/{i}", b"w", 0)] for i in range(250)]
            groups[7], groups[180] = [CreateOp("/c/taken", b"x")], [SetDataOp("/c/180", b"w", 3)]
            outcomes = await zk.fenced_multi_many(epoch_version, groups)
            assert isinstance(outcomes[7], MultiOpError) and isinstance(outcomes[7].cause, NodeExistsError)
            assert isinstance(outcomes[180], MultiOpError) and isinstance(outcomes[180].cause, BadVersionError)
            assert all(outcomes[i][0].version == 1 for i in range(250) if i not in (7, 180))
            data = await zk.get_many([f"/c/{i}" for i in range(250)] + ["/c/taken"])
            assert [d for d, _ in data] == [b"v" if i in (7, 180) else b"w" for i in range(250)] + [b"old"]
        finally:
            await zk.close()

    run(main())


def test_partition_states_in_batches_are_fenced_and_version_checked(zookeeper):
    from brokers.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
    from brokers.zk.client import KafkaZkClient

    async def main():
        a = KafkaZkClient(await gateway(zookeeper, "/batch-states"))
        b = KafkaZkClient(await gateway(zookeeper, "/batch-states"))
        try:
            await a.create_persistent_roots()
            old = await a.try_elect_controller(1)
            await a.create_topic("t", {0: [1, 2], 1: [2, 1], 2: [1, 2]}, {})
            tps = [TopicPartition("t", p) for p in range(3)]
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 0), old.epoch)
            await a.create_partition_state(old.epoch_zk_version, tps[1], state)  # created earlier
            created = await a.create_partition_states(old.epoch_zk_version, {tp: state for tp in tps})
            assert created[tps[0]] is None and created[tps[2]] is None
            assert isinstance(created[tps[1]], MultiOpError) and isinstance(created[tps[1]].cause, NodeExistsError)
            read = await b.get_partition_states([*tps, TopicPartition("t", 9)])
            assert all(read[tp] == state for tp in tps) and read[TopicPartition("t", 9)] is None
            await a.update_partition_state(old.epoch_zk_version, tps[2], state)  # tps[2] now at version 1
            moved = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 1, (2,), 0), old.epoch)
            updated = await a.update_partition_states(old.epoch_zk_version, {tp: moved for tp in tps})
            assert updated[tps[0]] == 1 and updated[tps[1]] == 1
            assert isinstance(updated[tps[2]], MultiOpError) and isinstance(updated[tps[2]].cause, BadVersionError)
            await b.zk.delete("/controller")
            new = await b.try_elect_controller(2)
            assert new.won
            before = await b.get_partition_states(tps)
            with pytest.raises(ControllerMovedError):
                await a.update_partition_states(old.epoch_zk_version, {tp: before[tp] for tp in tps})
            assert await b.get_partition_states(tps) == before
        finally:
            await a.zk.close()
            await b.zk.close()

    run(main())


def test_topic_deletion_removes_every_znode_found_in_one_batch(zookeeper):
    from brokers.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
    from brokers.zk.client import KafkaZkClient

    async def main():
        kzc = KafkaZkClient(await gateway(zookeeper, "/batch-delete"))
        try:
            await kzc.create_persistent_roots()
            won = await kzc.try_elect_controller(1)
            await kzc.create_topic("gone", {0: [1], 1: [1], 2: [1]}, {"retention.ms": "1000"})
            state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,), 0), won.epoch)
            await kzc.create_partition_states(won.epoch_zk_version, {TopicPartition("gone", p): state for p in (0, 2)})
            await kzc.zk.create("/brokers/topics/gone/partitions/1")  # a partition without its state znode
            await kzc.request_topic_deletion("gone")
            await kzc.delete_topic(won.epoch_zk_version, "gone")
            assert await kzc.zk.exists_many(["/brokers/topics/gone", "/config/topics/gone",
                                             "/admin/delete_topics/gone"]) == [None, None, None]
            assert "gone" not in await kzc.get_all_topics()
        finally:
            await kzc.zk.close()

    run(main())


def test_a_leaders_isr_writes_of_one_turn_go_as_one_batch_each_version_checked(zookeeper):
    """ZkIsrStore: writes asked for together are one pipelined batch; each still compare-and-sets its own
    state znode's version (a stale one is IsrConflictError, the others are written)."""
    from brokers.app.broker_server import ZkIsrStore
    from brokers.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
    from brokers.replication.replica_manager import IsrConflictError
    from brokers.zk.client import KafkaZkClient

    async def main():
        kzc = KafkaZkClient(await gateway(zookeeper, "/batch-isr", window=10))
        try:
            await kzc.create_persistent_roots()
            won = await kzc.try_elect_controller(1)
            tps = [TopicPartition("isr", p) for p in range(40)]
            await kzc.create_topic("isr", {tp.partition: [1, 2] for tp in tps}, {})
            await kzc.create_partition_states(won.epoch_zk_version, {
                tp: LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,), 0), won.epoch) for tp in tps})
            store, batches = ZkIsrStore(kzc), []
            real = kzc.update_isrs_by_leader

            async def counted(items):
                batches.append(len(items))
                return await real(items)
            kzc.update_isrs_by_leader = counted
            writes = [store.update_isr(tp, LeaderIsrAndControllerEpoch(
                LeaderAndIsr(1, 0, (1, 2), 5 if tp.partition == 13 else 0), won.epoch)) for tp in tps]
            outcomes = await asyncio.gather(*writes, return_exceptions=True)
            assert batches == [40]
            assert isinstance(outcomes[13], IsrConflictError)
            assert [o for i, o in enumerate(outcomes) if i != 13] == [1] * 39
            states = await kzc.get_partition_states(tps)
            assert [states[tp].leader_and_isr.isr for tp in tps] == [(1,) if tp.partition == 13 else (1, 2) for tp in tps]
        finally:
            await kzc.zk.close()

    run(main())
