"""The REST proxy against a real 3-broker cluster: records produced over HTTP (JSON and msgpack) are
what confluent-kafka consumes, records produced by confluent-kafka are what HTTP reads back, through
brokers that do not lead the partition (forwarded to the leader), and bad requests are refused with
the field named and nothing written."""
from __future__ import annotations

import base64
import itertools
import threading

import msgpack
import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.partitioner.default import murmur2  # kafka-python's port of the Java client's

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

PARTITIONS = 3
_TOPICS = itertools.count()
MSGPACK = "application/x-msgpack"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("rest-proxy") / "cluster", 3,
                         tick_time=500, session_timeout_ms=4000) as c:
        yield c


@pytest.fixture
def topic(cluster, request):
    name = f"t{next(_TOPICS)}-{request.node.originalname[5:45]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(30)
    wait_for(lambda: all(len(partition_rows(cluster, b, name)) == PARTITIONS for b in cluster.broker_ids), 30,
             f"every broker to know {name}")
    return name


def partition_rows(cluster: Cluster, broker_id: int, topic: str) -> list[dict]:
    response = requests.get(f"{url(cluster, broker_id)}/api/v1/partitions", params={"topic": topic}, timeout=10)
    return response.json().get("partitions", []) if response.status_code == 200 else []


def url(cluster: Cluster, broker_id: int) -> str:
    return f"http://127.0.0.1:{cluster.http_port(broker_id)}"


def leader_and_other(cluster: Cluster, topic: str, partition: int) -> tuple[int, int]:
    leader = partition_rows(cluster, 1, topic)[partition]["leader"]
    return leader, next(b for b in cluster.broker_ids if b != leader)


def consume_all(cluster: Cluster, topic: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"{topic}-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list = []

    def more():
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            out.append(message)
        return len(out) >= count
    try:
        wait_for(more, 30, f"{count} records from {topic}", interval=0)
    finally:
        consumer.close()
    return sorted(out, key=lambda m: (m.partition(), m.offset()))


def test_json_produce_through_a_non_leader_is_what_confluent_kafka_consumes(cluster, topic):
    leader, other = leader_and_other(cluster, topic, 1)
    records = [{"key": "k1", "value": "plain text", "partition": 1, "headers": [{"key": "h", "value": "v"}]},
               {"key": None, "value": {"nested": [1, 2]}, "partition": 1, "timestamp": 1_700_000_000_000},
               {"key": "AAE=", "key_encoding": "base64", "value": "//4=", "value_encoding": "base64", "partition": 1}]
    response = requests.post(f"{url(cluster, other)}/api/v1/topics/{topic}/records", json={"records": records},
                             timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["offsets"] == [{"partition": 1, "offset": i, "error_code": None, "error": None}
                                          for i in range(3)]
    got = consume_all(cluster, topic, 3)
    assert [(m.partition(), m.offset(), m.key(), m.value()) for m in got] == [
        (1, 0, b"k1", b"plain text"), (1, 1, None, b'{"nested":[1,2]}'), (1, 2, b"\x00\x01", b"\xff\xfe")]
    assert got[0].headers() == [("h", b"v")]
    assert got[1].timestamp()[1] == 1_700_000_000_000


def test_msgpack_produce_keys_go_where_kafkas_default_partitioner_puts_them(cluster, topic):
    keys = [f"key-{i}".encode() for i in range(30)]
    body = {"records": [{"key": k, "value": bytes(range(i, i + 8)), "headers": {"bin": b"\x00\xff"}}
                        for i, k in enumerate(keys)]}
    response = requests.post(f"{url(cluster, 2)}/api/v1/topics/{topic}/records", data=msgpack.packb(body),
                             headers={"Content-Type": MSGPACK, "Accept": MSGPACK}, timeout=30)
    assert response.status_code == 200, response.text
    offsets = msgpack.unpackb(response.content)["offsets"]
    assert [o["partition"] for o in offsets] == [(murmur2(k) & 0x7FFFFFFF) % PARTITIONS for k in keys]
    got = {(m.partition(), m.offset()): m for m in consume_all(cluster, topic, len(keys))}
    for i, (key, entry) in enumerate(zip(keys, offsets)):
        message = got[(entry["partition"], entry["offset"])]
        expected = (key, bytes(range(i, i + 8)), [("bin", b"\x00\xff")])
        assert (message.key(), message.value(), message.headers()) == expected


def produce_with_confluent(cluster: Cluster, topic: str) -> list[tuple[bytes | None, bytes, list]]:
    records = [(b"text-key", b"hello", [("trace", b"abc")]), (None, b"\x80\x81 not utf-8", []),
               (b"\xff", "ünïcödé".encode(), [("empty", None)])]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for key, value, headers in records:
        producer.produce(topic, value, key=key, partition=0, headers=headers)
    assert producer.flush(30) == 0
    return records


@pytest.mark.parametrize("encoding", ["auto", "base64", "msgpack"])
def test_http_reads_through_a_non_leader_what_confluent_kafka_produced(cluster, topic, encoding):
    records = produce_with_confluent(cluster, topic)
    _, other = leader_and_other(cluster, topic, 0)
    params = {"offset": 1, "max_bytes": 1_000_000, "encoding": "auto" if encoding == "msgpack" else encoding}
    headers = {"Accept": MSGPACK} if encoding == "msgpack" else {}
    response = requests.get(f"{url(cluster, other)}/api/v1/topics/{topic}/partitions/0/records", params=params,
                            headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    body = msgpack.unpackb(response.content) if encoding == "msgpack" else response.json()
    assert (body["next_offset"], body["high_watermark"], body["log_start_offset"]) == (3, 3, 0)
    assert [r["offset"] for r in body["records"]] == [1, 2]  # from the offset asked, not the batch's start
    for (key, value, headers_), got in zip(records[1:], body["records"]):
        assert (decode(got, "key"), decode(got, "value")) == (key, value)
        assert [(h["key"], decode(h, "value")) for h in got["headers"]] == [(k, v) for k, v in headers_]


def decode(entry: dict, field: str) -> bytes | None:
    value = entry[field]
    if value is None or isinstance(value, bytes):
        return value
    if entry.get(f"{field}_encoding") == "base64":
        return base64.b64decode(value)
    return value.encode()


def test_a_read_with_timeout_waits_for_the_next_record(cluster, topic):
    result: dict = {}

    def read():
        result["response"] = requests.get(f"{url(cluster, 1)}/api/v1/topics/{topic}/partitions/2/records",
                                          params={"offset": 0, "timeout_ms": 20_000}, timeout=30)
    reader = threading.Thread(target=read)
    reader.start()
    wait_for(lambda: reader.is_alive(), 5, "the read to be waiting")
    response = requests.post(f"{url(cluster, 3)}/api/v1/topics/{topic}/partitions/2/records",
                             json={"records": [{"value": "late"}]}, timeout=30)
    assert response.status_code == 200
    reader.join(30)
    assert [r["value"] for r in result["response"].json()["records"]] == ["late"]


BAD_PRODUCE = [
    ("not json", "application/json", "body"),
    ('{"records": [{"value": "x", "colour": "red"}]}', "application/json", "records[0].colour"),
    ('{"records": [{"value": "x", "partition": 3}]}', "application/json", "records[0].partition"),
    ('{"records": [{"value": "x", "partition": -1}]}', "application/json", "records[0].partition"),
    ('{"records": [{"value": "!!", "value_encoding": "base64"}]}', "application/json", "records[0].value"),
    ('{"records": []}', "application/json", "records"),
    ('{"records": [{"value": "x"}]}', "text/plain", "Content-Type"),
]


@pytest.mark.parametrize("body,content_type,field", BAD_PRODUCE)
def test_bad_produce_bodies_name_the_field_and_write_nothing(cluster, topic, body, content_type, field):
    response = requests.post(f"{url(cluster, 1)}/api/v1/topics/{topic}/records", data=body,
                             headers={"Content-Type": content_type}, timeout=30)
    assert response.status_code == 400
    assert response.json()["field"] == field and field in response.json()["message"]
    assert all(r["log_end_offset"] == 0 for r in partition_rows(cluster, 1, topic))


def test_unknown_topics_partitions_offsets_and_parameters(cluster, topic):
    base = url(cluster, 1)
    cases = [
        (requests.post(f"{base}/api/v1/topics/nope/records", json={"records": [{"value": "x"}]}, timeout=30), 404),
        (requests.get(f"{base}/api/v1/topics/nope/partitions/0/records", timeout=30), 404),
        (requests.get(f"{base}/api/v1/topics/{topic}/partitions/7/records", timeout=30), 404),
        (requests.post(f"{base}/api/v1/topics/{topic}/partitions/x/records", json={"records": [{"value": "x"}]},
                       timeout=30), 404),
        (requests.get(f"{base}/api/v1/topics/{topic}/partitions/0/records", params={"offset": 5}, timeout=30), 416),
        (requests.get(f"{base}/api/v1/topics/{topic}/partitions/0/records", params={"max_bytes": "lots"},
                      timeout=30), 400),
        (requests.post(f"{base}/api/v1/topics/__consumer_offsets/records", json={"records": [{"value": "x"}]},
                       timeout=30), 403),
    ]
    for response, status in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert response.json()["error_code"] == status and response.json()["message"]
    bad_param = cases[5][0].json()
    assert bad_param["field"] == "max_bytes"


def test_a_leaders_refusal_comes_back_through_the_forwarding_broker(cluster):
    """min.insync.replicas above the replication factor: the leader refuses every acks=all append
    (NOT_ENOUGH_REPLICAS, nothing written), and a non-leader passes that answer back as 503."""
    name = f"t{next(_TOPICS)}-min-isr"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 3, config={"min.insync.replicas": "4"})])[name].result(30)
    wait_for(lambda: len(partition_rows(cluster, 1, name)) == PARTITIONS, 30, f"the metadata of {name}")
    leader, other = leader_and_other(cluster, name, 0)
    for broker_id in (leader, other):
        response = requests.post(f"{url(cluster, broker_id)}/api/v1/topics/{name}/partitions/0/records",
                                 json={"records": [{"value": "refused"}]}, timeout=30)
        assert response.status_code == 503, response.text
        assert response.json()["kafka_error"] == "NOT_ENOUGH_REPLICAS"
        assert response.json()["offsets"][0]["error_code"] == 19
    assert partition_rows(cluster, other, name)[0]["log_end_offset"] == 0
