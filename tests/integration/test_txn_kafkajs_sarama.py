"""Transactions (KIP-98) with the two independent non-Python clients, on a real 3-broker cluster.

- kafkajs 2.2.4's transactional producer (``idempotent: true, maxInFlightRequests: 1``: InitProducerId,
  AddPartitionsToTxn, Produce v3+ with the transactional id, AddOffsetsToTxn, TxnOffsetCommit to the group's
  coordinator, EndTxn) commits a transaction over two partitions, aborts a second and commits a third, each with
  the offsets of a consumer group (``sendOffsets``). Paused before each EndTxn, the group's offsets are not in
  ``/consumers/<group>/offsets`` (the aborted ones never are), and ListOffsets read_committed stops at the open
  transaction's first offset (the last stable offset). kafkajs' consumer (read_committed by default) then sees
  exactly the committed records; a read_uncommitted one sees the aborted records too.
- Sarama 1.22 (Debian's) has no transactional producer (``Config.Producer.Transaction`` and ``BeginTxn`` came
  with 1.37), so confluent-kafka writes transactions and Sarama's consumer reads them with
  ``Consumer.IsolationLevel = ReadCommitted`` (Fetch v4's isolation level; it drops the records the fetch
  response's aborted transactions name and skips the markers). Sarama 1.22 does have the transaction APIs'
  request types: tests/clients/sarama/txn.go drives a transaction with them (FindCoordinator v1 key type 1,
  InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn at v0, Produce v3), which
  confluent-kafka and Sarama's consumer read back.
"""
from __future__ import annotations

import json
import queue
import subprocess
import threading

import pytest
from confluent_kafka import Producer
from kazoo.exceptions import NoNodeError

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.external_clients import (  # versions_served: an autouse fixture
    KAFKAJS, TIMEOUT, committed, create_topic, kafkajs, read_all, sarama, versions_served)
from tests.integration.stored import stored_batches
from tests.integration.znodes import committed_offset, connected_zk

PARTITIONS = 2
TRANSACTIONAL, CONTROL = 0x10, 0x20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn-clients") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000,
                         properties={"transaction.state.log.num.partitions": "3",
                                     "offsets.topic.num.partitions": "3",
                                     "group.initial.rebalance.delay.ms": "0"}) as c:
        yield c


def records(tag: str, per_partition: int) -> list[dict]:
    return [{"partition": p, "key": f"k{p}", "value": f"{tag}-{p}-{i}"}
            for p in range(PARTITIONS) for i in range(per_partition)]


class PausedClient:
    """A client command that writes a JSON line and waits for a line on stdin at each pause, then its result."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next(self) -> dict:
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no line from the client in {TIMEOUT} s") from None
        if line is None:
            self.proc.wait(TIMEOUT)
            raise AssertionError(f"the client exited {self.proc.returncode}:\n{self.proc.stderr.read()[-4000:]}")
        return json.loads(line)

    def go_on(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT)


def zk_offsets(cluster, group: str, topic: str) -> tuple[dict[int, int], int]:
    """The group's committed offsets of ``topic`` in ZooKeeper (decimal text per partition, absent ones left out)
    and how many producers have transactional offsets pending for it (``/consumers/<group>/txn_offsets``)."""
    found = {}
    with connected_zk(cluster) as zk:
        for p in range(PARTITIONS):
            offset = committed_offset(zk, group, topic, p)
            if offset is not None:
                found[p] = offset
        try:
            pending = len(zk.get_children(f"/consumers/{group}/txn_offsets"))
        except NoNodeError:
            pending = 0
    return found, pending


def stable_offsets(cluster, topic: str) -> dict[int, int]:
    """Each partition's high offset by ListOffsets read_committed (kafkajs' admin): its last stable offset."""
    return {int(o["partition"]): int(o["high"]) for o in kafkajs(cluster, "topic-offsets", {"topic": topic})}


def transaction(tag: str, per_partition: int, offsets: tuple[int, int], commit: bool) -> dict:
    """One transaction for client.js: its records on each partition, the group's offsets it sends, its end."""
    return {"records": records(tag, per_partition), "commit": commit,
            "offsets": [{"partition": p, "offset": o} for p, o in enumerate(offsets)]}


def offsets_before(txns: list[dict]) -> list[dict[int, int]]:
    """Each partition's offsets before each transaction: the records and one marker of every transaction before it."""
    return [{p: sum(len([r for r in t["records"] if r["partition"] == p]) + 1 for t in txns[:i])
             for p in range(PARTITIONS)} for i in range(len(txns))]


def test_kafkajs_transactions_commit_and_abort_records_and_group_offsets(cluster):
    topic, source, group = "kafkajs-txn", "kafkajs-txn-source", "kafkajs-txn-sink"
    for t in (topic, source):
        create_topic(cluster, t, partitions=PARTITIONS)
    txns = [transaction("first", 3, (3, 2), commit=True), transaction("aborted", 2, (7, 5), commit=False),
            transaction("third", 2, (9, 8), commit=True)]
    args = {"topic": topic, "transactionalId": "kafkajs-txn-1", "group": group, "offsetsTopic": source,
            "transactions": txns, "pause": True}
    before = offsets_before(txns)
    client = PausedClient(["node", str(KAFKAJS / "client.js"), cluster.bootstrap_servers, "transactions",
                           json.dumps(args)])
    landed: dict[int, int] = {}
    try:
        for i, txn in enumerate(txns):
            assert client.next() == {"pending": i}  # its records acked, its offsets sent, EndTxn not yet
            # its offsets wait in the producer's pending znode; the transaction before it had completed (markers
            # written, its offsets committed or dropped) before this one could begin
            assert zk_offsets(cluster, group, source) == (landed, 1)
            assert stable_offsets(cluster, topic) == before[i]  # the open transaction holds the LSO
            client.go_on()
            if txn["commit"]:
                landed = {o["partition"]: o["offset"] for o in txn["offsets"]}
        result = client.next()
        client.proc.wait(TIMEOUT)
    finally:
        client.close()
    assert client.proc.returncode == 0
    assert [t["commit"] for t in result["transactions"]] == [True, False, True]
    assert all(a["errorCode"] == 0 for t in result["transactions"] for a in t["acks"])

    wait_for(lambda: zk_offsets(cluster, group, source) == (landed, 0), TIMEOUT,
             f"{group}'s offsets {landed} in ZooKeeper, none pending")
    assert committed(cluster, group, source, PARTITIONS) == landed
    fetched = kafkajs(cluster, "fetch-offsets", {"group": group, "topics": [source]})
    assert {p["partition"]: int(p["offset"]) for p in fetched[0]["partitions"]} == landed
    kafkajs_reads_committed_records(cluster, topic, txns)


def kafkajs_reads_committed_records(cluster, topic: str, txns: list[dict]) -> None:
    """kafkajs' read_committed consumer sees exactly the committed transactions' records, a read_uncommitted
    one every record."""
    committed_values = sorted(r["value"] for t in txns if t["commit"] for r in t["records"])
    every_value = sorted(r["value"] for t in txns for r in t["records"])
    read = kafkajs(cluster, "consume", {"topic": topic, "group": "kafkajs-txn-reader",
                                        "count": len(committed_values)})
    # the third transaction's records follow the aborted ones: had those leaked, the count would hold them
    assert sorted(r["value"] for r in read["records"]) == committed_values
    everything = kafkajs(cluster, "consume", {"topic": topic, "group": "kafkajs-txn-uncommitted",
                                              "count": len(every_value), "readUncommitted": True})
    assert sorted(r["value"] for r in everything["records"]) == every_value


def confluent_transactions(cluster, topic: str, transactional_id: str, txns: list[tuple[list[dict], bool]]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 30000, "linger.ms": 5})
    producer.init_transactions(TIMEOUT)
    for sent, commit in txns:
        producer.begin_transaction()
        for r in sent:
            producer.produce(topic, key=r["key"].encode(), value=r["value"].encode(), partition=r["partition"])
        assert producer.flush(TIMEOUT) == 0  # on the brokers before the end: an abort must have something to abort
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)


def test_sarama_read_committed_consumer_skips_aborted_transactions(cluster):
    topic = "sarama-txn"
    create_topic(cluster, topic, partitions=PARTITIONS)
    txns = [(records("first", 3), True), (records("aborted", 4), False), (records("third", 2), True)]
    confluent_transactions(cluster, topic, "sarama-txn-writer", txns)
    committed_values = sorted(r["value"] for sent, commit in txns if commit for r in sent)
    every_value = sorted(r["value"] for sent, _ in txns for r in sent)

    read = sarama(cluster, "2.2.0", "consume", "-topic", topic, "-group", "sarama-txn-reader",
                  "-count", str(len(committed_values)), "-isolation", "read_committed")
    # the third transaction's records follow the aborted ones: had those leaked, the count would hold them
    assert sorted(r["value"] for r in read) == committed_values
    last = {p: max(r["offset"] for r in read if r["partition"] == p) for p in range(PARTITIONS)}
    assert committed(cluster, "sarama-txn-reader", topic, PARTITIONS) == {p: o + 1 for p, o in last.items()}

    everything = sarama(cluster, "2.2.0", "consume", "-topic", topic, "-group", "sarama-txn-uncommitted",
                        "-count", str(len(every_value)))
    assert sorted(r["value"] for r in everything) == every_value
    # each transaction took its records and one marker on each partition; the consumers never saw a marker
    offsets = {(r["partition"], r["offset"]) for r in everything}
    spans = {(p, o) for p in range(PARTITIONS) for o in range(max(o for q, o in offsets if q == p) + 1)}
    markers = spans - offsets
    assert len(markers) == 2 * PARTITIONS  # the first and the aborted transaction's (the third's is past the last)


def test_sarama_transaction_requests_commit_and_abort(cluster):
    topic, source, group = "sarama-txn-out", "sarama-txn-source", "sarama-txn-sink"
    for t in (topic, source):
        create_topic(cluster, t, partitions=PARTITIONS)
    txns = [transaction("first", 3, (3, 2), commit=True), transaction("aborted", 2, (7, 5), commit=False),
            transaction("third", 2, (9, 8), commit=True)]
    sent = [{"records": t["records"], "commit": t["commit"],
             "offsets": {str(o["partition"]): o["offset"] for o in t["offsets"]}} for t in txns]
    result = sarama(cluster, "2.2.0", "transact", "-topic", topic, "-txn-id", "sarama-txn-1", "-group", group,
                    "-source", source, records=sent)
    assert [(r["commit"], {int(p): o for p, o in r["baseOffsets"].items()}) for r in result] == \
        [(t["commit"], before) for t, before in zip(txns, offsets_before(txns))]

    landed = {o["partition"]: o["offset"] for o in txns[-1]["offsets"]}
    wait_for(lambda: zk_offsets(cluster, group, source) == (landed, 0), TIMEOUT,
             f"{group}'s offsets {landed} in ZooKeeper, none pending")
    assert committed(cluster, group, source, PARTITIONS) == landed

    committed_values = sorted(r["value"] for t in txns if t["commit"] for r in t["records"])
    # the reference client, read_committed (librdkafka's default), then Sarama's ReadCommitted consumer
    assert sorted(r["value"] for r in read_all(cluster, topic, PARTITIONS, len(committed_values))) == \
        committed_values
    read = sarama(cluster, "2.2.0", "consume", "-topic", topic, "-group", "sarama-txn-out-reader",
                  "-count", str(len(committed_values)), "-isolation", "read_committed")
    assert sorted(r["value"] for r in read) == committed_values
    stored = stored_batches(cluster, topic)
    # per partition: records, COMMIT, records, ABORT, records, COMMIT; all of them transactional
    assert {p: [(h.attributes & (TRANSACTIONAL | CONTROL), h.records_count) for h in headers]
            for p, headers in stored.items()} == \
        {p: [(TRANSACTIONAL, 3), (TRANSACTIONAL | CONTROL, 1), (TRANSACTIONAL, 2), (TRANSACTIONAL | CONTROL, 1),
             (TRANSACTIONAL, 2), (TRANSACTIONAL | CONTROL, 1)] for p in range(PARTITIONS)}
