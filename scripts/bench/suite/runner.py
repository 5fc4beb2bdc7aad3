"""Running the suite: one measurement per scenario kind, each on a fresh topic, with what it cost.

Every run is bracketed by two ``procstat.Sample``s of the target's processes (brokers and ZooKeeper),
so each result carries broker CPU seconds, CPU-s per GB of payload, µs of broker CPU per record, the
brokers' peak RSS and the machine's idle share; the client's CPU comes from the client itself.
``run_scenario`` does a warm-up run (not counted) then ``reps`` runs, alternating with the peer's when
the caller interleaves targets (``run_suite``).
"""
from __future__ import annotations

import itertools
import sys
import time
from typing import Callable

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.bench.clients import BenchOptions, measure_produce, run_consume
from scripts.bench.common import create_topic
from scripts.bench.group import PARTITIONS as GROUP_PARTITIONS, TOPIC as GROUP_TOPIC
from scripts.bench.group import first_assignment, join_and_leave, rebalance_after_kill
from scripts.bench.latency import run_latency
from scripts.bench.replication import ReplicationBenchOptions, run_failover
from scripts.bench.stats import read_stamp
from scripts.bench import procstat
from scripts.bench.suite.scenarios import Scenario
from scripts.bench.suite.targets import Target

GB = 1e9
MIN_INSYNC = {"min.insync.replicas": "2"}
_TOPICS = itertools.count()


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fresh_topic(target: Target, s: Scenario, partitions: int | None = None) -> str:
    topic = f"bench-{s.id.lower()}-{next(_TOPICS)}"
    config = MIN_INSYNC if s.replication_factor == 3 and s.acks == "all" else None
    create_topic(target.bootstrap, topic, partitions or s.partitions, s.replication_factor, config=config)
    return topic


def drop_topic(target: Target, topic: str) -> None:
    """Delete a run's topic once it is measured (the peer keeps every record in memory until then)."""
    try:
        admin = AdminClient({"bootstrap.servers": target.bootstrap})  # must outlive its future
        admin.delete_topics([topic])[topic].result(60)
    except Exception as exc:  # noqa: BLE001 - a topic left behind costs space, not correctness
        progress(f"could not delete {topic} on {target.name}: {exc}")


def costed(target: Target, measure: Callable[[], dict], records: int, payload: int) -> dict:
    """``measure()``'s result with what the target's processes spent meanwhile."""
    before = procstat.Sample.take(target.pids())
    result = measure()
    after = procstat.Sample.take(target.pids())
    cpu = procstat.cpu_between(before, after)
    return {**result, "broker_cpu_s": cpu, "cpu_s_per_gb": cpu / (payload / GB) if payload else None,
            "us_per_record": cpu / records * 1e6 if records else None,
            "peak_rss_mb": procstat.peak_rss_bytes(target.broker_pids()) / 2 ** 20,
            "idle_share": procstat.idle_share_between(before, after)}


def _options(s: Scenario, topic: str, records: int | None = None) -> BenchOptions:
    return BenchOptions(records or s.records, s.record_bytes, s.acks, s.codec, s.partitions, s.producers, topic)


def produce(target: Target, s: Scenario) -> dict:
    topic = fresh_topic(target, s)
    options = _options(s, topic)
    result = costed(target, lambda: measure_produce(target.bootstrap, options, []), s.records, s.payload_bytes)
    drop_topic(target, topic)
    return {k: result[k] for k in ("records", "seconds", "records_per_s", "mb_per_s", "client_cpu_s", "errors",
                                   "broker_cpu_s", "cpu_s_per_gb", "us_per_record", "peak_rss_mb", "idle_share")}


def consume(target: Target, s: Scenario) -> dict:
    topic = fresh_topic(target, s)
    options = _options(s, topic)
    filled = measure_produce(target.bootstrap, options, [])  # not measured: the data to read
    if filled["errors"]:
        raise RuntimeError(f"{filled['errors']} records were not produced to {topic}")
    result = costed(target, lambda: run_consume(target.bootstrap, options, None), s.records, s.payload_bytes)
    drop_topic(target, topic)
    return {k: result[k] for k in ("records", "seconds", "records_per_s", "mb_per_s", "client_cpu_s",
                                   "broker_cpu_s", "cpu_s_per_gb", "us_per_record", "peak_rss_mb", "idle_share")}


def latency_run(bootstrap: str, topic: str, s: Scenario, duration_s: float) -> dict:
    """One fixed-rate run of latency scenario ``s`` on partition 0 of ``topic`` (``run_latency``'s result)."""
    settings = {"acks": s.acks, "linger.ms": s.linger_ms, "max.in.flight.requests.per.connection": 5}
    return run_latency(bootstrap, topic, s.rate, duration_s, s.record_bytes, **settings)


def latency(target: Target, s: Scenario, duration_s: float) -> dict:
    topic = fresh_topic(target, s)
    records = int(s.rate * duration_s)
    result = costed(target, lambda: latency_run(target.bootstrap, topic, s, duration_s), records,
                    records * s.record_bytes)
    return {"achieved_per_s": result["sent"] / duration_s, "max_send_late_ms": result["max_send_late_ms"],
            "ack": result["ack"], "end_to_end": result["end_to_end"], "failed": result["failed"],
            "broker_cpu_s": result["broker_cpu_s"], "us_per_record": result["us_per_record"],
            "idle_share": result["idle_share"]}


def group(target: Target, s: Scenario) -> dict:
    if not target.group_topic_ready:
        create_topic(target.bootstrap, GROUP_TOPIC, GROUP_PARTITIONS, min(3, target.brokers))
        target.group_topic_ready = True
    if s.id == "G1":
        return {"seconds": first_assignment(target.bootstrap)}
    joined, left = join_and_leave(target.bootstrap)
    return {"join_s": joined, "leave_s": left, "killed_s": rebalance_after_kill(target.bootstrap)}


def lost_and_duplicated(bootstrap: str, topic: str, acked: list[int], timeout: float = 60.0) -> tuple[int, int]:
    """Of the acknowledged stamps, how many are not in partition 0 of ``topic``, and how many stored
    records repeat a stamp."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    seen: dict[int, int] = {}
    read, deadline = 0, time.monotonic() + timeout
    try:
        while read < high and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is None:
                    read += 1
                    stamp = read_stamp(message.value())
                    seen[stamp] = seen.get(stamp, 0) + 1
    finally:
        consumer.close()
    return sum(1 for stamp in acked if stamp not in seen), sum(n - 1 for n in seen.values() if n > 1)


def failover(target: Target, s: Scenario) -> dict:
    topic = f"bench-f1-{next(_TOPICS)}"
    result = run_failover(target.cluster, ReplicationBenchOptions(session_timeout_ms=target.session_timeout_ms),
                          topic, with_acked=True)
    lost, duplicated = lost_and_duplicated(target.bootstrap, topic, result.pop("acked"))
    target.cluster.start_broker(result["killed_leader"])  # back to three for whatever runs next
    target.cluster.wait_until_ready(120)
    return {**result, "lost": lost, "duplicated": duplicated}


def run_once(target: Target, s: Scenario, duration_s: float) -> dict:
    if s.kind == "produce":
        return produce(target, s)
    if s.kind == "consume":
        return consume(target, s)
    if s.kind == "latency":
        return latency(target, s, duration_s)
    if s.kind == "group":
        return group(target, s)
    if s.kind == "failover":
        return failover(target, s)
    raise ValueError(f"unknown scenario kind {s.kind!r}")
