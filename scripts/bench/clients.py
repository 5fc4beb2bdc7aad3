"""``zkafka bench produce|consume``: throughput with a real client (confluent-kafka) against a real
broker, and what it costs the broker.

Without ``--bootstrap-server`` a fresh one-broker cluster is started in a temp dir (and stopped).
Broker CPU comes from ``/proc/<pid>/stat`` (utime + stime) over the run and is reported per GB of
record payload; client CPU is each client process's own CPU time, reported separately.
"""
from __future__ import annotations

import multiprocessing
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from scripts.bench.common import bench_base, create_topic
from scripts.bench.procstat import cpu_seconds
from scripts.local.cluster import Cluster, ClusterSpec

GB = 1e9


@dataclass
class BenchOptions:
    records: int = 2_000_000
    record_bytes: int = 100
    acks: str = "1"
    codec: str = "none"
    partitions: int = 1
    producers: int = 1
    topic: str = "bench"
    client_config: dict = field(default_factory=dict)  # merged into every client's (security.protocol, sasl.*, ssl.*)


def _produce_worker(bootstrap: str, options: BenchOptions, count: int, queue) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": options.acks, "compression.type": options.codec,
                         "linger.ms": 10, "batch.num.messages": 10000, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                         "enable.idempotence": False, **options.client_config})
    value = b"x" * options.record_bytes
    errors = []

    def delivered(err, _msg):
        if err is not None:
            errors.append(err)

    start_cpu, start = time.process_time(), time.monotonic()
    for i in range(count):
        while True:
            try:
                producer.produce(options.topic, value, partition=i % options.partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    producer.flush(300)
    queue.put((time.process_time() - start_cpu, len(errors), start, time.monotonic()))


def _broker_pid(cluster: Cluster | None, pid: int | None) -> int | None:
    return cluster.broker_pid(1) if cluster is not None else pid


def run_produce(bootstrap: str, options: BenchOptions, broker_pid: int | None) -> dict:
    create_topic(bootstrap, options.topic, options.partitions)
    return measure_produce(bootstrap, options, [broker_pid] if broker_pid else [])


def measure_produce(bootstrap: str, options: BenchOptions, broker_pids: list[int]) -> dict:
    """``options.records`` records from ``options.producers`` producer processes into an existing topic;
    broker CPU is summed over ``broker_pids`` (NaN when there are none)."""
    per = options.records // options.producers
    queue = multiprocessing.get_context("spawn").Queue()
    workers = [multiprocessing.get_context("spawn").Process(target=_produce_worker, args=(bootstrap, options, per, queue))
               for _ in range(options.producers)]
    broker_cpu = sum(cpu_seconds(pid) for pid in broker_pids)
    start = time.monotonic()
    for w in workers:
        w.start()
    results = [queue.get(timeout=600) for _ in workers]
    wall = time.monotonic() - start
    for w in workers:
        w.join()
    broker_cpu = (sum(cpu_seconds(pid) for pid in broker_pids) - broker_cpu) if broker_pids else float("nan")
    # the rate is over the producers' own window, first send to last flush (CLOCK_MONOTONIC is one clock
    # for every process): process start-up and imports (~0.2 s here) would pull every ratio toward 1
    elapsed = max(r[3] for r in results) - min(r[2] for r in results)
    report = _report("produce", per * options.producers, options.record_bytes, elapsed, broker_cpu,
                     sum(r[0] for r in results), errors=sum(r[1] for r in results))
    report["wall_s"] = wall  # from spawning the producer processes, start-up included
    return report


def run_consume(bootstrap: str, options: BenchOptions, broker_pid: int | None) -> dict:
    # librdkafka backs off fetching for fetch.queue.backoff.ms (1 s) whenever its local queue is full:
    # a client-side pause that would dominate the measurement, so keep it short.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-consume", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
                         "fetch.queue.backoff.ms": 5, "queued.max.messages.kbytes": 262_144,
                         **options.client_config})
    consumer.assign([TopicPartition(options.topic, p, 0) for p in range(options.partitions)])
    broker_cpu = cpu_seconds(broker_pid) if broker_pid else 0.0
    start_cpu, start = time.process_time(), time.perf_counter()
    seen = 0
    deadline = time.monotonic() + 600
    while seen < options.records and time.monotonic() < deadline:
        for msg in consumer.consume(100_000, timeout=1.0):
            if msg.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    client_cpu = time.process_time() - start_cpu
    broker_cpu = (cpu_seconds(broker_pid) - broker_cpu) if broker_pid else float("nan")
    consumer.close()
    return _report("consume", seen, options.record_bytes, elapsed, broker_cpu, client_cpu)


def _report(kind: str, records: int, record_bytes: int, elapsed: float, broker_cpu: float, client_cpu: float,
            errors: int = 0) -> dict:
    payload = records * record_bytes
    return {"kind": kind, "records": records, "seconds": elapsed, "records_per_s": records / elapsed,
            "mb_per_s": payload / 1e6 / elapsed, "broker_cpu_s": broker_cpu,
            "broker_cpu_s_per_gb": broker_cpu / (payload / GB) if payload else float("nan"),
            "client_cpu_s": client_cpu, "errors": errors}


def run_client_bench(kind: str, options: BenchOptions, bootstrap: str | None, broker_pid: int | None) -> None:
    cluster = None
    if bootstrap is None:
        spec = ClusterSpec.on_free_ports(1, properties={"default.replication.factor": "1",
                                                        "offsets.topic.replication.factor": "1"})
        cluster = Cluster(Path(tempfile.mkdtemp(prefix="bench-clients-", dir=bench_base())), spec)
        cluster.up(120)
        bootstrap = cluster.bootstrap_servers
    try:
        pid = _broker_pid(cluster, broker_pid)
        results = []
        if kind in ("produce", "both"):
            results.append(run_produce(bootstrap, options, pid))
        if kind in ("consume", "both"):
            results.append(run_consume(bootstrap, options, pid))
        print(f"{options.records} records of {options.record_bytes} B, acks={options.acks}, codec={options.codec}, "
              f"{options.partitions} partition(s), {options.producers} producer process(es)")
        print("| run | records/s | MB/s | broker CPU-s per GB | broker CPU-s | client CPU-s | errors |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            print(f"| {r['kind']} | {r['records_per_s']:,.0f} | {r['mb_per_s']:.1f} | {r['broker_cpu_s_per_gb']:.2f} | "
                  f"{r['broker_cpu_s']:.2f} | {r['client_cpu_s']:.2f} | {r['errors']} |")
    finally:
        if cluster is not None:
            cluster.down()

