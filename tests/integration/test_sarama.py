"""Sarama 1.22 (Debian's golang-github-shopify-sarama-dev, built offline by `make tools` from
tests/clients/sarama) against a real 3-broker cluster. Sarama does not negotiate: it sends the versions its
configured Kafka version implies, so one program is two clients:

- ``2.2.0``: Metadata v5, Produce v3 (v2 batches), Fetch v4, ListOffsets v1, a ConsumerGroup (FindCoordinator,
  JoinGroup v1, SyncGroup, Heartbeat, OffsetFetch v1, OffsetCommit v2, LeaveGroup) and the ClusterAdmin
  (CreateTopics v2, DeleteTopics v1, DescribeConfigs).
- ``0.8.2.0``: Metadata v0, Produce v0 (magic 0 message sets, up-converted on append), Fetch v0 (down-converted
  to magic 0), ListOffsets v0, and for offsets GroupCoordinator v0 + OffsetFetch v1 + OffsetCommit v1 (0.8.2 has
  no group membership).

What Sarama wrote is read back with confluent-kafka and what confluent-kafka wrote is read with Sarama; group
offsets Sarama commits are fetched by confluent-kafka. Sarama writes ``max_timestamp = -1`` in every v2 batch:
the broker recomputes it on append, as Kafka's LogValidator does, so ListOffsets by timestamp finds them.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.external_clients import (  # versions_served: an autouse fixture
    TIMEOUT, committed, create_topic, end_offsets, read_all, sarama, topic_partitions, topics_seen,
    versions_served)
from tests.integration.stored import stored_batches

VERSIONS = ["2.2.0", "0.8.2.0"]
BASE_TS = (int(time.time()) - 3600) * 1000
KEYS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
GZIP = 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("sarama") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


def sarama_partition(key: str, partitions: int) -> int:
    """Sarama's default hash partitioner: FNV-1a 32 as a signed int32, Go's truncating %, then its absolute value."""
    h = 0x811C9DC5
    for byte in key.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return abs(signed) % partitions


def keyed_records(tag: str, rounds: int, version: str) -> list[dict]:
    """Records with timestamps and headers where the version carries them (magic 2), plain key/value at 0.8.2."""
    records = []
    for i in range(rounds):
        for k, key in enumerate(KEYS):
            r = {"key": key, "value": f"{tag}-{key}-{i}"}
            if version != "0.8.2.0":
                r |= {"timestamp": BASE_TS + i * len(KEYS) + k, "headers": {"round": str(i)}}
            records.append(r)
    return records


def comparable(records: list[dict], version: str) -> list[tuple]:
    """What a client at ``version`` can tell of each record: timestamps and headers need magic 2."""
    if version == "0.8.2.0":
        return sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records)
    return sorted((r["partition"], r["offset"], r["key"], r["value"], r["timestamp"],
                   tuple(sorted((r.get("headers") or {}).items()))) for r in records)


def test_sarama_cluster_admin_creates_lists_and_deletes_topics(cluster):
    assert sarama(cluster, "2.2.0", "create", "-topic", "sarama-admin", "-partitions", "3",
                  "-replication", "3") == {"created": "sarama-admin"}
    seen = topics_seen(cluster, "sarama-admin")["sarama-admin"]
    assert {p: sorted(r) for p, r in seen.items()} == {p: [1, 2, 3] for p in range(3)}
    listed = sarama(cluster, "2.2.0", "topics")["sarama-admin"]
    assert (listed["partitions"], listed["replication"]) == (3, 3)
    assert {int(p): r for p, r in listed["replicas"].items()} == seen

    assert sarama(cluster, "2.2.0", "delete", "-topic", "sarama-admin") == {"deleted": "sarama-admin"}
    wait_for(lambda: "sarama-admin" not in topic_partitions(cluster), TIMEOUT, "sarama-admin deleted")
    assert "sarama-admin" not in sarama(cluster, "2.2.0", "topics")


@pytest.mark.parametrize("version", VERSIONS)
def test_sarama_produces_gzip_records_that_confluent_reads_back(cluster, version):
    topic = f"sarama-produce-{version}"
    create_topic(cluster, topic, partitions=3)
    sent = keyed_records("sarama", rounds=4, version=version)
    acked = sarama(cluster, version, "produce", "-topic", topic, "-codec", "gzip", records=sent)
    assert [r["partition"] for r in acked] == [sarama_partition(r["key"], 3) for r in sent]
    assert len({r["partition"] for r in acked}) > 1

    read = read_all(cluster, topic, 3, len(sent))
    assert comparable(read, version) == comparable(acked, version)
    stored = stored_batches(cluster, topic)
    assert {(h.magic, h.compression) for headers in stored.values() for h in headers} == {(2, GZIP)}
    ends = end_offsets(cluster, topic, 3)
    assert sarama(cluster, version, "offsets", "-topic", topic) == {str(p): [0, n] for p, n in ends.items()}


def confluent_produce(cluster, topic: str, records: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20,
                         "compression.type": "gzip"})
    for r in records:
        producer.produce(topic, key=r["key"].encode(), value=r["value"].encode(), timestamp=r.get("timestamp", 0),
                         headers=list(r.get("headers", {}).items()))
    assert producer.flush(TIMEOUT) == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_sarama_consumes_for_a_group_whose_commits_confluent_sees(cluster, version):
    topic, group = f"sarama-group-{version}", f"sarama-group-{version}"
    create_topic(cluster, topic, partitions=3)
    first = keyed_records("first", rounds=4, version="2.2.0")
    confluent_produce(cluster, topic, first)
    written = read_all(cluster, topic, 3, len(first))

    consumed = sarama(cluster, version, "consume", "-topic", topic, "-group", group, "-count", str(len(first)))
    assert comparable(consumed, version) == comparable(written, version)
    assert committed(cluster, group, topic, 3) == {p: n for p, n in end_offsets(cluster, topic, 3).items() if n}

    second = keyed_records("second", rounds=2, version="2.2.0")
    confluent_produce(cluster, topic, second)
    again = sarama(cluster, version, "consume", "-topic", topic, "-group", group, "-count", str(len(second)))
    assert sorted(r["value"] for r in again) == sorted(r["value"] for r in second)
    assert committed(cluster, group, topic, 3) == end_offsets(cluster, topic, 3)


def test_sarama_batches_are_found_by_timestamp(cluster):
    """Sarama's batches carry max_timestamp -1; after append the stored header holds the records' maximum
    and ListOffsets v1+ by timestamp finds every record."""
    topic = "sarama-timestamps"
    create_topic(cluster, topic, partitions=1)
    sent = [{"key": "k", "value": f"v{i}", "timestamp": BASE_TS + i * 1000} for i in range(20)]
    for codec, chunk in (("none", sent[:10]), ("gzip", sent[10:])):
        sarama(cluster, "2.2.0", "produce", "-topic", topic, "-codec", codec, records=chunk)

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "sarama-timestamps"})
    try:
        for offset in (0, 5, 9, 10, 19):
            # a timestamp just past record offset-1's finds record offset (the first at or after it)
            wanted = sent[offset]["timestamp"] - 500 if offset else sent[0]["timestamp"]
            found = consumer.offsets_for_times([TopicPartition(topic, 0, wanted)], timeout=TIMEOUT)[0]
            assert (found.error, found.offset) == (None, offset), (wanted, found)
        after = consumer.offsets_for_times([TopicPartition(topic, 0, sent[-1]["timestamp"] + 1)], timeout=TIMEOUT)
        assert after[0].offset == -1  # no record at or after it: Kafka answers offset -1
    finally:
        consumer.close()
    stored = stored_batches(cluster, topic)[0]
    assert [h.max_timestamp for h in stored] == [sent[h.base_offset + h.last_offset_delta]["timestamp"]
                                                 for h in stored]
