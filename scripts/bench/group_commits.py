"""Offset commits of ``zkafka bench group``: one member of a new group commits offsets for every partition
of the topic (one OffsetCommit request each) as fast as it can for a window of seconds.

Pipelined (``in_flight`` > 1): ``commit(offsets=..., asynchronous=True)`` with at most ``in_flight``
commits not yet answered, acknowledged by ``on_commit``. One at a time (``in_flight`` = 1): synchronous
``commit()``, acknowledged where it returns. The n-th commit sets every partition to offset n, so an offset
names its commit. Counted: commits acknowledged within the window (commits/s, partitions/s), the ack latency
from the commit call to its acknowledgement, the brokers' CPU seconds over the window, and whether
``committed()`` afterwards returns the last offset acknowledged.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from scripts.bench.procstat import cpu_seconds
from scripts.bench.stats import percentile

DRAIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class CommitTarget:
    """Who commits and what: the committing member's consumer config, the topic and its partition count."""
    config: dict
    topic: str
    partitions: int
    assign_timeout_s: float

    def offsets(self, offset: int) -> list[TopicPartition]:
        return [TopicPartition(self.topic, p, offset) for p in range(self.partitions)]


@dataclass
class CommitLog:
    """``issued``: offset -> monotonic s of its commit call; ``acked``: (offset, monotonic s of its ack)."""
    sync: bool
    issued: dict[int, float] = field(default_factory=dict)
    acked: list[tuple[int, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def last_issued(self) -> int:
        return len(self.issued)

    @property
    def answered(self) -> int:
        return len(self.acked) + len(self.errors)

    def on_commit(self, err, partitions) -> None:
        now = time.monotonic()
        if self.sync:  # counted where commit() returns
            return
        if err is not None:
            self.errors.append(str(err))
        elif partitions:
            self.acked.append((partitions[0].offset, now))

    def issue(self) -> int:
        offset = self.last_issued + 1
        self.issued[offset] = time.monotonic()
        return offset


def measure_commits(target: CommitTarget, seconds: float, in_flight: int, broker_pids: Sequence[int]) -> dict:
    """One member of a new group commits offsets for all partitions, ``in_flight`` at a time
    (1: synchronous commits, one after the other)."""
    log = CommitLog(sync=in_flight == 1)
    consumer = Consumer({**target.config, "on_commit": log.on_commit})
    try:
        _wait_for_assignment(consumer, target)
        cpu = _broker_cpu(broker_pids)
        end = time.monotonic() + seconds
        _commit_until(consumer, target, log, end, in_flight)
        window_acks = [(o, t) for o, t in log.acked if t <= end]
        cpu = _broker_cpu(broker_pids) - cpu
        _drain(consumer, log)
        committed = consumer.committed([TopicPartition(target.topic, p) for p in range(target.partitions)],
                                       timeout=30)
    finally:
        consumer.close()
    return _summary(target, log, seconds, in_flight, window_acks, cpu, committed)


def _wait_for_assignment(consumer: Consumer, target: CommitTarget) -> None:
    consumer.subscribe([target.topic])
    deadline = time.monotonic() + target.assign_timeout_s
    while len(consumer.assignment()) < target.partitions:
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for the committer's assignment")
        consumer.poll(0.05)


def _broker_cpu(broker_pids: Sequence[int]) -> float:
    return sum(cpu_seconds(p) for p in broker_pids)


def _commit_until(consumer: Consumer, target: CommitTarget, log: CommitLog, end: float, in_flight: int) -> None:
    while time.monotonic() < end:
        if log.sync:
            _commit_sync(consumer, target, log)
            consumer.poll(0)  # heartbeats and rebalances stay served
            continue
        while log.last_issued - log.answered < in_flight:
            consumer.commit(offsets=target.offsets(log.issue()), asynchronous=True)
        consumer.poll(0.001)


def _commit_sync(consumer: Consumer, target: CommitTarget, log: CommitLog) -> None:
    offset = log.issue()
    try:
        consumer.commit(offsets=target.offsets(offset), asynchronous=False)
        log.acked.append((offset, time.monotonic()))
    except KafkaException as exc:
        log.errors.append(str(exc))


def _drain(consumer: Consumer, log: CommitLog) -> None:
    """Serve the answers to the commits still in flight when the window closed."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while log.answered < log.last_issued and time.monotonic() < deadline:
        consumer.poll(0.01)


def _summary(target: CommitTarget, log: CommitLog, seconds: float, in_flight: int,
             window_acks: list[tuple[int, float]], cpu: float, committed: list[TopicPartition]) -> dict:
    last = max((o for o, _ in log.acked), default=None)
    latencies = sorted(t - log.issued[o] for o, t in window_acks if o in log.issued)
    return {"mode": "synchronous" if log.sync else f"asynchronous, {in_flight} in flight", "in_flight": in_flight,
            "seconds": seconds, "commits": len(window_acks), "commits_per_s": len(window_acks) / seconds,
            "partitions_per_s": len(window_acks) * target.partitions / seconds,
            "issued": log.last_issued, "errors": len(log.errors), "first_error": log.errors[0] if log.errors else None,
            "ack_p50_ms": percentile(latencies, 50) * 1000 if latencies else None,
            "ack_p99_ms": percentile(latencies, 99) * 1000 if latencies else None,
            "broker_cpu_s": cpu, "last_acked_offset": last,
            "committed_matches": last is not None and all(tp.offset == last for tp in committed)}
