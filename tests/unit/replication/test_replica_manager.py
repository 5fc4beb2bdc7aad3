"""ReplicaManager's fencing (reference §2.2) and its effect on local logs; MetadataCache updates."""
from __future__ import annotations

import asyncio

import pytest

from brokers.control import (
    LeaderAndIsrRequest,
    PartitionState,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager

TP = TopicPartition("t", 0)


@pytest.fixture
def manager(tmp_path):
    log_manager = LogManager([tmp_path])
    log_manager.startup()

    async def config(topic):
        return LogConfig()

    rm = ReplicaManager(1, log_manager, config, lambda: 100)
    yield rm
    log_manager.shutdown()


def lai(controller_epoch=1, leader=1, leader_epoch=0, replicas=(1, 2), broker_epoch=100, topic="t"):
    state = PartitionState(topic, 0, controller_epoch, leader, leader_epoch, tuple(replicas), 0, tuple(replicas))
    return LeaderAndIsrRequest(9, controller_epoch, broker_epoch, (state,), ())


def run(coro):
    return asyncio.run(coro)


def test_leader_and_isr_creates_the_log_and_applies_roles(manager, tmp_path):
    response = run(manager.become_leader_or_follower(lai(leader=1, leader_epoch=0)))
    assert response.error_code == 0 and response.partition_errors == (("t", 0, 0),)
    assert (tmp_path / "t-0").is_dir()
    assert manager.partitions[TP].is_leader
    assert manager.partitions[TP].log.leader_epoch_cache.latest_epoch == 0
    run(manager.become_leader_or_follower(lai(leader=2, leader_epoch=1)))
    assert not manager.partitions[TP].is_leader and manager.partitions[TP].leader == 2


def test_a_request_with_many_new_partitions_reads_each_topics_config_once(tmp_path):
    log_manager = LogManager([tmp_path])
    log_manager.startup()
    reads = []

    async def config(topic):
        reads.append(topic)
        return LogConfig()
    rm = ReplicaManager(1, log_manager, config, lambda: 100)
    try:
        states = tuple(PartitionState(topic, p, 1, 1 + p % 2, 0, (1, 2), 0, (1, 2))
                       for topic in ("a", "b") for p in range(5)) + (PartitionState("c", 0, 1, 2, 0, (2, 3), 0, (2, 3)),)
        response = run(rm.become_leader_or_follower(LeaderAndIsrRequest(9, 1, 100, states, ())))
        assert [e for *_, e in response.partition_errors] == [0] * 10 + [int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert sorted(reads) == ["a", "b"]  # once per topic; "c" is not hosted here
        assert all((tmp_path / f"{t}-{p}").is_dir() for t in ("a", "b") for p in range(5))
        assert rm.partitions[TopicPartition("a", 0)].is_leader and not rm.partitions[TopicPartition("a", 1)].is_leader
    finally:
        log_manager.shutdown()


def test_stale_controller_epoch_is_rejected_whole(manager):
    run(manager.become_leader_or_follower(lai(controller_epoch=5)))
    response = run(manager.become_leader_or_follower(lai(controller_epoch=4, leader_epoch=7, leader=2)))
    assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert manager.partitions[TP].leader_epoch == 0 and manager.controller_epoch == 5
    assert manager.rejected == [("LeaderAndIsr", 9, 4)]


def test_request_for_an_older_registration_is_rejected(manager):
    response = run(manager.become_leader_or_follower(lai(broker_epoch=99)))
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert TP not in manager.partitions
    assert run(manager.become_leader_or_follower(lai(broker_epoch=-1))).error_code == 0  # -1: not set


def test_leader_epoch_must_grow_per_partition(manager):
    run(manager.become_leader_or_follower(lai(leader_epoch=3)))
    response = run(manager.become_leader_or_follower(lai(leader_epoch=3, leader=2)))
    assert response.partition_errors == (("t", 0, int(ErrorCode.STALE_CONTROLLER_EPOCH)),)
    assert manager.partitions[TP].leader == 1


def test_partitions_not_hosted_here_are_refused(manager, tmp_path):
    response = run(manager.become_leader_or_follower(lai(replicas=(2, 3), leader=2)))
    assert response.partition_errors == (("t", 0, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)),)
    assert not (tmp_path / "t-0").exists()


def test_stop_replica_with_delete_removes_the_log(manager, tmp_path):
    run(manager.become_leader_or_follower(lai(leader_epoch=2)))
    stale = StopReplicaRequest(9, 1, 100, (StopReplicaPartition("t", 0, 1, True),))
    assert run(manager.stop_replicas(stale)).partition_errors == (("t", 0, int(ErrorCode.FENCED_LEADER_EPOCH)),)
    assert (tmp_path / "t-0").is_dir()
    deleting = StopReplicaRequest(9, 1, 100, (StopReplicaPartition("t", 0, -2, True),))
    assert run(manager.stop_replicas(deleting)).partition_errors == (("t", 0, 0),)
    assert not (tmp_path / "t-0").exists() and TP not in manager.partitions


def test_leadership_listeners_hear_every_applied_change_even_if_one_raises(manager):
    heard = []

    def broken(tp, is_leader):
        raise RuntimeError("a listener's bug")

    manager.add_listener(broken)
    manager.add_listener(lambda tp, is_leader: heard.append((tp, is_leader)))
    assert run(manager.become_leader_or_follower(lai(leader=1, leader_epoch=0))).partition_errors == (("t", 0, 0),)
    run(manager.become_leader_or_follower(lai(leader=2, leader_epoch=0)))  # stale epoch: not applied, not heard
    run(manager.stop_replicas(StopReplicaRequest(9, 1, 100, (StopReplicaPartition("t", 0, -2, False),))))
    assert heard == [(TP, True), (TP, False)]


def test_metadata_cache_replaces_brokers_and_drops_deleted_partitions():
    cache = MetadataCache(1)
    b1 = BrokerInfo(1, (EndPoint("PLAINTEXT", "h", 9092),), epoch=5)
    b2 = BrokerInfo(2, (EndPoint("PLAINTEXT", "h", 9093),), epoch=6)
    state = PartitionState("t", 0, 1, 2, 0, (2, 1), 0, (2, 1))
    cache.update(UpdateMetadataRequest(3, 1, 5, (state,), (b1, b2)))
    assert cache.controller_id == 3 and cache.leader_of(TP) == b2 and cache.topics() == {"t"}
    gone = PartitionState("t", 0, 1, -2, 0, (2, 1), 0, (2, 1))
    assert cache.update(UpdateMetadataRequest(3, 1, 5, (gone,), (b1,))) == [TP]
    assert cache.partitions == {} and list(cache.live_brokers) == [1]
