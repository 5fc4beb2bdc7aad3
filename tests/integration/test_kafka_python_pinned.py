"""kafka-python pinned to ``api_version=(2, 0, 0)`` and ``(1, 0, 0)`` against a real 3-broker cluster.

Pinned, kafka-python skips version negotiation and sends the highest version its table gives that Kafka
release (Kafka 1.0: Metadata v5, Produce v5, Fetch v6, ListOffsets v2, OffsetCommit v3, JoinGroup v2,
CreateTopics v2, DeleteTopics v1, ...; Kafka 2.0: Metadata v6, Produce v6, Fetch v8, OffsetCommit v4, JoinGroup v3,
CreateTopics v3, DeleteTopics v2, ...), as a client deployed against a 1.x or 2.x broker does. Each version
creates and deletes topics with its admin client, produces keyed gzip records with headers and timestamps
(read back exactly with confluent-kafka), and consumes them in a consumer group whose state and committed
offsets its admin client and confluent-kafka see.
"""
from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.external_clients import (  # versions_served: an autouse fixture
    TIMEOUT, committed, end_offsets, read_all, topic_partitions, topics_seen, versions_served)

VERSIONS = [(2, 0, 0), (1, 0, 0)]
BASE_TS = (int(time.time()) - 3600) * 1000
KEYS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("kafka-python-pinned") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


def tag(version: tuple) -> str:
    return "kp-" + "-".join(map(str, version))


def records(prefix: str, rounds: int) -> list[dict]:
    return [{"key": key, "value": f"{prefix}-{key}-{i}", "timestamp": BASE_TS + i * len(KEYS) + k,
             "headers": {"round": str(i)}} for i in range(rounds) for k, key in enumerate(KEYS)]


def produce(cluster, version: tuple, topic: str, sent: list[dict]) -> list[dict]:
    """Sends ``sent`` (gzip, acks=all); the records with the partitions and offsets the brokers acknowledged."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=version,
                             compression_type="gzip", acks="all", linger_ms=20)
    try:
        futures = [producer.send(topic, key=r["key"].encode(), value=r["value"].encode(), timestamp_ms=r["timestamp"],
                                 headers=[(k, v.encode()) for k, v in r["headers"].items()])
                   for r in sent]
        producer.flush(TIMEOUT)
        acked = [f.get(TIMEOUT) for f in futures]
    finally:
        producer.close(TIMEOUT)
    return [{**r, "partition": m.partition, "offset": m.offset} for r, m in zip(sent, acked)]


def consume_in_group(cluster, version: tuple, topic: str, group: str, count: int, admin: KafkaAdminClient):
    """Reads ``count`` records as the only member of ``group``, commits them, and describes the group
    while still its member."""
    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, api_version=version,
                             group_id=group, client_id=f"{group}-member", enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=10000)
    got: list[dict] = []
    try:
        def polled():
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend({"partition": m.partition, "offset": m.offset, "key": m.key.decode(),
                            "value": m.value.decode(), "timestamp": m.timestamp,
                            "headers": {k: v.decode() for k, v in m.headers}} for m in batch)
            return len(got) >= count

        wait_for(polled, TIMEOUT, f"{count} records for {group}", interval=0)
        consumer.commit()
        described = admin.describe_groups([group])[group]
    finally:
        consumer.close()
    return got, described


def comparable(rows: list[dict]) -> list[tuple]:
    return sorted((r["partition"], r["offset"], r["key"], r["value"], r["timestamp"], tuple(r["headers"].items()))
                  for r in rows)


@pytest.mark.parametrize("version", VERSIONS, ids=tag)
def test_kafka_python_pinned_produce_consume_group_and_admin(cluster, version):
    topic = group = tag(version)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, api_version=version,
                             request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)], timeout_ms=30000)
        assert len(topics_seen(cluster, topic)[topic]) == 3
        described = {t["name"]: t for t in admin.describe_topics([topic])}[topic]
        assert sorted((p["partition_index"], len(p["replica_nodes"])) for p in described["partitions"]) == \
            [(0, 3), (1, 3), (2, 3)]

        acked = produce(cluster, version, topic, records("first", rounds=4))
        assert len({r["partition"] for r in acked}) > 1
        assert comparable(read_all(cluster, topic, 3, len(acked))) == comparable(acked)

        consumed, group_state = consume_in_group(cluster, version, topic, group, len(acked), admin)
        assert comparable(consumed) == comparable(acked)
        assert (group_state["group_state"], group_state["protocol_type"]) == ("Stable", "consumer")
        assert [m["client_id"] for m in group_state["members"]] == [f"{group}-member"]
        ends = {p: n for p, n in end_offsets(cluster, topic, 3).items() if n}
        assert committed(cluster, group, topic, 3) == ends
        fetched = admin.list_group_offsets({group: [TopicPartition(topic, p) for p in range(3)]})[group]
        assert {tp.partition: meta.offset for tp, meta in fetched.items() if meta.offset >= 0} == ends
        assert group in {g["group_id"] for g in admin.list_groups()}

        more = produce(cluster, version, topic, records("second", rounds=2))
        again, _ = consume_in_group(cluster, version, topic, group, len(more), admin)
        assert comparable(again) == comparable(more)  # resumed from the committed offsets

        admin.delete_topics([topic], timeout_ms=30000)
        wait_for(lambda: topic not in topic_partitions(cluster), TIMEOUT, f"{topic} deleted")
        assert topic not in admin.list_topics()
    finally:
        admin.close()
