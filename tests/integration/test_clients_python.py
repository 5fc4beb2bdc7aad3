"""Unmodified pure-Python clients against a real 3-broker cluster: kafka-python 3.0.12 and aiokafka 0.14.

For each client: topic creation through its admin API, produce with every codec and acks 0 and 1
(plus kafka-python's default producer, which is idempotent with acks=all and so needs InitProducerId,
and aiokafka's opt-in idempotent producer), consume everything back with assign() from the beginning
(exact keys, values, timestamps, dense offsets per partition, one partition per key), and
earliest/latest/by-timestamp offsets.

The cross test makes confluent-kafka, kafka-python, aiokafka and kcat (Debian, librdkafka 2.0.2) each
write one batch per codec into its own topic, then makes every client read every topic.

Besides what the clients report, the stored batches are read straight from the partition directories
(Kafka's on-disk format is the wire format) to check the codec and producer id each batch was written
with: old librdkafka, for example, silently sends uncompressed data when the broker's ApiVersions window
misses its feature probes (reference/wire-protocol.md section 1.3).

Last, on a one-broker cluster that runs its retention task every 500 ms: a partition that is empty when
retention runs must keep working (Kafka never deletes a log's last, empty segment).
"""
from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import TopicAlreadyExistsError
from kazoo.client import KazooClient
from kafka.partitioner.default import murmur2

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.stored import stored_batches as read_stored

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# record timestamps: whole seconds an hour ago, well inside the default 7-day retention (records from
# years ago would be legitimately deleted by the first retention check, 5 minutes after start)
BASE_TS = (int(time.time()) - 3600) * 1000
KEYS = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf"]
PAD = b"|" + b"payload-" * 8  # compressible, so no client may decide compression "did not help"
KCAT = "/usr/bin/kcat"
TIMEOUT = 60.0


class Rec(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int


class Sent(NamedTuple):
    key: bytes | None
    value: bytes
    timestamp: int | None  # None: the producer's clock (kcat cannot set one)


class StoredBatch(NamedTuple):
    base_offset: int
    count: int
    codec: int
    producer_id: int
    producer_epoch: int
    base_sequence: int


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("clients-python") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000, properties={"auto.create.topics.enable": "true"}) as c:
        yield c


# -- helpers shared by every client --------------------------------------------------------------

def kp_codec(codec: str) -> str | None:
    return None if codec == "none" else codec


def stored_batches(cluster: Cluster, topic: str) -> dict[int, list[StoredBatch]]:
    """Every stored batch of ``topic`` per partition (read by tests.integration.stored), checked to be
    a producer's magic-2 batch: as many records as its last offset delta says."""
    out = {}
    for partition, headers in read_stored(cluster, topic).items():
        for h in headers:
            assert h.records_count == h.last_offset_delta + 1, f"{topic}[{partition}] {h}"
        out[partition] = [StoredBatch(h.base_offset, h.records_count, h.compression, h.producer_id, h.producer_epoch,
                                      h.base_sequence) for h in headers]
    return out


def assert_stored(cluster: Cluster, topic: str, codec_of_offset: dict[int, list[str]], *,
                  idempotent: bool | None = False) -> dict[int, list[StoredBatch]]:
    """Every stored batch covers records of one codec and was written with that codec.

    ``codec_of_offset[p][o]`` is the codec record ``o`` of partition ``p`` was produced with. With
    ``idempotent`` True, batches carry a producer id and per-partition sequences are dense from 0; with
    False they carry none; None skips that check.
    """
    stored = stored_batches(cluster, topic)
    for partition, codecs in codec_of_offset.items():
        batches = stored.get(partition, [])
        assert sum(b.count for b in batches) == len(codecs), (partition, batches)
        next_offset, next_sequence = 0, {}
        for batch in batches:
            assert batch.base_offset == next_offset, (partition, batches)
            wanted = set(codecs[batch.base_offset:batch.base_offset + batch.count])
            assert wanted == {codecs[batch.base_offset]}, f"batch {batch} mixes codecs {wanted}"
            assert batch.codec == CODEC_IDS[codecs[batch.base_offset]], \
                f"{topic}[{partition}] batch at {batch.base_offset} stored with codec {batch.codec}, " \
                f"produced as {codecs[batch.base_offset]}"
            if idempotent is True:
                assert batch.producer_id >= 0 and batch.producer_epoch >= 0, batch
                assert batch.base_sequence == next_sequence.get(batch.producer_id, 0), (partition, batches)
                next_sequence[batch.producer_id] = batch.base_sequence + batch.count
            elif idempotent is False:
                # (base_sequence not checked: aiokafka writes 0 where the Java client writes -1)
                assert (batch.producer_id, batch.producer_epoch) == (-1, -1), batch
            next_offset += batch.count
    return stored


def by_partition(records: list[Rec]) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r)
    return {p: sorted(rows, key=lambda r: r.offset) for p, rows in sorted(out.items())}


def check_keyed(records: list[Rec], sent: list[Sent], partitions: int) -> dict[bytes, int]:
    """Exactly ``sent``: dense offsets, one partition per key, production order within each partition."""
    assert len(records) == len(sent), (len(records), len(sent))
    rows = by_partition(records)
    assert set(rows) <= set(range(partitions))
    key_partition: dict[bytes, int] = {}
    for partition, recs in rows.items():
        assert [r.offset for r in recs] == list(range(len(recs))), partition  # dense from 0, no duplicates
        for r in recs:
            assert key_partition.setdefault(r.key, partition) == partition, f"key {r.key!r} in two partitions"
    for partition, recs in rows.items():
        expected = [s for s in sent if key_partition.get(s.key) == partition]
        assert [Sent(r.key, r.value, r.timestamp) for r in recs] == expected, partition
    return key_partition


def codecs_by_offset(records: list[Rec], codec_of_value) -> dict[int, list[str]]:
    return {p: [codec_of_value(r.value) for r in recs] for p, recs in by_partition(records).items()}


# -- kafka-python ------------------------------------------------------------------------------

def kp_create(cluster: Cluster, topic: str, partitions: int = 3, rf: int = 3) -> None:
    """kafka-python negotiates CreateTopics v7: the answer carries what the topic got (v5: counts and
    every topic config with its source; one override given here) and the topic id the znode holds (v7)."""
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        result = client.create_topics({topic: {"num_partitions": partitions, "replication_factor": rf,
                                               "configs": {"retention.ms": "3600000"}}},
                                      timeout_ms=30000, wait_for_metadata=True)
    finally:
        client.close()
    (answer,) = result["topics"]
    configs, topic_id = answer.pop("configs"), answer.pop("topic_id")
    assert answer == {"name": topic, "error_code": 0, "error_message": None, "topic_config_error_code": 0,
                      "num_partitions": partitions, "replication_factor": rf}
    assert topic_id == str(znode_topic_id(cluster, topic)) != str(uuid.UUID(int=0))
    assert configs["retention.ms"] == {"value": "3600000", "read_only": False,
                                       "config_source": "DYNAMIC_TOPIC_CONFIG", "is_sensitive": False}
    assert configs["cleanup.policy"] == {"value": "delete", "read_only": False, "config_source": "DEFAULT_CONFIG",
                                         "is_sensitive": False}
    assert set(configs) == {*DESCRIBED_TOPIC_CONFIGS}


DESCRIBED_TOPIC_CONFIGS = (  # every topic-level key this broker describes (DescribeConfigs lists the same)
    "cleanup.policy", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "max.message.bytes", "message.downconversion.enable", "message.format.version", "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
    "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
)


def znode_topic_id(cluster: Cluster, topic: str) -> uuid.UUID:
    """The topic id ``/brokers/topics/<topic>`` holds (Kafka's Uuid text: URL-safe base64)."""
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:
        text = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["topic_id"]
    finally:
        zk.stop()
        zk.close()
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def kp_produce(cluster: Cluster, topic: str, records: list[Sent], *, partition: int | None = None,
               **config) -> list[tuple[int, int]]:
    """Send all, flush, return (partition, offset) per record as the producer reports it."""
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, **config)
    try:
        futures = [producer.send(topic, value=s.value, key=s.key, partition=partition, timestamp_ms=s.timestamp)
                   for s in records]
        producer.flush(TIMEOUT)
        metadata = [f.get(TIMEOUT) for f in futures]
    finally:
        producer.close(TIMEOUT)
    return [(m.partition, m.offset) for m in metadata]


def kp_consume(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[Rec]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        tps = [KpTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records, deadline = [], time.monotonic() + TIMEOUT
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(Rec(r.partition, r.offset, r.key, r.value, r.timestamp) for r in batch)
        ends = consumer.end_offsets(tps)
        starts = consumer.beginning_offsets(tps)
    finally:
        consumer.close()
    counts = {tp.partition: n - starts[tp] for tp, n in ends.items()}  # what the logs hold now
    assert sum(counts.values()) == expected, counts  # nothing more stored than what was produced
    assert {p: len(rows) for p, rows in by_partition(records).items()} == {p: n for p, n in counts.items() if n}
    return records


# -- aiokafka -----------------------------------------------------------------------------------

async def aio_create(cluster: Cluster, topic: str, partitions: int = 3, rf: int = 3):
    client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    await client.start()
    try:
        response = await client.create_topics([AioNewTopic(topic, partitions, rf)], timeout_ms=30000)
        created = response.topic_errors[0][1] == 0
        deadline = time.monotonic() + TIMEOUT
        while True:  # once created, wait until every partition has a leader, as the admin call does not
            described = await client.describe_topics([topic])
            ready = (described[0]["error_code"] == 0 and len(described[0]["partitions"]) == partitions
                     and all(p["leader"] >= 0 for p in described[0]["partitions"]))
            if ready or not created or time.monotonic() > deadline:
                break
        return response, described
    finally:
        await client.close()


async def aio_produce(cluster: Cluster, topic: str, records: list[Sent], *, partition: int | None = None,
                      **config) -> list:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, **config)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=s.value, key=s.key, partition=partition,
                                       timestamp_ms=s.timestamp) for s in records]
        await producer.flush()
        return await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT)
    finally:
        await producer.stop()


async def aio_consume(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[Rec]:
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        tps = [AioTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records, deadline = [], time.monotonic() + TIMEOUT
        while len(records) < expected and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records.extend(Rec(r.partition, r.offset, r.key, r.value, r.timestamp) for r in batch)
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    counts = {tp.partition: n for tp, n in ends.items()}
    assert sum(counts.values()) == expected, counts
    assert {p: len(rows) for p, rows in by_partition(records).items()} == {p: n for p, n in counts.items() if n}
    return records


# -- confluent-kafka and kcat (for the cross test) ------------------------------------------------

def confluent_create(cluster: Cluster, topic: str, partitions: int = 3, rf: int = 3) -> None:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = client.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)],
                                   operation_timeout=30)
    futures[topic].result(timeout=TIMEOUT)


def confluent_produce(cluster: Cluster, topic: str, records: list[Sent], *, partition: int, codec: str) -> None:
    producer = ConfluentProducer({"bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
                                  "acks": "1", "linger.ms": 100, "enable.idempotence": False})
    errors = []
    for s in records:
        producer.produce(topic, value=s.value, key=s.key, partition=partition, timestamp=s.timestamp or 0,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0
    assert errors == []


def confluent_consume(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[Rec]:
    consumer = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused-no-commit",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        records, deadline = [], time.monotonic() + TIMEOUT
        while len(records) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            records.append(Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))
        highs = [consumer.get_watermark_offsets(ConfluentTopicPartition(topic, p), timeout=30)[1]
                 for p in range(partitions)]
    finally:
        consumer.close()
    assert sum(highs) == expected, highs
    return records


def kcat_produce(cluster: Cluster, topic: str, records: list[Sent], *, partition: int, codec: str) -> None:
    lines = []
    for s in records:
        assert b":" not in s.value and b"\n" not in s.value
        lines.append(s.value if s.key is None else s.key + b":" + s.value)  # no delimiter: NULL key
    proc = subprocess.run([KCAT, "-b", cluster.bootstrap_servers, "-P", "-t", topic, "-p", str(partition),
                           "-z", codec, "-K:", "-X", "acks=1", "-X", "linger.ms=100"],
                          input=b"\n".join(lines) + b"\n", capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode()


def kcat_consume(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[Rec]:
    proc = subprocess.run([KCAT, "-b", cluster.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-J"],
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode()
    records = []
    for line in proc.stdout.decode().splitlines():
        m = json.loads(line)
        assert m["tstype"] == "create", m
        records.append(Rec(m["partition"], m["offset"], None if m["key"] is None else m["key"].encode(),
                           m["payload"].encode(), m["ts"]))
    assert len(records) == expected, (len(records), expected)
    assert {r.partition for r in records} <= set(range(partitions))
    return records


# == kafka-python ================================================================================

def test_kafka_python_admin_create_topics(cluster):
    kp_create(cluster, "kp-admin", partitions=4, rf=3)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)

    def described_without_error():
        [d] = client.describe_topics(["kp-admin"])
        return d if d["error_code"] == 0 else None

    try:
        # describe_topics asks the least loaded broker, whose metadata may trail the one create_topics waited on
        # by one UpdateMetadata (a CI run saw UNKNOWN_TOPIC_OR_PARTITION there): Kafka's metadata is eventually
        # consistent across brokers, so wait for it with a deadline
        described = wait_for(described_without_error, 10, "kp-admin described without error", interval=0.1)
        assert described["error_code"] == 0
        assert [p["partition_index"] for p in described["partitions"]] == [0, 1, 2, 3]
        for p in described["partitions"]:
            assert sorted(p["replica_nodes"]) == [1, 2, 3] and p["leader_id"] in (1, 2, 3)
        assert "kp-admin" in client.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            client.create_topics({"kp-admin": {"num_partitions": 1, "replication_factor": 1}})
    finally:
        client.close()


def keyed(tag: str, count: int, start: int = 0) -> list[Sent]:
    return [Sent(KEYS[i % len(KEYS)], b"%s-%d" % (tag.encode(), i) + PAD, BASE_TS + i)
            for i in range(start, start + count)]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_every_codec_acks_1_and_0(cluster, codec):
    topic = f"kp-codec-{codec}"
    kp_create(cluster, topic)
    # acks=1 first: once it returns everything is appended, so the acks=0 records follow in a known order
    sent1, sent0 = keyed(f"{codec}-acks1", 70), keyed(f"{codec}-acks0", 70, start=70)
    delivered = kp_produce(cluster, topic, sent1, compression_type=kp_codec(codec), acks=1, linger_ms=5)
    kp_produce(cluster, topic, sent0, compression_type=kp_codec(codec), acks=0, linger_ms=5)
    records = kp_consume(cluster, topic, 3, 140)
    key_partition = check_keyed(records, sent1 + sent0, 3)
    for key, partition in key_partition.items():  # the Java-compatible default partitioner
        assert partition == (murmur2(key) & 0x7FFFFFFF) % 3, key
    position = {r.value: (r.partition, r.offset) for r in records}
    assert delivered == [position[s.value] for s in sent1]  # what acks=1 reported is where it was stored
    assert_stored(cluster, topic, codecs_by_offset(records, lambda v: codec), idempotent=False)


def test_kafka_python_default_producer_is_idempotent_acks_all(cluster):
    """KafkaProducer() with no settings: idempotent, acks=all, so InitProducerId then sequenced batches."""
    topic = "kp-default-producer"
    kp_create(cluster, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    assert producer.config["enable_idempotence"] is True and producer.config["acks"] == -1
    sent, delivered = keyed("default", 90), []
    try:
        for chunk in range(3):  # three rounds, so each partition gets several sequenced batches
            futures = [producer.send(topic, value=s.value, key=s.key, timestamp_ms=s.timestamp)
                       for s in sent[chunk * 30:(chunk + 1) * 30]]
            producer.flush(TIMEOUT)
            delivered += [(m.partition, m.offset) for m in (f.get(TIMEOUT) for f in futures)]
    finally:
        producer.close(TIMEOUT)
    records = kp_consume(cluster, topic, 3, 90)
    check_keyed(records, sent, 3)
    position = {r.value: (r.partition, r.offset) for r in records}
    assert delivered == [position[s.value] for s in sent]
    stored = assert_stored(cluster, topic, codecs_by_offset(records, lambda v: "none"), idempotent=True)
    producer_ids = {b.producer_id for batches in stored.values() for b in batches}
    assert len(producer_ids) == 1, producer_ids  # one InitProducerId for the whole producer


def test_kafka_python_earliest_latest_and_by_timestamp_offsets(cluster):
    topic = "kp-offsets"
    kp_create(cluster, topic, partitions=2)
    sent = [Sent(None, b"v-%d" % i, BASE_TS + 10 * i) for i in range(50)]
    kp_produce(cluster, topic, sent, partition=0, acks="all")  # the high watermark covers them all on return
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None, enable_auto_commit=False)
    try:
        tp, empty = KpTopicPartition(topic, 0), KpTopicPartition(topic, 1)
        assert consumer.beginning_offsets([tp, empty]) == {tp: 0, empty: 0}
        assert consumer.end_offsets([tp, empty]) == {tp: 50, empty: 0}
        found = consumer.offsets_for_times({tp: BASE_TS + 175, empty: BASE_TS})
        assert (found[tp].offset, found[tp].timestamp) == (18, BASE_TS + 180)  # first timestamp >= target
        assert found[empty] is None
        assert consumer.offsets_for_times({tp: BASE_TS + 170})[tp].offset == 17  # exact hit
        assert consumer.offsets_for_times({tp: BASE_TS - 1000})[tp].offset == 0
        assert consumer.offsets_for_times({tp: BASE_TS + 10**9})[tp] is None  # nothing that late
        consumer.assign([tp])
        consumer.seek(tp, found[tp].offset)
        got, deadline = [], time.monotonic() + TIMEOUT
        while len(got) < 32 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value, r.timestamp) for r in batch)
        assert got == [(i, b"v-%d" % i, BASE_TS + 10 * i) for i in range(18, 50)]
    finally:
        consumer.close()


# == aiokafka ====================================================================================

def test_aiokafka_admin_create_topics(cluster):
    async def scenario():
        response, described = await aio_create(cluster, "aio-admin", partitions=4, rf=3)
        assert [(t[0], t[1]) for t in response.topic_errors] == [("aio-admin", 0)]
        [topic] = described
        assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2, 3]
        for p in topic["partitions"]:
            assert sorted(p["replicas"]) == [1, 2, 3] and p["leader"] in (1, 2, 3)
        again, _ = await aio_create(cluster, "aio-admin", partitions=1, rf=1)
        assert [(t[0], t[1]) for t in again.topic_errors] == [("aio-admin", 36)]  # TOPIC_ALREADY_EXISTS

    asyncio.run(scenario())


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_every_codec_acks_1_and_0(cluster, codec):
    topic = f"aio-codec-{codec}"

    async def scenario():
        await aio_create(cluster, topic)
        sent1, sent0 = keyed(f"{codec}-acks1", 70), keyed(f"{codec}-acks0", 70, start=70)
        delivered = await aio_produce(cluster, topic, sent1, compression_type=kp_codec(codec), acks=1, linger_ms=5)
        acks0 = await aio_produce(cluster, topic, sent0, compression_type=kp_codec(codec), acks=0, linger_ms=5)
        assert acks0 == [None] * len(sent0)  # aiokafka reports nothing for acks=0
        return sent1, sent0, delivered, await aio_consume(cluster, topic, 3, 140)

    sent1, sent0, delivered, records = asyncio.run(scenario())
    key_partition = check_keyed(records, sent1 + sent0, 3)
    for key, partition in key_partition.items():
        assert partition == (murmur2(key) & 0x7FFFFFFF) % 3, key
    position = {r.value: (r.partition, r.offset) for r in records}
    assert [(m.partition, m.offset) for m in delivered] == [position[s.value] for s in sent1]
    # (not compared: RecordMetadata.timestamp, which aiokafka 0.14 sets to the batch's first record's
    # timestamp for every record of a CreateTime batch -- a client quirk, the stored ones are checked)
    assert_stored(cluster, topic, codecs_by_offset(records, lambda v: codec), idempotent=False)


def test_aiokafka_idempotent_producer(cluster):
    topic = "aio-idempotent"

    async def scenario():
        await aio_create(cluster, topic)
        sent = keyed("idem", 60)
        delivered = []
        for chunk in range(3):
            part = sent[chunk * 20:(chunk + 1) * 20]
            delivered += await aio_produce(cluster, topic, part, enable_idempotence=True, compression_type="gzip")
        return sent, delivered, await aio_consume(cluster, topic, 3, 60)

    sent, delivered, records = asyncio.run(scenario())
    check_keyed(records, sent, 3)
    position = {r.value: (r.partition, r.offset) for r in records}
    assert [(m.partition, m.offset) for m in delivered] == [position[s.value] for s in sent]
    stored = stored_batches(cluster, topic)
    for batches in stored.values():
        # three producers (one per round), each with its own producer id and sequences from 0
        by_pid: dict[int, list[StoredBatch]] = {}
        for b in batches:
            assert b.producer_id >= 0 and b.codec == CODEC_IDS["gzip"], b
            by_pid.setdefault(b.producer_id, []).append(b)
        for pid_batches in by_pid.values():
            sequence = 0
            for b in pid_batches:
                assert b.base_sequence == sequence, batches
                sequence += b.count
    assert len({b.producer_id for batches in stored.values() for b in batches}) == 3


def test_aiokafka_earliest_latest_and_by_timestamp_offsets(cluster):
    topic = "aio-offsets"

    async def scenario():
        await aio_create(cluster, topic, partitions=2)
        sent = [Sent(None, b"v-%d" % i, BASE_TS + 10 * i) for i in range(50)]
        await aio_produce(cluster, topic, sent, partition=0, acks="all")  # the high watermark covers them all on return
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        try:
            tp, empty = AioTopicPartition(topic, 0), AioTopicPartition(topic, 1)
            assert await consumer.beginning_offsets([tp, empty]) == {tp: 0, empty: 0}
            assert await consumer.end_offsets([tp, empty]) == {tp: 50, empty: 0}
            found = await consumer.offsets_for_times({tp: BASE_TS + 175, empty: BASE_TS})
            assert (found[tp].offset, found[tp].timestamp) == (18, BASE_TS + 180)
            assert found[empty] is None
            assert (await consumer.offsets_for_times({tp: BASE_TS + 170}))[tp].offset == 17
            assert (await consumer.offsets_for_times({tp: BASE_TS - 1000}))[tp].offset == 0
            assert (await consumer.offsets_for_times({tp: BASE_TS + 10**9}))[tp] is None
            consumer.assign([tp])
            consumer.seek(tp, found[tp].offset)
            got, deadline = [], time.monotonic() + TIMEOUT
            while len(got) < 32 and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend((r.offset, r.value, r.timestamp) for r in batch)
            assert got == [(i, b"v-%d" % i, BASE_TS + 10 * i) for i in range(18, 50)]
            assert await consumer.position(tp) == 50
        finally:
            await consumer.stop()

    asyncio.run(scenario())


# == every client reads every client =============================================================

CLIENTS = ["confluent", "kafka-python", "aiokafka", "kcat"]
CROSS_PARTITIONS = 3
CROSS_PER_BATCH = 25


def cross_plan(client: str) -> list[tuple[str, int, list[Sent]]]:
    """(codec, partition, records) per batch; codec i goes to partition i % 3, keys include NULL."""
    plan = []
    for i, codec in enumerate(CODECS):
        records = []
        for j in range(CROSS_PER_BATCH):
            key = None if j % 5 == 4 else b"k%d" % (j % 5)
            timestamp = None if client == "kcat" else BASE_TS + 1000 * i + j  # kcat cannot set timestamps
            records.append(Sent(key, b"%s|%s|%d" % (client.encode(), codec.encode(), j) + PAD, timestamp))
        plan.append((codec, i % CROSS_PARTITIONS, records))
    return plan


def cross_produce(cluster: Cluster, client: str, topic: str) -> None:
    for codec, partition, records in cross_plan(client):
        if client == "confluent":
            confluent_produce(cluster, topic, records, partition=partition, codec=codec)
        elif client == "kafka-python":
            kp_produce(cluster, topic, records, partition=partition, compression_type=kp_codec(codec), acks=1,
                       linger_ms=100)
        elif client == "aiokafka":
            asyncio.run(aio_produce(cluster, topic, records, partition=partition, compression_type=kp_codec(codec),
                                    acks=1, linger_ms=100))
        else:
            kcat_produce(cluster, topic, records, partition=partition, codec=codec)


def cross_consume(cluster: Cluster, client: str, topic: str, expected: int) -> list[Rec]:
    if client == "confluent":
        return confluent_consume(cluster, topic, CROSS_PARTITIONS, expected)
    if client == "kafka-python":
        return kp_consume(cluster, topic, CROSS_PARTITIONS, expected)
    if client == "aiokafka":
        return asyncio.run(aio_consume(cluster, topic, CROSS_PARTITIONS, expected))
    return kcat_consume(cluster, topic, CROSS_PARTITIONS, expected)


def test_cross_every_client_reads_every_client_in_every_codec(cluster):
    expected: dict[str, dict[int, list[tuple[bytes | None, bytes, int | None]]]] = {}
    codec_of: dict[str, dict[int, list[str]]] = {}
    windows: dict[str, tuple[int, int]] = {}  # CreateTime bounds for kcat's records
    for producer in CLIENTS:
        topic = f"cross-{producer}"
        confluent_create(cluster, topic, CROSS_PARTITIONS)
        started = int(time.time() * 1000)
        cross_produce(cluster, producer, topic)
        finished = int(time.time() * 1000)
        expected[topic], codec_of[topic] = {}, {}
        for codec, partition, records in cross_plan(producer):
            expected[topic].setdefault(partition, []).extend(records)
            codec_of[topic].setdefault(partition, []).extend([codec] * len(records))
        # the producer really compressed each batch with its codec (kcat's librdkafka 2.0.2 would
        # silently fall back to none if the broker's ApiVersions window missed its feature probes)
        assert_stored(cluster, topic, codec_of[topic], idempotent=False)
        windows[topic] = (started, finished)

    failures = []
    total = len(CODECS) * CROSS_PER_BATCH
    pairs = [(consumer, producer) for consumer in CLIENTS for producer in CLIENTS]
    with ThreadPoolExecutor(max_workers=8) as pool:  # 16 independent consumers; each mostly waits
        jobs = {pair: pool.submit(cross_consume, cluster, pair[0], f"cross-{pair[1]}", total) for pair in pairs}
    for (consumer, producer), job in jobs.items():
        topic = f"cross-{producer}"
        try:
            records = job.result()
        except AssertionError as exc:
            failures.append(f"{consumer} reading {topic}: {exc}")
            continue
        started, finished = windows[topic]
        got = by_partition(records)
        for partition in range(CROSS_PARTITIONS):
            rows = got.get(partition, [])
            want = expected[topic].get(partition, [])
            if [r.offset for r in rows] != list(range(len(want))):
                failures.append(f"{consumer} reading {topic}[{partition}]: offsets {[r.offset for r in rows]}")
                continue
            if [(r.key, r.value) for r in rows] != [(s.key, s.value) for s in want]:
                failures.append(f"{consumer} reading {topic}[{partition}]: keys/values differ")
            for r, s in zip(rows, want):
                if s.timestamp is not None and r.timestamp != s.timestamp:
                    failures.append(f"{consumer} reading {topic}[{partition}]@{r.offset}: ts {r.timestamp}")
                    break
                if s.timestamp is None and not started - 1000 <= r.timestamp <= finished + 1000:
                    failures.append(f"{consumer} reading {topic}[{partition}]@{r.offset}: ts {r.timestamp} "
                                    f"outside the produce window {started}..{finished}")
                    break
    assert failures == []


# == a partition that is empty when the retention task runs ======================================

@pytest.fixture
def retention_cluster(tmp_path):
    """One broker that runs its retention task every 500 ms (Kafka: log.retention.check.interval.ms)."""
    with running_cluster(tmp_path / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties={"log.retention.check.interval.ms": "500"}) as c:
        yield c


def test_kafka_python_partition_left_empty_through_a_retention_check_still_works(retention_cluster):
    """Retention must never leave a log without segments.

    Kafka (``Log.deletableSegments``) never deletes the last segment when it is empty
    (``isLastSegmentAndEmpty``), and rolls a new active segment before deleting every other one; so an
    empty partition stays as it is, and a partition whose records all expired keeps its log end offset
    as the new log start offset and takes new records right after it.
    """
    c, topic = retention_cluster, "retention"
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1,
                                     "configs": {"retention.ms": "60000"}}}, wait_for_metadata=True)
    finally:
        admin.close()
    quick = dict(acks=1, request_timeout_ms=5000, delivery_timeout_ms=10000)  # fail fast, not after 120 s
    expired = [Sent(None, b"expired-%d" % i, BASE_TS + i) for i in range(10)]  # an hour old: past retention.ms
    assert kp_produce(c, topic, expired, partition=0, **quick) == [(0, i) for i in range(10)]
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap_servers, group_id=None, enable_auto_commit=False)
    try:
        tp0, tp1 = KpTopicPartition(topic, 0), KpTopicPartition(topic, 1)
        deadline = time.monotonic() + TIMEOUT
        while consumer.beginning_offsets([tp0])[tp0] != 10:  # the retention task has run with partition 1 empty
            assert time.monotonic() < deadline, "partition 0's expired records were never deleted"
        assert consumer.end_offsets([tp0, tp1]) == {tp0: 10, tp1: 0}
        assert consumer.beginning_offsets([tp1]) == {tp1: 0}
    finally:
        consumer.close()
    fresh = [Sent(None, b"fresh-%d" % i, int(time.time() * 1000)) for i in range(10)]
    assert kp_produce(c, topic, fresh[:5], partition=1, **quick) == [(1, i) for i in range(5)]
    assert kp_produce(c, topic, fresh[5:], partition=0, **quick) == [(0, 10 + i) for i in range(5)]
    records = kp_consume(c, topic, 2, 10)
    assert sorted((r.partition, r.offset, r.value) for r in records) == \
        [(0, 10 + i, s.value) for i, s in enumerate(fresh[5:])] + [(1, i, s.value) for i, s in enumerate(fresh[:5])]
