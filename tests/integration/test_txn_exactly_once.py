"""Exactly once, Kafka's transactions_test in short form: transactional copier processes
(scripts/demo/txn_copier.py, confluent-kafka, consume-transform-produce, 750 records per transaction,
``send_offsets_to_transaction``) copy a seeded 1-partition topic on a 3-broker cluster (RF 3, min ISR 2,
``__transaction_state`` with 4 partitions) while brokers or copiers are bounced, hard (SIGKILL) or clean.

Every time: the output read_committed is the input exactly, in order (no loss, no duplicate), a
read_committed consumer that ran during the copy saw the same, and the group's offset in ZooKeeper is the
input's end. Besides: a zombie copier (SIGSTOP past its transaction timeout) is fenced by its replacement with
the same ``transactional.id`` and its transaction is aborted; a hanging transaction (its producer killed) holds
the LSO until the coordinator's abort scan aborts it after ``transaction.timeout.ms``; and killing the leader of
the copier's ``__transaction_state`` partition between commits loses and duplicates nothing.

The copiers are rate-limited (``--rate``) so that the bounces land while the copy is under way. Through broker
bounces a copier whose client gets stuck (librdkafka 2.16 can block forever in ``send_offsets_to_transaction`` when
its cached group coordinator went down: confluentinc/librdkafka#5456 and #5511; the copier's watchdog then exits 4)
is replaced with the same ``transactional.id``, as a supervisor would: exactly-once must hold through that too.
Only that bug's signature is tolerated: stuck in ``send_offsets_to_transaction``, at most once per broker bounce;
the replaced copiers' events are printed (shown with a failure).
"""
from __future__ import annotations

import asyncio
import signal
import time
import uuid

import pytest
from confluent_kafka import Producer

from scripts.local.cluster import running_cluster
from scripts.tools.common.cluster_admin import ClusterAdmin
from scripts.tools.kafka_transactions.admin import TransactionsAdmin
from tests.integration.conditions import wait_for
from tests.integration.txn_support import (
    TXN_LOG, CopierProcess, CopierSupervisor, ReaderThread, bounce_broker, create_topics, end_offsets, full_isr,
    leader_of, read_all, restart_killed_broker, seed, stable)
from tests.integration.znodes import committed_offset
from transactions.coordinator.placement import partition_for

TXN_LOG_PARTITIONS = 4
ABORT_SCAN_MS = 1000
PROPERTIES = {"transaction.state.log.num.partitions": str(TXN_LOG_PARTITIONS),
              "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(ABORT_SCAN_MS),
              "offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "0"}
SEED = 20_000
PER_TXN = "750"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn-eos") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000, properties=PROPERTIES) as c:
        yield c


class Run(CopierSupervisor):
    """One copy job: its topics, group, transactional.id, seeded input, its supervised copiers and the concurrent
    read_committed reader."""

    def __init__(self, cluster, records: int):
        suffix = uuid.uuid4().hex[:8]
        self.cluster = cluster
        super().__init__(cluster.bootstrap_servers, f"eos-in-{suffix}", f"eos-out-{suffix}", f"eos-group-{suffix}",
                         f"eos-copier-{suffix}", "--records-per-txn", PER_TXN, "--exit-when-done")
        create_topics(self.bootstrap, [self.source, self.sink])
        self.input = seed(self.bootstrap, self.source, records)[0]
        self.reader = ReaderThread(self.bootstrap, self.sink)
        self.reader.start()

    def bounce(self, victim: int, hard: bool, topics: list[str]) -> None:
        self.bounces += 1
        bounce_broker(self.cluster, victim, hard, topics)

    def check_exactly_once(self, zk) -> None:
        output = read_all(self.bootstrap, self.sink)[0]
        duplicates = len(output) - len(set(output))
        assert (len(output), duplicates) == (len(self.input), 0), f"input {len(self.input)}, output {len(output)}"
        assert output == self.input, "the output is not the input in order"
        ends = wait_for(lambda: stable(self.bootstrap, self.sink), 30, "LSO == high watermark", 0.2)
        assert self.reader.finish(ends, 60)[0] == self.input, "the concurrent read_committed consumer differs"
        # the group's offsets reach ZooKeeper once the COMMIT marker to its __consumer_offsets partition lands,
        # after EndTxn was answered (and retried while that partition's group coordinator loads)
        wait_for(lambda: self.zk_offset(zk) == len(self.input), 30, f"the group's offset {len(self.input)} in ZK",
                 0.2)

    def zk_offset(self, zk) -> int | None:
        return committed_offset(zk, self.group, self.source, 0)

    def close(self) -> None:
        self.reader.halt.set()
        super().close()


@pytest.fixture
def make_run(cluster):
    runs: list[Run] = []

    def make(records: int = SEED) -> Run:
        runs.append(Run(cluster, records))
        return runs[-1]

    yield make
    for r in runs:
        r.close()


def wait_committed(copier: CopierProcess, more: int, timeout: float = 60) -> None:
    target = copier.committed() + more
    copier.wait(lambda e: e["event"] == "committed" and copier.committed() >= target, timeout,
                f"{more} more committed transactions")


def supervised_commits(run: Run, more: int, timeout: float = 60) -> None:
    target = run.committed() + more
    run.supervised(lambda e: e["event"] == "committed" and run.committed() >= target, timeout,
                   f"{more} more committed transactions")


@pytest.mark.parametrize("hard", [True, False], ids=["hard", "clean"])
def test_copy_through_broker_bounces_is_exactly_once(cluster, zk, make_run, hard):
    run = make_run()
    copier = run.copier("--rate", "1200")
    copier.wait_event("ready", 60)
    topics = [run.source, run.sink, TXN_LOG]
    first = leader_of(run.bootstrap, run.sink, 0)
    second = next(b for b in (leader_of(run.bootstrap, TXN_LOG, partition_for(run.transactional_id,
                                                                                   TXN_LOG_PARTITIONS)),
                              *cluster.broker_ids) if b != first)
    for victim in (first, second):
        supervised_commits(run, 2)
        run.bounce(victim, hard, topics)
    run.supervised(lambda e: e["event"] == "done", 90, "done")
    assert run.copiers[-1].exit_code() == 0
    run.check_exactly_once(zk)


@pytest.mark.parametrize("hard", [True, False], ids=["hard", "clean"])
def test_copy_through_copier_bounces_is_exactly_once(zk, make_run, hard):
    run = make_run()
    pause = ("--pause-in-txn", "4") if hard else ()
    copier = run.copier("--rate", "2500", *pause)
    for bounce in (1, 2):
        if hard:  # inside its 4th transaction, once its records are in the log, uncommitted
            copier.wait_event("paused", 60)
            assert end_offsets(run.bootstrap, run.sink, committed=True)[0] < end_offsets(run.bootstrap, run.sink)[0]
            copier.signal(signal.SIGKILL)
        else:
            wait_committed(copier, 3)
            copier.signal(signal.SIGTERM)  # the transaction under way is committed, then it exits
            copier.wait_event("stopped", 60)
        assert copier.exit_code() == (-signal.SIGKILL if hard else 0)
        # same transactional.id: aborts what the old one left open; the last one is not paused
        copier = run.copier("--rate", "2500", *(pause if bounce < 2 else ()))
    copier.wait_event("done", 60)
    run.check_exactly_once(zk)
    if hard:  # the killed copiers' open transactions are in the log, aborted
        assert len(read_all(run.bootstrap, run.sink, isolation="read_uncommitted")[0]) > len(run.input)


def test_zombie_copier_is_fenced_and_its_transaction_aborted(zk, make_run):
    run = make_run(3000)
    timeout_ms = 10_000  # ample for the HW and LSO reads below, before the coordinator's abort
    zombie = run.copier("--transaction-timeout-ms", str(timeout_ms), "--pause-in-txn", "2")
    zombie.wait_event("paused", 60)  # transaction 2's records produced, not committed
    zombie.signal(signal.SIGSTOP)
    high = end_offsets(run.bootstrap, run.sink)[0]
    assert end_offsets(run.bootstrap, run.sink, committed=True)[0] < high  # the open transaction holds the LSO
    # past its timeout the coordinator aborts it (bumping the epoch): the LSO moves past the ABORT marker
    wait_for(lambda: end_offsets(run.bootstrap, run.sink, committed=True)[0] > high,
             (timeout_ms + ABORT_SCAN_MS) / 1000 + 20, "the timed-out transaction aborted", 0.2)

    replacement = run.copier()
    replacement.wait_event("done", 60)
    zombie.signal(signal.SIGCONT)
    zombie.resume_paused()  # it goes on to send_offsets_to_transaction and commit_transaction
    fenced = zombie.wait_event("fenced", 60)
    assert zombie.exit_code() == 3, fenced
    assert zombie.committed() == 1, "the zombie committed its paused transaction"
    run.check_exactly_once(zk)
    uncommitted = read_all(run.bootstrap, run.sink, isolation="read_uncommitted")[0]
    assert len(uncommitted) > len(run.input)  # the aborted records are in the log, hidden from read_committed


def transaction_start_ms(bootstrap: str, transactional_id: str) -> int:
    """The open transaction's start time on its coordinator's clock (DescribeTransactions), epoch ms."""
    async def describe():
        async with ClusterAdmin(bootstrap, 30) as admin:
            return await TransactionsAdmin(admin).describe_transaction(transactional_id)
    description = asyncio.run(describe())
    assert description.state == "Ongoing" and description.start_time_ms is not None, description
    return description.start_time_ms


def lso_and_hw(run: Run) -> tuple[int, int]:
    return end_offsets(run.bootstrap, run.sink, committed=True)[0], end_offsets(run.bootstrap, run.sink)[0]


def test_hanging_transaction_holds_the_lso_until_the_abort_scan(make_run):
    run = make_run(100)
    timeout_ms = 20_000
    stuck = run.copier("--transaction-timeout-ms", str(timeout_ms), "--pause-in-txn", "1")
    stuck.wait_event("paused", 60)
    stuck.kill()  # a producer killed mid-transaction: nobody ends it
    # the coordinator (on this host's clock) may abort it once its timeout has passed since it began
    expires_at = (transaction_start_ms(run.bootstrap, run.transactional_id) + timeout_ms) / 1000
    assert lso_and_hw(run) == (0, 100)
    plain = Producer({"bootstrap.servers": run.bootstrap, "acks": "all"})
    for i in range(10):
        plain.produce(run.sink, f"plain-{i}".encode(), partition=0)
    assert plain.flush(30) == 0
    # the LSO stalls while the transaction is within its timeout, although the high watermark moves on:
    # a few observations, all begun in the first half of the window
    for _ in range(3):
        assert time.time() < expires_at - timeout_ms / 2000, "too slow to observe the stall inside the timeout"
        assert lso_and_hw(run) == (0, 110)
    # then, within the timeout plus one abort scan (and slack for a busy machine), the transaction is aborted
    wait_for(lambda: stable(run.bootstrap, run.sink), expires_at + ABORT_SCAN_MS / 1000 + 10 - time.time(),
             "the LSO past the hanging transaction", 0.2)
    assert time.time() >= expires_at, "the transaction was aborted before its timeout"
    assert read_all(run.bootstrap, run.sink)[0] == [f"plain-{i}".encode() for i in range(10)]
    assert len(read_all(run.bootstrap, run.sink, isolation="read_uncommitted")[0]) == 110


def test_transaction_coordinator_failover_between_commits(cluster, zk, make_run):
    run = make_run(10_000)
    partition = partition_for(run.transactional_id, TXN_LOG_PARTITIONS)
    copier = run.copier("--rate", "1500")
    wait_committed(copier, 2)
    victim = leader_of(run.bootstrap, TXN_LOG, partition)
    run.bounces += 1
    cluster.signal_broker(victim, signal.SIGKILL)  # right after a commit: the coordinator dies between commits
    try:
        wait_for(lambda: leader_of(run.bootstrap, TXN_LOG, partition) not in (-1, victim), 40,
                 "a new transaction coordinator", 0.2)
        supervised_commits(run, 2)  # the next transactions complete with the new coordinator
        run.supervised(lambda e: e["event"] == "done", 60, "done")
    finally:
        restart_killed_broker(cluster, victim)
    wait_for(lambda: full_isr(run.bootstrap, [run.source, run.sink, TXN_LOG]), 60, "full ISR again", 0.5)
    run.check_exactly_once(zk)
