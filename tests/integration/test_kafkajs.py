"""kafkajs 2.2.4 (the npm registry's, run through node by tests/clients/kafkajs/client.js) against a real
3-broker cluster: its admin client (CreateTopics, Metadata, DeleteTopics, ListGroups, DescribeGroups,
OffsetFetch, ListOffsets), its producer (keyed records over several partitions, gzip, headers, explicit
timestamps) and its consumer group (JoinGroup, SyncGroup, Heartbeat, Fetch, OffsetCommit, LeaveGroup).
kafkajs negotiates: it sends the highest version both sides know, so it needs the broker's advertised
window to cover what it implements (DeleteTopics v1, for one).

Every result is checked with another client: confluent-kafka reads what kafkajs wrote and sees the topics
and committed offsets kafkajs made; kafkajs reads what confluent-kafka wrote.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from kafka.partitioner.default import murmur2

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.external_clients import (  # versions_served: an autouse fixture
    TIMEOUT, committed, create_topic, end_offsets, kafkajs, read_all, topic_partitions, topics_seen,
    versions_served)
from tests.integration.stored import stored_batches

BASE_TS = (int(time.time()) - 3600) * 1000
KEYS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
GZIP = 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("kafkajs") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


def keyed_records(tag: str, rounds: int) -> list[dict]:
    return [{"key": key, "value": f"{tag}-{key}-{i}", "timestamp": BASE_TS + i * len(KEYS) + k,
             "headers": {"round": str(i)}}
            for i in range(rounds) for k, key in enumerate(KEYS)]


def java_partition(key: str, partitions: int) -> int:
    """Where the Java client's default partitioner puts a keyed record (kafkajs' DefaultPartitioner agrees)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def without_offsets(records: list[dict]) -> list[tuple]:
    return sorted((r["partition"], r["key"], r["value"], r["timestamp"], tuple(sorted(r["headers"].items())))
                  for r in records)


def test_kafkajs_admin_creates_describes_and_deletes_topics(cluster):
    topics = [{"topic": "kafkajs-admin-a", "numPartitions": 3, "replicationFactor": 3},
              {"topic": "kafkajs-admin-b", "numPartitions": 2, "replicationFactor": 2}]
    assert kafkajs(cluster, "create-topics", {"topics": topics}) == {"created": True}

    described = kafkajs(cluster, "metadata", {"topics": ["kafkajs-admin-a", "kafkajs-admin-b"]})["topics"]
    shape = {t["name"]: sorted((p["partitionId"], len(p["replicas"]), p["leader"] in p["isr"])
                               for p in t["partitions"]) for t in described}
    assert shape == {"kafkajs-admin-a": [(0, 3, True), (1, 3, True), (2, 3, True)],
                     "kafkajs-admin-b": [(0, 2, True), (1, 2, True)]}
    seen = topics_seen(cluster, "kafkajs-admin-a", "kafkajs-admin-b")
    assert {p: sorted(r) for p, r in seen["kafkajs-admin-a"].items()} == {p: [1, 2, 3] for p in range(3)}
    assert len(seen["kafkajs-admin-b"]) == 2
    assert {"kafkajs-admin-a", "kafkajs-admin-b"} <= set(kafkajs(cluster, "list-topics")["topics"])

    assert kafkajs(cluster, "delete-topics", {"topics": ["kafkajs-admin-a"]}) == {"deleted": ["kafkajs-admin-a"]}
    wait_for(lambda: "kafkajs-admin-a" not in topic_partitions(cluster), TIMEOUT, "kafkajs-admin-a deleted")
    listed = kafkajs(cluster, "list-topics")["topics"]
    assert "kafkajs-admin-a" not in listed and "kafkajs-admin-b" in listed


def test_kafkajs_produces_keyed_gzip_batches_that_confluent_reads_back(cluster):
    topic = "kafkajs-produce"
    create_topic(cluster, topic, partitions=3)
    sent = keyed_records("js", rounds=5)
    acks = kafkajs(cluster, "produce", {"topic": topic, "codec": "gzip", "records": sent})
    assert all(a["errorCode"] == 0 for a in acks), acks

    read = read_all(cluster, topic, 3, len(sent))
    expected = [{**r, "partition": java_partition(r["key"], 3)} for r in sent]
    assert without_offsets(read) == without_offsets(expected)
    assert len({r["partition"] for r in read}) > 1
    for partition in range(3):
        values = [r["value"] for r in sorted(read, key=lambda r: r["offset"]) if r["partition"] == partition]
        assert values == [r["value"] for r in expected if r["partition"] == partition]  # send order kept
    stored = stored_batches(cluster, topic)
    assert {h.compression for headers in stored.values() for h in headers} == {GZIP}
    offsets = kafkajs(cluster, "topic-offsets", {"topic": topic})
    assert {int(o["partition"]): (int(o["low"]), int(o["high"])) for o in offsets} == \
        {p: (0, n) for p, n in end_offsets(cluster, topic, 3).items()}


def confluent_produce(cluster, topic: str, records: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20,
                         "partitioner": "murmur2_random"})  # the Java client's partitioner
    for r in records:
        producer.produce(topic, key=r["key"].encode(), value=r["value"].encode(), timestamp=r["timestamp"],
                         headers=list(r["headers"].items()))
    assert producer.flush(TIMEOUT) == 0


def test_kafkajs_consumer_group_commits_offsets_other_clients_see(cluster):
    topic, group = "kafkajs-group", "kafkajs-group-1"
    create_topic(cluster, topic, partitions=3)
    first = keyed_records("first", rounds=4)
    confluent_produce(cluster, topic, first)

    result = kafkajs(cluster, "consume", {"topic": topic, "group": group, "count": len(first)})
    assert without_offsets(result["records"]) == \
        without_offsets([{**r, "partition": java_partition(r["key"], 3)} for r in first])
    described = result["group"]
    assert (described["state"], described["protocolType"], described["errorCode"]) == ("Stable", "consumer", 0)
    assert len(described["members"]) == 1
    assert described["members"][0]["clientId"] == "zkafka-kafkajs"
    assert sorted(described["members"][0]["assignment"][topic]) == [0, 1, 2]

    ends = end_offsets(cluster, topic, 3)
    read_to = {p: n for p, n in ends.items() if n}
    assert committed(cluster, group, topic, 3) == read_to
    fetched = kafkajs(cluster, "fetch-offsets", {"group": group, "topics": [topic]})
    assert {p["partition"]: int(p["offset"]) for p in fetched[0]["partitions"]} == \
        {p: read_to.get(p, -1) for p in range(3)}
    listed = kafkajs(cluster, "list-groups")["groups"]
    assert {"groupId": group, "protocolType": "consumer"} in listed
    left = kafkajs(cluster, "describe-groups", {"groups": [group]})[0]
    assert (left["state"], left["members"]) == ("Empty", [])

    second = keyed_records("second", rounds=2)
    confluent_produce(cluster, topic, second)
    again = kafkajs(cluster, "consume", {"topic": topic, "group": group, "count": len(second)})
    assert sorted(r["value"] for r in again["records"]) == sorted(r["value"] for r in second)
    assert committed(cluster, group, topic, 3) == {p: n for p, n in end_offsets(cluster, topic, 3).items() if n}
