"""The transactional data plane on a real 1-broker cluster, driven as a transaction coordinator would:
a producer id from InitProducerId, transactional batches through raw Produce, COMMIT/ABORT markers through
raw WriteTxnMarkers; confluent-kafka consumers then read it at both isolation levels.

* read_uncommitted sees every record; read_committed never sees the aborted transaction's records and
  stops at the last stable offset while a transaction is open, then reads on once it commits;
* ListOffsets latest under READ_COMMITTED is the LSO, under READ_UNCOMMITTED the HW;
* a READ_COMMITTED Fetch lists the aborted transaction, and its segment's ``.txnindex`` holds one
  34-byte entry: (producer id, first offset, marker offset, LSO).

On 2 brokers: the follower replicates the markers into its own identical ``.txnindex`` and producer
state, so after the leader is killed the new leader answers the same LSO and hides the same aborts.
"""
from __future__ import annotations

import signal
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

TIMEOUT = 30.0
PRODUCE, FETCH, LIST_OFFSETS, INIT_PRODUCER_ID, WRITE_TXN_MARKERS = 0, 1, 2, 22, 27
TOPIC = "txn-data"
TRANSACTIONAL_ID = "txn-data-plane"
NO_VERIFICATION = {"transaction.partition.verification.enable": "false"}  # the test plays the coordinator


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn-data") / "cluster", 1, tick_time=500,
                         session_timeout_ms=6000, properties=NO_VERIFICATION) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result(TIMEOUT)
        wait_for(lambda: admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions[0].leader >= 0, TIMEOUT,
                 "the topic's leader", interval=0.2)
        yield c


@pytest.fixture
def raw(cluster):
    with RawConnection("127.0.0.1", cluster.kafka_port(cluster.broker_ids[0]), client_id="txn-test") as connection:
        yield connection


def produce(raw: RawConnection, values, *, pid: int = -1, epoch: int = -1, seq: int = -1,
            transactional: bool = False, topic: str = TOPIC) -> int:
    now = int(time.time() * 1000)
    batch = build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=now, producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, transactional=transactional)
    topic_data = [dict(name=topic, partition_data=[dict(index=0, records=bytes(batch))])]
    body = raw.request(PRODUCE, 8, transactional_id=TRANSACTIONAL_ID if transactional else None, acks=-1,
                       timeout=10000, topic_data=topic_data)
    (partition,) = body.responses[0].partition_responses
    assert partition.error_code == 0, partition
    return partition.base_offset


def write_marker(raw: RawConnection, pid: int, epoch: int, commit: bool, topic: str = TOPIC) -> None:
    body = raw.request(WRITE_TXN_MARKERS, 1, markers=[dict(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=0,
        topics=[dict(name=topic, partition_indexes=[0])])])
    (marker,) = body.markers
    assert [p.error_code for t in marker.topics for p in t.partitions] == [0]


def list_latest(raw: RawConnection, isolation_level: int, topic: str = TOPIC) -> int:
    body = raw.request(LIST_OFFSETS, 5, replica_id=-1, isolation_level=isolation_level, topics=[dict(
        name=topic, partitions=[dict(partition_index=0, timestamp=-1, current_leader_epoch=-1)])])
    (partition,) = body.topics[0].partitions
    assert partition.error_code == 0
    return partition.offset


def consume(cluster, isolation_level: str, until: int, settle: float = 2.0, topic: str = TOPIC) -> list[bytes]:
    """Every value the consumer reads: until ``until`` values came, then ``settle`` more seconds."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                         "isolation.level": isolation_level, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            if len(values) >= until:
                quiet_until = quiet_until or time.monotonic() + settle
                if time.monotonic() >= quiet_until:
                    break
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_read_committed_hides_aborts_and_stops_at_the_lso(cluster, raw):
    init = raw.request(INIT_PRODUCER_ID, 1, transactional_id=None, transaction_timeout_ms=60000)
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch

    assert produce(raw, [b"a0", b"a1"], pid=pid, epoch=epoch, seq=0, transactional=True) == 0
    write_marker(raw, pid, epoch, commit=False)  # 2
    assert produce(raw, [b"b0"], pid=pid, epoch=epoch, seq=2, transactional=True) == 3
    write_marker(raw, pid, epoch, commit=True)  # 4
    assert produce(raw, [b"c0"], pid=pid, epoch=epoch, seq=3, transactional=True) == 5  # left open
    assert produce(raw, [b"p0"]) == 6  # a plain record after the open transaction

    assert list_latest(raw, 1) == 5  # the LSO: the open transaction's first offset
    assert list_latest(raw, 0) == 7  # the HW

    fetched = raw.request(FETCH, 11, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                          session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[], topics=[dict(
                              topic=TOPIC, partitions=[dict(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                            log_start_offset=-1, partition_max_bytes=1 << 20)])])
    (partition,) = fetched.responses[0].partitions
    assert (partition.high_watermark, partition.last_stable_offset) == (7, 5)
    assert [(a.producer_id, a.first_offset) for a in partition.aborted_transactions] == [(pid, 0)]

    assert consume(cluster, "read_uncommitted", 5) == [b"a0", b"a1", b"b0", b"c0", b"p0"]
    assert consume(cluster, "read_committed", 1) == [b"b0"]  # nothing at or past the LSO

    (index,) = cluster.log_dir(cluster.broker_ids[0]).glob(f"{TOPIC}-0/*.txnindex")
    assert index.read_bytes() == struct.pack(">hqqqq", 0, pid, 0, 2, 3)

    write_marker(raw, pid, epoch, commit=True)  # the open transaction commits: the LSO reaches the HW
    assert list_latest(raw, 1) == list_latest(raw, 0) == 8
    assert consume(cluster, "read_committed", 3) == [b"b0", b"c0", b"p0"]


def test_the_follower_replicates_the_txnindex_and_answers_the_same_lso_after_failover(make_cluster):
    cluster, _ = make_cluster(2, properties=NO_VERIFICATION)
    topic = "txn-replicated"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 2)], operation_timeout=30)[topic].result(TIMEOUT)

    def partition():
        return admin.list_topics(topic, timeout=5).topics[topic].partitions[0]

    wait_for(lambda: partition().leader >= 0 and len(partition().isrs) == 2, TIMEOUT, "a full ISR", interval=0.2)
    leader = partition().leader
    follower = next(b for b in cluster.broker_ids if b != leader)
    with RawConnection("127.0.0.1", cluster.kafka_port(leader), client_id="txn-test") as raw:
        init = raw.request(INIT_PRODUCER_ID, 1, transactional_id=None, transaction_timeout_ms=60000)
        pid, epoch = init.producer_id, init.producer_epoch
        assert produce(raw, [b"a0"], pid=pid, epoch=epoch, seq=0, transactional=True, topic=topic) == 0
        write_marker(raw, pid, epoch, commit=False, topic=topic)  # 1
        assert produce(raw, [b"p0"], topic=topic) == 2
        assert produce(raw, [b"o0"], pid=pid, epoch=epoch, seq=1, transactional=True, topic=topic) == 3  # open
        assert produce(raw, [b"p1"], topic=topic) == 4
        assert list_latest(raw, 1, topic) == 3

    entry = struct.pack(">hqqqq", 0, pid, 0, 1, 2)
    for broker in (leader, follower):
        path = cluster.log_dir(broker) / f"{topic}-0" / "00000000000000000000.txnindex"
        wait_for(lambda: path.exists() and path.read_bytes() == entry, TIMEOUT, f"broker {broker}'s .txnindex")

    cluster.signal_broker(leader, signal.SIGKILL)
    wait_for(lambda: partition().leader == follower, TIMEOUT, "the follower elected", interval=0.2)
    with RawConnection("127.0.0.1", cluster.kafka_port(follower), client_id="txn-test") as raw:
        wait_for(lambda: list_latest(raw, 0, topic) == 5, TIMEOUT, "the new leader's HW")
        assert list_latest(raw, 1, topic) == 3  # the open transaction still holds the LSO
        assert consume(cluster, "read_committed", 1, topic=topic) == [b"p0"]
        write_marker(raw, pid, epoch, commit=True, topic=topic)  # the new leader completes it
        assert list_latest(raw, 1, topic) == 6
    assert consume(cluster, "read_committed", 3, topic=topic) == [b"p0", b"o0", b"p1"]
