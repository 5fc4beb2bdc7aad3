"""Preferred leaders against real processes: a real ZooKeeper, three real brokers, kill -9.

Leadership is made to drift: a broker is killed with SIGKILL, its partitions get other leaders, it
restarts and rejoins every ISR as a follower. Then:

1. ``auto.leader.rebalance.enable=true`` with ``leader.imbalance.check.interval.seconds=3``: every
   partition's leader returns to ``assignment[0]`` (read from ZooKeeper's state znodes) by itself.
2. ``auto.leader.rebalance.enable=false``: leadership stays drifted (checked over a bounded interval)
   until elected by hand: ``kafka-leader-election`` (--topic/--partition, --path-to-json-file), the
   ``/admin/preferred_replica_election`` znode written with kazoo (gone afterwards), confluent-kafka's
   and kafka-python's ElectLeaders -- ELECTION_NOT_NEEDED when already preferred,
   UNKNOWN_TOPIC_OR_PARTITION for unknown partitions -- while an acks=all producer runs, which loses no
   acknowledged record.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient
from kazoo.client import KazooClient

from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for
from tests.integration.znodes import controller_id

SESSION_MS = 4000
BIN = Path(sys.executable).parent
ZNODE = "/admin/preferred_replica_election"


@pytest.fixture
def preferred_cluster(make_cluster):
    """3 brokers with a 3 s leader-imbalance check (conftest's ``make_cluster``)."""
    return lambda properties: make_cluster(3, session_timeout_ms=SESSION_MS, properties={
        "leader.imbalance.check.interval.seconds": "3", **properties})


# -- ZooKeeper's view -----------------------------------------------------------------------------------

def assignment(zk: KazooClient, topic: str) -> dict[int, list[int]]:
    data, _ = zk.get(f"/brokers/topics/{topic}")
    return {int(p): replicas for p, replicas in json.loads(data)["partitions"].items()}


def state(zk: KazooClient, topic: str, partition: int) -> dict:
    data, _ = zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data)


def not_preferred(zk: KazooClient, topic: str) -> list[int]:
    """The partitions whose leader is not their preferred replica (``assignment[0]``)."""
    return [p for p, replicas in sorted(assignment(zk, topic).items()) if state(zk, topic, p)["leader"] != replicas[0]]


def holds_for(condition, seconds: float, what: str) -> None:
    """``condition()`` stays true for ``seconds`` (polled); AssertionError naming ``what`` if it breaks."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert condition(), f"{what} stopped holding"
        time.sleep(0.2)
    assert condition(), f"{what} stopped holding"


def create_topic(cluster: Cluster, zk: KazooClient, topic: str, replica_assignment=None, partitions: int = 6) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    new = (NewTopic(topic, num_partitions=len(replica_assignment), replica_assignment=replica_assignment)
           if replica_assignment
           else NewTopic(topic, num_partitions=partitions, replication_factor=3))
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)
    wait_for(lambda: zk.exists(f"/brokers/topics/{topic}") and all(
        zk.exists(f"/brokers/topics/{topic}/partitions/{p}/state") and len(state(zk, topic, p)["isr"]) == 3
        for p in assignment(zk, topic)), 30, f"{topic} online with full ISRs")
    assert not_preferred(zk, topic) == []


def non_controller(cluster: Cluster) -> int:
    controller, _ = wait_for(cluster.controller, 30, "a controller")
    return max(b for b in cluster.broker_ids if b != controller)


def drift(cluster: Cluster, zk: KazooClient, topic: str, victim: int) -> list[int]:
    """kill -9 ``victim``; once its partitions have other leaders restart it and wait until it is back in
    every ISR. Returns the partitions it prefers (now led by others)."""
    preferred = [p for p, replicas in assignment(zk, topic).items() if replicas[0] == victim]
    assert preferred, f"premise: broker {victim} is the preferred replica of some {topic} partition"
    cluster.signal_broker(victim, signal.SIGKILL)
    wait_for(lambda: all(state(zk, topic, p)["leader"] not in (victim, -1) for p in preferred),
             SESSION_MS / 1000 + 30, f"{topic}: leadership moved off broker {victim}")
    cluster.start_broker(victim)
    cluster.wait_until_ready(60)
    wait_for(lambda: all(victim in state(zk, topic, p)["isr"] for p in assignment(zk, topic)), 60,
             f"broker {victim} back in every ISR of {topic}")
    return preferred


def tool(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "kafka-leader-election"), *argv], capture_output=True, text=True, timeout=90)


# -- 1. automatic ---------------------------------------------------------------------------------------------

def test_auto_leader_rebalance_returns_leadership_to_the_preferred_replicas(preferred_cluster):
    cluster, zk = preferred_cluster({})
    topic = "auto-rebalance"
    create_topic(cluster, zk, topic)
    victim = non_controller(cluster)
    epochs = {p: state(zk, topic, p)["leader_epoch"] for p in assignment(zk, topic)}
    moved = drift(cluster, zk, topic, victim)

    wait_for(lambda: not_preferred(zk, topic) == [], 30, f"every {topic} leader back on its preferred replica")
    for p in moved:  # lost leadership once, won it back once more
        assert state(zk, topic, p)["leader_epoch"] >= epochs[p] + 2
        assert len(state(zk, topic, p)["isr"]) == 3  # the ISR is unchanged by a preferred election
    # and clients are told: Metadata shows the preferred leaders
    preferred = {p: replicas[0] for p, replicas in assignment(zk, topic).items()}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    wait_for(lambda: {p: m.leader for p, m in admin.list_topics(topic, timeout=10).topics[topic].partitions.items()}
             == preferred, 15, "Metadata to show the preferred leaders")
    assert len(preferred) == 6


# -- 2. by hand -----------------------------------------------------------------------------------------------

class AckedProducer(threading.Thread):
    """acks=all to every partition until stopped; remembers each acknowledged value."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int):
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.stop = threading.Event()

    def _report(self, err, msg) -> None:
        if err is None:
            self.acked.add(msg.value())
        else:
            self.failed.append(str(err))

    def run(self) -> None:
        seq = 0
        while not self.stop.is_set():
            try:
                self.producer.produce(self.topic, value=b"%08d" % seq, partition=seq % self.partitions,
                                      on_delivery=self._report)
                seq += 1
            except BufferError:
                pass
            self.producer.poll(0.002)
        self.unflushed = self.producer.flush(60)


def read_all(cluster: Cluster, topic: str, partitions: int) -> set[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "verify",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: set[bytes] = set()
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + 60
        while len(done) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            seen.add(msg.value())
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        assert len(done) == partitions, f"could not read {topic} up to {ends}"
        return seen
    finally:
        consumer.close()


def python_elect(cluster: Cluster, topic_partitions: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        response = admin.elect_leaders(0, topic_partitions, raise_errors=False)
    finally:
        admin.close()
    return {(r.topic, p.partition_id): p.error_code for r in response.replica_election_results
            for p in r.partition_result}


def confluent_elect(cluster: Cluster, partitions: list[TopicPartition]) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    results = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(timeout=60)

    def code(error) -> int:
        if error is None:
            return 0
        return (error.args[0] if isinstance(error, KafkaException) else error).code()

    return {(tp.topic, tp.partition): code(error) for tp, error in results.items()}


def test_manual_elections_with_auto_rebalance_off(preferred_cluster, tmp_path):
    cluster, zk = preferred_cluster({"auto.leader.rebalance.enable": "false"})
    topic = "manual"
    controller, _ = wait_for(cluster.controller, 30, "a controller")
    victim = non_controller(cluster)
    third = next(b for b in cluster.broker_ids if b not in (controller, victim))
    # the victim prefers partitions 0-4, so each way of electing gets one of them; after its kill -9,
    # 4 is led by the third broker (not the controller)
    rows = [[victim, controller, third], [victim, third, controller]] * 2 + [[victim, third, controller],
                                                                             [controller, victim, third]]
    create_topic(cluster, zk, topic, replica_assignment=rows)
    moved = drift(cluster, zk, topic, victim)
    assert moved == [0, 1, 2, 3, 4]
    holds_for(lambda: not_preferred(zk, topic) == [0, 1, 2, 3, 4], 8,
              "drifted leadership with auto.leader.rebalance.enable=false (first check would be at 5 s, then 3 s)")

    producer = AckedProducer(cluster, topic, len(rows))
    producer.start()
    try:
        wait_for(lambda: len(producer.acked) > 200, 30, "the producer to get going")

        # the tool, one partition
        done = tool("--bootstrap-server", cluster.bootstrap_servers, "--election-type", "PREFERRED",
                    "--topic", topic, "--partition", "0")
        assert (done.returncode, done.stdout) == (
            0, f"Successfully completed leader election (PREFERRED) for partitions {topic}-0\n"), done.stderr
        assert not_preferred(zk, topic) == [1, 2, 3, 4]

        # the znode, written as Kafka's kafka-preferred-replica-election --zookeeper does
        zk.create(ZNODE, json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1}]}).encode())
        wait_for(lambda: not zk.exists(ZNODE) and not_preferred(zk, topic) == [2, 3, 4], 30,
                 "the znode's election done and the znode deleted by the controller")

        # confluent-kafka: elected, not needed, unknown
        got = confluent_elect(cluster, [TopicPartition(topic, 2), TopicPartition(topic, 0),
                                        TopicPartition(topic, 99), TopicPartition("no-such-topic", 0)])
        assert got == {(topic, 2): 0, (topic, 0): KafkaError.ELECTION_NOT_NEEDED,
                       (topic, 99): KafkaError.UNKNOWN_TOPIC_OR_PART, ("no-such-topic", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}
        assert not_preferred(zk, topic) == [3, 4]

        # kafka-python
        got = python_elect(cluster, {topic: [3, 1], "no-such-topic": [0]})
        assert got == {(topic, 3): 0, (topic, 1): 84, ("no-such-topic", 0): 3}
        assert not_preferred(zk, topic) == [4]
        wait_for(lambda: len(producer.acked) > 400, 30, "the producer to go on after the elections")
    finally:
        producer.stop.set()
        producer.join(90)
    assert producer.unflushed == 0 and producer.failed == [], producer.failed[:5]
    missing = producer.acked - read_all(cluster, topic, len(rows))
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"

    # the JSON file way: "already elected" for all of those
    path = tmp_path / "elected.json"
    elected = [0, 1, 2, 3, 5]
    path.write_text(json.dumps({"partitions": [{"topic": topic, "partition": p} for p in elected]}))
    noop = tool("--bootstrap-server", cluster.bootstrap_servers, "--election-type", "preferred",
                "--path-to-json-file", str(path))
    assert (noop.returncode, noop.stdout) == (0, "Valid replica already elected for partitions "
                                                 + ", ".join(f"{topic}-{p}" for p in elected) + "\n")
    unknown = tool("--bootstrap-server", cluster.bootstrap_servers, "--election-type", "preferred",
                   "--topic", "no-such-topic", "--partition", "0")
    assert unknown.returncode == 1
    assert unknown.stdout.startswith("Error completing leader election (PREFERRED) for partition: no-such-topic-0: "
                                     "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "), unknown.stdout

    # a znode written while no controller can act is processed by the next one at its failover
    cluster.signal_broker(controller, signal.SIGSTOP)
    zk.create(ZNODE, json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 4}]}).encode())
    assert json.loads(zk.get("/controller")[0])["brokerid"] == controller  # not deposed yet
    wait_for(lambda: controller_id(zk) not in (None, controller)
             and not zk.exists(ZNODE) and state(zk, topic, 4)["leader"] == victim, SESSION_MS / 1000 + 30,
             "a new controller to process the pending znode at failover")
