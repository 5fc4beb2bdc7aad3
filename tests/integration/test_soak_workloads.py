"""The soak's workload processes against a real single-broker cluster, without faults: every kind runs a
few seconds through the launcher (``start_workloads``), one copier is SIGKILLed mid-run and restarted by
``supervise``, then everything is stopped with SIGTERM. Its merged history must have the shape the checker
relies on:

- every process exits 0 after SIGTERM; every invoke completed (except the killed copier's last one);
- sends are ok with offsets, and those (key, offset) -> value are exactly what a plain consumer reads back;
- the reader's polls cover exactly what was produced, per key in offset order;
- each group commit completes ok with the offsets it was invoked with, the next offsets of what was polled
  since the commit before (less revoked partitions), and the group's committed offsets at the end are the last commits;
- the copiers' committed txns' sends are in the output (read_committed) with their offsets, aborted ones are
  not, and every input value is in the output exactly once (the copy caught up before the stop).
"""
from __future__ import annotations

import os
import signal
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from scripts.local.cluster import running_cluster
from scripts.soak import history
from scripts.soak.history import INVOKE, OK, key_of, split_key
from scripts.soak.workloads.launcher import WorkloadPlan, start_workloads, stop_all, supervise
from tests.integration.conditions import wait_for
from tests.integration.txn_support import create_topics

PROPERTIES = {"transaction.state.log.num.partitions": "2", "transaction.state.log.replication.factor": "1",
              "transaction.state.log.min.isr": "1", "offsets.topic.num.partitions": "2",
              "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0"}
PLAN = WorkloadPlan(topic="soak", partitions=3, producers=2, rate=200, readers=1, group_members=2, copiers=True,
                    txn_input="txn-in", txn_output="txn-out", txn_partitions=2, txn_rate=100, abort_probability=0.3,
                    max_txn_records=20)


def ops_of(proc) -> list[history.Op]:
    return list(history.read_file(proc.history_path)) if proc.history_path.exists() else []


def completed(ops, f: str, type_: str = OK) -> list[history.Op]:
    return [o for o in ops if o.f == f and o.type == type_]


def read_back(bootstrap: str, topic: str, partitions: int) -> dict[str, list[list[int]]]:
    """A plain read_committed consumer's view of the topic, to the end of every partition (no transaction is
    open once the workloads stopped): key -> [[offset, value], ...]."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-test-read-back",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[str, list[list[int]]] = defaultdict(list)
    at_end: set[int] = set()

    def caught_up() -> bool:
        for m in consumer.consume(500, timeout=0.2):
            if m.error() is None:
                out[key_of(topic, m.partition())].append([m.offset(), int(m.value())])
                at_end.discard(m.partition())
            elif m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
        return len(at_end) == partitions

    wait_for(caught_up, 30, f"reading {topic} back", interval=0)
    consumer.close()
    return dict(out)


def polled(ops, topics: set[str]) -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = defaultdict(list)
    for o in completed(ops, "poll"):
        for key, records in o.value[0][1].items():
            if split_key(key)[0] in topics:
                out[key] += records
    return out


def sent(ops) -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = defaultdict(list)
    for o in completed(ops, "send"):
        _, key, (offset, value) = o.value[0]
        out[key].append([offset, value])
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The plan run a few seconds, a copier killed and restarted, producers stopped first, the consumers and
    copiers once they caught up; (bootstrap, processes, exit codes, merged ops)."""
    directory = tmp_path_factory.mktemp("soak-workloads")
    with running_cluster(directory / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties=PROPERTIES) as cluster:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, [PLAN.topic], PLAN.partitions, 1, 1)
        create_topics(bootstrap, [PLAN.txn_input, PLAN.txn_output], PLAN.txn_partitions, 1, 1)
        procs = start_workloads(PLAN, bootstrap, directory / "history")
        by_name = {p.name: p for p in procs}
        codes: dict[str, int | None] = {}
        try:
            copier = by_name["copier-0"]
            wait_for(lambda: len(completed(ops_of(copier), "txn")) >= 3, 30, "copier-0's first transactions")
            os.kill(copier.pid, signal.SIGKILL)
            wait_for(lambda: supervise(procs), 10, "copier-0 restarted by supervise")
            wait_for(lambda: len(completed(ops_of(copier), "txn")) >= 8 and completed(ops_of(copier), "txn", "fail"),
                     30, "copier-0 committing and aborting again after its restart")
            wait_for(lambda: all(completed(ops_of(by_name[f"group-{i}"]), "commit") for i in range(2)), 20,
                     "both group members committing")
            producers = [p for p in procs if p.kind == "producer"]
            codes.update((p.name, p.stop(30)) for p in producers)
            wanted = {k: len(v) for p in producers for k, v in sent(ops_of(p)).items()}
            wait_for(lambda: _caught_up(by_name, wanted), 30, "the reader and the copiers caught up")
        finally:
            codes.update(stop_all([p for p in procs if p.name not in codes], 30))
        ops = history.merge(p.history_path for p in procs)
        yield bootstrap, procs, codes, ops


def _caught_up(by_name, wanted: dict[str, int]) -> bool:
    """The reader read every acknowledged send, and every input value in the copiers' output."""
    reader = polled(ops_of(by_name["reader-0"]), {PLAN.topic, PLAN.txn_input, PLAN.txn_output})
    if any(len(reader.get(k, [])) < n for k, n in wanted.items()):
        return False
    copied = {v for k, records in reader.items() if split_key(k)[0] == PLAN.txn_output for _, v in records}
    return all(v in copied for k, records in reader.items() if split_key(k)[0] == PLAN.txn_input for _, v in records)


def test_every_process_stops_cleanly_and_completes_its_ops(run):
    _, procs, codes, ops = run
    assert codes == {p.name: 0 for p in procs}
    invoked = {(o.process, o.op) for o in ops if o.type == INVOKE}
    pending = invoked - {(o.process, o.op) for o in ops if o.type != INVOKE}
    killed = [o for o in ops if o.f == "crash"]
    assert [o.process for o in killed] == ["copier-0", "copier-0"]  # invoke + info of the restarted copier
    assert killed[1].type == "info" and killed[1].value == [["crash", "-9"]]
    assert all(process == "copier-0" for process, _ in pending), pending
    assert len(pending) <= 1  # the transaction the kill interrupted, if any
    assert [p.restarts for p in procs if p.name == "copier-0"] == [1]


def test_sends_are_acknowledged_with_the_offsets_a_consumer_reads(run):
    bootstrap, procs, _, ops = run
    sends = [o for o in ops if o.f == "send" and o.type != INVOKE]
    assert sends and all(o.type == OK for o in sends)
    values = [o.value[0][2][1] for o in sends]
    assert len(values) == len(set(values))
    for p, base in ((0, 0), (1, 10**9)):  # consecutive values from each producer's base, in send order
        mine = sorted(o.value[0][2] for o in ops if o.f == "send" and o.type == INVOKE and o.process == f"producer-{p}")
        assert mine == list(range(base, base + len(mine)))
    acked = sent(ops)
    assert all(offset is not None for records in acked.values() for offset, _ in records)
    soak = read_back(bootstrap, PLAN.topic, PLAN.partitions)
    assert {k: v for k, v in acked.items() if split_key(k)[0] == PLAN.topic} == soak
    txn_in = read_back(bootstrap, PLAN.txn_input, PLAN.txn_partitions)
    assert {k: v for k, v in acked.items() if split_key(k)[0] == PLAN.txn_input} == txn_in


def test_the_reader_polls_exactly_what_was_written(run):
    bootstrap, _, _, ops = run
    reader = [o for o in ops if o.process == "reader-0"]
    assigns = completed(reader, "assign")
    assert len(assigns) == 1
    assert sorted(assigns[0].value[0][1]) == sorted(
        [key_of(PLAN.topic, p) for p in range(PLAN.partitions)]
        + [key_of(t, p) for t in (PLAN.txn_input, PLAN.txn_output) for p in range(PLAN.txn_partitions)])
    read = polled(reader, {PLAN.topic, PLAN.txn_input, PLAN.txn_output})
    assert {k: v for k, v in read.items() if split_key(k)[0] != PLAN.txn_output} == sent(ops)
    assert {k: v for k, v in read.items() if split_key(k)[0] == PLAN.txn_output} == \
        read_back(bootstrap, PLAN.txn_output, PLAN.txn_partitions)


def test_group_commits_are_the_positions_polled(run):
    bootstrap, _, _, ops = run
    for i in range(PLAN.group_members):
        member = [o for o in ops if o.process == f"group-{i}"]
        assert completed(member, "subscribe")[0].value == [["subscribe", [PLAN.topic]]]
        assert completed(member, "rebalance")
        since: dict[str, int] = {}  # next offsets of what was polled since the last commit's invoke
        for o in member:
            if o.f == "poll" and o.type == OK:
                since.update({k: max(off for off, _ in r) + 1 for k, r in o.value[0][1].items() if r})
            elif o.f == "rebalance":
                for key in o.value[0][1]["revoked"]:
                    since.pop(key, None)
            elif o.f == "commit" and o.type == INVOKE:
                assert o.value == [["commit", since]]
                since = {}
            elif o.f == "commit":
                assert o.type == OK
                invoked = next(c for c in member if c.op == o.op and c.type == INVOKE)
                assert o.value == invoked.value
    last: dict[str, int] = {}
    for c in (o for o in ops if o.process.startswith("group-") and o.f == "commit" and o.type == OK):
        last.update(c.value[0][1])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": PLAN.group})
    committed = consumer.committed([TopicPartition(*split_key(k)) for k in last], timeout=10)
    consumer.close()
    assert {key_of(tp.topic, tp.partition): tp.offset for tp in committed} == last


def test_copiers_commit_exactly_once_and_aborted_sends_stay_invisible(run):
    bootstrap, _, _, ops = run
    txns = [o for o in ops if o.f == "txn"]
    assert completed(txns, "txn", "fail") and completed(txns, "txn")
    output = read_back(bootstrap, PLAN.txn_output, PLAN.txn_partitions)
    committed: set[tuple[str, int, int]] = set()
    for o in completed(txns, "txn"):
        (_, polled_), *sends = o.value
        (in_key, records), = polled_.items()
        assert [v for _, v in records] == [v for _, _, (_, v) in sends]  # values copied unchanged, in order
        assert all(split_key(out_key)[1] == split_key(in_key)[1] for _, out_key, _ in sends)
        committed |= {(out_key, offset, v) for _, out_key, (offset, v) in sends}
    completions = {(o.process, o.op) for o in txns if o.type != INVOKE}
    unsettled = {send[2] for o in txns if o.type == INVOKE and (o.process, o.op) not in completions
                 for send in o.value[1:]}  # the transaction the kill interrupted: committed or not
    in_output = {(k, offset, v) for k, records in output.items() for offset, v in records}
    assert committed <= in_output
    assert {v for _, _, v in in_output - committed} <= unsettled
    aborted = {send[2] for o in completed(txns, "txn", "fail") for send in o.value[1:]}
    recopied = {v for _, _, v in committed}
    assert aborted <= recopied  # an aborted transaction's records were copied again by a committed one
    out_values = [v for _, _, v in in_output]
    in_values = [v for k, records in sent(ops).items() if split_key(k)[0] == PLAN.txn_input for _, v in records]
    assert sorted(out_values) == sorted(in_values)  # every input value exactly once
