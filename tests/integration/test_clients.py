"""Unmodified real clients against a real 3-broker cluster (``zkafka cluster up`` code path).

confluent-kafka (librdkafka): admin create/delete topics, produce with every codec and acks 0/1,
consume everything back with assign(), earliest/latest/by-timestamp offsets; keys hash to the same
partition every time.
"""
from __future__ import annotations

import time

import pytest

NOW_MS = int(time.time() * 1000) - 3_600_000  # an hour ago: inside the default 7-day retention
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import running_cluster

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("clients") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"auto.create.topics.enable": "true"}) as c:
        yield c


def admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create(cluster, topic: str, partitions: int = 3, rf: int = 3) -> None:
    client = admin(cluster)  # keep the handle alive until the future resolves
    futures = client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)],
                                   operation_timeout=30)
    futures[topic].result(timeout=60)


def produce(cluster, topic: str, codec: str, acks: str, count: int, key_of=lambda i: b"key-%d" % (i % 4)):
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec, "acks": acks,
                         "linger.ms": 5, "enable.idempotence": False})
    delivered = []
    for i in range(count):
        producer.produce(topic, value=b"%s-%s-%d" % (codec.encode(), acks.encode(), i), key=key_of(i),
                         timestamp=NOW_MS + i,
                         on_delivery=lambda err, msg: delivered.append((err, msg.partition(), msg.offset())))
    assert producer.flush(60) == 0
    return delivered


def consume_all(cluster, topic: str, partitions: int, expected: int, timeout: float = 60.0):
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused-no-commit",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records, deadline = [], time.monotonic() + timeout
    while len(records) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        records.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))
    consumer.close()
    return records


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume_every_codec(cluster, codec):
    topic = f"codec-{codec}"
    create(cluster, topic)
    delivered = produce(cluster, topic, codec, "1", 200)
    assert all(err is None for err, _, _ in delivered)
    records = consume_all(cluster, topic, 3, 200)
    assert len(records) == 200
    by_partition = {}
    for partition, offset, key, value, ts in records:
        by_partition.setdefault(partition, []).append((offset, key, value, ts))
    for partition, rows in by_partition.items():
        assert [o for o, *_ in rows] == list(range(len(rows)))  # dense offsets from 0, in order
    key_partition = {}
    for partition, _, key, _, _ in records:
        assert key_partition.setdefault(key, partition) == partition  # one key, one partition
    values = sorted(v for *_, v, _ in records)
    assert values == sorted(b"%s-1-%d" % (codec.encode(), i) for i in range(200))
    assert {(err, p, o) for err, p, o in delivered} == {(None, p, o) for p, o, *_ in records}


def test_acks_zero_is_delivered_without_responses(cluster):
    create(cluster, "acks-zero", partitions=1)
    produce(cluster, "acks-zero", "none", "0", 100)
    records = consume_all(cluster, "acks-zero", 1, 100)
    assert [r[1] for r in records] == list(range(100))


def test_list_offsets_earliest_latest_and_by_timestamp(cluster):
    create(cluster, "offsets", partitions=1)
    produce(cluster, "offsets", "none", "all", 50, key_of=lambda i: None)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "offsets-probe"})
    low, high = consumer.get_watermark_offsets(TopicPartition("offsets", 0), timeout=30)
    assert (low, high) == (0, 50)
    found = consumer.offsets_for_times([TopicPartition("offsets", 0, NOW_MS + 17)], timeout=30)
    assert found[0].offset == 17
    beyond = consumer.offsets_for_times([TopicPartition("offsets", 0, NOW_MS + 10**9)], timeout=30)
    assert beyond[0].offset == -1  # no record at or after that time: "end"
    consumer.close()


def test_admin_delete_topic_and_unknown_topic(cluster):
    create(cluster, "short-lived", partitions=2)
    client = admin(cluster)
    client.delete_topics(["short-lived"], operation_timeout=30)["short-lived"].result(timeout=60)
    assert "short-lived" not in client.list_topics(timeout=30).topics
    with pytest.raises(KafkaException):
        client.delete_topics(["never-existed"], operation_timeout=10)["never-existed"].result(timeout=30)


def test_create_existing_topic_is_an_error(cluster):
    create(cluster, "twice", partitions=1)
    with pytest.raises(KafkaException) as excinfo:
        create(cluster, "twice", partitions=1)
    assert "TOPIC_ALREADY_EXISTS" in str(excinfo.value)
