"""Offsets inside transactions against a real ZooKeeper and real brokers: TxnOffsetCommit leaves the offsets
pending in ``/consumers/<group>/txn_offsets/<producer id>`` (not in ``/consumers/<group>/offsets``),
OffsetFetch v7 ``require_stable`` answers UNSTABLE_OFFSET_COMMIT, a lower producer epoch is fenced, and the
pending offsets survive the death of the group's coordinator; the marker moves them into the committed
offsets in one ZooKeeper multi (COMMIT) or drops them (ABORT), also on a coordinator that loaded them
after a failover."""
from __future__ import annotations

import asyncio
import json
import signal

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.zk.gateway import ZkGateway
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.offset_store import ZkOffsetStore
from consumer_group.coordinator.placement import partition_for
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection
from tests.integration.znodes import connected_zk

FIND_COORDINATOR, OFFSET_FETCH, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT = 10, 9, 27, 28
PID = 7000
OFFSETS_PARTITIONS = 3
T0, T1 = TopicPartition("paid", 0), TopicPartition("paid", 1)


# ======================================================================================================
# the coordinator over ZkOffsetStore on a bare ZooKeeper: the store's multi and a coordinator failover
async def zk_client(zookeeper, chroot: str) -> KafkaZkClient:
    gateway = ZkGateway(zookeeper.connect_string + chroot, session_timeout_ms=4000)
    await gateway.start()
    kzc = KafkaZkClient(gateway)
    await kzc.create_persistent_roots()
    return kzc


async def elected_coordinator(kzc: KafkaZkClient) -> GroupCoordinator:
    coordinator = GroupCoordinator(1, GroupConfig(offsets_topic_num_partitions=1), ZkOffsetStore(kzc))
    coordinator.on_elected(0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while coordinator.group_error("g") is not None:
        assert loop.time() < deadline, "the coordinator did not load its partition"
        await asyncio.sleep(0.01)
    return coordinator


async def children(kzc: KafkaZkClient, path: str) -> list[str]:
    return sorted(await kzc.zk.get_children(path)) if await kzc.zk.exists(path) else []


def test_pending_offsets_commit_in_one_multi_abort_and_survive_a_coordinator_failover(zookeeper):
    async def main():
        kzc = await zk_client(zookeeper, "/txn-offsets")
        old = await elected_coordinator(kzc)
        await old.commit_offsets("g", -1, "", None, {T1: (3, "")})
        assert await old.commit_txn_offsets("g", PID, 2, "", None, -1, {T0: (5, "md", 1)}) == {T0: ErrorCode.NONE}
        assert await old.commit_txn_offsets("g", PID, 2, "", None, -1, {T1: (6, None, -1)}) == {T1: ErrorCode.NONE}
        data, _ = await kzc.zk.get("/consumers/g/txn_offsets/7000")
        assert json.loads(data) == {"version": 1, "producer_epoch": 2,
                                    "offsets": {"paid": {"0": [5, "md", 1], "1": [6, "", -1]}}}
        assert await kzc.get_consumer_offsets("g") == {T1: 3}  # not committed yet
        await old.shutdown()  # the coordinator moves; a new one loads the partition from ZooKeeper

        new = await elected_coordinator(kzc)
        assert new.unstable_offsets("g") == {T0, T1}
        assert await new.commit_txn_offsets("g", PID, 1, "", None, -1, {T0: (1, "", -1)}) == {
            T0: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert await new.complete_transaction(0, PID, 2, True, 0) == ErrorCode.NONE
        assert await kzc.get_consumer_offsets("g") == {T0: 5, T1: 6}
        assert await children(kzc, "/consumers/g/txn_offsets") == []
        assert new.fetch_offsets("g", [T0])[1][T0].metadata == "md"
        assert await new.complete_transaction(0, PID, 2, True, 0) == ErrorCode.NONE  # retried marker

        assert await new.commit_txn_offsets("g", PID + 1, 0, "", None, -1, {T0: (50, "", -1)}) == {
            T0: ErrorCode.NONE}
        assert await children(kzc, "/consumers/g/txn_offsets") == ["7001"]
        assert await new.complete_transaction(0, PID + 1, 0, False, 0) == ErrorCode.NONE
        assert await children(kzc, "/consumers/g/txn_offsets") == []
        assert await kzc.get_consumer_offsets("g") == {T0: 5, T1: 6}
        await new.shutdown()
        await kzc.zk.close()

    asyncio.run(main())


def test_the_commit_multi_writes_nothing_when_the_pending_znode_is_gone(zookeeper):
    async def main():
        kzc = await zk_client(zookeeper, "/txn-multi")
        await kzc.set_txn_offsets("g", PID, 0, {T0: (9, "", -1)})
        await kzc.delete_txn_offsets("g", PID)
        await kzc.delete_txn_offsets("g", PID)  # absent already: fine
        with pytest.raises(ZkError):
            await kzc.commit_txn_offsets("g", PID, {T0: 9}, set(), (0, 0))
        assert await kzc.get_consumer_offsets("g") == {}  # all or nothing
        assert await children(kzc, "/consumers/g/txn_producers") == []
        await kzc.zk.close()

    asyncio.run(main())


def test_completing_records_the_producer_epochs_and_a_landed_commit_retried_succeeds(zookeeper):
    async def main():
        kzc = await zk_client(zookeeper, "/txn-idempotent")
        store = ZkOffsetStore(kzc)
        await kzc.set_txn_offsets("g", PID, 3, {T0: (9, "", -1)})
        await kzc.commit_txn_offsets("g", PID, {T0: 9}, set(), (3, 7))  # landed; its answer was lost
        await store.commit_txn_offsets("g", PID, {T0: 9}, (3, 7))  # the retry: no error, nothing written twice
        assert await kzc.get_consumer_offsets("g") == {T0: 9}
        data, _ = await kzc.zk.get("/consumers/g/txn_producers/7000")
        assert json.loads(data) == {"version": 1, "producer_epoch": 3, "coordinator_epoch": 7}

        await kzc.set_txn_offsets("g", PID + 1, 0, {T1: (4, "", -1)})
        await store.abort_txn_offsets("g", PID + 1, (1, 7))
        await store.abort_txn_offsets("g", PID + 1, (1, 7))  # a retried ABORT: the pending znode is gone
        assert await children(kzc, "/consumers/g/txn_offsets") == []
        assert await store.load_txn_producers(["g", "other"]) == {"g": {PID: (3, 7), PID + 1: (1, 7)}}
        assert await kzc.get_consumer_offsets("g") == {T0: 9}

        await store.delete_group("g")  # the records go with the group
        assert await store.load_txn_producers(["g"]) == {}
        await kzc.zk.close()

    asyncio.run(main())


# ======================================================================================================
# raw requests to a real cluster
@pytest.fixture
def cluster(tmp_path):
    # raw TxnOffsetCommits of made-up producers (no transaction coordinator involved): KIP-890's verification,
    # which refuses offsets outside an Ongoing transaction, is off here
    properties = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "replica.fetch.backoff.ms": "200",
                  "transaction.partition.verification.enable": "false"}
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=4000,
                         properties=properties) as c:
        yield c


def call(cluster: Cluster, broker: int, api_key: int, version: int, **fields):
    with RawConnection("127.0.0.1", cluster.kafka_port(broker), client_id="txn-offsets") as conn:
        return conn.request(api_key, version, **fields)


def coordinator_of(cluster: Cluster, group: str, alive: list[int]) -> int | None:
    for broker in alive:
        try:
            found = call(cluster, broker, FIND_COORDINATOR, 1, key=group, key_type=0)
        except OSError:
            continue
        if found.error_code == ErrorCode.NONE and found.node_id in alive:
            return found.node_id
    return None


def txn_offset_commit(cluster: Cluster, broker: int, group: str, epoch: int, offsets: dict, pid: int = PID) -> dict:
    response = call(cluster, broker, TXN_OFFSET_COMMIT, 3, transactional_id="tx", group_id=group, producer_id=pid,
                    producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None, topics=[
                        dict(name="paid", partitions=[dict(partition_index=tp.partition, committed_offset=o,
                                                           committed_leader_epoch=-1, committed_metadata="")
                                                      for tp, o in offsets.items()])])
    return {TopicPartition(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def write_txn_marker(cluster: Cluster, broker: int, group: str, pid: int, epoch: int, commit: bool,
                     coordinator_epoch: int = 0) -> int:
    """WriteTxnMarkers v1 to the group's ``__consumer_offsets`` partition, as the transaction coordinator
    sends it: that partition's error code."""
    response = call(cluster, broker, WRITE_TXN_MARKERS, 1, markers=[dict(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[dict(name="__consumer_offsets", partition_indexes=[partition_for(group, OFFSETS_PARTITIONS)])])])
    (marker,) = response.markers
    return marker.topics[0].partitions[0].error_code


def committed_in_zk(zk, group: str) -> dict[int, int]:
    path = f"/consumers/{group}/offsets/paid"
    return {int(p): int(zk.get(f"{path}/{p}")[0]) for p in zk.get_children(path)} if zk.exists(path) else {}


def offset_fetch(cluster: Cluster, broker: int, group: str, require_stable: bool) -> tuple[int, dict]:
    response = call(cluster, broker, OFFSET_FETCH, 7, group_id=group, require_stable=require_stable,
                    topics=[dict(name="paid", partition_indexes=[0, 1])])
    return response.error_code, {p.partition_index: (p.error_code, p.committed_offset) for t in response.topics
                                 for p in t.partitions}


def test_txn_offset_commit_is_pending_in_zookeeper_unstable_and_survives_the_coordinator(cluster, zk):
    group = "g-txn"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic("paid", 2, 3)])["paid"].result(30)
    alive = list(cluster.broker_ids)
    coordinator = wait_for(lambda: coordinator_of(cluster, group, alive), 30, "the group's coordinator")
    committed = wait_for(lambda: (lambda r: r if r[T0] == ErrorCode.NONE else None)(
        txn_offset_commit(cluster, coordinator, group, 3, {T0: 42})), 30, "the TxnOffsetCommit accepted")
    assert committed == {T0: ErrorCode.NONE}
    assert not zk.exists(f"/consumers/{group}/offsets/paid")
    pending = json.loads(zk.get(f"/consumers/{group}/txn_offsets/{PID}")[0])
    assert pending == {"version": 1, "producer_epoch": 3, "offsets": {"paid": {"0": [42, "", -1]}}}
    assert offset_fetch(cluster, coordinator, group, True) == (ErrorCode.NONE, {
        0: (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1), 1: (ErrorCode.NONE, -1)})
    assert offset_fetch(cluster, coordinator, group, False) == (ErrorCode.NONE, {
        0: (ErrorCode.NONE, -1), 1: (ErrorCode.NONE, -1)})
    assert txn_offset_commit(cluster, coordinator, group, 2, {T1: 1}) == {T1: ErrorCode.INVALID_PRODUCER_EPOCH}

    other = PID + 1  # another transaction, aborted: its offsets vanish, the first one's stay pending
    assert txn_offset_commit(cluster, coordinator, group, 0, {T1: 7}, pid=other) == {T1: ErrorCode.NONE}
    assert zk.exists(f"/consumers/{group}/txn_offsets/{other}")
    assert write_txn_marker(cluster, coordinator, group, other, 0, False, coordinator_epoch=5) == ErrorCode.NONE
    assert json.loads(zk.get(f"/consumers/{group}/txn_producers/{other}")[0]) == {
        "version": 1, "producer_epoch": 0, "coordinator_epoch": 5}
    assert not zk.exists(f"/consumers/{group}/txn_offsets/{other}") and committed_in_zk(zk, group) == {}
    assert write_txn_marker(cluster, coordinator, group, other, 0, False, 5) == ErrorCode.NONE  # a retried marker
    assert offset_fetch(cluster, coordinator, group, True)[1][1] == (ErrorCode.NONE, -1)

    cluster.signal_broker(coordinator, signal.SIGKILL)
    alive.remove(coordinator)
    successor = wait_for(lambda: coordinator_of(cluster, group, alive), 40, "a new coordinator")
    assert successor != coordinator
    stable = wait_for(lambda: (lambda r: r if r[0] == ErrorCode.NONE else None)(
        offset_fetch(cluster, successor, group, True)), 30, "the new coordinator loaded")
    assert stable == (ErrorCode.NONE, {0: (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1), 1: (ErrorCode.NONE, -1)})
    assert txn_offset_commit(cluster, successor, group, 2, {T1: 1}) == {T1: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert zk.exists(f"/consumers/{group}/txn_offsets/{PID}") and not zk.exists(f"/consumers/{group}/offsets/paid")
    assert write_txn_marker(cluster, successor, group, other, 0, True, coordinator_epoch=4) == \
        ErrorCode.TRANSACTION_COORDINATOR_FENCED  # a deposed transaction coordinator, fenced after the failover

    assert write_txn_marker(cluster, successor, group, PID, 2, True) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert committed_in_zk(zk, group) == {}
    assert write_txn_marker(cluster, successor, group, PID, 3, True) == ErrorCode.NONE
    assert committed_in_zk(zk, group) == {0: 42} and not zk.exists(f"/consumers/{group}/txn_offsets/{PID}")
    assert offset_fetch(cluster, successor, group, True) == (ErrorCode.NONE, {
        0: (ErrorCode.NONE, 42), 1: (ErrorCode.NONE, -1)})
    assert write_txn_marker(cluster, successor, group, PID, 3, True) == ErrorCode.NONE  # a retried marker


INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN = 22, 25, 26


@pytest.fixture
def verifying_cluster(tmp_path):
    """Brokers with KIP-890's verification on (the default)."""
    properties = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "replica.fetch.backoff.ms": "200"}
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=4000,
                         properties=properties) as c:
        yield c


def test_a_txn_offset_commit_retried_after_its_transaction_was_aborted_and_the_group_moved_is_fenced(
        verifying_cluster):
    """Soak seed 7: the transaction was aborted with the epoch bumped (a new instance fenced the producer, or
    it timed out) before the producer's TxnOffsetCommit reached the group coordinator, whose abort marker so found nothing pending; the group's
    coordinator was then killed, and the retried TxnOffsetCommit (old epoch) landed at its successor: pending
    in ZooKeeper for ever (EndTxn _FENCED; OffsetFetch require_stable UNSTABLE_OFFSET_COMMIT for 12 minutes).
    Verified with the transaction coordinator, it is refused and the group's offsets stay stable."""
    cluster, group, txn_id = verifying_cluster, "g-late", "tx-late"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("paid", 2, 3)])["paid"].result(30)
    alive = list(cluster.broker_ids)

    def txn_coordinator() -> int | None:
        for broker in alive:
            found = call(cluster, broker, FIND_COORDINATOR, 1, key=txn_id, key_type=1)
            if found.error_code == ErrorCode.NONE and found.node_id in alive:
                return found.node_id
        return None

    def init() -> tuple[int, int] | None:
        response = call(cluster, wait_for(txn_coordinator, 30, "the transaction coordinator"), INIT_PRODUCER_ID, 1,
                        transactional_id=txn_id, transaction_timeout=60000)
        return (response.producer_id, response.producer_epoch) if response.error_code == ErrorCode.NONE else None

    pid, epoch = wait_for(init, 60, "InitProducerId")
    added = wait_for(lambda: (lambda r: r if r.error_code == ErrorCode.NONE else None)(call(
        cluster, txn_coordinator(), ADD_OFFSETS_TO_TXN, 1, transactional_id=txn_id, producer_id=pid,
        producer_epoch=epoch, group_id=group)), 30, "AddOffsetsToTxn")
    assert added.error_code == ErrorCode.NONE
    # a new instance fences the producer: its InitProducerId aborts the Ongoing transaction (epoch + 1) and
    # answers once the abort's markers are written (CONCURRENT_TRANSACTIONS meanwhile)
    fenced_pid, fenced_epoch = wait_for(init, 60, "the fencing InitProducerId")
    assert fenced_pid == pid and fenced_epoch > epoch + 1

    coordinator = wait_for(lambda: coordinator_of(cluster, group, alive), 30, "the group's coordinator")
    cluster.signal_broker(coordinator, signal.SIGKILL)
    alive.remove(coordinator)
    successor = wait_for(lambda: coordinator_of(cluster, group, alive), 40, "a new group coordinator")
    late = {}

    def retried() -> dict | None:
        late.update(txn_offset_commit_of(cluster, successor, group, txn_id, pid, epoch, {T0: 42}))
        return late if late[T0] not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
                                        ErrorCode.COORDINATOR_NOT_AVAILABLE) else None
    wait_for(retried, 30, "the late TxnOffsetCommit answered")
    assert late == {T0: ErrorCode.INVALID_PRODUCER_EPOCH}
    with connected_zk(cluster) as zk:
        assert not zk.exists(f"/consumers/{group}/txn_offsets/{pid}")
    assert offset_fetch(cluster, successor, group, True) == (ErrorCode.NONE, {
        0: (ErrorCode.NONE, -1), 1: (ErrorCode.NONE, -1)})


def txn_offset_commit_of(cluster: Cluster, broker: int, group: str, txn_id: str, pid: int, epoch: int,
                         offsets: dict) -> dict:
    response = call(cluster, broker, TXN_OFFSET_COMMIT, 3, transactional_id=txn_id, group_id=group,
                    producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
                    topics=[dict(name="paid", partitions=[dict(partition_index=tp.partition, committed_offset=o,
                                                               committed_leader_epoch=-1, committed_metadata="")
                                                          for tp, o in offsets.items()])])
    return {TopicPartition(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
