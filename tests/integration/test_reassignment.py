"""Partition reassignment (KIP-455) against a real ZooKeeper and 4 real brokers.

1. Move a partition from brokers {1,2} to {3,4} with kafka-python's AlterPartitionReassignments while an
   idempotent acks=all producer and a consumer group run: every acknowledged record is consumed, the
   consumer keeps receiving throughout, ZooKeeper ends with RS = [3,4] and ISR = {3,4}, the new replicas
   hold the whole log, and the old replicas' log directories are deleted.
2. A move that cannot finish (its new replica SIGSTOPped) is listed with its adding/removing replicas in
   ListPartitionReassignments and in the topic znode, and cancelling it reverts to the original replicas.
3. Bad requests get Kafka's errors; the legacy ``/admin/reassign_partitions`` znode still starts a move and
   is deleted by the controller when it is done.
"""
from __future__ import annotations

import json
import subprocess
import sys
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError, UnknownTopicOrPartitionError
from kazoo.client import KazooClient

from scripts.local.cluster import Cluster, ClusterSpec
from tests.integration.conditions import wait_for
from tests.integration.znodes import controller_id


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec.on_free_ports(4, tick_time=500, session_timeout_ms=8000,
                                     properties={"replica.fetch.backoff.ms": "200", "min.insync.replicas": "2",
                                                 "offsets.topic.replication.factor": "3",
                                                 "offsets.topic.num.partitions": "4",
                                                 "replica.fetch.max.bytes": "65536"})  # a finer-grained throttle
    cluster = Cluster(tmp_path_factory.mktemp("reassign"), spec)
    cluster.up(timeout=90)
    yield cluster
    for broker in cluster.broker_ids:
        try:
            cluster.signal_broker(broker, signal.SIGCONT)
        except Exception:  # noqa: BLE001 - not running
            pass
    cluster.down()


@pytest.fixture
def admin(cluster):
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    yield client
    client.close()


def create_topic(zk: KazooClient, cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    """Through ZooKeeper, as ``kafka-topics --zookeeper --replica-assignment`` does."""
    zk.create(f"/config/topics/{topic}", json.dumps({"version": 1, "config": {}}).encode(), makepath=True)
    zk.create(f"/brokers/topics/{topic}", json.dumps(
        {"version": 3, "partitions": {str(p): r for p, r in assignment.items()},
         "adding_replicas": {}, "removing_replicas": {}}).encode(), makepath=True)
    for p, replicas in assignment.items():
        wait_for(lambda: set(state(zk, topic, p)["isr"]) == set(replicas), 30, f"{topic}-{p} online with ISR {replicas}")


def state(zk: KazooClient, topic: str, partition: int) -> dict:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    return json.loads(zk.get(path)[0]) if zk.exists(path) else {"leader": -1, "isr": []}


def topic_znode(zk: KazooClient, topic: str) -> dict:
    return json.loads(zk.get(f"/brokers/topics/{topic}")[0])


def partition_dir(cluster: Cluster, broker: int, topic: str, partition: int) -> Path:
    return cluster.log_dir(broker) / f"{topic}-{partition}"


class Load:
    """An idempotent acks=all producer and a group consumer, each in a thread, counting as they go."""

    def __init__(self, cluster: Cluster, topic: str):
        self.topic, self.stop, self.cluster = topic, threading.Event(), cluster
        self.produced_all = threading.Event()  # the producer flushed: every ack is in ``acked``
        self.abort = threading.Event()
        self.acked: set[bytes] = set()
        self.consumed: set[bytes] = set()
        self.consumed_at: list[float] = []
        self.where: dict[bytes, tuple[int, int]] = {}
        self.errors: list[str] = []
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "topic.metadata.refresh.interval.ms": 1000})
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"{topic}-readers",
                                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
        self.consumer.subscribe([topic])
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.add(msg.value())
            self.where[msg.value()] = (msg.partition(), msg.offset())
        else:
            self.errors.append(str(err))

    def _produce(self) -> None:
        n = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, key=str(n % 7).encode(), value=b"r%08d" % n, on_delivery=self._delivered)
            self.producer.poll(0)
            n += 1
            time.sleep(0.002)
        self.producer.flush(30)
        self.produced_all.set()

    def _consume(self) -> None:
        while not self.abort.is_set() and (not self.produced_all.is_set() or not self.acked <= self.consumed):
            msg = self.consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            self.consumed.add(msg.value())
            self.consumed_at.append(time.monotonic())
        self.consumer.close()

    def finish(self, timeout: float = 60) -> None:
        self.stop.set()
        self.threads[0].join(timeout)
        try:
            wait_for(lambda: self.acked <= self.consumed, timeout, "every acknowledged record consumed")
        finally:
            missing = sorted(self.acked - self.consumed)
            print(f"acked {len(self.acked)} consumed {len(self.consumed)} missing {len(missing)}: "
                  f"{[(m, self.where.get(m)) for m in missing[:20]]}")
            if missing:
                for b in self.cluster.broker_ids:
                    print(b, {k: v for k, v in (self.cluster.health(b) or {}).get("partitions", {}).items()
                              if k.startswith(self.topic)})
            self.abort.set()
        self.threads[1].join(timeout)


def test_move_a_partition_from_1_2_to_3_4_under_acks_all_load(cluster, zk, admin):
    topic = "moving"
    create_topic(zk, cluster, topic, {0: [1, 2], 1: [2, 1]})
    load = Load(cluster, topic)
    try:
        wait_for(lambda: len(load.consumed) > 300, 60, "the load running before the move")
        started = time.monotonic()
        result = admin.alter_partition_reassignments({KTP(topic, 0): [3, 4], KTP(topic, 1): [4, 3]})
        assert result == {KTP(topic, 0): None, KTP(topic, 1): None}
        wait_for(lambda: topic_znode(zk, topic)["partitions"] == {"0": [3, 4], "1": [4, 3]}, 60,
                 "the topic znode to hold only the targets")
        assert topic_znode(zk, topic)["adding_replicas"] == {} and topic_znode(zk, topic)["removing_replicas"] == {}
        assert admin.list_partition_reassignments() == {}
        for p, leader in ((0, 3), (1, 4)):
            s = state(zk, topic, p)
            assert set(s["isr"]) == {3, 4} and s["leader"] in (3, 4), s
        moved_at = time.monotonic()
        count = len(load.consumed)
        wait_for(lambda: len(load.consumed) > count + 300, 60, "the consumer still receiving after the move")
    finally:
        load.finish()
    assert load.acked and load.acked <= load.consumed
    during = [t for t in load.consumed_at if started <= t <= moved_at + 1]
    assert during, "the consumer received nothing while the partitions moved"
    for p in (0, 1):
        for broker in (1, 2):
            wait_for(lambda: not partition_dir(cluster, broker, topic, p).exists(), 30,
                     f"{topic}-{p}'s old replica on broker {broker} deleted")
        for broker in (3, 4):
            assert any(partition_dir(cluster, broker, topic, p).glob("*.log"))
        health = {b: cluster.health(b)["partitions"][f"{topic}-{p}"] for b in (3, 4)}
        wait_for(lambda: len({h["log_end_offset"] for h in
                               [cluster.health(b)["partitions"][f"{topic}-{p}"] for b in (3, 4)]}) == 1, 30,
                 f"{topic}-{p}'s new replicas at the same log end")
        assert all(h["log_start_offset"] == 0 for h in health.values())


def test_a_stuck_move_is_listed_and_cancelled_back_to_the_original_replicas(cluster, zk, tmp_path):
    """With the tool, bootstrapped at the controller: a client must not pick the stopped broker for Metadata."""
    topic = "stuck"
    create_topic(zk, cluster, topic, {0: [1, 2]})
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    new = 4 if controller != 4 else 3  # a stopped controller could not answer the API
    bootstrap = ["--bootstrap-server", f"127.0.0.1:{cluster.kafka_port(controller)}"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, new]}]}))
    cluster.signal_broker(new, signal.SIGSTOP)  # still registered (8 s session) but never catches up
    try:
        executed = tool(*bootstrap, "--execute", "--reassignment-json-file", str(plan))
        assert executed.returncode == 0 and f"Successfully started partition reassignment for {topic}-0" in executed.stdout
        listed = tool(*bootstrap, "--list")
        assert listed.stdout.splitlines() == [
            "Current partition reassignments:", f"{topic}-0: replicas: 2,{new},1. adding: {new}. removing: 1."]
        znode = topic_znode(zk, topic)
        assert znode["partitions"]["0"] == [2, new, 1]
        assert znode["adding_replicas"] == {"0": [new]} and znode["removing_replicas"] == {"0": [1]}
        cancelled = tool(*bootstrap, "--cancel", "--reassignment-json-file", str(plan), "--preserve-throttles")
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.strip() == f"Successfully cancelled partition reassignment for: {topic}-0"
        assert tool(*bootstrap, "--list").stdout.strip() == "No partition reassignments found."
        znode = topic_znode(zk, topic)
        # the origin replicas in RS order, as Kafka's ReplicaAssignment.originReplicas (RS minus adding)
        assert znode["partitions"] == {"0": [2, 1]} and znode["adding_replicas"] == {}
        assert set(state(zk, topic, 0)["isr"]) == {1, 2}
    finally:
        cluster.signal_broker(new, signal.SIGCONT)
    wait_for(lambda: not partition_dir(cluster, new, topic, 0).exists(), 30, "the cancelled replica's log deleted")


def test_bad_reassignments_get_kafkas_errors_and_change_nothing(cluster, zk, admin):
    topic = "refused"
    create_topic(zk, cluster, topic, {0: [1, 2]})
    result = admin.alter_partition_reassignments({KTP(topic, 0): [1, 9]})
    assert result == {KTP(topic, 0): InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({KTP(topic, 0): [3, 3]}) == {KTP(topic, 0): InvalidReplicationAssignmentError}
    assert admin.alter_partition_reassignments({KTP(topic, 0): None}) == {KTP(topic, 0): NoReassignmentInProgressError}
    assert admin.alter_partition_reassignments({KTP("no-such-topic", 0): [1, 2]}) == {
        KTP("no-such-topic", 0): UnknownTopicOrPartitionError}
    assert topic_znode(zk, topic)["partitions"] == {"0": [1, 2]}


def test_the_legacy_reassign_partitions_znode_starts_a_move_and_is_deleted_when_done(cluster, zk):
    topic = "legacy"
    create_topic(zk, cluster, topic, {0: [1, 2], 1: [2, 3]})
    zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 3]}]}).encode(), makepath=True)
    wait_for(lambda: not zk.exists("/admin/reassign_partitions"), 60, "the controller to delete the finished request")
    assert topic_znode(zk, topic)["partitions"] == {"0": [2, 3], "1": [2, 3]}
    assert set(state(zk, topic, 0)["isr"]) == {2, 3}
    wait_for(lambda: not partition_dir(cluster, 1, topic, 0).exists(), 30, "the old replica's log deleted")


def tool(*args: str) -> "subprocess.CompletedProcess[str]":
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "scripts.tools.kafka_reassign_partitions.command", *args],
                          capture_output=True, text=True, timeout=120)


def test_kafka_reassign_partitions_generate_execute_verify_list(cluster, zk, tmp_path):
    topic = "tooled"
    create_topic(zk, cluster, topic, {0: [1, 2], 1: [2, 1], 2: [1, 2]})
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    (tmp_path / "topics.json").write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    generated = tool(*bootstrap, "--generate", "--topics-to-move-json-file", str(tmp_path / "topics.json"),
                     "--broker-list", "3,4")
    assert generated.returncode == 0, generated.stderr
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r, "log_dirs": ["any", "any"]}
        for p, r in ((0, [1, 2]), (1, [2, 1]), (2, [1, 2]))]}
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert {tuple(sorted(p["replicas"])) for p in proposed["partitions"]} == {(3, 4)}
    (tmp_path / "plan.json").write_text(lines[4])

    executed = tool(*bootstrap, "--execute", "--reassignment-json-file", str(tmp_path / "plan.json"))
    assert executed.returncode == 0, executed.stderr
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1,{topic}-2" in executed.stdout
    assert "Save this to use as the --reassignment-json-file option during rollback" in executed.stdout

    def verified():
        result = tool(*bootstrap, "--verify", "--reassignment-json-file", str(tmp_path / "plan.json"))
        return result if result.returncode == 0 and "still in progress" not in result.stdout else None

    result = wait_for(verified, 60, "--verify to report every partition complete", interval=0.5)
    assert [line for line in result.stdout.splitlines() if line.startswith("Reassignment")] == [
        f"Reassignment of partition {topic}-{p} is completed." for p in range(3)]
    assert {p: sorted(r) for p, r in topic_znode(zk, topic)["partitions"].items()} == {str(p): [3, 4] for p in range(3)}
    listed = tool(*bootstrap, "--list")
    assert listed.returncode == 0 and listed.stdout.strip() == "No partition reassignments found."


def test_kafka_reassign_partitions_bad_input_names_the_problem(cluster, tmp_path):
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    missing = tool(*bootstrap, "--execute")
    assert missing.returncode == 2 and "--reassignment-json-file" in missing.stderr
    (tmp_path / "bad.json").write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    bad = tool(*bootstrap, "--execute", "--reassignment-json-file", str(tmp_path / "bad.json"))
    assert bad.returncode == 1 and "duplicate replicas" in bad.stderr
    (tmp_path / "dead.json").write_text('{"version":1,"partitions":[{"topic":"tooled","partition":0,"replicas":[1,7]}]}')
    dead = tool(*bootstrap, "--execute", "--reassignment-json-file", str(tmp_path / "dead.json"))
    assert dead.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in dead.stderr and "not alive" in dead.stderr


def test_a_throttled_move_copies_at_the_throttle_rate_while_producers_keep_their_acks(cluster, zk, tmp_path):
    """``--throttle 20000`` (B/s): the new replicas of a 2 MB partition copy at most the meter's first window
    (10 s at the rate) plus the rate since, and the acks=all producer keeps being acknowledged (its ISR
    followers are never throttled); ``--verify`` after the throttle is lifted completes and clears it."""
    topic = "throttled"
    create_topic(zk, cluster, topic, {0: [1, 2]})
    # 16 KB batches: a fetch returns its first batch whole (KIP-74), so one 1 MB batch would pass any throttle
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 20,
                         "batch.size": 16384})
    for n in range(2000):
        producer.produce(topic, value=b"%04d" % n + b"x" * 1020)
    assert producer.flush(60) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [3, 4]}]}))
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    executed = tool(*bootstrap, "--execute", "--reassignment-json-file", str(plan), "--throttle", "20000")
    assert executed.returncode == 0, executed.stderr
    assert "The inter-broker throttle limit was set to 20000 B/s" in executed.stdout
    started = time.monotonic()
    topic_config = json.loads(zk.get(f"/config/topics/{topic}")[0])["config"]
    assert topic_config["leader.replication.throttled.replicas"] == "0:1,0:2"
    assert topic_config["follower.replication.throttled.replicas"] == "0:3,0:4"
    acked = []
    for n in range(50):  # acks=all keeps working while the move crawls
        producer.produce(topic, value=b"during-%d" % n, on_delivery=lambda err, msg: acked.append(err))
        producer.flush(10)
    assert len(acked) == 50 and not any(acked)

    def copied(broker: int) -> int:
        partitions = (cluster.health(broker) or {}).get("partitions", {})
        return partitions.get(f"{topic}-0", {}).get("log_end_offset", 0)

    elapsed = time.monotonic() - started
    # the meter's first window (10 s at the rate) + the rate since + one fetch (64 KiB) past the bound per
    # follower, 2 s of slack; both followers share the leader's bound. Unthrottled, all 2 MB are there at once.
    allowed_records = (20000 * (10 + elapsed + 2) + 2 * 65536) // 1024
    assert copied(3) + copied(4) <= allowed_records, ([copied(b) for b in (3, 4)], allowed_records)
    verify = tool(*bootstrap, "--verify", "--reassignment-json-file", str(plan))
    assert "Reassignment of partition throttled-0 is still in progress." in verify.stdout
    assert "Clearing" not in verify.stdout  # throttles stay while anything moves

    lifted = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_configs.command", *bootstrap, "--entity-type", "brokers",
                             "--entity-default", "--alter", "--add-config",
                             "leader.replication.throttled.rate=1000000000,follower.replication.throttled.rate=1000000000"],
                            capture_output=True, text=True, timeout=60)
    assert lifted.returncode == 0, lifted.stderr
    # the per-broker values set by --throttle win over the default entity: lift them where they are
    for broker in (1, 2, 3, 4):
        one = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_configs.command", *bootstrap, "--entity-type", "brokers",
                              "--entity-name", str(broker), "--alter", "--delete-config",
                              "leader.replication.throttled.rate,follower.replication.throttled.rate"],
                             capture_output=True, text=True, timeout=60)
        assert one.returncode == 0, one.stderr

    def done():
        result = tool(*bootstrap, "--verify", "--reassignment-json-file", str(plan))
        return result if "is completed." in result.stdout else None

    result = wait_for(done, 60, "the move to finish once the throttle is lifted", interval=0.5)
    assert "Clearing broker-level throttles on brokers 1,2,3,4" in result.stdout
    assert "Clearing topic-level throttles on topic throttled" in result.stdout
    topic_config = json.loads(zk.get(f"/config/topics/{topic}")[0])["config"]
    assert "leader.replication.throttled.replicas" not in topic_config
    assert all(copied(b) >= 2050 for b in (3, 4))


def test_a_new_controller_resumes_a_move_from_the_topic_znode(cluster, zk, tmp_path):
    """kill -9 of the controller while a move waits for its SIGSTOPped new replica: the next controller reads
    the adding/removing replicas back from the topic znode, and the move completes once the replica runs."""
    topic = "resumed"
    create_topic(zk, cluster, topic, {0: [1, 2]})
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    new = next(b for b in (3, 4) if b != controller)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, new]}]}))
    cluster.signal_broker(new, signal.SIGSTOP)
    try:
        executed = tool("--bootstrap-server", f"127.0.0.1:{cluster.kafka_port(controller)}", "--execute",
                        "--reassignment-json-file", str(plan))
        assert executed.returncode == 0, executed.stderr
        assert topic_znode(zk, topic)["adding_replicas"] == {"0": [new]}
        cluster.signal_broker(controller, signal.SIGKILL)
        wait_for(lambda: controller_id(zk) not in (None, controller), 60, "a new controller")
        successor = json.loads(zk.get("/controller")[0])["brokerid"]
        # the old controller back before the move can complete: when it is broker 1, the move's StopReplica
        # (delete) must find it live (a replica removed while its broker is down stays on its disk, as in Kafka)
        cluster.start_broker(controller)
        wait_for(lambda: controller in ((cluster.health(successor) or {}).get("controller", {}).get("live_brokers")
                                        or []), 60, "the new controller to see the old one back")
    finally:
        cluster.signal_broker(new, signal.SIGCONT)
    cluster.wait_until_ready(timeout=60)
    wait_for(lambda: topic_znode(zk, topic)["partitions"] == {"0": [2, new]}, 60, "the resumed move to complete")
    assert topic_znode(zk, topic)["adding_replicas"] == {} and topic_znode(zk, topic)["removing_replicas"] == {}
    wait_for(lambda: set(state(zk, topic, 0)["isr"]) == {2, new}, 30, "the ISR to be the targets")
    wait_for(lambda: not partition_dir(cluster, 1, topic, 0).exists(), 60, "broker 1's replica deleted")
