"""``zkafka bench txn``: what transactions cost, next to Kafka's published anchor (1 KB records, a commit every
100 ms: about 3 % less throughput than the same producer without transactions; read_committed consumers lose
nothing).

One fresh cluster (``brokers`` brokers, temp dir under ``./.zkafka``, free ports) and, in the same run:

1. Produce, alternating the two modes ``reps`` times, each into a fresh topic of ``partitions`` partitions
   (RF min(3, brokers), min ISR min(2, RF)), 1 KB records as fast as the client takes them for ``seconds``:
   * ``idempotent``: ``enable.idempotence`` with acks=all, no transactions (the baseline);
   * ``transactional``: the same producer with a ``transactional.id``, ``commit_transaction`` once
     ``commit_interval_ms`` passed since the last one returned. A commit flushes what is queued (at most the
     32 MiB both modes queue, the Java producer's ``buffer.memory``), sends EndTxn, and the coordinator then
     writes one marker per partition: its latency (call to return) is reported as p50/p99, with the mean
     transaction length (run time / commits), and apart the EndTxn part (``commit_transaction`` after an
     explicit ``flush``: the protocol's own cost).
   Throughput: records acknowledged (committed) over the time from the first send to the last ack; the
   drop is the median transactional run against the median idempotent one.
2. Consume the last transactional topic from the beginning to its end with read_committed and with
   read_uncommitted, alternating, ``reps`` times each: records/s (markers are not records). Every read must
   read exactly the records that run had acknowledged (its transactions all commit): a read that ended early
   fails the bench rather than give a read ratio of nothing.

Progress goes to stderr; the report (tables, or JSON) to stdout. The cluster's directory is removed after a
successful run and kept (broker logs) after a failure.
"""
from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.bench.common import bench_base, create_topic, machine
from scripts.bench.stats import percentile
from scripts.local.cluster import Cluster, ClusterSpec

KAFKA_DROP_PERCENT = 3.0
MODES = ("idempotent", "transactional")
QUEUE_KBYTES = 32768  # the Java producer's buffer.memory: a commit flushes at most this much (librdkafka's is 1 GiB)
CLUSTER_PROPERTIES = {"transaction.state.log.num.partitions": "6", "offsets.topic.num.partitions": "6"}


@dataclass
class TxnBenchOptions:
    seconds: float = 10.0
    reps: int = 3
    record_bytes: int = 1024
    commit_interval_ms: int = 100
    partitions: int = 6
    brokers: int = 3
    directory: Path | None = None
    command: str = "zkafka bench txn"


def _progress(message: str) -> None:
    print(f"[bench txn] {message}", file=sys.stderr, flush=True)


class _Acks:
    def __init__(self) -> None:
        self.acked, self.errors, self.last_ack = 0, 0, 0.0

    def __call__(self, err, _msg) -> None:
        if err is None:
            self.acked += 1
            self.last_ack = time.monotonic()
        else:
            self.errors += 1


def measure_produce(bootstrap: str, topic: str, mode: str, options: TxnBenchOptions, run_id: str) -> dict:
    """One producer run of ``options.seconds``: records/s acknowledged, and for transactions the commit latencies."""
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
              "queue.buffering.max.kbytes": QUEUE_KBYTES, "client.id": f"bench-txn-{mode}"}
    if mode == "transactional":
        config["transactional.id"] = f"bench-txn-{run_id}"
    producer, acks, value = Producer(config), _Acks(), b"x" * options.record_bytes
    transactional = mode == "transactional"
    commits: list[tuple[float, float]] = []
    if transactional:
        producer.init_transactions(60)
        producer.begin_transaction()
    interval = options.commit_interval_ms / 1000
    start = time.monotonic()
    end, next_commit = start + options.seconds, start + interval
    sent = 0
    while (now := time.monotonic()) < end:
        if transactional and now >= next_commit:
            commits.append(_commit(producer))
            producer.begin_transaction()
            next_commit = time.monotonic() + interval
        try:
            producer.produce(topic, value, partition=sent % options.partitions, on_delivery=acks)
            sent += 1
        except BufferError:
            producer.poll(0.001)
        else:
            if sent % 1000 == 0:
                producer.poll(0)
    if transactional:
        commits.append(_commit(producer))
    unflushed = producer.flush(60)
    elapsed = max(acks.last_ack, time.monotonic() if unflushed else 0) - start
    return {"mode": mode, "topic": topic, "records": acks.acked, "errors": acks.errors + unflushed,
            "seconds": round(elapsed, 3), "records_per_s": acks.acked / elapsed if elapsed > 0 else 0.0,
            "mb_per_s": acks.acked * options.record_bytes / elapsed / 1e6 if elapsed > 0 else 0.0,
            "commits": len(commits), "mean_txn_ms": elapsed / len(commits) * 1000 if commits else None,
            **commit_percentiles(commits)}


def commit_percentiles(commits: list[tuple[float, float]]) -> dict:
    """p50/p99 in ms of whole commits and of their EndTxn parts (None without commits)."""
    out = {}
    for name, values in (("commit", sorted(c for c, _ in commits)), ("end_txn", sorted(e for _, e in commits))):
        for q in (50, 99):
            out[f"{name}_p{q}_ms"] = percentile(values, q) * 1000 if values else None
    return out


def _commit(producer: Producer) -> tuple[float, float]:
    """(seconds of the whole commit, seconds of its EndTxn part): what is queued is flushed first, as
    ``commit_transaction`` would, so that the protocol's own cost shows apart from the flush."""
    t0 = time.monotonic()
    producer.flush(60)
    t1 = time.monotonic()
    producer.commit_transaction(60)
    t2 = time.monotonic()
    return t2 - t0, t2 - t1


def measure_consume(bootstrap: str, topic: str, partitions: int, isolation: str) -> dict:
    """Read ``topic`` from the beginning to its end (an end-of-partition event on every partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-txn-read-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    records, at_end, start, first = 0, set(), time.monotonic(), None
    try:
        while len(at_end) < partitions:
            if time.monotonic() - start > 300:
                raise TimeoutError(f"{isolation} read of {topic} did not reach the end")
            for m in consumer.consume(10000, 0.5):
                if m.error() is None:
                    records += 1
                    first = first or time.monotonic()
                    at_end.discard(m.partition())
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
        elapsed = time.monotonic() - (first or start)
    finally:
        consumer.close()
    return {"isolation": isolation, "records": records, "seconds": round(elapsed, 3),
            "records_per_s": records / elapsed if elapsed > 0 else 0.0}


class ReadCountMismatch(RuntimeError):
    """A read of the transactional topic did not read every record produced into it."""


def check_read_counts(consume: list[dict], produced: int) -> None:
    """Raise ``ReadCountMismatch`` unless every read (either isolation level) read the ``produced`` records."""
    wrong = [r for r in consume if r["records"] != produced]
    if wrong:
        reads = ", ".join(f"{r['isolation']} {r['records']:,}" for r in consume)
        raise ReadCountMismatch(f"the reads ended early or read too much: {produced:,} records were produced, "
                                f"the reads read {reads}; their rates are not comparable")


def summarize(produce: list[dict], consume: list[dict]) -> dict:
    by_mode = {m: [r for r in produce if r["mode"] == m] for m in MODES}
    median = {m: statistics.median(r["records_per_s"] for r in rows) for m, rows in by_mode.items() if rows}
    txns = by_mode["transactional"]
    p99s = [r["commit_p99_ms"] for r in txns if r["commit_p99_ms"] is not None]
    end_txn_p50s = [r["end_txn_p50_ms"] for r in txns if r.get("end_txn_p50_ms") is not None]
    end_txn_p99s = [r["end_txn_p99_ms"] for r in txns if r.get("end_txn_p99_ms") is not None]
    drop = (1 - median["transactional"] / median["idempotent"]) * 100 if median.get("idempotent") else None
    reads = {i: statistics.median(r["records_per_s"] for r in consume if r["isolation"] == i)
             for i in ("read_committed", "read_uncommitted") if any(r["isolation"] == i for r in consume)}
    return {"median_records_per_s": median, "drop_percent": drop, "kafka_drop_percent": KAFKA_DROP_PERCENT,
            "commit_p50_ms_median": statistics.median(r["commit_p50_ms"] for r in by_mode["transactional"])
            if by_mode["transactional"] else None,
            "commit_p99_ms_max": max(p99s) if p99s else None,
            "end_txn_p50_ms_median": statistics.median(end_txn_p50s) if end_txn_p50s else None,
            "end_txn_p99_ms_max": max(end_txn_p99s) if end_txn_p99s else None, "read_records_per_s": reads}


def run_txn_bench(options: TxnBenchOptions) -> dict:
    base = Path(tempfile.mkdtemp(prefix="bench-txn-", dir=options.directory or bench_base()))
    spec = ClusterSpec.on_free_ports(options.brokers, tick_time=500, session_timeout_ms=6000,
                                     properties=CLUSTER_PROPERTIES)
    cluster = Cluster(base / "cluster", spec)
    ok = False
    try:
        _progress(f"starting {options.brokers} broker(s) in {cluster.dir}")
        cluster.up(120)
        bootstrap = cluster.bootstrap_servers
        rf = min(3, options.brokers)
        produce, consume, last_txn_topic, last_txn_records = [], [], None, 0
        for rep in range(options.reps):
            for mode in MODES:
                topic = f"bench-{mode}-{rep}"
                create_topic(bootstrap, topic, options.partitions, rf, config={"min.insync.replicas": str(min(2, rf))})
                _progress(f"rep {rep + 1}/{options.reps}: {mode}, {options.seconds:g} s of {options.record_bytes} B "
                          f"records into {topic}")
                produce.append(measure_produce(bootstrap, topic, mode, options, f"{rep}-{time.monotonic_ns()}"))
                if mode == "transactional" and rep == options.reps - 1:
                    last_txn_topic, last_txn_records = topic, produce[-1]["records"]  # kept for the reads
                else:
                    _delete_topic(bootstrap, topic)  # GBs of records per run: the disk is not the benchmark
        for rep in range(options.reps):
            for isolation in ("read_committed", "read_uncommitted"):
                _progress(f"read {rep + 1}/{options.reps}: {last_txn_topic} with {isolation}")
                consume.append(measure_consume(bootstrap, last_txn_topic, options.partitions, isolation))
        check_read_counts(consume, last_txn_records)
        ok = True
        return {"machine": machine(), "command": options.command, "options": {
                    "seconds": options.seconds, "reps": options.reps, "record_bytes": options.record_bytes,
                    "commit_interval_ms": options.commit_interval_ms, "partitions": options.partitions,
                    "brokers": options.brokers, "replication_factor": rf},
                "produce": produce, "consume": consume, "summary": summarize(produce, consume)}
    finally:
        cluster.down()
        if ok:
            shutil.rmtree(base, ignore_errors=True)
        else:
            _progress(f"broker logs kept in {base}")


def _delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the answer: a destroyed handle fails it
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)


def _n(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def format_report(result: dict) -> list[str]:
    o, s, m = result["options"], result["summary"], result["machine"]
    lines = [f"zkafka bench txn — {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
             f"confluent-kafka {m['confluent_kafka']} (librdkafka {m['librdkafka']})",
             f"command: {result['command']}",
             f"{o['brokers']} broker(s), {o['partitions']} partitions RF {o['replication_factor']}, "
             f"{o['record_bytes']} B records, {o['seconds']:g} s per run, commit every {o['commit_interval_ms']} ms",
             "", "| rep | mode | records/s | MB/s | commits | mean txn (ms) | commit p50 (ms) | commit p99 (ms) "
             "| EndTxn p50 (ms) | EndTxn p99 (ms) | errors |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    reps: dict[str, int] = {}
    for r in result["produce"]:
        reps[r["mode"]] = reps.get(r["mode"], 0) + 1
        cells = [str(reps[r["mode"]]), r["mode"], _n(r["records_per_s"]), _n(r["mb_per_s"], 1), str(r["commits"]),
                 _n(r.get("mean_txn_ms")), _n(r["commit_p50_ms"], 1), _n(r["commit_p99_ms"], 1),
                 _n(r.get("end_txn_p50_ms"), 1), _n(r.get("end_txn_p99_ms"), 1), str(r["errors"])]
        lines.append("| " + " | ".join(cells) + " |")
    med = s["median_records_per_s"]
    lines += ["", f"median records/s: idempotent {_n(med.get('idempotent'))}, transactional "
                  f"{_n(med.get('transactional'))}: drop {_n(s['drop_percent'], 1)} % "
                  f"(Kafka: ~{s['kafka_drop_percent']:g} %)",
              f"commit latency: p50 {_n(s['commit_p50_ms_median'], 1)} ms (median of runs), "
              f"p99 {_n(s['commit_p99_ms_max'], 1)} ms (worst run); its EndTxn part: p50 "
              f"{_n(s.get('end_txn_p50_ms_median'), 1)} ms, p99 {_n(s.get('end_txn_p99_ms_max'), 1)} ms",
              "", "| read | records | records/s |", "|---|---|---|"]
    for r in result["consume"]:
        lines.append(f"| {r['isolation']} | {r['records']:,} | {_n(r['records_per_s'])} |")
    reads = s["read_records_per_s"]
    if len(reads) == 2:
        ratio = reads["read_committed"] / reads["read_uncommitted"] if reads["read_uncommitted"] else None
        lines.append(f"median read_committed / read_uncommitted: {_n(ratio, 3)}")
    return lines
