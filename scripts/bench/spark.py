"""``zkafka bench spark``: how fast the ``zkafka`` PySpark data source reads, next to a plain consumer.

A fresh 1-broker cluster (temp dir, free ports), one topic with ``--partitions`` partitions and N records of
``--record-size`` bytes (confluent-kafka, acks=1, linger.ms 50, large batches). Then, on that topic:

(a) a plain confluent-kafka consumer: assign every partition from the beginning, ``consume(10000)`` until
    N records arrived;
(b) ``spark.read.format("zkafka")...load().count()`` in ``local[2]``: only the action is timed; Spark's
    session start and one warm-up read (``count()`` of a small topic: the Python workers start) are
    timed and reported apart;
(c) the same read written as parquet (``.write.mode("overwrite").parquet(tmp)``).

Progress goes to stderr, the markdown report to stdout. The cluster's directory is removed at the end.
"""
from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from scripts.bench.common import create_topic, machine
from scripts.local.cluster import Cluster, ClusterSpec

TOPIC, WARMUP_TOPIC = "bench-spark", "bench-spark-warmup"
WARMUP_RECORDS = 1000


@dataclass
class SparkBenchOptions:
    records: int = 1_000_000
    record_bytes: int = 100
    partitions: int = 6


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def produce(bootstrap: str, topic: str, records: int, record_bytes: int, partitions: int) -> float:
    """N records round-robin over the partitions; seconds until all were acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 50, "batch.size": 1_000_000,
                         "batch.num.messages": 100_000, "queue.buffering.max.messages": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none"})
    payload = b"x" * record_bytes
    failed = []
    start = time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions,
                                 on_delivery=(lambda err, _m: failed.append(err) if err else None))
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) or failed:
        raise RuntimeError(f"produce: {len(failed)} failed, {len(producer)} unflushed")
    return time.monotonic() - start


def consume_plain(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-spark-plain",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800})
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])  # -2: OFFSET_BEGINNING
    got = 0
    start = time.monotonic()
    deadline = start + 600
    while got < records and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(10000, timeout=1.0) if m.error() is None)
    elapsed = time.monotonic() - start
    consumer.close()
    if got < records:
        raise RuntimeError(f"plain consumer read {got} of {records} records")
    return elapsed


def run_spark_bench(options: SparkBenchOptions) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="zkafka-bench-spark-"))
    cluster = Cluster(directory / "cluster", ClusterSpec.on_free_ports(1))
    ok = False
    try:
        _log(f"starting ZooKeeper + 1 broker in {cluster.dir}")
        cluster.up(120)
        bootstrap = cluster.bootstrap_servers
        create_topic(bootstrap, TOPIC, options.partitions)
        create_topic(bootstrap, WARMUP_TOPIC, 1)
        produce(bootstrap, WARMUP_TOPIC, WARMUP_RECORDS, options.record_bytes, 1)
        _log(f"producing {options.records:,} records of {options.record_bytes} B to {options.partitions} partitions")
        produce_s = produce(bootstrap, TOPIC, options.records, options.record_bytes, options.partitions)
        _log(f"produced in {produce_s:.1f} s; plain consumer ...")
        plain_s = consume_plain(bootstrap, TOPIC, options.records, options.partitions)
        _log(f"plain consumer: {plain_s:.2f} s; starting Spark ...")

        from consumer_group.spark import local_session, register
        from consumer_group.spark.pipelines import count_rows

        began = time.monotonic()
        spark = local_session("zkafka-bench-spark", conf={"spark.ui.showConsoleProgress": "false"})
        register(spark)
        session_s = time.monotonic() - began

        def load(topic: str):
            return (spark.read.format("zkafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic).load())

        try:
            began = time.monotonic()
            warm = count_rows(load(WARMUP_TOPIC))
            warmup_s = time.monotonic() - began
            if warm != WARMUP_RECORDS:
                raise RuntimeError(f"warm-up read counted {warm}, expected {WARMUP_RECORDS}")
            _log(f"session {session_s:.1f} s, warm-up read {warmup_s:.1f} s; count() ...")
            began = time.monotonic()
            counted = count_rows(load(TOPIC))
            count_s = time.monotonic() - began
            if counted != options.records:
                raise RuntimeError(f"count() returned {counted}, expected {options.records}")
            _log(f"count(): {count_s:.2f} s; parquet ...")
            out = directory / "parquet"
            began = time.monotonic()
            load(TOPIC).write.mode("overwrite").parquet(str(out))
            parquet_s = time.monotonic() - began
            parquet_bytes = sum(f.stat().st_size for f in out.rglob("*.parquet"))
            _log(f"parquet: {parquet_s:.2f} s")
        finally:
            spark.stop()
        ok = True
        return {"options": vars(options), "machine": machine(), "produce_s": produce_s, "plain_s": plain_s,
                "session_s": session_s, "warmup_s": warmup_s, "count_s": count_s, "parquet_s": parquet_s,
                "parquet_bytes": parquet_bytes}
    finally:
        cluster.down()
        if ok:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            _log(f"broker logs kept in {directory}/cluster (rm -rf {directory})")


def format_report(result: dict, command: str) -> list[str]:
    o, m = result["options"], result["machine"]
    n, size = o["records"], o["record_bytes"]

    def row(name: str, seconds: float) -> str:
        return f"| {name} | {n:,} | {seconds:.2f} | {n / seconds:,.0f} | {n * size / seconds / 1e6:.1f} |"

    return [
        f"`{command}`",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, "
        f"confluent-kafka {m['confluent_kafka']} (librdkafka {m['librdkafka']}); Spark local[2].",
        "",
        f"{n:,} records of {size} B in {o['partitions']} partitions, 1 broker "
        f"(produced in {result['produce_s']:.1f} s: {n / result['produce_s']:,.0f} records/s).",
        "",
        "| read | records | seconds | records/s | MB/s (values) |",
        "|---|---:|---:|---:|---:|",
        row("confluent-kafka consumer, consume(10000)", result["plain_s"]),
        row('Spark `read.format("zkafka").load().count()`', result["count_s"]),
        row("Spark same read `.write.parquet()`", result["parquet_s"]),
        "",
        f"Not in the Spark rows: session start {result['session_s']:.1f} s, warm-up read of "
        f"{WARMUP_RECORDS:,} records {result['warmup_s']:.1f} s. Parquet written: "
        f"{result['parquet_bytes'] / 1e6:.1f} MB.",
    ]


def bench_command(options: SparkBenchOptions, argv: Sequence[str] | None = None) -> int:
    result = run_spark_bench(options)
    command = "zkafka bench spark" + ("" if not argv else " " + shlex.join(argv))
    print("\n".join(format_report(result, command)))
    return 0
