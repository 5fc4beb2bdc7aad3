"""``kafka-mirror-maker`` between two real clusters (two ZooKeepers, separate brokers): three topics chosen by
a regex mirrored while a producer writes, through a kill -9 of a source partition leader and of the mirror
process itself; every acknowledged source record is at the target, in order per partition, with its key,
headers and timestamp (duplicates counted; none with exactly-once); a consumer group fails over to the target
from its translated offsets, re-reading at most a bounded window; configs and new partitions follow."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic

from scripts.demo.mirror_clients import group_offsets
from scripts.local.cluster import running_cluster
from scripts.tools.kafka_mirror_maker.launcher import MirrorProcess
from scripts.tools.kafka_mirror_maker.records import Heartbeat
from tests.integration.conditions import wait_for
from tests.integration.mirror_support import AckedProducer, read_partition
from tests.integration.txn_support import end_offsets

COMMON = {"group.initial.rebalance.delay.ms": "0", "replica.fetch.backoff.ms": "200",
          "offsets.topic.num.partitions": "4", "transaction.state.log.num.partitions": "2"}
SOURCE_PROPERTIES = {**COMMON, "min.insync.replicas": "2", "transaction.state.log.replication.factor": "3"}
TARGET_PROPERTIES = {**COMMON, "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"}
APP_TOPICS = {"app-orders": 3, "app-payments": 2, "app-events": 2}
OFFSET_LAG_MAX = 100
GROUP = "billing"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    base = tmp_path_factory.mktemp("mirror")
    with running_cluster(base / "a", 3, tick_time=500, session_timeout_ms=6000, properties=SOURCE_PROPERTIES) as a, \
            running_cluster(base / "b", 1, tick_time=500, session_timeout_ms=6000, properties=TARGET_PROPERTIES) as b:
        for cluster in (a, b):
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == len(cluster.broker_ids), 30,
                     "every broker in the metadata")
        yield a, b


def write_config(path, a, b, **settings):
    lines = {"clusters": "a, b", "a.bootstrap.servers": a.bootstrap_servers, "b.bootstrap.servers": b.bootstrap_servers,
             "a->b.enabled": "true", "replication.factor": "1", "offset-syncs.topic.replication.factor": "3",
             "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
             "refresh.topics.interval.seconds": "1", "sync.topic.configs.interval.seconds": "1",
             "emit.checkpoints.interval.seconds": "1", "offset.lag.max": str(OFFSET_LAG_MAX),
             "offset.flush.interval.ms": "1000", **settings}
    path.write_text("".join(f"{k} = {v}\n" for k, v in lines.items()))
    return path


def create_topics(admin: AdminClient, topics: dict[str, int], replication_factor: int = 3) -> None:
    for future in admin.create_topics([NewTopic(t, n, replication_factor) for t, n in topics.items()]).values():
        future.result(30)


def set_topic_config(admin: AdminClient, topic: str, name: str, value: str) -> None:
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def topic_config(admin: AdminClient, topic: str, name: str) -> str | None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return next(iter(admin.describe_configs([resource]).values())).result(30)[name].value


def partition_count(admin: AdminClient, topic: str) -> int:
    found = admin.list_topics(timeout=10).topics.get(topic)
    return len(found.partitions) if found is not None and found.error is None else 0


def leader_of(admin: AdminClient, topic: str, partition: int) -> int:
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader


def dedup(records) -> tuple[list, int]:
    """(the records with each value's repeats after its first dropped, how many were dropped)."""
    seen, out = set(), []
    for record in records:
        if record.value() not in seen:
            seen.add(record.value())
            out.append(record)
    return out, len(records) - len(out)


def fields(record) -> tuple:
    return record.key(), record.value(), record.headers(), record.timestamp()


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int) -> dict[int, int]:
    """A group member reads ``count`` records of ``topic``, commits, leaves: partition -> committed offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 60
    try:
        while seen < count:
            assert time.monotonic() < deadline, f"{group} read {seen} of {count} records in 60 s"
            seen += sum(1 for m in consumer.consume(min(100, count - seen), 1.0) if m.error() is None)
        consumer.commit(asynchronous=False)
        return {tp.partition: tp.offset for tp in consumer.committed(consumer.assignment(), 10) if tp.offset >= 0}
    finally:
        consumer.close()


def assert_mirrored(a, b, topics: dict[str, int], acked: dict, *, remote_prefix: str = "a.") -> int:
    """Every acknowledged record at the target, in source order, with its fields; returns the duplicates."""
    duplicates = 0
    for topic, partitions in topics.items():
        for p in range(partitions):
            at_source = read_partition(a.bootstrap_servers, topic, p)
            assert [r.value() for r in at_source][:len(acked.get((topic, p), []))] == acked.get((topic, p), [])
            at_target, dropped = dedup(read_partition(b.bootstrap_servers, remote_prefix + topic, p))
            duplicates += dropped
            assert [fields(r) for r in at_target] == [fields(r) for r in at_source], f"{topic}-{p}"
    return duplicates


def caught_up(b, topics: dict[str, int], acked: dict, prefix: str = "a.") -> bool:
    return all(end_offsets(b.bootstrap_servers, prefix + t, n)[p] >= len(acked.get((t, p), []))
               for t, n in topics.items() for p in range(n))


def first_records(bootstrap: str, topic: str, group: str, partitions: int) -> dict[int, bytes]:
    """The first record each partition gives a member of ``group`` starting from its committed offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    first: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    try:
        while len(first) < partitions:
            assert time.monotonic() < deadline, f"first records of {topic} at the target: only {sorted(first)}"
            for msg in consumer.consume(100, 1.0):
                if msg.error() is None:
                    first.setdefault(msg.partition(), msg.value())
        return first
    finally:
        consumer.close()


def translate_offsets_tool(config, group: str) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_mirror_maker", "translate-offsets", "--config",
                          str(config), "--source", "a", "--target", "b", "--group", group],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [line.split() for line in out.stdout.splitlines()]


def test_mirrors_through_kills_and_a_group_fails_over(clusters, tmp_path):
    a, b = clusters
    source = AdminClient({"bootstrap.servers": a.bootstrap_servers})
    target = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    create_topics(source, {**APP_TOPICS, "other": 1})
    set_topic_config(source, "app-payments", "retention.ms", "86400000")
    config = write_config(tmp_path / "mm2.properties", a, b, **{
        "a->b.topics": "app-.*", "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1"})
    log = tmp_path / "mirror.log"
    producer = AckedProducer(a.bootstrap_servers, dict(APP_TOPICS)).start()
    mirror = MirrorProcess(config, log).start()
    try:
        wait_for(lambda: mirror.api()["flows"][0]["record_count"] >= 500, 60, "500 records mirrored")
        remote = {t for t in target.list_topics(timeout=10).topics if t.startswith("a.")}
        assert {f"a.{t}" for t in APP_TOPICS} <= remote and "a.other" not in remote
        assert topic_config(target, "a.app-payments", "retention.ms") == "86400000"  # created with the source's

        victim, before = leader_of(source, "app-orders", 0), producer.total()
        a.signal_broker(victim, signal.SIGKILL)
        wait_for(lambda: producer.total() >= before + 400, 60, "the producer carrying on after a leader's kill -9")
        a.start_broker(victim)
        a.wait_until_ready(60)

        mirror.kill()
        before = producer.total()
        wait_for(lambda: producer.total() >= before + 400, 30, "records produced while the mirror is down")
        mirror = MirrorProcess(config, log).start()

        committed = consume_and_commit(a.bootstrap_servers, "app-orders", GROUP, 600)
        source.create_partitions([NewPartitions("app-events", 3)])["app-events"].result(30)
        producer.partitions["app-events"] = 3
        set_topic_config(source, "app-payments", "retention.ms", "3600000")
        wait_for(lambda: partition_count(target, "a.app-events") == 3, 30, "the new partition at the target")
        wait_for(lambda: topic_config(target, "a.app-payments", "retention.ms") == "3600000", 30,
                 "the changed config at the target")
        wait_for(lambda: len(producer.acked_values().get(("app-events", 2), [])) >= 20, 30,
                 "records in the new partition")
    finally:
        producer.stop()
    assert not producer.errors
    acked = producer.acked_values()
    topics = {**APP_TOPICS, "app-events": 3}
    wait_for(lambda: caught_up(b, topics, acked), 120, "every acknowledged record at the target", 0.5)
    duplicates = assert_mirrored(a, b, topics, acked)
    print(f"at least once: {producer.total()} acknowledged, {duplicates} duplicates at the target")

    flow = mirror.api()["flows"][0]
    assert flow["heartbeats"] > 0 and flow["checkpoints"] > 0 and flow["offset_syncs"] > 0
    assert flow["replication_latency_ms"]["count"] > 0
    text = mirror.metrics_text()
    assert 'kafka_connect_mirror_source_record_count_total{source="a",target="b",topic="a.app-orders",partition="0"}' \
        in text
    beat = read_partition(b.bootstrap_servers, "heartbeats", 0)[-1]
    heartbeat = Heartbeat.decode(beat.key(), beat.value())
    assert (heartbeat.source_cluster_alias, heartbeat.target_cluster_alias) == ("a", "b")

    # fail the group over: its offsets at the target were committed by sync.group.offsets
    want = {("a.app-orders", p) for p in committed}
    at_target = wait_for(lambda: (o := group_offsets(target, GROUP)) and set(o) >= want and o, 30,
                         "the group's translated offsets committed at the target")
    rows = translate_offsets_tool(config, GROUP)
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "UPSTREAM-OFFSET", "TRANSLATED-OFFSET"]
    assert {(r[1], int(r[2])): (int(r[3]), int(r[4])) for r in rows[1:]} == \
        {("a.app-orders", p): (committed[p], at_target[("a.app-orders", p)]) for p in committed}
    first = first_records(b.bootstrap_servers, "a.app-orders", GROUP, len(committed))
    for p, value in first.items():
        resumed_at = acked[("app-orders", p)].index(value)
        assert resumed_at <= committed[p], "the failed-over group skipped records"
        assert committed[p] - resumed_at <= OFFSET_LAG_MAX, "the failed-over group re-read too much"

    assert mirror.stop() == 0  # SIGTERM: committed what the target acknowledged, exit 0
    progress = group_offsets(target, "connect-mirror-maker-a-b")
    for (topic, p), values in acked.items():
        assert progress[(f"a.{topic}", p)] == len(values)


def test_exactly_once_mirror_killed_twice_leaves_no_duplicates(clusters, tmp_path):
    a, b = clusters
    create_topics(AdminClient({"bootstrap.servers": a.bootstrap_servers}), {"eos-data": 2})
    config = write_config(tmp_path / "mm2.properties", a, b, **{
        "a->b.topics": "eos-.*", "exactly.once.source.support": "enabled"})
    log = tmp_path / "mirror.log"
    producer = AckedProducer(a.bootstrap_servers, {"eos-data": 2}).start()
    mirror = MirrorProcess(config, log).start()
    try:
        for _ in range(2):
            mirrored = mirror.api()["flows"][0]["record_count"]
            wait_for(lambda: mirror.api()["flows"][0]["record_count"] >= mirrored + 300, 60, "300 more records")
            mirror.kill()
            mirror = MirrorProcess(config, log).start()
    finally:
        producer.stop()
    acked = producer.acked_values()
    wait_for(lambda: all(len(read_partition(b.bootstrap_servers, "a.eos-data", p)) >= len(acked[("eos-data", p)])
                         for p in range(2)), 120, "every acknowledged record committed at the target", 0.5)
    assert assert_mirrored(a, b, {"eos-data": 2}, acked) == 0
    assert mirror.stop() == 0


def test_two_flows_in_one_process_mirror_both_ways_without_cycles(clusters, tmp_path):
    """a->b and b->a in one process (active-active): each side's topic reaches the other as a remote topic,
    nothing comes back (no ``b.a.dc-a``), and heartbeats travel both ways and onwards (``a.heartbeats`` at b)."""
    a, b = clusters
    source = AdminClient({"bootstrap.servers": a.bootstrap_servers})
    target = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    create_topics(source, {"dc-a": 1})
    create_topics(target, {"dc-b": 1}, replication_factor=1)
    config = write_config(tmp_path / "mm2.properties", a, b, **{
        "b->a.enabled": "true", "topics": "dc-.*", "b->a.offset-syncs.topic.replication.factor": "1",
        "b->a.replication.factor": "3",  # a has min.insync.replicas=2
        "a->b.checkpoints.topic.replication.factor": "1", "b->a.checkpoints.topic.replication.factor": "3",
        "b->a.heartbeats.topic.replication.factor": "3"})
    for bootstrap, topic in ((a.bootstrap_servers, "dc-a"), (b.bootstrap_servers, "dc-b")):
        producer = AckedProducer(bootstrap, {topic: 1})
        for i in range(50):
            producer.producer.produce(topic, f"{topic}/{i}".encode(), on_delivery=producer._delivered)
        assert producer.producer.flush(30) == 0
    mirror = MirrorProcess(config, tmp_path / "mirror.log").start()
    try:
        flows = {f["flow"]: f for f in mirror.api()["flows"]}
        assert set(flows) == {"a->b", "b->a"}
        wait_for(lambda: all(f["record_count"] >= 50 for f in mirror.api()["flows"]), 60, "both flows copying")
        wait_for(lambda: "a.heartbeats" in target.list_topics(timeout=10).topics, 30, "a's heartbeats at b")
        assert [r.value() for r in read_partition(b.bootstrap_servers, "a.dc-a", 0)] == \
            [f"dc-a/{i}".encode() for i in range(50)]
        assert [r.value() for r in read_partition(a.bootstrap_servers, "b.dc-b", 0)] == \
            [f"dc-b/{i}".encode() for i in range(50)]
        page = urllib.request.urlopen(f"http://127.0.0.1:{mirror.http_port}/", timeout=5).read().decode()
        assert "kafka-mirror-maker" in page and "/api/v1/mirror" in page
    finally:
        assert mirror.stop() == 0
    at_a, at_b = set(source.list_topics(timeout=10).topics), set(target.list_topics(timeout=10).topics)
    assert {"b.dc-b", "heartbeats"} <= at_a and {"a.dc-a", "heartbeats", "a.heartbeats"} <= at_b
    assert not {t for t in at_a | at_b if t.startswith(("a.b.", "b.a."))}, "a remote topic went back where it came from"
