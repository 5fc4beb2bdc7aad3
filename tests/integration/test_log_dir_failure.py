"""KIP-112 with real processes: one broker's second log dir fails, the broker keeps serving the first.

Three brokers, each with ``log.dirs=<its port>-a,<its port>-b``. Broker 3's ``-b`` dir is a 4 MiB
tmpfs mounted before the cluster starts (we run as root). The failure is real: the test fills that
tmpfs with a file, so the broker's next write there (a segment append, a checkpoint, a snapshot)
fails with ENOSPC from the real code paths; the produce that hits it may leave a torn batch in the
segment, which recovery truncates on the next start.

Topic ``jbod``: six partitions, each led by broker 3 (preferred replica first), so three of them live
in the failing dir. Checked: broker 3 stays up and keeps leading its partitions in ``-a``; its replicas
in ``-b`` leave every ISR and lose leadership (seen in broker 1's metadata, with ``offline_replicas``);
a produce straight to broker 3 for such a partition answers KAFKA_STORAGE_ERROR or NOT_LEADER, never
success; acks=all produces to every partition still succeed through the new leaders and everything
acknowledged reads back; DescribeLogDirs shows ``-b`` offline; after a restart with space again the
replicas return to every ISR (recovery truncated the torn batch). Then the disk is "replaced" by a
regular file at the dir's path: broker 3 starts with that dir offline (Kafka's createAndValidateLogDirs)
and its replicas there leave the ISRs again; with an empty dir in its place they are re-created from
their leaders and rejoin.
"""
from __future__ import annotations

import errno
import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import Cluster, ClusterSpec
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

TOPIC = "jbod"
PARTITIONS = 6
FAILING = 3  # the broker whose second log dir fails
OTHER = 1  # a broker whose metadata we read
TIMEOUT = 30


@pytest.fixture
def jbod_cluster(tmp_path):
    """The cluster, with broker 3's second dir on a small tmpfs; unmounted after the test."""
    base = tmp_path / "dirs"
    props = {"replica.fetch.backoff.ms": "200", "log.dirs": f"{base}/{{kafka_port}}-a,{base}/{{kafka_port}}-b",
             "replica.high.watermark.checkpoint.interval.ms": "500"}
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=4000, properties=props)
    cluster = Cluster(tmp_path / "cluster", spec)
    small = base / f"{cluster.kafka_port(FAILING)}-b"
    small.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        cluster.up(timeout=60)
        yield cluster, small
    finally:
        cluster.down()
        if small.is_dir():
            subprocess.run(["umount", "-l", str(small)], check=False)


def partition_view(cluster: Cluster, broker: int, partition: int) -> dict | None:
    health = cluster.health(broker)
    return health["metadata"]["partitions"].get(f"{TOPIC}-{partition}") if health else None


def produce_all(bootstrap: str, values: list[bytes]) -> dict[int, set[bytes]]:
    """acks=all, round-robin over the partitions; {partition: values acknowledged}. Every one must be."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": TIMEOUT * 1000})
    acked: dict[int, set[bytes]] = {p: set() for p in range(PARTITIONS)}
    failed = []

    def report(err, msg):
        (failed.append(err) if err else acked[msg.partition()].add(msg.value()))

    for i, value in enumerate(values):
        producer.produce(TOPIC, value, partition=i % PARTITIONS, on_delivery=report)
    assert producer.flush(TIMEOUT) == 0
    assert not failed, failed
    return acked


def read_all(bootstrap: str) -> dict[int, set[bytes]]:
    """Everything committed, per partition, from the beginning (assign, no group offsets)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(KafkaTopicPartition(TOPIC, p), timeout=10)[1]
                for p in range(PARTITIONS)}
        consumer.assign([KafkaTopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen: dict[int, set[bytes]] = {p: set() for p in range(PARTITIONS)}
        positions = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + TIMEOUT
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            seen[message.partition()].add(message.value())
            positions[message.partition()] = message.offset() + 1
        return seen
    finally:
        consumer.close()


def fill(directory) -> None:
    """Write zeros into ``directory`` until its filesystem is full (ENOSPC)."""
    with open(directory / "fill", "wb") as f:
        chunk = b"\0" * 65536
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


def raw_produce(cluster: Cluster, broker: int, partition: int) -> int:
    """One 64 KiB acks=all Produce (v7) straight to ``broker``; the partition's error code."""
    batch = bytes(build_batch([Record(0, 0, None, os.urandom(65536))], base_timestamp=int(time.time() * 1000)))
    with RawConnection("127.0.0.1", cluster.kafka_port(broker), client_id="jbod-test") as connection:
        response = connection.request(ApiKey.PRODUCE, 7, transactional_id=None, acks=-1, timeout=10000,
                                      topic_data=[dict(name=TOPIC, partition_data=[dict(index=partition,
                                                                                         records=batch)])])
    (topic,) = response.responses
    (answer,) = topic.partition_responses
    return int(answer.error_code)


def describe_log_dirs(cluster: Cluster, broker: int) -> dict[str, tuple[int, set[int]]]:
    """{log dir: (error code, partitions of the topic there)} from DescribeLogDirs v1."""
    with RawConnection("127.0.0.1", cluster.kafka_port(broker), client_id="jbod-test") as connection:
        response = connection.request(ApiKey.DESCRIBE_LOG_DIRS, 1, topics=None)
    return {r.log_dir: (int(r.error_code), {p.partition_index for t in r.topics if t.name == TOPIC
                                             for p in t.partitions}) for r in response.results}


def test_a_failed_log_dir_takes_only_its_replicas_offline(jbod_cluster):
    cluster, small = jbod_cluster
    bootstrap = cluster.bootstrap_servers
    others = [b for b in cluster.broker_ids if b != FAILING]
    assignment = [[FAILING, others[p % 2], others[(p + 1) % 2]] for p in range(PARTITIONS)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment)])[TOPIC].result(30)
    wait_for(lambda: all((v := partition_view(cluster, OTHER, p)) and v["leader"] == FAILING and len(v["isr"]) == 3
                         for p in range(PARTITIONS)), TIMEOUT, "every partition led by broker 3 with a full ISR")
    acked = produce_all(bootstrap, [f"before-{i}".encode() for i in range(60)])

    in_small = {int(child.name.rsplit("-", 1)[1]) for child in small.iterdir() if child.name.startswith(f"{TOPIC}-")}
    assert 0 < len(in_small) < PARTITIONS, in_small
    in_large = set(range(PARTITIONS)) - in_small
    pid = cluster.broker_pid(FAILING)

    fill(small)
    code = raw_produce(cluster, FAILING, min(in_small))
    assert code in (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER), ErrorCode(code)

    def failed_over() -> bool:
        views = {p: partition_view(cluster, OTHER, p) for p in range(PARTITIONS)}
        return all(v and v["leader"] not in (FAILING, -1) and FAILING not in v["isr"]
                   and FAILING in v["offline_replicas"] for p, v in views.items() if p in in_small)

    wait_for(failed_over, TIMEOUT, "broker 3's replicas in the failed dir out of every ISR, led elsewhere")
    health = cluster.health(FAILING)
    assert health["offline_log_dirs"] == [str(small)]
    assert cluster.broker_pid(FAILING) == pid  # still the same process, still serving
    for p in in_large:
        view = partition_view(cluster, OTHER, p)
        assert view["leader"] == FAILING and len(view["isr"]) == 3 and view["offline_replicas"] == [], (p, view)

    dirs = describe_log_dirs(cluster, FAILING)
    assert dirs[str(small)] == (ErrorCode.KAFKA_STORAGE_ERROR, set())
    (large,) = set(dirs) - {str(small)}
    assert dirs[large] == (ErrorCode.NONE, in_large)
    assert raw_produce(cluster, FAILING, min(in_small)) in (ErrorCode.KAFKA_STORAGE_ERROR,
                                                            ErrorCode.NOT_LEADER_OR_FOLLOWER)

    for p, values in produce_all(bootstrap, [f"during-{i}".encode() for i in range(60)]).items():
        acked[p] |= values
    seen = read_all(bootstrap)
    for p in range(PARTITIONS):
        assert acked[p] <= seen[p], (p, sorted(acked[p] - seen[p]))

    cluster.stop_broker(FAILING)
    (small / "fill").unlink()
    cluster.start_broker(FAILING)
    wait_for(lambda: (h := cluster.health(FAILING)) and h["offline_log_dirs"] == [], TIMEOUT,
             "broker 3 back with both dirs online")
    wait_for(lambda: all((v := partition_view(cluster, OTHER, p)) and FAILING in v["isr"] and not v["offline_replicas"]
                         for p in range(PARTITIONS)), TIMEOUT, "broker 3's replicas back in every ISR")
    seen = read_all(bootstrap)
    for p in range(PARTITIONS):
        assert acked[p] <= seen[p], (p, sorted(acked[p] - seen[p]))

    # the disk is replaced by something unusable: broker 3 starts with that dir offline
    cluster.stop_broker(FAILING)
    subprocess.run(["umount", str(small)], check=True)
    small.rmdir()
    small.write_text("not a directory")
    cluster.start_broker(FAILING)
    wait_for(lambda: (h := cluster.health(FAILING)) and h["offline_log_dirs"] == [str(small)], TIMEOUT,
             "broker 3 up with the unusable dir offline")
    wait_for(failed_over, TIMEOUT, "broker 3's replicas in the unusable dir out of every ISR at start-up")
    wait_for(lambda: all(FAILING in partition_view(cluster, OTHER, p)["isr"] for p in in_large), TIMEOUT,
             "broker 3's replicas in its good dir back in the ISR")

    # an empty disk in its place: the replicas are re-created from their leaders
    cluster.stop_broker(FAILING)
    small.unlink()
    small.mkdir()
    cluster.start_broker(FAILING)
    wait_for(lambda: all((v := partition_view(cluster, OTHER, p)) and FAILING in v["isr"] and not v["offline_replicas"]
                         for p in range(PARTITIONS)), TIMEOUT, "broker 3's replicas re-created and in every ISR")
    assert sorted(child.name for child in small.iterdir() if child.name.startswith(f"{TOPIC}-")) == sorted(
        f"{TOPIC}-{p}" for p in in_small)
