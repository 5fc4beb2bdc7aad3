"""KafkaZkClient and ZkGateway against a real ZooKeeper: registration and broker epochs, election,
epoch fencing of a deposed controller, chroot, and watches that land on the event loop."""
from __future__ import annotations

import asyncio
import threading

import pytest

from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.zk.client import DuplicateBrokerIdError, KafkaZkClient
from brokers.zk.errors import ControllerMovedError
from brokers.zk.gateway import ZkGateway
from scripts.local.zookeeper import find_free_base_port


def run(coro):
    return asyncio.run(coro)


def broker(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id),), http_port=8000 + broker_id)


async def client(zookeeper, chroot: str) -> KafkaZkClient:
    gateway = ZkGateway(zookeeper.connect_string + chroot, session_timeout_ms=4000)
    await gateway.start()
    kzc = KafkaZkClient(gateway)
    await kzc.create_persistent_roots()
    return kzc


def test_registration_epoch_and_duplicate_ids(zookeeper):
    async def main():
        a, b = await client(zookeeper, "/reg"), await client(zookeeper, "/reg")
        try:
            epoch = await a.register_broker(broker(1))
            info = await b.get_broker(1)
            assert info.epoch == epoch and info.endpoints == broker(1).endpoints and info.http_port == 8001
            with pytest.raises(DuplicateBrokerIdError, match="broker id 1"):
                await b.register_broker(broker(1))
            again = await a.register_broker(broker(1))  # our own node (KAFKA-7165): replaced, new epoch
            assert again > epoch
            assert await b.get_broker_ids() == [1]
        finally:
            await a.zk.close()
        assert await b.get_broker_ids() == []  # ephemeral: gone with the session
        await b.zk.close()

    run(main())


def test_election_and_failover_bump_the_epoch(zookeeper):
    async def main():
        a, b = await client(zookeeper, "/elect"), await client(zookeeper, "/elect")
        won = await a.try_elect_controller(1)
        assert won.won and won.epoch == 1
        lost = await b.try_elect_controller(2)
        assert not lost.won and lost.controller_id == 1
        await a.zk.close()
        second = await b.try_elect_controller(2)
        assert second.won and second.epoch == 2 and second.epoch_zk_version > won.epoch_zk_version
        assert await b.get_controller_epoch() == (2, second.epoch_zk_version)
        await b.zk.close()

    run(main())


def test_a_deposed_controllers_writes_are_fenced(zookeeper):
    async def main():
        a, b = await client(zookeeper, "/fence"), await client(zookeeper, "/fence")
        tp = TopicPartition("t", 0)
        old = await a.try_elect_controller(1)
        await a.create_topic("t", {0: [1, 2]}, {})
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 0), old.epoch)
        await a.create_partition_state(old.epoch_zk_version, tp, state)
        await b.zk.delete("/controller")  # a's session "expired" as far as ZooKeeper cares
        new = await b.try_elect_controller(2)
        assert new.won and new.epoch == old.epoch + 1
        before = await b.get_partition_state(tp)
        zombie_write = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 1, (1,), before.leader_and_isr.zk_version), old.epoch)
        with pytest.raises(ControllerMovedError):
            await a.update_partition_state(old.epoch_zk_version, tp, zombie_write)
        after = await b.get_partition_state(tp)
        assert after == before
        current = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 1, (2,), before.leader_and_isr.zk_version), new.epoch)
        version = await b.update_partition_state(new.epoch_zk_version, tp, current)
        assert version == before.leader_and_isr.zk_version + 1
        await a.zk.close()
        await b.zk.close()

    run(main())


def test_watches_run_on_the_event_loop(zookeeper):
    async def main():
        a = await client(zookeeper, "/watch")
        loop_thread = threading.get_ident()
        fired = asyncio.Event()
        seen = []

        def on_change(event):
            seen.append((event.type, threading.get_ident()))
            fired.set()

        assert await a.get_broker_ids(watch=on_change) == []
        await a.register_broker(broker(5))
        await asyncio.wait_for(fired.wait(), 10)
        assert seen == [("CHILD", loop_thread)]
        await a.zk.close()

    run(main())


def test_generated_broker_ids_start_after_the_reserved_range(zookeeper):
    async def main():
        a = await client(zookeeper, "/seq")
        assert [await a.generate_broker_id(1000) for _ in range(3)] == [1001, 1002, 1003]
        await a.zk.close()

    run(main())


def test_producer_id_blocks_never_overlap(zookeeper):
    async def main():
        a, b = await client(zookeeper, "/pid"), await client(zookeeper, "/pid")
        blocks = [await a.allocate_producer_id_block(1, 10), await b.allocate_producer_id_block(2, 10),
                  await a.allocate_producer_id_block(1, 10)]
        assert blocks == [(0, 9), (10, 19), (20, 29)]
        await a.zk.close()
        await b.zk.close()

    run(main())


def test_a_deposed_controller_resigns_when_its_write_is_fenced(zookeeper):
    """A KafkaController whose epoch was superseded processes a topic change: its fenced write of the
    partition state fails, nothing lands, and it resigns."""
    from coordinator import events as ev
    from coordinator.controller import ControllerConfig, KafkaController

    async def main():
        a, b = await client(zookeeper, "/deposed"), await client(zookeeper, "/deposed")
        await a.register_broker(broker(1))
        controller = KafkaController(1, a, ControllerConfig())
        await controller._elect()
        assert controller.is_active and controller.context.epoch == 1
        await b.zk.delete("/controller")  # as if controller 1's session had expired ...
        assert (await b.try_elect_controller(2)).won  # ... and broker 2 had won epoch 2
        await b.create_topic("late", {0: [1]}, {})
        await controller.process(ev.TopicChange())
        assert not controller.is_active and controller.resignations == 1
        assert await b.get_partition_state(TopicPartition("late", 0)) is None  # the fenced write did not land
        assert await b.get_controller_epoch() == (2, (await b.zk.get("/controller_epoch"))[1].version)
        await controller.events.close()
        await a.zk.close()
        await b.zk.close()

    run(main())


def test_reads_ride_out_a_zookeeper_leader_change(tmp_path):
    """kill -9 the ensemble's leader while a broker-side gateway keeps reading: every read succeeds
    (brief connection losses are retried), and the session and its ephemeral node survive."""
    from scripts.local.zookeeper import ZooKeeperEnsemble

    ensemble = ZooKeeperEnsemble(tmp_path / "ensemble", find_free_base_port(3), 3, tick_time=500)
    ensemble.start(90)
    try:
        async def main():
            gateway = ZkGateway(ensemble.connect_string, session_timeout_ms=8000)
            await gateway.start()
            kzc = KafkaZkClient(gateway)
            await kzc.create_persistent_roots()
            epoch = await kzc.register_broker(broker(1))
            loop = asyncio.get_running_loop()

            async def reader():
                reads = 0
                deadline = loop.time() + 3
                while loop.time() < deadline:  # reads in flight when the leader dies, and during the election
                    assert await kzc.get_broker_ids() == [1]
                    reads += 1
                return reads

            readers = [asyncio.create_task(reader()) for _ in range(8)]
            await asyncio.sleep(0.3)
            ensemble.leader().kill()
            assert all(n > 0 for n in await asyncio.gather(*readers))
            assert (await kzc.get_broker(1)).epoch == epoch  # same session, same registration
            await gateway.close()

        run(main())
    finally:
        ensemble.stop()


def test_consumer_offsets_commit_as_one_multi_and_reload(zookeeper):
    from consumer_group.coordinator.offset_store import ZkOffsetStore

    async def main():
        kzc = await client(zookeeper, "/offsets-test")
        store = ZkOffsetStore(kzc)
        t0, t1, u0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
        await store.commit("g", {t0: 5, t1: 7})
        await store.commit("g", {t0: 9, u0: 1})  # one existing znode set, one new topic created
        assert await kzc.zk.get_children("/consumers/g/offsets") == ["t", "u"]
        assert (await kzc.zk.get("/consumers/g/offsets/t/0"))[0] == b"9"  # Kafka's decimal text
        fresh = ZkOffsetStore(kzc)  # a new coordinator loading the group
        assert await fresh.load("g") == {t0: 9, t1: 7, u0: 1}
        assert await fresh.groups() == ["g"]
        # someone else deleted a znode our store believes exists: the multi fails whole, then one retry works
        await kzc.zk.delete("/consumers/g/offsets/t/1")
        await fresh.commit("g", {t1: 11, t0: 12})
        assert await store.load("g") == {t0: 12, t1: 11, u0: 1}
        await store.delete_offsets("g", [u0])
        assert await store.load("g") == {t0: 12, t1: 11}
        await store.delete_group("g")
        assert await store.groups() == [] and await store.load("g") == {}
        await kzc.zk.close()

    run(main())


def test_config_changes_are_notified_in_order_and_purged_when_old(zookeeper):
    async def main():
        a = await client(zookeeper, "/configs")
        await a.change_entity_config("topics", "t", {"retention.ms": "1000"})
        await a.change_entity_config("brokers", "<default>", {"log.retention.ms": "5"})
        assert await a.get_entity_config("topics", "t") == {"retention.ms": "1000"}
        assert await a.get_entity_config("brokers", "<default>") == {"log.retention.ms": "5"}
        assert await a.get_entity_config("topics", "nope") == {}
        children = await a.get_config_change_notifications()
        assert [await a.read_config_change_notification(c) for c in children] == [
            ("topics", "t"), ("brokers", "<default>")]
        stat = await a.zk.exists(f"/config/changes/{children[0]}")
        assert await a.purge_config_change_notifications(stat.ctime + 15 * 60 * 1000) == []  # not old enough yet
        assert await a.purge_config_change_notifications(stat.ctime + 60 * 60 * 1000) == children
        assert await a.get_config_change_notifications() == []
        assert await a.read_config_change_notification(children[0]) is None
        await a.zk.close()

    run(main())
