"""Client quotas end to end: one broker with a PLAINTEXT and a SASL_PLAINTEXT (PLAIN) listener, quotas written to
ZooKeeper exactly as Kafka 2.8's ``kafka-configs`` writes them (``/config/clients/<id>``, ``/config/users/<u>``,
``/config/users/<u>/clients/<id>``, ``<default>``, then a ``/config/changes`` notification), real clients.

* A confluent-kafka producer held to ``producer_byte_rate`` 1 MiB/s sends at full speed for 30 s: once Kafka's
  measurement window has filled, its acknowledged rate over the last 15 s is within 15 % of 1 MiB/s and
  librdkafka's statistics show the broker's throttle time; an unthrottled producer on the same broker meanwhile
  runs at several times that rate and is never throttled.
* A consumer held to ``consumer_byte_rate`` 1 MiB/s reads a full topic at 1 MiB/s (15 %, the last 15 s of 30),
  never more than one window's worth ahead of its quota.
* Precedence with SASL users: the throttle time of one 64 KiB Produce says which bound was applied (user+client,
  user, default user + client, default user, and a client-id quota once the user defaults are gone).
* ``controller_mutation_rate``: CreateTopics v6 (strict) refuses topics with THROTTLING_QUOTA_EXCEEDED once the
  burst is spent; v5 (permissive) creates them and answers the throttle time.
* A quota set live reaches a producer's existing connection in under a second.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.client.connection import KafkaConnection
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.protocol.sasl import SaslClientConfig
from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection
from tests.integration.window_broker import sasl_port, start_cluster
from tests.integration.znodes import connected_zk

MIB = 1 << 20
USERS = {"alice": "alice-secret", "bob": "bob-secret", "dave": "dave-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
              + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")


PROPERTIES = {
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "0", "default.replication.factor": "1",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("quotas"), PROPERTIES)
    try:
        yield cluster
    finally:
        cluster.down()


def set_quota(cluster: Cluster, entity_type: str, name: str, config: dict[str, str] | None) -> None:
    """What ``kafka-configs --zookeeper --alter`` writes: the entity's znode (its whole config, {} when the quota
    is removed), then a version-2 change notification naming it."""
    path = f"/config/{entity_type}/{name}"
    data = json.dumps({"version": 1, "config": config or {}}).encode()
    with connected_zk(cluster) as zk:
        if zk.exists(path):
            zk.set(path, data)
        else:
            zk.create(path, data, makepath=True)
        zk.create("/config/changes/config_change_", json.dumps(
            {"version": 2, "entity_path": f"{entity_type}/{name}"}).encode(), sequence=True, makepath=True)


def create_topic(cluster: Cluster, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    wait_for(lambda: name in admin.list_topics(timeout=10).topics, 30, f"topic {name}")


def batch(size: int) -> bytes:
    return bytes(build_batch([Record(0, 0, None, os.urandom(size))], base_timestamp=int(time.time() * 1000)))


def produce_request(topic: str, size: int) -> dict:
    return dict(transactional_id=None, acks=1, timeout=10000,
                topic_data=[dict(name=topic, partition_data=[dict(index=0, records=batch(size))])])


# -- bandwidth ------------------------------------------------------------------------------------
class Acked:
    """A producer's acknowledged bytes over time and the throttle librdkafka's statistics report."""

    def __init__(self) -> None:
        self.events: list[tuple[float, int]] = []
        self.throttle_max_ms = 0

    def on_delivery(self, err, msg) -> None:
        if err is None:
            self.events.append((time.monotonic(), len(msg.value())))

    def on_stats(self, text: str) -> None:
        for broker in json.loads(text).get("brokers", {}).values():
            self.throttle_max_ms = max(self.throttle_max_ms, broker.get("throttle", {}).get("max", 0))

    def rate(self, start: float, end: float) -> float:
        return sum(size for at, size in self.events if start <= at < end) / (end - start)


def run_producer(cluster: Cluster, client_id: str, topic: str, seconds: float, acked: Acked,
                 batch_bytes: int = 1_000_000) -> None:
    """One request in flight, as Kafka's broker reads them (one per connection at a time): zkafka's listener reads
    pipelined requests, and after a mute libuv may read several of them in one go, before the first one's quota
    check mutes the connection again; a pipelining producer then runs in bursts of its queue (8 MB here) about
    every 8 s — held to its quota on average, not window by window (issue 29's note)."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id,
                         "linger.ms": 5, "statistics.interval.ms": 500, "stats_cb": acked.on_stats,
                         "queue.buffering.max.kbytes": 8192, "batch.size": batch_bytes,
                         "max.in.flight.requests.per.connection": 1})
    value = os.urandom(16384)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, value, on_delivery=acked.on_delivery)
        except BufferError:
            producer.poll(0.05)
            continue
        producer.poll(0)
    producer.flush(60)


def test_a_producer_is_held_to_its_byte_rate_and_another_keeps_its_speed(cluster):
    create_topic(cluster, "quota-produce")
    set_quota(cluster, "clients", "throttled-producer", {"producer_byte_rate": str(MIB)})
    throttled, free = Acked(), Acked()
    started = time.monotonic()
    worker = threading.Thread(target=run_producer, args=(cluster, "throttled-producer", "quota-produce", 30, throttled))
    worker.start()
    time.sleep(20)  # the free producer shares the broker for the last 10 s of the throttled one's run
    run_producer(cluster, "free-producer", "quota-produce", 10, free)
    worker.join(120)
    rate = throttled.rate(started + 15, started + 30)
    assert abs(rate - MIB) <= 0.15 * MIB, f"throttled producer acknowledged {rate / MIB:.2f} MiB/s"
    assert throttled.throttle_max_ms > 0
    free_start = min(at for at, _ in free.events)
    assert free.rate(free_start, free_start + 9) > 4 * MIB and free.throttle_max_ms == 0


def test_a_consumer_is_held_to_its_byte_rate(cluster):
    """A consumer that always wants more reads at its quota, window by window: never more than one window's worth
    ahead of it (Kafka's sampled rate alone would let it take 10 windows' worth at once, then nothing for 11 s)."""
    create_topic(cluster, "quota-consume")
    filled = Acked()
    # one record per batch: a fetch capped at one window's worth (1 MiB) ends in a partial batch the client drops
    # but the quota counts; with librdkafka's default 1 MB batches that is up to half of each fetch
    run_producer(cluster, "filler", "quota-consume", 3, filled, batch_bytes=16384)
    assert sum(size for _, size in filled.events) > 40 * MIB
    set_quota(cluster, "clients", "throttled-consumer", {"consumer_byte_rate": str(MIB)})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "throttled-consumer",
                         "group.id": "quota-readers", "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "statistics.interval.ms": 500, "stats_cb": (stats := Acked()).on_stats})
    consumer.subscribe(["quota-consume"])
    read: list[tuple[float, int]] = []
    started = time.monotonic()
    try:
        while time.monotonic() < started + 30:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                read.append((time.monotonic(), len(msg.value())))
    finally:
        consumer.close()
    first = min(at for at, _ in read)
    total = 0
    for at, size in read:  # at no moment more than the quota allows (one window's worth, one 1 MiB fetch of slack)
        total += size
        assert total <= MIB * (at - first + 2), f"{total / MIB:.1f} MiB read {at - first:.1f} s in"
    rate = sum(size for at, size in read if started + 15 <= at < started + 30) / 15
    assert abs(rate - MIB) <= 0.15 * MIB, f"throttled consumer read {rate / MIB:.2f} MiB/s"
    assert stats.throttle_max_ms > 0


# -- precedence, with SASL users ------------------------------------------------------------------
def produce_throttle_ms(cluster: Cluster, user: str | None, client_id: str, size: int = 65536) -> tuple[int, int]:
    """(throttle_time_ms, request bytes) of one Produce v8 of ``size`` bytes as ``user`` (SASL PLAIN; None:
    PLAINTEXT, User:ANONYMOUS) with ``client_id``, on a new connection."""
    async def call() -> tuple[int, int]:
        sasl = SaslClientConfig("PLAIN", user, USERS[user]) if user else None
        port = sasl_port(cluster.spec) if user else cluster.kafka_port(1)
        connection = KafkaConnection("127.0.0.1", port, client_id, sasl=sasl)
        await connection.connect(15)
        try:
            body = codec.build(codec.request_class(ApiKey.PRODUCE, 8), **produce_request("quota-precedence", size))
            request_bytes = len(codec.encode_request(ApiKey.PRODUCE, 8, 1, client_id, body)) - 4
            response = await connection.request(ApiKey.PRODUCE, 8, body, 15)
            return int(response.throttle_time.total_seconds() * 1000), request_bytes
        finally:
            connection.close()

    return asyncio.run(call())


def applied_bound(throttle_ms: int, request_bytes: int, bounds: list[int]) -> int:
    """The bound that explains a first request's throttle: bytes / bound - 1 s (the one window's worth the bucket
    holds; Kafka's rate alone would answer bytes / bound - 10 to 11 s, less)."""
    implied = request_bytes * 1000 / (throttle_ms + 1000)
    return min(bounds, key=lambda bound: abs(bound - implied))


def test_the_most_specific_quota_applies_to_sasl_users_and_clients(cluster):
    create_topic(cluster, "quota-precedence")
    quotas = [("users", "alice/clients/app1", 500), ("users", "alice", 1000),
              ("users", "<default>/clients/app2", 2000), ("users", "<default>", 4000), ("clients", "app3", 3000)]
    bounds = [bound for _, _, bound in quotas]
    for entity_type, name, bound in quotas:
        set_quota(cluster, entity_type, name, {"producer_byte_rate": str(bound)})
    # bob's own rate (user default, tags (bob, "")) is not one the cases below are measured by
    wait_for(lambda: produce_throttle_ms(cluster, "bob", "probe")[0] > 0, 10, "the quotas to apply")
    cases = [("alice", "app1", 500), ("alice", "other", 1000), ("bob", "app2", 2000), ("dave", "zzz", 4000)]
    for user, client_id, expected in cases:
        throttle_ms, size = produce_throttle_ms(cluster, user, client_id)
        assert applied_bound(throttle_ms, size, bounds) == expected, (user, client_id, throttle_ms)
    set_quota(cluster, "users", "<default>", None)  # without user defaults, a client-id quota is next
    set_quota(cluster, "users", "<default>/clients/app2", None)
    wait_for(lambda: produce_throttle_ms(cluster, None, "probe")[0] == 0, 10, "the user defaults to go")
    throttle_ms, size = produce_throttle_ms(cluster, None, "app3")
    assert applied_bound(throttle_ms, size, bounds) == 3000


# -- controller mutations (KIP-599) -----------------------------------------------------------------
def create_topics(raw: RawConnection, version: int, names: list[str], partitions: int):
    return raw.request(ApiKey.CREATE_TOPICS, version, timeout=30000, validate_only=False, topics=[
        dict(name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])
        for name in names])


def test_controller_mutations_are_throttled_strictly_from_v6_and_permissively_before(cluster):
    # a burst of 22 partitions; the producer quota beside it shows when the entity has reached the broker
    set_quota(cluster, "clients", "creator", {"controller_mutation_rate": "2", "producer_byte_rate": "1000"})
    create_topic(cluster, "quota-precedence")
    wait_for(lambda: produce_throttle_ms(cluster, None, "creator")[0] > 0, 10, "the creator's quotas to apply")
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="creator") as raw:
        first = create_topics(raw, 6, ["mut-a", "mut-b", "mut-c"], 10)
        assert [t.error_code for t in first.topics] == [ErrorCode.NONE] * 3  # credits left before each: taken whole
        second = create_topics(raw, 6, ["mut-d"], 1)
        (refused,) = second.topics
        assert refused.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert refused.error_message == "The throttling quota has been exceeded."
        assert 3000 <= second.throttle_time.total_seconds() * 1000 <= 4500  # -8 credits at 2 per second
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="creator") as raw:
        permissive = create_topics(raw, 5, ["mut-e"], 4)
        assert permissive.topics[0].error_code == ErrorCode.NONE and permissive.throttle_time.total_seconds() > 3
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="someone-else") as raw:
        assert create_topics(raw, 6, ["mut-f"], 30).topics[0].error_code == ErrorCode.NONE


# -- live changes -----------------------------------------------------------------------------------
def test_a_quota_set_live_reaches_an_open_connection_within_a_second(cluster):
    create_topic(cluster, "quota-live")
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="live-producer") as raw:
        assert raw.request(ApiKey.PRODUCE, 8, **produce_request("quota-live", 65536)).throttle_time.total_seconds() == 0
        set_quota(cluster, "clients", "live-producer", {"producer_byte_rate": "10000"})
        written = time.monotonic()
        while True:
            response = raw.request(ApiKey.PRODUCE, 8, **produce_request("quota-live", 65536))
            if response.throttle_time.total_seconds() > 0:
                break
            assert time.monotonic() - written < 5, "the quota never applied"
            time.sleep(0.02)
        assert time.monotonic() - written < 1.0


# -- request time ------------------------------------------------------------------------------------
def test_request_time_over_request_percentage_is_throttled_at_most_one_window(cluster):
    set_quota(cluster, "clients", "busy", {"request_percentage": "0.0001"})  # 0.1 µs of handling per second
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="busy") as raw:
        def throttled_ms() -> float:
            return raw.request(ApiKey.METADATA, 9, topics=None, allow_auto_topic_creation=False,
                               include_cluster_authorized_operations=False,
                               include_topic_authorized_operations=False).throttle_time.total_seconds() * 1000

        wait_for(lambda: throttled_ms() > 0, 10, "the request quota to apply")
        assert 0 < throttled_ms() <= 1000  # Kafka's request throttle is at most one quota window
    with RawConnection("127.0.0.1", cluster.kafka_port(1), client_id="idle") as raw:
        answer = raw.request(ApiKey.METADATA, 9, topics=None, allow_auto_topic_creation=False,
                             include_cluster_authorized_operations=False, include_topic_authorized_operations=False)
        assert answer.throttle_time.total_seconds() == 0
