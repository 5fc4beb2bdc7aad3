"""Adding partitions to a live topic against ZooKeeper + 3 real brokers (reference §2.5 "Partition
addition"): CreatePartitions from confluent-kafka and kafka-python while a producer writes and a consumer
group reads, ``kafka-topics --alter`` in both modes, Kafka's errors, the controller acting on new partitions
only (not on a rewritten existing one, not on a topic queued for deletion), and a controller failover after
the addition (the new controller loads the new partitions and re-elects their leaders)."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaAdminClient
from kafka.errors import InvalidPartitionsError, InvalidReplicationAssignmentError, UnknownTopicOrPartitionError

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
REFRESH = {"topic.metadata.refresh.interval.ms": 1000}
WARNING = ("WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the "
           "messages will be affected\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    properties = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"}
    with running_cluster(tmp_path_factory.mktemp("partitions") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties=properties) as c:
        yield c


@pytest.fixture
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create_topic(admin: AdminClient, topic: str, partitions: int, rf: int = 3) -> None:
    admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)


def add_partitions(admin: AdminClient, topic: str, total: int, assignment=None, validate_only=False) -> None:
    new = NewPartitions(topic, total) if assignment is None else NewPartitions(topic, total, assignment)
    futures = admin.create_partitions([new], validate_only=validate_only, operation_timeout=30, request_timeout=45)
    futures[topic].result()


def partitions(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """{partition: (leader, replicas, isr)} from Metadata."""
    metadata = admin.list_topics(timeout=30).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in metadata.partitions.values()}


def all_led(admin: AdminClient, topic: str, count: int, live: set[int]):
    found = partitions(admin, topic)
    led = all(leader in live and leader in isr for leader, _, isr in found.values())
    ok = sorted(found) == list(range(count)) and led
    return found if ok else None


def every_broker_knows(cluster: Cluster, topic: str, count: int) -> bool:
    """Each running broker's metadata cache (its /healthz) has ``count`` partitions of ``topic``, all led."""
    for broker in cluster.broker_ids:
        health = cluster.health(broker)
        if health is None:
            return False
        states = [s for tp, s in health["metadata"]["partitions"].items() if tp.rsplit("-", 1)[0] == topic]
        if len(states) != count or any(s["leader"] < 0 for s in states):
            return False
    return True


def requests_served(cluster: Cluster, api: str) -> dict[int, int]:
    """{version: count} of ``api`` requests, summed over the running brokers' /metrics."""
    counts: dict[int, int] = {}
    pattern = re.compile(rf'kafka_network_request_duration_seconds_count\{{api="{api}",version="(\d+)"\}} (\S+)')
    for broker in cluster.broker_ids:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{cluster.http_port(broker)}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            continue
        for version, n in pattern.findall(text):
            counts[int(version)] = counts.get(int(version), 0) + int(float(n))
    return counts


def error_code(exc: KafkaException) -> int:
    return exc.args[0].code()


# -- (a) live producer and consumer group ---------------------------------------------------------------
class Member:
    """A confluent-kafka group member (subscribe) polling on its own thread."""

    def __init__(self, cluster: Cluster, group: str, topic: str, name: str):
        self.name = name
        self.owned: set[int] = set()
        self.records: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": name,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                  "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 50, **REFRESH})
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer, assigned):
        self.owned |= {p.partition for p in assigned}

    def _on_revoke(self, consumer, revoked):
        self.owned -= {p.partition for p in revoked}

    def _run(self):
        while not self._stop.is_set():
            for m in self.consumer.consume(500, timeout=0.2):
                if m.error() is None:
                    self.records.append((m.partition(), m.offset(), m.value()))
                else:
                    self.errors.append(str(m.error()))

    def close(self):
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


class Writer:
    """A confluent-kafka producer writing keyed and unkeyed records until stopped; keeps what was acked."""

    def __init__(self, cluster: Cluster, topic: str):
        self.topic = topic
        self.acked: list[tuple[int, int, bytes]] = []
        self.failed: list[str] = []
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                                  **REFRESH})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err, msg):
        if err is None:
            self.acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            self.failed.append(str(err))

    def _run(self):
        i = 0
        while not self._stop.wait(0.01):
            for _ in range(5):
                key = f"key-{i % 16}".encode() if i % 2 else None
                self.producer.produce(self.topic, f"v{i}".encode(), key, on_delivery=self._delivered)
                i += 1
            self.producer.poll(0)

    def acked_in(self, partition: int) -> int:
        return sum(1 for p, _, _ in self.acked if p == partition)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert self.producer.flush(60) == 0


def test_partitions_added_under_load_reach_the_producer_and_the_group(cluster, admin):
    topic, group = "growing", "growing-group"
    create_topic(admin, topic, 2)
    writer = Writer(cluster, topic)
    members = [Member(cluster, group, topic, f"member-{i}") for i in range(2)]
    try:
        wait_for(lambda: sorted(p for m in members for p in m.owned) == [0, 1], 60, "the group to own partitions 0-1")
        wait_for(lambda: writer.acked_in(0) > 20 and writer.acked_in(1) > 20, 30, "records in partitions 0 and 1")

        add_partitions(admin, topic, 4)
        assert sorted(all_led(admin, topic, 4, set(cluster.broker_ids))) == [0, 1, 2, 3]  # answered once led
        wait_for(lambda: every_broker_knows(cluster, topic, 4), 30, "every broker's metadata to show 4 partitions")

        wait_for(lambda: writer.acked_in(2) > 20 and writer.acked_in(3) > 20, 60,
                 "the producer to write into the new partitions 2 and 3")
        wait_for(lambda: sorted(p for m in members for p in m.owned) == [0, 1, 2, 3] and all(m.owned for m in members),
                 60, "the group to rebalance over all 4 partitions")
        probe = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "growing-probe"})
        try:
            for p in (2, 3):
                low, high = probe.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                assert low == 0 and high >= 20
        finally:
            probe.close()
    finally:
        writer.stop()
    try:
        acked = {value for _, _, value in writer.acked}
        wait_for(lambda: acked <= {value for m in members for _, _, value in m.records}, 60,
                 "every acknowledged record to be consumed")
        consumed = {(p, offset): value for m in members for p, offset, value in m.records}
        assert all(consumed[(p, offset)] == value for p, offset, value in writer.acked)  # where the producer was told
        assert not writer.failed
    finally:
        for m in members:
            m.close()


# -- (b) kafka-topics --alter --------------------------------------------------------------------------
def kafka_topics(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "kafka-topics"), *args], capture_output=True, text=True, timeout=90)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.mark.parametrize("mode", ["--bootstrap-server", "--zookeeper"])
def test_kafka_topics_alter_adds_partitions(cluster, admin, mode):
    topic = f"altered{mode.replace('-', '_')}"
    connect = cluster.bootstrap_servers if mode == "--bootstrap-server" else cluster.zookeeper_connect
    create_topic(admin, topic, 2, rf=2)
    before = partitions(admin, topic)

    grown = kafka_topics(mode, connect, "--alter", "--topic", topic, "--partitions", "4")
    assert (grown.returncode, grown.stdout) == (0, WARNING + "Adding partitions succeeded!\n"), grown.stderr
    first = before[0][1][0]  # the round robin continues from partition 0's first replica
    explicit = "1:2,2:3,3:1,1:2,3:2"  # covers all 5 partitions: only the last entry is new
    grown = kafka_topics(mode, connect, "--alter", "--topic", topic, "--partitions", "5",
                         "--replica-assignment", explicit)
    assert (grown.returncode, grown.stdout) == (0, WARNING + "Adding partitions succeeded!\n"), grown.stderr

    def described():
        out = kafka_topics(mode, connect, "--describe", "--topic", topic).stdout
        return out if out.count("\n") == 6 and "Leader: none" not in out and "Isr: \n" not in out else None

    header, *rows = wait_for(described, 30, f"{topic}'s 5 partitions with leaders", interval=0).splitlines()
    assert header == f"Topic: {topic}\tPartitionCount: 5\tReplicationFactor: 2\tConfigs: "
    found = {}
    for row in rows:
        match = re.fullmatch(rf"\tTopic: {topic}\tPartition: (\d)\tLeader: (\d)\tReplicas: (\d,\d)\tIsr: ([\d,]+)", row)
        assert match, row
        found[int(match[1])] = (int(match[2]), match[3], set(match[4].split(",")))
    assert {p: found[p][1] for p in (0, 1)} == {p: ",".join(map(str, before[p][1])) for p in (0, 1)}  # untouched
    ordered = sorted(cluster.broker_ids)
    assert [int(found[p][1].split(",")[0]) for p in (2, 3)] == [ordered[(ordered.index(first) + p) % 3] for p in (2, 3)]
    assert found[4][1] == "3,2"
    for leader, replicas, isr in found.values():
        assert str(leader) == replicas.split(",")[0] and isr == set(replicas.split(","))


@pytest.mark.parametrize("mode", ["--bootstrap-server", "--zookeeper"])
def test_kafka_topics_alter_errors(cluster, admin, mode):
    connect = cluster.bootstrap_servers if mode == "--bootstrap-server" else cluster.zookeeper_connect
    topic = f"alter_errors{mode.replace('-', '_')}"
    create_topic(admin, topic, 3, rf=1)
    fewer = kafka_topics(mode, connect, "--alter", "--topic", topic, "--partitions", "2")
    assert fewer.returncode == 1 and "INVALID_PARTITIONS" in fewer.stderr
    assert "Topic currently has 3 partitions, which is higher than the requested 2." in fewer.stderr
    unknown = kafka_topics(mode, connect, "--alter", "--topic", "no-such-topic", "--partitions", "2")
    assert unknown.returncode == 1 and "does not exist" in unknown.stderr
    bad = kafka_topics(mode, connect, "--alter", "--topic", topic, "--partitions", "4",
                       "--replica-assignment", "1,2,3,9")
    assert bad.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in bad.stderr and "9" in bad.stderr
    assert len(partitions(admin, topic)) == 3
    offsets = kafka_topics(mode, connect, "--alter", "--topic", "__consumer_offsets", "--partitions", "60")
    assert offsets.returncode == 1 and "offsets topic cannot be changed" in offsets.stderr
    for args, flag in [(["--alter", "--topic", topic], "--partitions"),
                       (["--alter", "--partitions", "4"], "--topic"),
                       (["--alter", "--topic", topic, "--partitions", "4", "--replica-assignment", "1:x"],
                        "--replica-assignment"),
                       (["--create", "--topic", "x", "--partitions", "1", "--replication-factor", "1",
                         "--replica-assignment", "1"], "--replica-assignment")]:
        result = kafka_topics(mode, connect, *args)
        assert result.returncode == 2 and flag in result.stderr, (args, result.stderr)


# -- (c) the API's errors, from both client libraries ---------------------------------------------------
def test_create_partitions_errors_with_confluent_kafka(cluster, admin):
    create_topic(admin, "cp-errors", 3, rf=2)
    cases = [(NewPartitions("cp-errors", 2), KafkaError.INVALID_PARTITIONS, "which is higher than the requested 2"),
             (NewPartitions("cp-errors", 3), KafkaError.INVALID_PARTITIONS, "Topic already has 3 partitions."),
             (NewPartitions("cp-errors", 4, [[1, 9]]), KafkaError.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s)"),
             (NewPartitions("cp-errors", 5, [[1, 2]]), KafkaError.INVALID_REPLICA_ASSIGNMENT, "by 2 but 1 assignments"),
             (NewPartitions("cp-errors", 4, [[1]]), KafkaError.INVALID_REPLICA_ASSIGNMENT, "Inconsistent replication"),
             (NewPartitions("cp-missing", 4), KafkaError.UNKNOWN_TOPIC_OR_PART, "does not exist")]
    for new, code, text in cases:
        with pytest.raises(KafkaException) as info:
            admin.create_partitions([new], request_timeout=30)[new.topic].result()
        assert error_code(info.value) == code and text in info.value.args[0].str(), info.value
    add_partitions(admin, "cp-errors", 6, validate_only=True)
    assert len(partitions(admin, "cp-errors")) == 3  # validate_only wrote nothing
    add_partitions(admin, "cp-errors", 4, [[3, 1]])
    assert all_led(admin, "cp-errors", 4, set(cluster.broker_ids))[3][1] == [3, 1]
    assert 2 in requests_served(cluster, "CreatePartitions")  # librdkafka 2.16 sends v2 (flexible)


def test_create_partitions_with_kafka_python(cluster, admin):
    create_topic(admin, "kp-partitions", 2, rf=2)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        with pytest.raises(InvalidPartitionsError):
            client.create_partitions({"kp-partitions": 1})
        with pytest.raises(InvalidReplicationAssignmentError):
            client.create_partitions({"kp-partitions": {"count": 3, "assignments": [[1, 1]]}})
        with pytest.raises(UnknownTopicOrPartitionError):
            client.create_partitions({"kp-missing": 3})
        client.create_partitions({"kp-partitions": {"count": 4, "assignments": [[2, 3], [3, 2]]}}, timeout_ms=30000)
    finally:
        client.close()
    found = all_led(admin, "kp-partitions", 4, set(cluster.broker_ids))
    assert found and [found[p][1] for p in (2, 3)] == [[2, 3], [3, 2]]
    assert 3 in requests_served(cluster, "CreatePartitions")  # kafka-python's (flexible) version


# -- the controller acts on new partitions only ----------------------------------------------------------
def test_the_controller_leaves_existing_partitions_replica_lists_alone(cluster, admin, zk):
    create_topic(admin, "rewritten", 1, rf=2)
    before = all_led(admin, "rewritten", 1, set(cluster.broker_ids))
    data, _ = zk.get("/brokers/topics/rewritten")
    value = json.loads(data)
    moved = [b for b in cluster.broker_ids if b not in before[0][1]] + before[0][1][:1]  # what a reassignment writes
    value["partitions"] = {"0": moved, "1": before[0][1]}
    zk.set("/brokers/topics/rewritten", json.dumps(value).encode())
    after = wait_for(lambda: all_led(admin, "rewritten", 2, set(cluster.broker_ids)), 30, "partition 1 online")
    assert after[0][:2] == before[0][:2] and after[1][1] == before[0][1]  # partition 0 as it was


def test_a_topic_queued_for_deletion_gets_no_new_partitions(cluster, admin, zk):
    controller, _ = cluster.controller()
    host = next(b for b in cluster.broker_ids if b != controller)
    admin.create_topics([NewTopic("doomed", num_partitions=1, replica_assignment=[[host]])])["doomed"].result(30)
    wait_for(lambda: all_led(admin, "doomed", 1, {host}), 30, "doomed's partition online")
    seen: list[list[str]] = []
    zk.ChildrenWatch("/brokers/topics/doomed/partitions", lambda children: seen.append(sorted(children)))
    cluster.stop_broker(host)  # the deletion waits for the replica's broker
    try:
        zk.create("/admin/delete_topics/doomed", makepath=True)
        with pytest.raises(KafkaException) as info:
            add_partitions(admin, "doomed", 2)
        assert error_code(info.value) == KafkaError.TOPIC_EXCEPTION
        assert info.value.args[0].str() == "The topic is queued for deletion."
        data, _ = zk.get("/brokers/topics/doomed")  # a writer that bypasses the checks: the controller ignores it
        value = json.loads(data)
        value["partitions"]["1"] = [controller]
        zk.set("/brokers/topics/doomed", json.dumps(value).encode())
    finally:
        cluster.start_broker(host)
    wait_for(lambda: zk.exists("/brokers/topics/doomed") is None, 60, "the deletion to complete")
    assert seen and all(children == ["0"] for children in seen if children), seen


# -- (d) controller failover --------------------------------------------------------------------------
def test_a_new_controller_knows_the_added_partitions(cluster, admin):
    topic = "failover-growth"
    create_topic(admin, topic, 1, rf=2)  # RF 2: partitions can still be added with one broker down
    controller, epoch = cluster.controller()
    others = [b for b in cluster.broker_ids if b != controller]
    add_partitions(admin, topic, 3, [[controller, others[0]], [controller, others[1]]])
    before = all_led(admin, topic, 3, set(cluster.broker_ids))
    assert before[1][0] == before[2][0] == controller  # the new partitions are led by the controller's broker

    cluster.signal_broker(controller, signal.SIGKILL)
    survivor = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{cluster.kafka_port(b)}" for b in others)})
    try:
        new = wait_for(lambda: (c := cluster.controller()) and c[0] != controller and c, 60, "a new controller")
        assert new[1] > epoch
        after = wait_for(lambda: all_led(survivor, topic, 3, set(others)), 60,
                         "the added partitions to get leaders from the new controller")
        assert {p: after[p][1] for p in (1, 2)} == {p: before[p][1] for p in (1, 2)}
        add_partitions(survivor, topic, 4)  # and it still watches the topic
        assert sorted(wait_for(lambda: all_led(survivor, topic, 4, set(others)), 30, "partition 3")) == [0, 1, 2, 3]
    finally:
        cluster.start_broker(controller)
        cluster.wait_until_ready(60)
