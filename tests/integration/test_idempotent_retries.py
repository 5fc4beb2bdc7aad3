"""A retried idempotent batch (a duplicate of one of its producer's last 5 batches) is answered with the
original offsets and written once, in the cases a fault creates (raw Produce v8, acks=all, real brokers):

(a) the retry reaches the same leader;
(b) the retry reaches a NEW leader after the old one was killed: the follower's producer state learnt the
    batches' metadata from replication (``Log.append_as_follower`` -> ``_update_producers``);
(c) the retry reaches the same broker after a restart, its producer state recovered from the log (kill -9)
    or from the snapshot written at shutdown (SIGTERM). Kafka 2.8's snapshot keeps only each producer's
    last batch, so after a clean restart Kafka recognises only the last one and answers an older retry
    OUT_OF_ORDER_SEQUENCE_NUMBER; this snapshot keeps all 5 (producer_state.py), so all 5 are recognised.

A batch older than the last 5 is refused OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka never answers
DUPLICATE_SEQUENCE_NUMBER since 1.0), and nothing is written.
"""
from __future__ import annotations

import signal
import time

from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import iter_batches
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

PRODUCE, INIT_PRODUCER_ID = 0, 22
TOPIC = "retried"
TIMEOUT = 30
SESSION_MS = 6000
BATCHES = 7  # batch n carries n + 1 records, sequences continuing; the last 5 are retained


def batch_bytes(pid: int, epoch: int, n: int) -> bytes:
    first_seq = n * (n + 1) // 2
    records = [Record(i, 0, None, b"v%d" % (first_seq + i)) for i in range(n + 1)]
    return bytes(build_batch(records, base_timestamp=int(time.time() * 1000), producer_id=pid,
                             producer_epoch=epoch, base_sequence=first_seq))


def produce(port: int, payload: bytes) -> tuple[int, int]:
    """(error code, base offset) of one acks=all Produce v8 of ``payload`` to TOPIC-0."""
    with RawConnection("127.0.0.1", port, client_id="retry-test") as raw:
        body = raw.request(PRODUCE, 8, transactional_id=None, acks=-1, timeout=10000, topic_data=[
            dict(name=TOPIC, partition_data=[dict(index=0, records=payload)])])
    (partition,) = body.responses[0].partition_responses
    return partition.error_code, partition.base_offset


def init_producer(port: int) -> tuple[int, int]:
    with RawConnection("127.0.0.1", port, client_id="retry-test") as raw:
        init = raw.request(INIT_PRODUCER_ID, 1, transactional_id=None, transaction_timeout_ms=60000)
    assert init.error_code == 0
    return init.producer_id, init.producer_epoch


def stored_batches(cluster, broker: int) -> list[tuple[int, int, int]]:
    """(base offset, producer id, base sequence) of every batch in the broker's TOPIC-0 log files."""
    found = []
    for segment in sorted((cluster.log_dir(broker) / f"{TOPIC}-0").glob("*.log")):
        found += [(h.base_offset, h.producer_id, h.base_sequence) for h in iter_batches(segment.read_bytes())]
    return found


def partition_view(cluster, broker: int) -> dict:
    return ((cluster.health(broker) or {}).get("partitions") or {}).get(f"{TOPIC}-0") or {}


def leads(cluster, broker: int) -> bool:
    return bool(partition_view(cluster, broker).get("is_leader"))


def write_batches(cluster, leader: int) -> tuple[int, int, list[bytes], list[int]]:
    """The producer's 7 batches, each after a non-idempotent record (so offsets are not sequences)."""
    port = cluster.kafka_port(leader)
    pid, epoch = init_producer(port)
    payloads, offsets = [], []
    for n in range(BATCHES):
        plain = bytes(build_batch([Record(0, 0, None, b"plain")], base_timestamp=int(time.time() * 1000)))
        assert produce(port, plain)[0] == ErrorCode.NONE
        payloads.append(batch_bytes(pid, epoch, n))
        error, offset = produce(port, payloads[-1])
        assert error == ErrorCode.NONE
        offsets.append(offset)
    assert offsets == [sum(n + 2 for n in range(k)) + 1 for k in range(BATCHES)]
    return pid, epoch, payloads, offsets


def assert_retries_answer_the_originals(cluster, broker: int, pid: int, payloads, offsets) -> None:
    port = cluster.kafka_port(broker)
    before = stored_batches(cluster, broker)
    for n in range(BATCHES - 5, BATCHES):  # the last 5, oldest first, then newest first
        assert produce(port, payloads[n]) == (ErrorCode.NONE, offsets[n]), f"retry of batch {n}"
    for n in reversed(range(BATCHES - 5, BATCHES)):
        assert produce(port, payloads[n]) == (ErrorCode.NONE, offsets[n]), f"retry of batch {n}"
    assert produce(port, payloads[0])[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # older than the last 5
    assert stored_batches(cluster, broker) == before  # nothing written
    mine = [(offset, seq) for offset, p, seq in before if p == pid]
    assert mine == [(offsets[n], n * (n + 1) // 2) for n in range(BATCHES)]  # each batch once


def create_topic(cluster, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[replicas])], operation_timeout=TIMEOUT)[TOPIC].result(
        TIMEOUT)
    wait_for(lambda: leads(cluster, replicas[0]), TIMEOUT, f"broker {replicas[0]} to lead {TOPIC}-0")


def test_a_retry_at_the_same_leader_and_at_a_new_leader_gets_the_original_offsets(make_cluster):
    cluster, _ = make_cluster(2, session_timeout_ms=SESSION_MS)
    leader, follower = cluster.broker_ids
    create_topic(cluster, [leader, follower])
    pid, _, payloads, offsets = write_batches(cluster, leader)
    log_end = offsets[-1] + BATCHES
    assert_retries_answer_the_originals(cluster, leader, pid, payloads, offsets)  # (a)

    wait_for(lambda: partition_view(cluster, follower).get("log_end_offset") == log_end, TIMEOUT,
             "the follower to hold every batch")
    cluster.signal_broker(leader, signal.SIGKILL)
    wait_for(lambda: leads(cluster, follower), TIMEOUT, "the follower elected")
    assert_retries_answer_the_originals(cluster, follower, pid, payloads, offsets)  # (b)
    assert partition_view(cluster, follower)["log_end_offset"] == log_end


def test_a_retry_after_the_leader_restarted_gets_the_original_offsets(make_cluster):
    cluster, _ = make_cluster(1, session_timeout_ms=SESSION_MS)
    (broker,) = cluster.broker_ids
    create_topic(cluster, [broker])
    pid, _, payloads, offsets = write_batches(cluster, broker)
    for stop in ("kill -9", "SIGTERM"):  # state from the log, then from the snapshot written at shutdown
        if stop == "kill -9":
            cluster.signal_broker(broker, signal.SIGKILL)
            wait_for(lambda: cluster.broker_pid(broker) is None, 10, "the killed broker gone")
        else:
            cluster.stop_broker(broker)
            assert list((cluster.log_dir(broker) / f"{TOPIC}-0").glob("*.snapshot"))
        cluster.start_broker(broker)
        cluster.wait_until_ready(TIMEOUT + SESSION_MS / 1000)
        wait_for(lambda: leads(cluster, broker), TIMEOUT, f"broker {broker} to lead {TOPIC}-0 after {stop}")
        assert_retries_answer_the_originals(cluster, broker, pid, payloads, offsets)  # (c)
