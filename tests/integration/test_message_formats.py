"""The old message formats against a real 2-broker cluster (every topic replicated to both brokers).

* magic 0 (Produce v0) and magic 1 (Produce v2) message sets, uncompressed and gzip/snappy/lz4, built by
  ``brokers.protocol.message_set`` and sent as raw frames, are read back by a v2 client (confluent-kafka)
  with their keys, values and (magic 1) timestamps; the follower's copy is the leader's v2 batch;
* v2 batches produced by confluent-kafka with every codec are read back with raw Fetch v0 and v2 and
  parsed as magic 0 / magic 1 message sets; zstd answers UNSUPPORTED_COMPRESSION_TYPE;
* a batch whose max_timestamp is -1 (as Sarama writes them), appended through a raw Produce, is found by
  ListOffsets by time (the broker recomputed it);
* a topic with ``message.downconversion.enable=false`` answers Fetch v2 with UNSUPPORTED_VERSION;
  ``message.format.version`` is validated, and at 0.10.2 the log still holds v2 batches;
* kafka-python pinned to ``api_version`` (0, 8, 2), (0, 9) and (0, 10, 0) produces and consumes with
  Produce/Fetch v0, v1 and v2 (magic 0, 0 and 1), counted as message conversions in /metrics; librdkafka
  pinned below 0.10 writes and reads magic-0 LZ4 (Kafka's wrong header checksum, KAFKA-3160).
"""
from __future__ import annotations

import logging
import re
import socket
import struct
import time

import pytest
import requests
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from prometheus_client.parser import text_string_to_metric_families

from brokers.protocol import compression
from brokers.protocol.errors import ErrorCode
from brokers.protocol.message_set import build_message_set, iter_messages, shallow_messages
from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.stored import stored_batches

TIMEOUT = 60.0
CODECS = {"none": compression.NONE, "gzip": compression.GZIP, "snappy": compression.SNAPPY, "lz4": compression.LZ4}
BASE_TS = (int(time.time()) - 3600) * 1000  # inside the default retention
PRODUCE, FETCH = 0, 1
COUNT = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("message-formats") / "cluster", 2, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create_topic(admin, name: str, partitions: int = 1, config: dict | None = None) -> None:
    futures = admin.create_topics([NewTopic(name, partitions, 2, config=config or {})], operation_timeout=30)
    futures[name].result(TIMEOUT)

    def leaders_known():
        topic = admin.list_topics(name, timeout=5).topics.get(name)
        return topic is not None and len(topic.partitions) == partitions and all(
            p.leader >= 0 and len(p.isrs) == 2 for p in topic.partitions.values())

    wait_for(leaders_known, TIMEOUT, f"{name}'s leaders and full ISRs", interval=0.2)


def leader_port(cluster, admin, topic: str, partition: int = 0) -> int:
    leader = admin.list_topics(topic, timeout=5).topics[topic].partitions[partition].leader
    return cluster.kafka_port(leader)


# -- raw requests --------------------------------------------------------------------------------

def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


class RawConnection:
    """Request header v1 frames over a blocking socket: what a client of Kafka 0.8-0.10 sends."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.correlation_id = 0

    def request(self, api_key: int, version: int, body: bytes) -> bytes:
        self.correlation_id += 1
        frame = struct.pack(">hhi", api_key, version, self.correlation_id) + _string("legacy-tests") + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size, correlation_id = struct.unpack(">ii", self._read(8))
        assert correlation_id == self.correlation_id
        return self._read(size - 4)

    def _read(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            chunk = self.sock.recv(size - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


RETRIABLE = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def produce(port: int, version: int, topic: str, partition: int, records: bytes) -> tuple[int, int]:
    """(error code, base offset) of a raw Produce v0-v3 with acks=all, retried while the leader does not
    know it leads yet (those errors append nothing)."""
    return wait_for(lambda: _not_retriable(produce_once(port, version, topic, partition, records)), TIMEOUT,
                    f"a produce to {topic}[{partition}] the leader takes", interval=0.1)


def _not_retriable(outcome: tuple[int, int]) -> tuple[int, int] | None:
    return None if outcome[0] in RETRIABLE else outcome


def produce_once(port: int, version: int, topic: str, partition: int, records: bytes) -> tuple[int, int]:
    body = (struct.pack(">h", -1) if version >= 3 else b"") + struct.pack(">hi", -1, 10_000)
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">iii", 1, partition, len(records)) + records
    connection = RawConnection(port)
    try:
        response = connection.request(PRODUCE, version, body)
    finally:
        connection.close()
    (topics,) = struct.unpack_from(">i", response)
    (length,) = struct.unpack_from(">h", response, 4)
    assert topics == 1 and response[6 : 6 + length].decode() == topic
    index, error, base_offset = struct.unpack_from(">ihq", response, 10 + length)
    assert index == partition
    return error, base_offset


def fetch(port: int, version: int, topic: str, partition: int, offset: int) -> tuple[int, int, bytes]:
    """(error code, high watermark, records) of a raw Fetch v0-v3 for one partition."""
    body = struct.pack(">iii", -1, 100, 1) + (struct.pack(">i", 1 << 20) if version >= 3 else b"")
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">iiqi", 1, partition, offset, 1 << 20)
    connection = RawConnection(port)
    try:
        response = connection.request(FETCH, version, body)
    finally:
        connection.close()
    position = 4 if version >= 1 else 0  # throttle_time_ms
    (topics,) = struct.unpack_from(">i", response, position)
    (length,) = struct.unpack_from(">h", response, position + 4)
    position += 6 + length
    (partitions,) = struct.unpack_from(">i", response, position)
    index, error, high_watermark, size = struct.unpack_from(">ihqi", response, position + 4)
    assert (topics, partitions, index) == (1, 1, partition)
    records = response[position + 22 : position + 22 + size]
    assert position + 22 + size == len(response)
    return error, high_watermark, records


def consume_all(port: int, version: int, topic: str, partition: int, end: int) -> list:
    """Every message below ``end`` through Fetch ``version``, fetching on from after the last one."""
    messages, offset = [], 0
    deadline = time.monotonic() + TIMEOUT
    while offset < end:
        assert time.monotonic() < deadline, f"Fetch v{version} of {topic} stuck at offset {offset}"
        error, _, records = fetch(port, version, topic, partition, offset)
        assert error == 0
        got = [m for m in iter_messages(records) if m.offset >= offset]
        if got:
            messages += got
            offset = got[-1].offset + 1
    return messages


def confluent_read(cluster, topic: str, partition: int, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"reader-{topic}",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        out = []

        def all_read():
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                out.append(message)
            return len(out) >= count

        wait_for(all_read, TIMEOUT, f"{count} records of {topic}", interval=0)
        return out
    finally:
        consumer.close()


# -- magic 0/1 in, v2 out --------------------------------------------------------------------------

@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("magic, version", [(0, 0), (1, 2)])
def test_old_formats_produced_are_read_by_a_v2_client(cluster, admin, magic, version, codec):
    topic = f"legacy-m{magic}-{codec}"
    create_topic(admin, topic)
    entries = [(i, BASE_TS + 10 * i, b"key-%d" % i, b"value-%d-" % i + b"x" * 50) for i in range(COUNT)]
    message_set = build_message_set(entries, magic, codec=CODECS[codec])
    port = leader_port(cluster, admin, topic)
    assert produce(port, version, topic, 0, message_set) == (0, 0)
    assert produce(port, version, topic, 0, message_set) == (0, COUNT)
    read = confluent_read(cluster, topic, 0, 2 * COUNT)
    assert [(m.offset(), m.key(), m.value()) for m in read] == [
        (n * COUNT + i, key, value) for n in range(2) for i, _, key, value in entries]
    if magic == 1:
        assert [m.timestamp()[1] for m in read] == [ts for _, ts, _, _ in entries] * 2
    else:
        assert {m.timestamp()[1] for m in read} == {-1}
    batches = wait_for(lambda: _replicated(cluster, topic, 2), TIMEOUT, f"{topic} on both brokers")
    assert [(h.base_offset, h.compression, h.records_count) for h in batches] == [
        (0, CODECS[codec], COUNT), (COUNT, CODECS[codec], COUNT)]


def _replicated(cluster, topic: str, count: int):
    """The batches of partition 0 once both brokers hold ``count`` of them, byte-identical headers."""
    copies = []
    for broker_id in cluster.broker_ids:
        directory = cluster.log_dir(broker_id) / f"{topic}-0"
        data = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
        copies.append(data)
    if not all(copies) or copies[0] != copies[1]:
        return None
    batches = stored_batches(cluster, topic)[0]
    return batches if len(batches) == count else None


# -- v2 in, magic 0/1 out --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def v2_topic(cluster, admin):
    """Partition i holds COUNT records produced by confluent-kafka with codec i (none, gzip, snappy, lz4, zstd)."""
    topic = "v2-written"
    names = [*CODECS, "zstd"]
    create_topic(admin, topic, partitions=len(names))
    for partition, codec in enumerate(names):
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
                             "linger.ms": 50, "acks": "all"})
        for i in range(COUNT):
            producer.produce(topic, value=b"v%d-" % i + b"y" * 40, key=b"k%d" % i, partition=partition,
                             timestamp=BASE_TS + i, headers=[("h", b"dropped")])
        assert producer.flush(TIMEOUT) == 0
    return topic


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("version", [0, 2])
def test_v2_records_read_with_fetch_v0_and_v2(cluster, admin, v2_topic, version, codec):
    partition = list(CODECS).index(codec)
    port = leader_port(cluster, admin, v2_topic, partition)
    messages = consume_all(port, version, v2_topic, partition, COUNT)
    magic = 0 if version == 0 else 1
    assert [(m.offset, m.key, m.value, m.magic) for m in messages] == [
        (i, b"k%d" % i, b"v%d-" % i + b"y" * 40, magic) for i in range(COUNT)]
    assert [m.timestamp for m in messages] == ([BASE_TS + i for i in range(COUNT)] if magic else [-1] * COUNT)
    _, high_watermark, records = fetch(port, version, v2_topic, partition, 0)
    assert high_watermark == COUNT
    assert {m.compression for m in shallow_messages(records)[0]} == {CODECS[codec]}


def test_zstd_fetched_with_fetch_v2_is_unsupported_compression_type(cluster, admin, v2_topic):
    port = leader_port(cluster, admin, v2_topic, 4)
    error, _, records = fetch(port, 2, v2_topic, 4, 0)
    assert (error, records) == (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, b"")


def test_downconversion_disabled_answers_unsupported_version(cluster, admin):
    topic = "no-downconversion"
    create_topic(admin, topic, config={"message.downconversion.enable": "false"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    producer.produce(topic, value=b"v", partition=0)
    assert producer.flush(TIMEOUT) == 0
    port = leader_port(cluster, admin, topic)
    assert fetch(port, 2, topic, 0, 0) == (ErrorCode.UNSUPPORTED_VERSION, -1, b"")
    assert fetch(port, 0, topic, 0, 0)[0] == ErrorCode.UNSUPPORTED_VERSION


# -- max_timestamp = -1 ----------------------------------------------------------------------------

def test_batch_with_max_timestamp_minus_one_is_found_by_time(cluster, admin):
    topic = "max-timestamp-minus-one"
    create_topic(admin, topic)
    port = leader_port(cluster, admin, topic)
    for n in range(3):  # three Sarama-style batches: every max_timestamp -1
        base = BASE_TS + 1000 * n
        batch = build_batch([Record(i, 100 * i, None, b"r%d" % i) for i in range(4)], base_timestamp=base,
                            max_timestamp=-1, codec=compression.GZIP if n == 1 else compression.NONE)
        assert produce(port, 3, topic, 0, bytes(batch)) == (0, 4 * n)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "by-time"})
    try:
        found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 1150)], timeout=TIMEOUT)
        assert found[0].offset == 6  # the first record at or after: batch 1, record 2 (BASE_TS + 1200)
        found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 2300)], timeout=TIMEOUT)
        assert found[0].offset == 11
    finally:
        consumer.close()
    batches = wait_for(lambda: _replicated(cluster, topic, 3), TIMEOUT, f"{topic} on both brokers")
    assert [h.max_timestamp for h in batches] == [BASE_TS + 300, BASE_TS + 1300, BASE_TS + 2300]


def conversions(cluster, topic: str, kind: str) -> float:
    """``kafka_server_topic_{kind}_message_conversions_total`` of ``topic``, summed over the brokers."""
    name = f"kafka_server_topic_{kind}_message_conversions_total"
    found = 0.0
    for broker_id in cluster.broker_ids:
        text = requests.get(cluster.http_url(broker_id, "/metrics"), timeout=10).text
        found += sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                     if sample.name == name and sample.labels.get("topic") == topic)
    return found


# -- a real old client -----------------------------------------------------------------------------

@pytest.mark.parametrize("api_version, version, codec", [
    ((0, 8, 2), 0, "snappy"), ((0, 9), 1, "gzip"), ((0, 10, 0), 2, "lz4"),
])
def test_kafka_python_pinned_to_an_old_broker(cluster, admin, caplog, api_version, version, codec):
    """kafka-python with ``api_version`` pinned sends Produce and Fetch at ``version``: magic 0 message sets
    for 0.8.2 and 0.9 (v0, v1), magic 1 for 0.10.0 (v2). (It writes magic-0 LZ4 only with the xxhash
    package, which is not installed; raw frames cover that codec above.) It reports no timestamp as None."""
    caplog.set_level(logging.DEBUG, logger="kafka.net.connection")  # it logs every request it sends
    topic = "kafka-python-" + "-".join(map(str, api_version))
    create_topic(admin, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=api_version, acks="all",
                             compression_type=codec, enable_idempotence=False, linger_ms=100)
    try:
        for i in range(COUNT):
            producer.send(topic, key=b"k%d" % i, value=b"old-%d" % i, partition=0, timestamp_ms=BASE_TS + i)
        producer.flush(TIMEOUT)
    finally:
        producer.close(TIMEOUT)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, api_version=api_version,
                             enable_auto_commit=False, consumer_timeout_ms=int(TIMEOUT * 1000))
    try:
        consumer.assign([KpTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = []
        for message in consumer:
            got.append((message.offset, message.key, message.value, message.timestamp))
            if len(got) == COUNT:
                break
    finally:
        consumer.close()
    magic = 0 if version < 2 else 1
    assert [g[:3] for g in got] == [(i, b"k%d" % i, b"old-%d" % i) for i in range(COUNT)]
    assert [g[3] for g in got] == ([BASE_TS + i for i in range(COUNT)] if magic else [None] * COUNT)
    pattern = r"(ProduceRequest|FetchRequest)\(version=(\d+)"
    sent = {(m.group(1), int(m.group(2))) for m in re.finditer(pattern, caplog.text)}
    assert sent == {("ProduceRequest", version), ("FetchRequest", version)}, sent
    assert conversions(cluster, topic, "produce") == COUNT  # Kafka's ProduceMessageConversionsPerSec
    assert conversions(cluster, topic, "fetch") >= COUNT
    batches = stored_batches(cluster, topic)[0]
    assert {h.compression for h in batches} == {CODECS[codec]}  # up-converted with the producer's codec
    assert sum(h.records_count for h in batches) == COUNT
    assert max(h.max_timestamp for h in batches) == (BASE_TS + COUNT - 1 if magic else -1)


@pytest.mark.parametrize("fallback", ["0.8.2", "0.9.0"])
def test_librdkafka_pinned_to_an_old_broker_with_lz4(cluster, admin, fallback):
    """librdkafka without ApiVersions (``broker.version.fallback`` below 0.10; from 0.10 it asks anyway) writes
    and reads magic-0 LZ4 message sets (Produce and Fetch v0 or v1): an independent check of Kafka's
    magic-0 LZ4 header checksum both ways."""
    topic = f"librdkafka-{fallback}"
    create_topic(admin, topic)
    pinned = {"bootstrap.servers": cluster.bootstrap_servers, "api.version.request": False,
              "broker.version.fallback": fallback}
    producer = Producer({**pinned, "compression.type": "lz4", "linger.ms": 50, "acks": "all"})
    for i in range(COUNT):
        producer.produce(topic, key=b"k%d" % i, value=b"lz4-%d-" % i + b"z" * 60, partition=0, timestamp=BASE_TS + i)
    assert producer.flush(TIMEOUT) == 0
    batches = stored_batches(cluster, topic)[0]
    assert {h.compression for h in batches} == {compression.LZ4}
    consumer = Consumer({**pinned, "group.id": f"reader-{topic}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read = []

        def all_read():
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                read.append(message)
            return len(read) >= COUNT

        wait_for(all_read, TIMEOUT, f"{COUNT} records of {topic}", interval=0)
    finally:
        consumer.close()
    assert [(m.offset(), m.key(), m.value()) for m in read] == [
        (i, b"k%d" % i, b"lz4-%d-" % i + b"z" * 60) for i in range(COUNT)]
    assert conversions(cluster, topic, "produce") == COUNT
    assert conversions(cluster, topic, "fetch") >= COUNT  # and read through Fetch v0/v1


def test_message_format_version_is_validated_and_the_log_stays_v2(cluster, admin):
    """``message.format.version`` takes Kafka's values (INVALID_CONFIG otherwise); at 0.10.2 (magic 1) a
    v2 producer's batch is still stored as v2 and a Fetch v2 still gets it down-converted."""
    bad = admin.create_topics([NewTopic("bad-format", 1, 2, config={"message.format.version": "0.10.9"})])
    with pytest.raises(KafkaException) as raised:
        bad["bad-format"].result(TIMEOUT)
    assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG
    topic = "format-0-10-2"
    create_topic(admin, topic, config={"message.format.version": "0.10.2"})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(TIMEOUT)
    assert described["message.format.version"].value == "0.10.2"
    assert described["message.downconversion.enable"].value == "true"
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    producer.produce(topic, value=b"v2-batch", key=b"k", partition=0, timestamp=BASE_TS, headers=[("h", b"x")])
    assert producer.flush(TIMEOUT) == 0
    [stored] = stored_batches(cluster, topic)[0]
    assert stored.magic == 2
    port = leader_port(cluster, admin, topic)
    [message] = consume_all(port, 2, topic, 0, 1)
    assert (message.magic, message.key, message.value, message.timestamp) == (1, b"k", b"v2-batch", BASE_TS)
