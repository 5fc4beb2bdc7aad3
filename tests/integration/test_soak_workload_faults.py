"""The soak's workload processes when the cluster does not answer, against real brokers:

- a group member whose group coordinator is frozen (SIGSTOP) while the partition it reads stays led by the
  other broker: its commit is recorded ``info`` within ``COMMIT_WAIT_S`` instead of blocking, it keeps polling,
  and SIGTERM ends it within the commit and close bounds with every op it invoked complete and a clean-stop
  exit code;
- a copier started while the only broker is down (no group coordinator, then one loading its offsets) reads
  its committed offset once the broker is back and copies, and stops cleanly.
"""
from __future__ import annotations

import signal
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.local.cluster import running_cluster
from scripts.soak import history
from scripts.soak.history import INFO, INVOKE, OK, key_of
from scripts.soak.workloads.common import CLOSE_S, clean_stop
from scripts.soak.workloads.group import COMMIT_WAIT_S
from scripts.soak.workloads.launcher import WorkloadProcess
from tests.integration.conditions import wait_for
from tests.integration.txn_support import create_topics

PROPERTIES = {"transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
              "transaction.state.log.min.isr": "1", "offsets.topic.num.partitions": "1",
              "offsets.topic.replication.factor": "1", "group.initial.rebalance.delay.ms": "0"}
TOPIC, GROUP = "faults", "faults-group"


def ops_of(proc: WorkloadProcess) -> list[history.Op]:
    return list(history.read_file(proc.history_path)) if proc.history_path.exists() else []


def completed(ops, f: str, type_: str = OK) -> list[history.Op]:
    return [o for o in ops if o.f == f and o.type == type_]


def unfinished(ops) -> set[int]:
    return {o.op for o in ops if o.type == INVOKE} - {o.op for o in ops if o.type != INVOKE}


def produce(bootstrap: str, partition: int, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        producer.produce(TOPIC, str(i).encode(), partition=partition)
    assert producer.flush(30) == 0


def group_coordinator(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.describe_consumer_groups([GROUP], request_timeout=10)[GROUP]
    return future.result(15).coordinator.id


def watch(proc: WorkloadProcess, condition, timeout: float, what: str):
    """``wait_for``, with the process's log tail in the failure."""
    try:
        return wait_for(condition, timeout, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {proc.name}'s log ends: {proc.log_tail()}") from None


class Feeder:
    """Produces a record every 20 ms to one partition, in a thread, until ``stop()``. ``delivered`` counts the
    acknowledged ones: a record delivered means the producer knows the partition's leader and is connected to it,
    so a broker frozen afterwards cannot hold the producer's metadata request."""

    def __init__(self, bootstrap: str, partition: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.partition, self.n, self.delivered = partition, 0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.02):
            self.producer.produce(TOPIC, str(self.n).encode(), partition=self.partition, on_delivery=self._acked)
            self.producer.poll(0)
            self.n += 1

    def _acked(self, err, _msg) -> None:
        if err is None:
            self.delivered += 1

    def stop(self) -> None:
        self.done.set()
        self.thread.join(5)


def test_a_member_whose_coordinator_is_frozen_stops_within_its_bounds(tmp_path):
    with running_cluster(tmp_path / "cluster", 2, tick_time=500, session_timeout_ms=6000,
                         properties=PROPERTIES) as cluster:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, [TOPIC], 2, 1, 1)
        (tmp_path / "history").mkdir()
        member = WorkloadProcess("group-0", bootstrap, tmp_path / "history").start(
            "group", ["--topics", TOPIC, "--group", GROUP])
        coordinator = None
        feeder = None
        try:
            produce(bootstrap, 0, 10)  # so the member commits and the group has a coordinator
            wait_for(lambda: completed(ops_of(member), "commit"), 30, "the member's first commit")
            coordinator = group_coordinator(bootstrap)
            leaders = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10).topics[TOPIC]
            partition = next(p for p, m in leaders.partitions.items() if m.leader != coordinator)
            feeder = Feeder(bootstrap, partition)
            # before the freeze: the feeder's metadata request must not be the frozen broker's to answer, and the
            # member must be reading the fed partition
            watch(member, lambda: feeder.delivered, 30, "the feeder's first acknowledged record")
            watch(member, lambda: any(key_of(TOPIC, partition) in o.value[0][1] for o in ops_of(member)
                              if o.f == "commit" and o.type == INVOKE), 30, "a commit of the fed partition")
            cluster.signal_broker(coordinator, signal.SIGSTOP)
            frozen_at = len(ops_of(member))
            watch(member, lambda: completed(ops_of(member)[frozen_at:], "commit", INFO), COMMIT_WAIT_S + 20,
                  "a commit recorded info while the coordinator is frozen")
            polls = len(completed(ops_of(member), "poll"))
            watch(member, lambda: len(completed(ops_of(member), "poll")) > polls + 2, 10, "the member polling on")
            began = time.monotonic()
            code = member.stop(COMMIT_WAIT_S + CLOSE_S + 30)
            took = time.monotonic() - began
        finally:
            if feeder is not None:
                feeder.stop()
            if coordinator is not None:
                cluster.signal_broker(coordinator, signal.SIGCONT)
            member.kill()
        ops = ops_of(member)
        assert clean_stop(code), (code, member.log_tail())
        # within the runner's 60 s stop deadline (the commit's and the close's bounds, plus start-up of the
        # process's stop path on a loaded machine): a member that blocked on the client would never stop
        assert took < 60, took
        assert not unfinished(ops)
        info = completed(ops, "commit", INFO)
        assert info[0].error == "no answer"
        assert {k for k in info[0].value[0][1]} <= {key_of(TOPIC, p) for p in (0, 1)}


def java_hash(text: str) -> int:
    """Java's String.hashCode, made non-negative as Kafka's Utils.abs."""
    h = 0
    for c in text:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


def leaders_of(bootstrap: str, topic: str) -> dict[int, int]:
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    return {p: m.leader for p, m in meta.partitions.items()}


def test_a_copier_whose_group_coordinator_is_away_at_start_up_copies_once_it_is_back(tmp_path):
    """Two brokers: the transaction coordinator on one, the copier's group coordinator (its
    ``__consumer_offsets`` partition, one replica) on the other, which is down when the copier starts: reading
    the committed offset is retried until that broker is back, then the copier copies."""
    properties = dict(PROPERTIES, **{"offsets.topic.num.partitions": "2"})
    with running_cluster(tmp_path / "cluster", 2, tick_time=500, session_timeout_ms=6000,
                         properties=properties) as cluster:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, [TOPIC, "faults-out"], 1, 1, 1)
        produce(bootstrap, 0, 50)
        probe = Producer({"bootstrap.servers": bootstrap, "transactional.id": "faults-probe"})
        probe.init_transactions(30)  # creates __transaction_state: its leader is the transaction coordinator
        txn_coordinator = leaders_of(bootstrap, "__transaction_state")[0]
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-probe"})
        reader.committed([TopicPartition(TOPIC, 0)], timeout=30)  # creates __consumer_offsets
        reader.close()
        wait_for(lambda: sorted(leaders_of(bootstrap, "__consumer_offsets")) == [0, 1]
                 and min(leaders_of(bootstrap, "__consumer_offsets").values()) > 0, 30, "__consumer_offsets led")
        offsets_leaders = leaders_of(bootstrap, "__consumer_offsets")
        group = next(g for g in (f"faults-copier-{i}" for i in range(100))
                     if offsets_leaders[java_hash(g) % 2] != txn_coordinator)
        away = offsets_leaders[java_hash(group) % 2]
        cluster.stop_broker(away)
        (tmp_path / "history").mkdir()
        copier = WorkloadProcess("copier-0", bootstrap, tmp_path / "history")
        copier.start("copier", ["--input-topic", TOPIC, "--output-topic", "faults-out", "--partition", "0",
                                "--group", group, "--transactional-id", "faults-copier",
                                "--abort-probability", "0"])
        try:
            wait_for(lambda: "committed offset: " in copier.log_path.read_text(), 30,
                     "the copier retrying its committed offset while its group coordinator is away")
            cluster.start_broker(away)
            cluster.wait_until_ready(60)
            wait_for(lambda: sum(len(o.value) - 1 for o in completed(ops_of(copier), "txn")) >= 50, 60,
                     "the copier copied all 50 records")
            code = copier.stop(60)
        finally:
            copier.kill()
        assert clean_stop(code), (code, copier.log_tail())
        assert copier.restarts == 0 and not unfinished(ops_of(copier))
