"""``zkafka bench spark-cluster``: the ``zkafka`` data source's batch read on a Spark standalone cluster with 1
worker, then with 2, and where the time goes.

A fresh 1-broker zkafka cluster (temp dir, free ports) gets one topic of ``--partitions`` partitions and
``--records`` records of ``--record-size`` bytes, produced once. Then:

(a) *reader alone*: ``consumer_group.spark.kafka_io.read_arrow`` over every partition, one after the other, in
    this process, without Spark: the reader's own cost per record (wall, and this process's CPU seconds, which
    include librdkafka's threads); then the same with ``TUNED`` librdkafka settings, to show the reader's waits;
(b) for each worker count (``--workers``, default 1 and 2): a fresh ``SparkStandaloneCluster`` of that many
    workers (1 core, ``--executor-memory`` each), so the 1-worker runs have no idle second worker beside them;
    ``--rounds`` submissions of the ready-made job ``zkafka:count`` (``spark-submit`` with the packed Python
    environment, executors of 1 core), each its own application. Every submission writes Spark's event log
    (uncompressed) to a temp dir and waits for all its executors before the session returns
    (``spark.scheduler.minRegisteredResourcesRatio=1``), so the timed action does not start on one executor.

Reported per submission: the job's own timing of the action (``ZKAFKA-JOB-RESULT``'s ``seconds``: the read,
planning included, session start excluded), records/s from it, the whole ``spark-submit`` wall time apart; from
the event log: the time before the first Spark job (planning on the driver), the scan stage's wall time, its
tasks' run time and JVM CPU time, and each executor's first task (Python worker start and imports) against its
later ones, whose throughput is the *steady* rate; from ``/proc``, sampled every 0.2 s during the submission: CPU
seconds during the scan stage of the broker, ZooKeeper, the driver (spark-submit's JVM and what runs below it: the
driver Python, its planner workers), the executor JVMs, the executors' Python workers (PySpark's daemon and its
workers), Spark's master and workers, this process, and the rest of the machine; and the broker's peak over any
1 s.

The speed-up is the median action rate of N workers over that of the smallest worker count (the same for the
steady rate). ``--wait-quiet`` holds each submission until the machine is under ``QUIET`` busy (a shared
machine), and the share is reported either way. Progress goes to stderr, the
markdown report to stdout. The clusters are stopped and their directory removed at the end (kept on failure).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.bench.common import create_topic, machine
from scripts.bench.procstat import machine_jiffies_of
from scripts.bench.spark import produce
from scripts.bench.spark_cluster_cpu import CpuTracker, Roles, cpu_window, peak_share, stat_fields
from scripts.bench.spark_cluster_report import TUNED, format_report, steady_rate, summarize_event_log
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.spark.executor_env import pack
from scripts.local.spark.standalone import SparkClusterSpec, SparkStandaloneCluster
from scripts.local.spark.submit import DEFAULT_CACHE, driver_dir, job_result, start

TOPIC = "bench-spark-cluster"
SUBMIT_TIMEOUT_S = 1800
QUIET = 0.25  # --wait-quiet: the machine's busy share over QUIET_S seconds below which a submission starts
QUIET_S = 3.0


@dataclass
class SparkClusterBenchOptions:
    records: int = 2_000_000
    record_bytes: int = 100
    partitions: int = 12
    workers: tuple[int, ...] = (1, 2)
    rounds: int = 1
    executor_memory: str = "1g"
    quiet_wait_s: float = 0.0
    command: str = "zkafka bench spark-cluster"


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ the runs


def reader_alone(bootstrap: str, topic: str, partitions: int, broker_pid: int,
                 settings: dict[str, str] | None = None) -> dict:
    """``read_arrow`` over every partition in this process, as a task would, one partition after another;
    ``settings``: librdkafka settings beyond the data source's (a read option ``kafka.NAME`` would pass them)."""
    from confluent_kafka import Consumer, TopicPartition

    from consumer_group.spark.kafka_io import read_arrow
    from consumer_group.spark.ranges import OffsetRange

    params = {"bootstrap.servers": bootstrap, "isolation.level": "read_uncommitted", **(settings or {})}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-spark-cluster-offsets"})
    try:
        ranges = [OffsetRange(topic, p, *consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10))
                  for p in range(partitions)]
    finally:
        consumer.close()
    broker0, cpu0, began = _cpu_of(broker_pid), time.process_time(), time.monotonic()
    rows = sum(batch.num_rows for rng in ranges for batch in read_arrow(params, rng, False, True))
    seconds = time.monotonic() - began
    return {"records": rows, "seconds": seconds, "cpu_s": time.process_time() - cpu0,
            "broker_cpu_s": _cpu_of(broker_pid) - broker0}


def machine_busy(seconds: float) -> float:
    """The machine's busy share (all CPUs) over the next ``seconds``."""
    idle0, total0 = machine_jiffies_of(Path("/proc/stat").read_text())
    time.sleep(seconds)
    idle1, total1 = machine_jiffies_of(Path("/proc/stat").read_text())
    return 1 - (idle1 - idle0) / (total1 - total0) if total1 > total0 else 0.0


def wait_quiet(max_wait_s: float) -> float:
    """The machine's busy share over ``QUIET_S``, measured again (up to ``max_wait_s``) until it is below
    ``QUIET``: on a shared machine, other work would take the cores the run measures."""
    deadline = time.monotonic() + max_wait_s
    while True:
        busy = machine_busy(QUIET_S)
        if busy < QUIET or time.monotonic() >= deadline:
            return busy
        _log(f"the machine is {busy:.0%} busy; waiting for it to go below {QUIET:.0%}")


def _cpu_of(pid: int) -> float:
    return stat_fields(Path(f"/proc/{pid}/stat").read_text())[1]




def read_event_log(directory: Path) -> list[str]:
    """The lines of the one application's event log in ``directory`` (a file, or a rolling log's folder of
    ``events_N_*`` files)."""
    entries = [p for p in directory.iterdir() if not p.name.startswith(".")]
    if len(entries) != 1:
        raise RuntimeError(f"expected one event log in {directory}, found {[p.name for p in entries]}")
    log = entries[0]
    if log.name.endswith((".inprogress", ".zstd", ".lz4", ".snappy")):
        raise RuntimeError(f"event log {log} is unfinished or compressed")
    if log.is_dir():
        parts = sorted(log.glob("events_*"), key=lambda p: int(p.name.split("_")[1]))
        return [line for part in parts for line in part.read_text().splitlines()]
    return log.read_text().splitlines()


def submit_once(spark: SparkStandaloneCluster, kafka: Cluster, workers: int, options: SparkClusterBenchOptions,
                run_dir: Path) -> dict:
    """One ``zkafka:count`` application on ``spark``, sampled; its result, event log summary and CPU."""
    events, log = run_dir / "events", run_dir / "count.log"
    events.mkdir(parents=True)
    conf = {"spark.executor.cores": "1", "spark.executor.memory": options.executor_memory,
            "spark.cores.max": str(workers), "spark.ui.showConsoleProgress": "false",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
    busy_before = wait_quiet(options.quiet_wait_s)
    began = time.monotonic()
    process = start(spark.master_url, "zkafka:count", ["--bootstrap-server", kafka.bootstrap_servers,
                                                       "--topic", TOPIC], conf=conf, log=log)
    roles = Roles(broker=kafka.broker_pid(1), zookeeper=kafka.zookeeper.pid, harness=os.getpid(),
                  master=spark.spec.master_pid, workers=frozenset(spark.spec.worker_pids), driver=process.pid)
    try:
        with CpuTracker(roles) as tracker:
            code = process.wait(SUBMIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"spark-submit ran over {SUBMIT_TIMEOUT_S} s; see {log}") from None
    finally:
        if process.poll() is None:  # timed out or interrupted: the driver goes with its process group
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    submit_s = time.monotonic() - began
    result = job_result(log)
    if code != 0 or result is None:
        raise RuntimeError(f"spark-submit exited {code} without a result; see {log}:\n"
                           + log.read_text(errors="replace")[-3000:])
    if result["records"] != options.records:
        raise RuntimeError(f"zkafka:count read {result['records']} records, expected {options.records}")
    summary = summarize_event_log(read_event_log(events))
    scan = summary["scan"]
    if scan["stage"] is None or not scan["wall_ms"] or not summary["sql_end"]:
        raise RuntimeError(f"no completed scan stage in the event log under {events}")
    t0, t1 = scan["submit"] / 1000, scan["complete"] / 1000
    cores = os.cpu_count() or 1
    return {"workers": workers, "submit_s": submit_s, "action_s": result["seconds"], "events": summary,
            "busy_before": busy_before,
            "executors": len(scan["executors"]), "steady_rate": steady_rate(scan),
            "scan_cpu": cpu_window(tracker.samples, t0, t1, cores),
            "action_cpu": cpu_window(tracker.samples, summary["sql_end"] / 1000 - result["seconds"],
                                     summary["sql_end"] / 1000, cores),
            "broker_peak": peak_share(tracker.samples, "broker", t0, t1)}


def run_spark_cluster_bench(options: SparkClusterBenchOptions) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="zkafka-bench-spark-cluster-"))
    kafka = Cluster(directory / "kafka", ClusterSpec.on_free_ports(1))
    spark: SparkStandaloneCluster | None = None
    ok = False
    try:
        _log(f"packing the executors' environment (cached in {DEFAULT_CACHE}) ...")
        driver_dir(pack(DEFAULT_CACHE))  # before any timing: start() finds both cached
        _log(f"starting ZooKeeper + 1 broker in {kafka.dir}")
        kafka.up(120)
        create_topic(kafka.bootstrap_servers, TOPIC, options.partitions)
        _log(f"producing {options.records:,} records of {options.record_bytes} B to {options.partitions} partitions")
        produce_s = produce(kafka.bootstrap_servers, TOPIC, options.records, options.record_bytes, options.partitions)
        _log(f"produced in {produce_s:.1f} s; the reader alone ...")
        alone = {}
        for name, settings in (("default", {}), ("tuned", TUNED)):
            alone[name] = reader_alone(kafka.bootstrap_servers, TOPIC, options.partitions, kafka.broker_pid(1),
                                       settings)
            if alone[name]["records"] != options.records:
                raise RuntimeError(f"the reader alone read {alone[name]['records']} records, expected "
                                   f"{options.records}")
            _log(f"reader alone, {name}: {alone[name]['seconds']:.2f} s, {alone[name]['cpu_s']:.2f} CPU s")
        runs = []
        for workers in options.workers:
            spec = SparkClusterSpec.on_free_ports(workers, memory_per_worker=options.executor_memory)
            spark = SparkStandaloneCluster(directory / f"spark-{workers}", spec)
            _log(f"starting a Spark master + {workers} worker(s) in {spark.dir}")
            spark.up(timeout=180)
            try:
                for round_ in range(1, options.rounds + 1):
                    run = submit_once(spark, kafka, workers, options, spark.dir / f"round-{round_}")
                    run["round"] = round_
                    runs.append(run)
                    _log(f"{workers} worker(s), round {round_}: action {run['action_s']:.2f} s "
                         f"({options.records / run['action_s']:,.0f} records/s), submit {run['submit_s']:.1f} s")
            finally:
                spark.down()
                spark = None
        ok = True
        return {"options": {**vars(options), "workers": list(options.workers)}, "machine": machine(),
                "spark_version": _pyspark_version(), "produce_s": produce_s, "reader_alone": alone, "runs": runs}
    finally:
        if spark is not None:
            spark.down()
        kafka.down()
        if ok:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            _log(f"logs kept in {directory} (rm -rf {directory})")


def _pyspark_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None


def bench_command(options: SparkClusterBenchOptions, as_json: bool) -> int:
    result = run_spark_cluster_bench(options)
    print(json.dumps(result, indent=2) if as_json else "\n".join(format_report(result)))
    return 0
