"""Unmodified Debian kcat 1.7.1 (librdkafka 2.0.2) against a real 3-broker cluster.

Old librdkafka switches protocol features on only when one exact "probe" version lies inside the
broker's advertised ranges (reference/wire-protocol.md section 1.3); when a probe misses, it silently
sends magic-0 message sets or uncompressed batches. So besides what kcat prints, these tests read the
stored batch headers from the partition directories (Kafka's on-disk format is the wire format) and
check each batch's magic and codec.

kcat has no admin API: topics come from confluent-kafka's AdminClient or from auto-creation, and both
auto-creation paths are tested explicitly (a Metadata request for an unknown topic, and producing to
one), as is the consumer's Metadata, which must not create topics. Then: metadata listing names all
three brokers and the controller, produce with every codec and acks 0 and 1 (keys always land in one
partition, the one librdkafka's consistent partitioner picks), consume back per partition with exact
keys, values, dense offsets and CreateTime timestamps, and earliest/latest/relative/by-timestamp
offsets (``-o beginning|end|-N|N|s@ts|e@ts`` and query mode ``-Q``).
"""
from __future__ import annotations

import json
import re
import subprocess
import time
import zlib

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.stored import stored_batches as read_stored

KCAT = "/usr/bin/kcat"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
NUM_PARTITIONS = 3  # the cluster's num.partitions, used by auto-creation
# record timestamps: whole seconds an hour ago, well inside the default 7-day retention (records from
# years ago would be legitimately deleted by the first retention check, 5 minutes after start)
BASE_TS = (int(time.time()) - 3600) * 1000
TIMEOUT = 60.0
KEYS = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf"]
PAD = b"-" + b"payload." * 8  # compressible, so no codec is skipped for not helping


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("kcat") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"auto.create.topics.enable": "true", "num.partitions": str(NUM_PARTITIONS)}) as c:
        yield c


def kcat(cluster: Cluster, *args: str, stdin: bytes | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([KCAT, "-b", cluster.bootstrap_servers, *args], input=stdin, capture_output=True,
                          timeout=TIMEOUT)
    if ok:
        assert proc.returncode == 0, f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()}"
    return proc


def metadata(cluster: Cluster, topic: str | None = None) -> dict:
    return json.loads(kcat(cluster, "-L", "-J", *(["-t", topic] if topic else [])).stdout)


def wait_for_topic(cluster: Cluster, topic: str) -> dict:
    """The topic's metadata once every partition has a leader (kcat -L until then; deadline only)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        [found] = metadata(cluster, topic)["topics"]
        if "error" not in found and found["partitions"] and all(p["leader"] >= 0 for p in found["partitions"]):
            return found
        assert time.monotonic() < deadline, f"topic {topic} never got leaders: {found}"


def create(cluster: Cluster, topic: str, partitions: int = 3, rf: int = 3) -> dict:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)],
                                   operation_timeout=30)
    futures[topic].result(timeout=TIMEOUT)
    return wait_for_topic(cluster, topic)


def produce(cluster: Cluster, topic: str, lines: list[bytes], *args: str) -> tuple[int, int]:
    """kcat -P with one message per line; returns the wall-clock window (ms) the CreateTimes fall in."""
    started = int(time.time() * 1000)
    kcat(cluster, "-P", "-t", topic, *args, stdin=b"".join(line + b"\n" for line in lines))
    return started, int(time.time() * 1000) + 1


def consume_partition(cluster: Cluster, topic: str, partition: int, *offset_args: str,
                      extra: tuple[str, ...] = ("-e",)) -> tuple[list[tuple[bytes, bytes, int, int]], str]:
    """(key, value, offset, timestamp) per message of one partition, and kcat's stderr."""
    proc = kcat(cluster, "-C", "-t", topic, "-p", str(partition), *offset_args, *extra, "-f", "%k:%s:%o:%T\n")
    rows = []
    for line in proc.stdout.splitlines():
        key, value, offset, timestamp = line.split(b":")
        rows.append((key, value, int(offset), int(timestamp)))
    return rows, proc.stderr.decode()


def stored_batches(cluster: Cluster, topic: str) -> dict[int, list[tuple[int, int, int, int, int]]]:
    """(base offset, record count, magic, codec, producer id) of every stored batch, per partition."""
    return {p: [(h.base_offset, h.records_count, h.magic, h.compression, h.producer_id) for h in headers]
            for p, headers in read_stored(cluster, topic).items()}


def test_metadata_names_all_three_brokers_and_the_controller(cluster):
    text = kcat(cluster, "-L").stdout.decode()
    assert re.search(r"^ 3 brokers:$", text, re.M), text
    listed = {int(m[1]): (m[2], int(m[3]), bool(m[4]))
              for m in re.finditer(r"^  broker (\d+) at ([\d.]+):(\d+)( \(controller\))?$", text, re.M)}
    controller_id, _ = cluster.controller()
    assert listed == {b: ("127.0.0.1", cluster.kafka_port(b), b == controller_id) for b in cluster.broker_ids}, text
    as_json = metadata(cluster)
    assert as_json["controllerid"] == controller_id
    assert sorted((b["id"], b["name"]) for b in as_json["brokers"]) == \
        [(b, f"127.0.0.1:{cluster.kafka_port(b)}") for b in cluster.broker_ids]


def test_auto_create_through_a_metadata_request(cluster):
    first = metadata(cluster, "kcat-auto-meta")
    [topic] = first["topics"]
    # Kafka answers the request that creates the topic with LEADER_NOT_AVAILABLE and no partitions
    assert topic["topic"] == "kcat-auto-meta" and topic.get("error") == "Broker: Leader not available", topic
    found = wait_for_topic(cluster, "kcat-auto-meta")
    assert [p["partition"] for p in found["partitions"]] == list(range(NUM_PARTITIONS))
    for p in found["partitions"]:
        assert sorted(r["id"] for r in p["replicas"]) == [1, 2, 3]  # default.replication.factor
        assert p["leader"] in (1, 2, 3) and p["leader"] in [r["id"] for r in p["isrs"]]


def test_auto_create_by_producing_and_the_consumer_does_not_create(cluster):
    lines = [b"k%d:auto-%d" % (i % 5, i) for i in range(40)]
    produce(cluster, "kcat-auto-produce", lines, "-K:", "-X", "acks=1")
    found = wait_for_topic(cluster, "kcat-auto-produce")
    assert len(found["partitions"]) == NUM_PARTITIONS
    got = []
    for partition in range(NUM_PARTITIONS):
        rows, _ = consume_partition(cluster, "kcat-auto-produce", partition, "-o", "beginning")
        assert [o for _, _, o, _ in rows] == list(range(len(rows)))
        got += [k + b":" + v for k, v, _, _ in rows]
    assert sorted(got) == sorted(lines)
    # librdkafka consumers send Metadata with allow_auto_topic_creation=false: no topic may appear
    proc = kcat(cluster, "-C", "-t", "kcat-consumer-no-create", "-p", "0", "-o", "beginning", "-e", ok=False)
    assert proc.returncode != 0 and "Unknown topic or partition" in proc.stderr.decode(), proc.stderr.decode()
    assert "kcat-consumer-no-create" not in [t["topic"] for t in metadata(cluster)["topics"]]


def test_topic_created_with_confluent_admin_is_listed(cluster):
    found = create(cluster, "kcat-admin-made", partitions=5)
    assert [p["partition"] for p in found["partitions"]] == [0, 1, 2, 3, 4]
    assert all(sorted(r["id"] for r in p["replicas"]) == [1, 2, 3] for p in found["partitions"])
    assert "kcat-admin-made" in [t["topic"] for t in metadata(cluster)["topics"]]


@pytest.mark.parametrize("codec", CODECS)
def test_produce_every_codec_with_acks_1_and_0_and_consume_back(cluster, codec):
    topic = f"kcat-codec-{codec}"
    create(cluster, topic)
    sent = [(KEYS[i % len(KEYS)], b"%s-%d" % (codec.encode(), i) + PAD) for i in range(140)]
    windows = []
    # acks=1 first: when kcat exits it is all appended, so the acks=0 messages follow in a known order
    for acks, chunk in (("1", sent[:70]), ("0", sent[70:])):
        windows.append(produce(cluster, topic, [k + b":" + v for k, v in chunk],
                               "-z", codec, "-K:", "-X", f"acks={acks}", "-X", "linger.ms=50"))
    started, finished = windows[0][0], windows[1][1]

    key_partition: dict[bytes, int] = {}
    total = 0
    for partition in range(3):
        rows, stderr = consume_partition(cluster, topic, partition, "-o", "beginning")
        total += len(rows)
        assert [o for _, _, o, _ in rows] == list(range(len(rows))), partition  # dense from 0
        assert f"Reached end of topic {topic} [{partition}] at offset {len(rows)}" in stderr
        for key, _, _, timestamp in rows:
            assert key_partition.setdefault(key, partition) == partition, f"key {key!r} in two partitions"
            assert started <= timestamp <= finished, (timestamp, started, finished)  # CreateTime, kept as sent
        assert [(k, v) for k, v, _, _ in rows] == [(k, v) for k, v in sent if key_partition.get(k) == partition]
    assert total == len(sent)
    for key, partition in key_partition.items():  # librdkafka's default (consistent_random) partitioner
        assert partition == zlib.crc32(key) % 3, key

    stored = stored_batches(cluster, topic)
    assert sum(count for batches in stored.values() for _, count, *_ in batches) == len(sent)
    for partition, batches in stored.items():
        for base, count, magic, codec_id, pid in batches:
            # a wrong ApiVersions window makes librdkafka 2.0.2 send magic 0 or skip compression silently
            assert (magic, codec_id, pid) == (2, CODEC_IDS[codec], -1), (partition, base, count)


def test_earliest_latest_relative_and_by_timestamp_offsets(cluster):
    topic = "kcat-offsets"
    create(cluster, topic, partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1", "linger.ms": 5})
    for i in range(50):  # kcat cannot set timestamps: write them with librdkafka 2.16
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=BASE_TS + 10 * i)
    assert producer.flush(TIMEOUT) == 0
    everything = [(b"k%d" % i, b"v%d" % i, i, BASE_TS + 10 * i) for i in range(50)]

    rows, stderr = consume_partition(cluster, topic, 0, "-o", "beginning")
    assert rows == everything
    assert f"Reached end of topic {topic} [0] at offset 50" in stderr

    rows, stderr = consume_partition(cluster, topic, 0, "-o", "end")
    assert rows == [] and f"Reached end of topic {topic} [0] at offset 50" in stderr

    rows, _ = consume_partition(cluster, topic, 0, "-o", "-5")  # relative to the end
    assert rows == everything[45:]
    rows, _ = consume_partition(cluster, topic, 0, "-o", "20", extra=("-c", "3"))  # absolute, count-limited
    assert rows == everything[20:23]

    rows, _ = consume_partition(cluster, topic, 0, "-o", f"s@{BASE_TS + 175}")  # first timestamp >= 175
    assert rows == everything[18:]
    rows, _ = consume_partition(cluster, topic, 0, "-o", f"s@{BASE_TS + 170}")  # exact hit
    assert rows == everything[17:]
    rows, stderr = consume_partition(cluster, topic, 0, "-o", f"s@{BASE_TS + 100}", "-o", f"e@{BASE_TS + 200}")
    assert rows == everything[10:20]
    assert f"Reached stop timestamp for topic {topic} [0] at offset 20" in stderr
    rows, stderr = consume_partition(cluster, topic, 0, "-o", f"s@{BASE_TS + 10**9}")  # nothing that late: end
    assert rows == [] and f"Reached end of topic {topic} [0] at offset 50" in stderr

    rows, stderr = consume_partition(cluster, topic, 1, "-o", "beginning")  # the empty partition
    assert rows == [] and f"Reached end of topic {topic} [1] at offset 0" in stderr

    # query mode: ListOffsets by timestamp, and -1 (latest) / -2 (earliest)
    queries = {(0, BASE_TS + 175): 18, (0, BASE_TS - 1000): 0, (0, -1): 50, (0, -2): 0, (1, BASE_TS): -1}
    for (partition, timestamp), offset in queries.items():
        out = kcat(cluster, "-Q", "-t", f"{topic}:{partition}:{timestamp}").stdout.decode()
        assert out.strip() == f"{topic} [{partition}] offset {offset}", (partition, timestamp, out)
