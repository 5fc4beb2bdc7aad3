"""``zkafka bench reassign``: what moving a partition costs.

On a fresh 4-broker cluster: a topic ``moving`` with one partition on brokers [1, 2] filled with
``--mib`` MiB (1 KiB records, acks=1), and a topic ``steady`` (one partition on [1, 2], RF 2, min ISR 2).
For each mode (unthrottled, then ``--throttle`` B/s) the partition moves to [3, 4] and back is not
needed: each mode gets its own fresh ``moving`` topic. While it moves, a PacedProducer sends to
``steady`` at ``--rate`` records/s with acks=all, and the same producer runs once before any move for
the baseline. Reported per mode: the move's wall time (AlterPartitionReassignments sent -> topic znode
holds only the targets, polled every 50 ms through ListPartitionReassignments), the copy rate (MiB/s of
the moved log per new replica) and the steady producer's ack latency p50/p99/max.

Every broker has two log dirs, and a third mode, ``between-dirs``, moves both replicas of a fresh ``moving``
partition on [1, 2] into their brokers' other dir (AlterReplicaLogDirs, KIP-113) while ``steady``, led by
broker 1, takes the acks=all load: the copy runs on the same event loop as that broker's produce path.
Its wall time runs from AlterReplicaLogDirs to both brokers' DescribeLogDirs showing the replica in the
other dir with no future replica left (polled every 50 ms).
"""
from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.model import TopicPartition
from scripts.bench.latency import PacedProducer
from scripts.bench.stats import latency_summary, schedule
from scripts.local.cluster import running_cluster
from scripts.tools.common.cluster_admin import ClusterAdmin

RECORD = 1024


def _create(bootstrap: str, topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=1, replica_assignment=[replicas],
                   config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)


def _fill(bootstrap: str, topic: str, mib: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 65536})
    for n in range(mib * 1024):
        while True:
            try:
                producer.produce(topic, value=b"%08d" % n + b"." * (RECORD - 8))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)


def _steady(bootstrap: str, rate: int, duration_s: float, stop: threading.Event | None = None) -> dict:
    producer = PacedProducer(bootstrap, "steady", 100, acks="all")
    producer.warm_up()
    times = schedule(time.monotonic_ns() + 50_000_000, rate, duration_s)
    producer.run(times, (lambda _: not stop.is_set()) if stop is not None else None)
    producer.flush()
    return latency_summary(producer.ack_latencies())


async def _move(bootstrap: str, topic: str, throttle: int) -> float:
    async with ClusterAdmin(bootstrap, 30) as admin:
        tp = TopicPartition(topic, 0)
        if throttle > 0:
            admin.set_throttles([1, 2, 3, 4], throttle, {topic: {"leader.replication.throttled.replicas": "0:1,0:2",
                                                                 "follower.replication.throttled.replicas": "0:3,0:4"}})
        started = time.monotonic()
        await admin.alter_reassignments({tp: [3, 4]})
        while tp in await admin.list_reassignments() or (await admin.assignment([topic])).get(tp) != [3, 4]:
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
        if throttle > 0:
            admin.clear_throttles([1, 2, 3, 4], [topic])
        return elapsed


async def _move_between_dirs(bootstrap: str, topic: str, dirs: dict[int, tuple[str, str]]) -> float:
    tp = TopicPartition(topic, 0)
    async with ClusterAdmin(bootstrap, 30) as admin:
        targets = {}
        for broker in (1, 2):
            current, _ = (await admin.replica_log_dirs(broker, {tp})).get(tp, (None, None))
            targets[broker] = next(d for d in dirs[broker] if d != current)
        started = time.monotonic()
        for broker, target in targets.items():
            await admin.alter_replica_log_dirs(broker, {tp: target})
        while True:
            states = [(await admin.replica_log_dirs(b, {tp})).get(tp, (None, None)) for b in targets]
            if states == [(t, None) for t in targets.values()]:
                return time.monotonic() - started
            await asyncio.sleep(0.05)


def _mode(bootstrap: str, name: str, mib: int, throttle: int, rate: int, dirs: dict | None = None) -> dict:
    topic = f"moving-{name}"
    _create(bootstrap, topic, [1, 2])
    _fill(bootstrap, topic, mib)
    stop, result = threading.Event(), {}
    steady = threading.Thread(target=lambda: result.update(_steady(bootstrap, rate, 3600, stop)))
    steady.start()
    try:
        time.sleep(1.0)
        elapsed = asyncio.run(_move_between_dirs(bootstrap, topic, dirs) if dirs else _move(bootstrap, topic, throttle))
    finally:
        stop.set()
        steady.join()
    return {"mode": name, "mib": mib, "throttle_bytes_per_s": throttle, "move_s": round(elapsed, 2),
            "copy_mib_per_s": round(mib / elapsed, 1), "steady_acks_all": result}


def run_reassign_bench(mib: int = 200, throttle: int = 10 * 1024 * 1024, rate: int = 1000, directory: Path | None = None) -> dict:
    base = Path(directory or tempfile.mkdtemp(prefix="zkafka-bench-reassign-"))
    log_dirs = f"{base}/cluster/broker-{{broker_id}}/logs-a,{base}/cluster/broker-{{broker_id}}/logs-b"
    with running_cluster(base / "cluster", 4, timeout=120,
                         properties={"min.insync.replicas": "2", "log.dirs": log_dirs}) as cluster:
        bootstrap = cluster.bootstrap_servers
        _create(bootstrap, "steady", [1, 2])
        baseline = _steady(bootstrap, rate, 10)
        modes = [_mode(bootstrap, "unthrottled", mib, 0, rate)]
        if throttle > 0:
            modes.append(_mode(bootstrap, "throttled", mib, throttle, rate))
        dirs = {b: tuple(log_dirs.replace("{broker_id}", str(b)).split(",")) for b in (1, 2)}
        modes.append(_mode(bootstrap, "between-dirs", mib, 0, rate, dirs))
    return {"steady_rate": rate, "baseline_acks_all": baseline, "moves": modes}


def format_report(result: dict) -> list[str]:
    base = result["baseline_acks_all"]
    lines = [f"steady producer, acks=all, {result['steady_rate']} records/s: baseline p50 {base['p50_ms']:.2f} ms, "
             f"p99 {base['p99_ms']:.2f} ms, max {base['max_ms']:.2f} ms",
             f"{'mode':<12} {'MiB':>5} {'throttle B/s':>13} {'move s':>7} {'MiB/s':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}"]
    for m in result["moves"]:
        s = m["steady_acks_all"]
        lines.append(f"{m['mode']:<12} {m['mib']:>5} {m['throttle_bytes_per_s'] or '-':>13} {m['move_s']:>7} "
                     f"{m['copy_mib_per_s']:>6} {s['p50_ms']:>7.2f} {s['p99_ms']:>7.2f} {s['max_ms']:>7.2f}")
    return lines
