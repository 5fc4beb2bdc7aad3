"""Several ``log.dirs`` per broker, against a real cluster (a real ZooKeeper, 2 broker processes with two log dirs
each): ``kafka-log-dirs --describe`` (its JSON parsed), and replicas moved between a broker's dirs with
``kafka-reassign-partitions`` (``log_dirs`` in the reassignment file: AlterReplicaLogDirs, KIP-113) while an
idempotent acks=all producer keeps writing: every acknowledged record is read back, once and in order, from
the moved replicas."""
from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.test_console_tools import tool

TIMEOUT = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("log-dirs")
    dirs = f"{base}/cluster/broker-{{broker_id}}/logs-a,{base}/cluster/broker-{{broker_id}}/logs-b"
    with running_cluster(base / "cluster", 2, tick_time=500, session_timeout_ms=6000,
                         properties={"log.dirs": dirs, "replica.fetch.backoff.ms": "200"}) as c:
        yield c


def dirs_of(cluster, broker: int) -> tuple[str, str]:
    return str(cluster.broker_dir(broker) / "logs-a"), str(cluster.broker_dir(broker) / "logs-b")


def create(cluster, partitions: int = 1) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 2)])[topic].result(TIMEOUT)
    wait_for(lambda: all(len(p.isrs) == 2 for p in admin.list_topics(topic, timeout=10).topics[topic].partitions.values()),
             timeout=TIMEOUT, what=f"{topic}'s ISR")
    return topic


def describe(cluster, *args: str) -> dict:
    done = tool("kafka-log-dirs", "--describe", "--bootstrap-server", cluster.bootstrap_servers, *args)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0] == "Querying brokers for log directories information", done.stderr
    assert lines[1].startswith("Received log directory information from brokers ")
    return json.loads(lines[2])


def replica_dirs(report: dict, partition: str) -> dict[int, list[tuple[str, bool]]]:
    """Per broker, the dirs holding ``partition`` (and whether it is the future replica there)."""
    return {b["broker"]: [(d["logDir"], p["isFuture"]) for d in b["logDirs"] for p in d["partitions"]
                          if p["partition"] == partition] for b in report["brokers"]}


def test_kafka_log_dirs_describes_every_dir_of_every_broker(cluster):
    topic = create(cluster, partitions=4)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for p in range(4):
        producer.produce(topic, value=b"x" * 100, partition=p)
    assert producer.flush(TIMEOUT) == 0
    report = describe(cluster, "--topic-list", topic)
    assert report["version"] == 1 and [b["broker"] for b in report["brokers"]] == [1, 2]
    for broker in report["brokers"]:
        assert sorted(d["logDir"] for d in broker["logDirs"]) == sorted(dirs_of(cluster, broker["broker"]))
        assert all(d["error"] is None for d in broker["logDirs"])
        partitions = [p for d in broker["logDirs"] for p in d["partitions"]]
        assert sorted(p["partition"] for p in partitions) == [f"{topic}-{p}" for p in range(4)]
        assert all(p["size"] > 0 and p["offsetLag"] == 0 and not p["isFuture"] for p in partitions)
        # new logs go to the dir holding the fewest: four partitions, two in each dir
        assert sorted(len([p for p in d["partitions"]]) for d in broker["logDirs"]) == [2, 2]
    only_one = describe(cluster, "--broker-list", "2", "--topic-list", topic)
    assert [b["broker"] for b in only_one["brokers"]] == [2]


def test_a_replica_moved_between_dirs_under_load_loses_nothing(cluster, tmp_path):
    topic = create(cluster)
    name = f"{topic}-0"
    before = replica_dirs(describe(cluster, "--topic-list", topic), name)
    targets = {b: next(d for d in dirs_of(cluster, b) if d != before[b][0][0]) for b in (1, 2)}
    acked: list[int] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 2})
        i = 0
        while not stop.is_set():
            producer.produce(topic, value=b"%08d" % i + b"." * 500, partition=0,
                             on_delivery=lambda err, msg: err is None and acked.append(int(msg.value()[:8])))
            producer.poll(0)
            i += 1
            if i % 200 == 0:
                producer.flush(TIMEOUT)
        producer.flush(TIMEOUT)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        wait_for(lambda: len(acked) > 3000, timeout=TIMEOUT, what="records before the move")
        plan = tmp_path / "move.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [targets[1], targets[2]]}]}))
        common = ["--bootstrap-server", cluster.bootstrap_servers, "--reassignment-json-file", str(plan)]
        executed = tool("kafka-reassign-partitions", "--execute", *common)
        assert executed.returncode == 0, executed.stderr
        assert f"Successfully started log directory moves for: {name}-1,{name}-2" in executed.stdout, executed.stdout
        wait_for(lambda: (r := tool("kafka-reassign-partitions", "--verify", *common).stdout).count(
            "completed successfully") == 2 and r, timeout=TIMEOUT, what="both moves to complete")
        wait_for(lambda: len(acked) > 3000 + 2000, timeout=TIMEOUT, what="records after the move")
    finally:
        stop.set()
        writer.join(TIMEOUT)
    after = replica_dirs(describe(cluster, "--topic-list", topic), name)
    assert after == {1: [(targets[1], False)], 2: [(targets[2], False)]}
    assert not any(Path(d, name).exists() for b in (1, 2) for d in dirs_of(cluster, b) if d != targets[b])
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read: list[int] = []
        wait_for(lambda: read.extend(int(m.value()[:8]) for m in consumer.consume(1000, 1) if not m.error())
                 or len(read) >= len(acked), timeout=TIMEOUT, what="every acknowledged record read back")
    finally:
        consumer.close()
    assert read == sorted(read) and len(read) == len(set(read)) and set(acked) <= set(read)


def test_a_dir_that_is_not_in_log_dirs_is_an_error(cluster, tmp_path):
    topic = create(cluster)
    plan = tmp_path / "bad.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": ["/nowhere", "any"]}]}))
    done = tool("kafka-reassign-partitions", "--execute", "--bootstrap-server", cluster.bootstrap_servers,
                "--reassignment-json-file", str(plan))
    assert done.returncode == 1 and f"cannot move {topic}-0-1 to /nowhere: LOG_DIR_NOT_FOUND" in done.stderr, done
