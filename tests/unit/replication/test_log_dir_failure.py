"""ReplicaManager.handle_log_dir_failure (KIP-112) over a real two-dir LogManager: the failed dir's
partitions go offline here (KAFKA_STORAGE_ERROR to clients and to LeaderAndIsr), the other dir's stay,
the controller is notified, and losing the last dir halts the broker. Also DescribeLogDirs' results
and the notification znode."""
from __future__ import annotations

import asyncio
import json

import pytest

from brokers.control import LeaderAndIsrRequest, PartitionState, StopReplicaPartition, StopReplicaRequest
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.replica_manager import PartitionError, ReplicaManager, leader_partition
from brokers.server.handlers.log_dirs import log_dir_results, wanted_partitions
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager
from brokers.zk.paths import PERSISTENT_ROOTS, LogDirEventNotificationZNode
from tests.unit.storage.conftest import batch

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def world(tmp_path):
    log_manager = LogManager([tmp_path / "a", tmp_path / "b"])
    log_manager.startup()
    notified, halted = [], []

    async def config(topic):
        return LogConfig()

    async def notify():
        notified.append(1)

    rm = ReplicaManager(1, log_manager, config, lambda: 100, log_dir_event_notifier=notify, halt=halted.append)
    yield rm, log_manager, notified, halted
    log_manager.shutdown()


def lai(tp, leader_epoch=0, is_new=True):
    state = PartitionState(tp.topic, tp.partition, 1, 1, leader_epoch, (1, 2), 0, (1, 2), is_new)
    return LeaderAndIsrRequest(9, 1, 100, (state,), ())


def test_the_failed_dirs_partitions_go_offline_and_the_others_stay(world):
    rm, log_manager, notified, halted = world
    for tp in (T0, T1):
        assert run(rm.become_leader_or_follower(lai(tp))).partition_errors == ((tp.topic, tp.partition, 0),)
    failed_dir = log_manager.log_dir_of(T1)
    log_manager.failure_channel.maybe_add_offline_log_dir(failed_dir, "test")
    assert run(rm.handle_log_dir_failure(failed_dir)) == [T1]
    assert notified == [1] and halted == []
    assert rm.offline_partitions == {T1} and T1 not in rm.partitions
    assert leader_partition(rm, T0).is_leader
    with pytest.raises(PartitionError) as refused:
        leader_partition(rm, T1)
    assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    # the controller's LeaderAndIsr (any epoch) and StopReplica for it answer KAFKA_STORAGE_ERROR
    assert run(rm.become_leader_or_follower(lai(T1, leader_epoch=5))).partition_errors == (("t", 1, 56),)
    stop = StopReplicaRequest(9, 1, 100, (StopReplicaPartition("t", 1, 6, False),))
    assert run(rm.stop_replicas(stop)).partition_errors == (("t", 1, 56),)


def test_a_partition_not_new_is_not_recreated_while_a_dir_is_offline(world):
    rm, log_manager, notified, halted = world
    other = log_manager.online_log_dirs[1]
    log_manager.failure_channel.maybe_add_offline_log_dir(other, "test")
    run(rm.handle_log_dir_failure(other, notify=False))
    assert notified == []
    assert run(rm.become_leader_or_follower(lai(T0, is_new=False))).partition_errors == (("t", 0, 56),)
    assert run(rm.become_leader_or_follower(lai(T1, is_new=True))).partition_errors == (("t", 1, 0),)


def test_losing_every_dir_halts_the_broker(world):
    rm, log_manager, notified, halted = world
    for path in list(log_manager.online_log_dirs):
        log_manager.failure_channel.maybe_add_offline_log_dir(path, "test")
        run(rm.handle_log_dir_failure(path))
    assert halted == [1] and notified == [1]  # the first one was notified; the second halted


def test_describe_log_dirs_results():
    a, b = "/d/a", "/d/b"
    dirs = [(a, None, {T0: 10, T1: 20, TopicPartition("u", 0): 5}), (b, "gone", {})]
    everything = log_dir_results(dirs, None)
    assert everything[1] == {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": b, "topics": []}
    assert everything[0]["error_code"] == ErrorCode.NONE
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in everything[0]["topics"]] == [
        ("t", [0, 1]), ("u", [0])]
    some = log_dir_results(dirs, {T1})
    assert some[0]["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 1, "partition_size": 20, "offset_lag": 0, "is_future_key": False}]}]


def test_wanted_partitions():
    class Topic:
        topic, partitions = "t", (0, 1)

    class Request:
        topics = (Topic,)

    class All:
        topics = None

    assert wanted_partitions(Request) == {T0, T1} and wanted_partitions(All) is None


def test_the_notification_znode():
    data = LogDirEventNotificationZNode.encode(3)
    assert json.loads(data) == {"version": 1, "broker": 3, "event": 1}
    assert LogDirEventNotificationZNode.decode(data) == 3
    with pytest.raises(ValueError):
        LogDirEventNotificationZNode.decode(b'{"version":1}')
    assert LogDirEventNotificationZNode.PATH in PERSISTENT_ROOTS


def test_a_parked_acks_all_produce_fails_with_kafka_storage_error(world):
    rm, log_manager, notified, halted = world

    async def scenario():
        await rm.become_leader_or_follower(lai(T0))
        partition = rm.partitions[T0]
        info = partition.append_as_leader(batch([b"v"]), -1, 0)
        parked = partition.wait_for_acks(info.last_offset + 1)  # follower 2 has not fetched it
        assert not parked.done()
        failed_dir = log_manager.log_dir_of(T0)
        log_manager.failure_channel.maybe_add_offline_log_dir(failed_dir, "test")
        await rm.handle_log_dir_failure(failed_dir)
        return parked.result()

    assert run(scenario()) == ErrorCode.KAFKA_STORAGE_ERROR
