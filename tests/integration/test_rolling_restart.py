"""A rolling restart of all three brokers (SIGTERM: controlled shutdown, then start again) while a
confluent-kafka idempotent producer sends with acks=all to an RF 3 topic with min.insync.replicas=2:
every acknowledged record is read back exactly once, in order, and every replica ends with the same log ("controlled shutdown"). How long producers stall per broker is measured by
``zkafka bench replication`` (BENCHMARKS.md), not asserted here."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

TOPIC = "rolling"
PARTITIONS = 3
SESSION_MS = 4000


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=SESSION_MS, properties={
                         "replica.lag.time.max.ms": "3000", "replica.fetch.backoff.ms": "200"}) as c:
        yield c


def fully_replicated(cluster: Cluster) -> bool:
    """Every partition led by a live broker whose ISR holds all three replicas, and logs equal."""
    led = {}
    for broker in cluster.broker_ids:
        health = cluster.health(broker) or {}
        for name, p in health.get("partitions", {}).items():
            if p["is_leader"]:
                led[name] = p
    return (len(led) == PARTITIONS and all(sorted(p["isr"]) == [1, 2, 3] for p in led.values())
            and all(set(p["followers"].values()) == {p["log_end_offset"]} for p in led.values()))


class BackgroundProducer:
    def __init__(self, bootstrap: str):
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                  "enable.idempotence": True,
                                  "message.timeout.ms": 120000, "retry.backoff.ms": 100})
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.ack_times: list[float] = []
        self.failed: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, err, msg):
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked[msg.partition()].append(int(msg.value()))
            self.ack_times.append(time.monotonic())

    def _run(self):
        while not self._stop.is_set():
            try:
                self.producer.produce(TOPIC, str(self.sent).encode(), partition=self.sent % PARTITIONS,
                                      on_delivery=self._report)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.0005 if self.sent % 50 else 0.002)
        self.producer.flush(120)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(150)


def longest_stall(times: list[float], start: float, end: float) -> float:
    """The longest gap between consecutive acknowledgements within [start, end] (seconds)."""
    inside = [start] + [t for t in times if start <= t <= end] + [end]
    return max(b - a for a, b in zip(inside, inside[1:]))


def read_all(bootstrap: str) -> dict[int, list[int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})
    try:
        out = {}
        for p in range(PARTITIONS):
            high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1]
            consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING)])
            values, deadline = [], time.monotonic() + 60
            while len(values) < high and time.monotonic() < deadline:
                for message in consumer.consume(1000, timeout=1):
                    if message.error() is None:
                        values.append(int(message.value()))
            out[p] = values
        return out
    finally:
        consumer.close()


def test_rolling_restart_under_acks_all_load_loses_nothing(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]],
                     config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[TOPIC].result(30)
    wait_for(lambda: fully_replicated(cluster), 30, "the topic to be fully replicated")
    producer = BackgroundProducer(cluster.bootstrap_servers)
    producer.start()
    windows = []
    try:
        for broker in cluster.broker_ids:
            before = sum(map(len, producer.acked.values()))
            wait_for(lambda: sum(map(len, producer.acked.values())) > before + 2000, 60, "traffic before the restart")
            started = time.monotonic()
            cluster.stop_broker(broker)  # SIGTERM: controlled shutdown moves its leaderships first
            cluster.start_broker(broker)
            cluster.wait_until_ready(60)
            wait_for(lambda: fully_replicated(cluster), 60, f"broker {broker} to rejoin every ISR")
            windows.append((broker, started, time.monotonic()))
    finally:
        producer.stop()
    assert producer.failed == [], producer.failed[:5]
    for broker, start, end in windows:  # reported (BENCHMARKS.md), not asserted: speed is not a unit test
        print(f"restart of broker {broker}: longest gap between acknowledgements "
              f"{longest_stall(producer.ack_times, start, end) * 1000:.0f} ms over {end - start:.1f} s")
    acked = {p: v for p, v in producer.acked.items()}
    assert sum(map(len, acked.values())) >= 6000
    wait_for(lambda: fully_replicated(cluster), 60, "the final catch-up")
    stored = read_all(cluster.bootstrap_servers)
    for p in range(PARTITIONS):
        # idempotent producer: exactly what was acknowledged, once each, in order (no retry duplicates)
        assert stored[p][:len(acked[p])] == acked[p], f"partition {p}: stored records differ from acknowledged"
        assert len(stored[p]) == len(acked[p]), f"partition {p}: {len(stored[p]) - len(acked[p])} extra records"
