"""Fetch sessions (KIP-227) against real processes: 3 brokers, RF 3, the replica fetchers in sessions.

Records produced before and after a leader change (the leader of two partitions shut down, then back
as a follower) are on every replica (byte-identical logs, HW == LEO everywhere) and are read back by
librdkafka (sessionless: it sends session 0, epoch -1) and by kafka-python (which opens a session: full
request, then incremental ones). The brokers' ``kafka_server_fetch_session_cache_*`` metrics show the
sessions: the followers' on every leader, incremental fetches counted.
"""
from __future__ import annotations

import re
import urllib.request

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.test_replication import (
    assert_identical_logs, consume, create_topic, in_sync, produce, seq_of, value,
)

TOPIC = "sessions"
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 3, 2], [2, 1, 3], [3, 2, 1]]
PER_PHASE = 60  # records per partition before and after the leader change


def metric(cluster: Cluster, broker: int, name: str) -> float:
    with urllib.request.urlopen(cluster.http_url(broker, "/metrics"), timeout=5) as response:
        text = response.read().decode()
    found = re.search(rf"^{name}(?:_total)? (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def incremental_fetches(cluster: Cluster, broker: int) -> float:
    return metric(cluster, broker, "kafka_server_fetch_session_cache_incremental_fetches")


def send(cluster: Cluster, first: int) -> None:
    items = [(p, value(first + i * len(ASSIGNMENT) + p)) for i in range(PER_PHASE) for p in range(len(ASSIGNMENT))]
    run = produce(cluster, TOPIC, items, {"acks": "all", "enable.idempotence": True})
    assert not run.failed and not run.unfinished and len(run.acked) == len(items)


def all_in_sync(cluster: Cluster) -> bool:
    return all(in_sync(cluster, TOPIC, p, [1, 2, 3]) for p in range(len(ASSIGNMENT)))


def sessions(cluster: Cluster) -> float:
    return sum(metric(cluster, b, "kafka_server_fetch_session_cache_num_incremental_fetch_sessions") for b in (1, 2, 3))


def read_with_kafka_python(cluster: Cluster, ends: dict[int, int]) -> tuple[dict[int, list[int]], float]:
    """Every record (by sequence number) per partition, and the brokers' session count while reading."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=1000)
    try:
        partitions = [KafkaTopicPartition(TOPIC, p) for p in ends]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        got: dict[int, list[int]] = {p: [] for p in ends}

        def done() -> bool:
            for batch in consumer.poll(timeout_ms=500).values():
                for record in batch:
                    got[record.partition].append(seq_of(record.value))
            return all(len(got[p]) >= ends[p] for p in ends)

        wait_for(done, 30, "kafka-python to read every record")
        return got, sessions(cluster)
    finally:
        consumer.close()


def test_replication_and_consumers_in_fetch_sessions_through_a_leader_change(tmp_path):
    with running_cluster(tmp_path / "cluster", 3, session_timeout_ms=6000) as cluster:
        zk = KazooClient(hosts=cluster.zookeeper_connect)
        zk.start()
        try:
            create_topic(cluster, zk, TOPIC, ASSIGNMENT)
            send(cluster, 0)
            wait_for(lambda: all_in_sync(cluster), 30, "every replica caught up")
            # every leader answers its followers from sessions
            for broker in (1, 2, 3):
                wait_for(lambda b=broker: incremental_fetches(cluster, b) > 0, 30, f"incremental fetches on {broker}")
                assert metric(cluster, broker, "kafka_server_fetch_session_cache_num_incremental_fetch_sessions") >= 2
            cluster.stop_broker(1)  # controlled shutdown: partitions 0 and 3 move to 2 and 3
            send(cluster, PER_PHASE * len(ASSIGNMENT))
            before = {b: incremental_fetches(cluster, b) for b in (2, 3)}
            cluster.start_broker(1)
            cluster.wait_until_ready(60)
            wait_for(lambda: all_in_sync(cluster), 45, "broker 1 caught up as a follower")
            wait_for(lambda: all(incremental_fetches(cluster, b) > before[b] for b in (2, 3)), 30,
                     "incremental fetches after the leader change")
            for p in range(len(ASSIGNMENT)):
                assert_identical_logs(cluster, TOPIC, p, [1, 2, 3])
        finally:
            zk.stop()
            zk.close()
        expected = {p: sorted(i * len(ASSIGNMENT) + p + phase * PER_PHASE * len(ASSIGNMENT)
                              for phase in (0, 1) for i in range(PER_PHASE)) for p in range(len(ASSIGNMENT))}
        records = consume(cluster, TOPIC, list(range(len(ASSIGNMENT))))
        assert {p: sorted(seq_of(v) for _, v in rows) for p, rows in records.items()} == expected
        assert sessions(cluster) == 6  # librdkafka is sessionless: only the followers' (2 per leader)
        read, while_reading = read_with_kafka_python(cluster, {p: len(expected[p]) for p in expected})
        assert {p: sorted(seqs) for p, seqs in read.items()} == expected
        assert while_reading > 6  # kafka-python's sessions too
