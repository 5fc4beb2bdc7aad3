"""``zkafka bench group``: what consumer groups cost on a 3-broker cluster on this machine.

One fresh cluster per ``group.initial.rebalance.delay.ms`` setting (default: 3000, Kafka's default,
then 0), ZooKeeper tickTime 500, ``__consumer_offsets`` with 6 partitions, one 6-partition RF-3
topic. Consumers are confluent-kafka with ``session.timeout.ms=6000``,
``heartbeat.interval.ms=500`` and librdkafka's default (eager) assignors. Each member is polled on
its own thread and every rebalance callback is time-stamped where it runs. On each cluster:

1. subscribe -> first assignment: a new group (a fresh group id each repetition), one member, from
   ``subscribe()`` to its ``on_assign`` callback (FindCoordinator, JoinGroup, SyncGroup, plus the
   coordinator's initial rebalance delay for a new, empty group). The first group on a cluster also
   creates ``__consumer_offsets``: a warm-up group, not measured, takes that.
2. rebalance on join: with member A owning all 6 partitions, member B subscribes; until both own
   partitions (every partition once). Then on a clean leave: from A's ``close()`` (LeaveGroup) until
   B owns all 6 partitions. The member that stays learns of the rebalance from its next heartbeat, so
   both include up to one ``heartbeat.interval.ms``; each change waits 1 s plus a random part of the
   heartbeat interval after the previous assignment (see ``settle``).
3. offset commits: one member of a new group commits offsets for all 6 partitions (one
   OffsetCommit request each) as fast as it can for ``--commit-seconds``: pipelined (``commit(offsets=...,
   asynchronous=True)`` with at most ``--in-flight`` outstanding) and one at a time (synchronous).
   Counted: commits acknowledged (``on_commit`` without error) within the window -> commits/s and
   partitions/s; ack latency from the commit call to its ``on_commit``; the brokers' CPU seconds;
   and whether ``committed()`` afterwards returns the last offsets committed (``scripts.bench.group_commits``).

The cluster's directory is removed after a successful run and kept (broker logs) after a failure.
Progress goes to stderr; the report (tables, or JSON) to stdout.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException

from scripts.bench.common import bench_base, create_topic, machine
from scripts.bench.group_commits import CommitTarget, measure_commits
from scripts.local.cluster import Cluster, ClusterSpec

BROKERS = 3
PARTITIONS = 6
TOPIC = "bench-group"
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
OFFSETS_PARTITIONS = 6
ASSIGN_TIMEOUT_S = 60.0
WARM_UP_TIMEOUT_S = 120.0
ALL = frozenset(range(PARTITIONS))


@dataclass
class GroupBenchOptions:
    delays_ms: list[int] = field(default_factory=lambda: [3000, 0])
    reps: int = 5
    commit_seconds: float = 10.0
    in_flight: int = 64
    directory: Path | None = None
    command: str = "zkafka bench group"


def _progress(message: str) -> None:
    print(f"[bench group] {message}", file=sys.stderr, flush=True)


def summary_ms(seconds: Sequence[float]) -> dict:
    """Median and max in milliseconds of the repetitions (None when there are none), and the count."""
    values = sorted(s * 1000 for s in seconds)
    return {"n": len(values), "median_ms": statistics.median(values) if values else None,
            "max_ms": values[-1] if values else None, "all_ms": [round(v, 1) for v in values]}


def consumer_config(bootstrap: str, group: str, name: str) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS}


class TimedMember:
    """A group member polled on its own thread; ``owned`` and ``changed_at`` (monotonic s of the last
    rebalance callback) as the callbacks left them."""

    def __init__(self, bootstrap: str, group: str, name: str):
        self.name = name
        self.consumer = Consumer(consumer_config(bootstrap, group, name))
        self.owned: frozenset[int] = frozenset()
        self.changed_at = 0.0
        self.subscribed_at = 0.0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"member-{name}")

    def _on_assign(self, _consumer, partitions) -> None:
        self.owned = self.owned | {p.partition for p in partitions}
        self.changed_at = time.monotonic()

    def _on_revoke(self, _consumer, partitions) -> None:
        self.owned = self.owned - {p.partition for p in partitions}
        self.changed_at = time.monotonic()

    def warm(self) -> None:
        """Metadata from the bootstrap brokers before the clock starts: connections are not what is measured."""
        self.consumer.list_topics(TOPIC, timeout=30)

    def subscribe(self) -> float:
        self.subscribed_at = time.monotonic()
        self.consumer.subscribe([TOPIC], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        self._thread.start()
        return self.subscribed_at

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                message = self.consumer.poll(0.05)
            except KafkaException as exc:
                self.errors.append(str(exc))
                continue
            if message is not None and message.error() is not None:
                self.errors.append(str(message.error()))

    def close(self) -> float:
        """Stop polling, then ``close()`` (LeaveGroup); the monotonic time close() was called."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        started = time.monotonic()
        self.consumer.close()
        return started


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.002)


def shared(a: frozenset[int], b: frozenset[int], partitions: frozenset[int] = ALL) -> bool:
    """Both own partitions and every partition is owned by exactly one of them."""
    return bool(a) and bool(b) and not (a & b) and (a | b) == partitions


def _group(kind: str) -> str:
    return f"bench-{kind}-{uuid.uuid4().hex[:8]}"


def first_assignment(bootstrap: str, timeout: float = ASSIGN_TIMEOUT_S) -> float:
    member = TimedMember(bootstrap, _group("first"), "first")
    member.warm()
    try:
        start = member.subscribe()
        wait_until(lambda: member.owned == ALL, timeout, "the first assignment")
        return member.changed_at - start
    finally:
        member.close()


def settle(rng: random.Random = random.Random()) -> None:
    """A pause of 1 s plus a random part of the heartbeat interval before the next membership change. The
    members that stay learn of a rebalance from their next heartbeat, and a member's heartbeats run on a
    timer started when it got its assignment: a change made right after an assignment would always meet
    the same phase of that timer (measured: a constant ~500 ms) instead of a random one."""
    time.sleep(1.0 + rng.uniform(0, HEARTBEAT_INTERVAL_MS / 1000))


def join_and_leave(bootstrap: str) -> tuple[float, float]:
    """(B subscribes -> A and B share the partitions, A.close() -> B owns them all), in seconds."""
    group = _group("join")
    a, b = TimedMember(bootstrap, group, "a"), TimedMember(bootstrap, group, "b")
    a.warm()
    b.warm()
    closed = []
    try:
        a.subscribe()
        wait_until(lambda: a.owned == ALL, ASSIGN_TIMEOUT_S, "member a's assignment")
        settle()
        start = b.subscribe()
        wait_until(lambda: shared(a.owned, b.owned) and min(a.changed_at, b.changed_at) > start, ASSIGN_TIMEOUT_S,
                   "a and b to share the partitions")
        joined = max(a.changed_at, b.changed_at) - start
        settle()
        left_at = a.close()
        closed.append(a)
        wait_until(lambda: b.owned == ALL and b.changed_at > left_at, ASSIGN_TIMEOUT_S, "b to own every partition")
        return joined, b.changed_at - left_at
    finally:
        for m in (a, b):
            if m not in closed:
                m.close()


def _member_process(bootstrap: str, group: str, name: str, ready) -> None:
    """A group member in a process of its own (so that it can be killed): polls until it dies."""
    member = TimedMember(bootstrap, group, name)
    member.warm()
    member.subscribe()
    while True:
        if member.owned:
            ready.set()
        time.sleep(0.05)


def rebalance_after_kill(bootstrap: str) -> float:
    """Seconds from ``kill -9`` of member b (its own process) until member a owns every partition again:
    the coordinator must notice b's silence (``session.timeout.ms``) and rebalance."""
    group = _group("kill")
    a = TimedMember(bootstrap, group, "a")
    a.warm()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    b = ctx.Process(target=_member_process, args=(bootstrap, group, "b", ready), daemon=True)
    try:
        a.subscribe()
        wait_until(lambda: a.owned == ALL, ASSIGN_TIMEOUT_S, "member a's assignment")
        b.start()
        wait_until(lambda: ready.is_set() and 0 < len(a.owned) < len(ALL), ASSIGN_TIMEOUT_S,
                   "a and b to share the partitions")
        settle()
        killed_at = time.monotonic()
        os.kill(b.pid, signal.SIGKILL)
        wait_until(lambda: a.owned == ALL and a.changed_at > killed_at, ASSIGN_TIMEOUT_S + SESSION_TIMEOUT_MS / 1000,
                   "a to own every partition after b was killed")
        return a.changed_at - killed_at
    finally:
        if b.is_alive():
            b.kill()
        b.join(10)
        a.close()


def broker_log_problems(cluster: Cluster, limit: int = 5) -> dict:
    """ERROR/CRITICAL lines and tracebacks in the brokers' logs: count and the first few."""
    lines = []
    for b in cluster.broker_ids:
        try:
            text = (cluster.broker_dir(b) / "broker.log").read_text(errors="replace")
        except OSError:
            continue
        lines += [f"broker {b}: {line}" for line in text.splitlines()
                  if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")]
    return {"count": len(lines), "first": lines[:limit]}


def run_one_cluster(delay_ms: int, options: GroupBenchOptions, base: Path) -> dict:
    spec = ClusterSpec.on_free_ports(BROKERS, tick_time=500, session_timeout_ms=6000, properties={
        "group.initial.rebalance.delay.ms": str(delay_ms), "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)})
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="bench-group-", dir=base)), spec)
    _progress(f"group.initial.rebalance.delay.ms={delay_ms}: starting {BROKERS} brokers in {cluster.dir}")
    try:
        cluster.up(120)
        measured = _measure_cluster(cluster, options)
    except BaseException:
        _progress(f"failed; broker logs are in {cluster.dir}/broker-<id>/broker.log")
        cluster.down()
        raise
    cluster.down()
    problems = broker_log_problems(cluster)
    if problems["count"]:
        _progress(f"{problems['count']} ERROR lines in the broker logs, e.g. {problems['first'][0]}")
    shutil.rmtree(cluster.dir, ignore_errors=True)
    return {"initial_rebalance_delay_ms": delay_ms, **measured, "broker_log_errors": problems}


def _measure_cluster(cluster: Cluster, options: GroupBenchOptions) -> dict:
    """Steps 1-3 on a running cluster: warm-up, first assignments, joins and leaves, offset commits."""
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS, 3)
    _progress("warm-up group (creates __consumer_offsets)")
    warm_up_s = first_assignment(bootstrap, WARM_UP_TIMEOUT_S)
    firsts = []
    for i in range(options.reps):
        firsts.append(first_assignment(bootstrap))
        _progress(f"subscribe -> first assignment {i + 1}/{options.reps}: {firsts[-1] * 1000:.0f} ms")
    joins, leaves = [], []
    for i in range(options.reps):
        joined, left = join_and_leave(bootstrap)
        joins.append(joined)
        leaves.append(left)
        _progress(f"join {i + 1}/{options.reps}: {joined * 1000:.0f} ms, leave: {left * 1000:.0f} ms")
    pids = [p for p in (cluster.broker_pid(b) for b in cluster.broker_ids) if p]
    return {"warm_up_s": warm_up_s, "first_assignment": summary_ms(firsts), "join": summary_ms(joins),
            "leave": summary_ms(leaves), "commits": _commits(bootstrap, options, pids)}


def _commits(bootstrap: str, options: GroupBenchOptions, broker_pids: list[int]) -> list[dict]:
    """Step 3: pipelined (``--in-flight``), then synchronous (``scripts.bench.group_commits``)."""
    commits = []
    for in_flight in (options.in_flight, 1):
        _progress(f"offset commits for {options.commit_seconds:g} s, {in_flight} in flight")
        target = CommitTarget(consumer_config(bootstrap, _group("commit"), "committer"), TOPIC, PARTITIONS,
                              ASSIGN_TIMEOUT_S)
        commits.append(measure_commits(target, options.commit_seconds, in_flight, broker_pids))
        _progress(f"  {commits[-1]['commits_per_s']:,.0f} commits/s, {commits[-1]['errors']} errors")
    return commits


def run_group_bench(options: GroupBenchOptions) -> dict:
    base = options.directory or bench_base()
    base.mkdir(parents=True, exist_ok=True)
    runs = [run_one_cluster(delay, options, base) for delay in options.delays_ms]
    return {"machine": machine(), "command": options.command, "brokers": BROKERS, "partitions": PARTITIONS,
            "offsets_partitions": OFFSETS_PARTITIONS, "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS, "reps": options.reps, "runs": runs}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def format_report(result: dict) -> list[str]:
    m = result["machine"]
    lines = [f"{result['brokers']} brokers + ZooKeeper + clients on one machine: {m['cpu']}, {m['cores']} cores, "
             f"{m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, confluent-kafka "
             f"{m['confluent_kafka']} (librdkafka {m['librdkafka']})",
             f"Command: `{result['command']}`", "",
             f"Rebalances (ms, median and max of {result['reps']}, a fresh group each): one {result['partitions']}-"
             f"partition RF-3 topic, session.timeout.ms={result['session_timeout_ms']}, heartbeat.interval.ms="
             f"{result['heartbeat_interval_ms']} (the member that stays learns of a rebalance from its next "
             f"heartbeat), eager assignor (librdkafka's default range,roundrobin), __consumer_offsets with "
             f"{result['offsets_partitions']} partitions",
             "| group.initial.rebalance.delay.ms | subscribe -> first assignment (median / max) | "
             "2nd member joins -> both assigned (median / max) | close() -> survivor owns all (median / max) |",
             "|---|---|---|---|"]
    for run in result["runs"]:
        cells = [f"{_ms(run[k]['median_ms'])} / {_ms(run[k]['max_ms'])}" for k in ("first_assignment", "join", "leave")]
        lines.append(f"| {run['initial_rebalance_delay_ms']} | " + " | ".join(cells) + " |")
    lines += ["", f"Offset commits: one member, all {result['partitions']} partitions in every OffsetCommit",
              "| group.initial.rebalance.delay.ms | commits | seconds | acknowledged | commits/s | partitions/s | "
              "ack p50 (ms) | ack p99 (ms) | errors | broker CPU-s | committed() = last acked |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in result["runs"]:
        for c in run["commits"]:
            p50 = "-" if c["ack_p50_ms"] is None else f"{c['ack_p50_ms']:.1f}"
            p99 = "-" if c["ack_p99_ms"] is None else f"{c['ack_p99_ms']:.1f}"
            lines.append(f"| {run['initial_rebalance_delay_ms']} | {c['mode']} | {c['seconds']:g} | {c['commits']:,} | "
                         f"{c['commits_per_s']:,.0f} | {c['partitions_per_s']:,.0f} | {p50} | {p99} | {c['errors']} | "
                         f"{c['broker_cpu_s']:.2f} | {'yes' if c['committed_matches'] else 'NO'} |")
    for run in result["runs"]:
        problems = run.get("broker_log_errors") or {"count": 0, "first": []}
        if problems["count"]:
            lines += ["", f"group.initial.rebalance.delay.ms={run['initial_rebalance_delay_ms']}: "
                          f"{problems['count']} ERROR lines in the broker logs, first: {problems['first'][0]}"]
    return lines
