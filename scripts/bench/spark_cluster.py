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
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from scripts.bench.common import create_topic, machine
from scripts.bench.procstat import CLOCK_TICKS, machine_jiffies_of
from scripts.bench.spark import produce
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.spark.executor_env import pack
from scripts.local.spark.standalone import EXECUTOR_CLASS, SparkClusterSpec, SparkStandaloneCluster
from scripts.local.spark.submit import DEFAULT_CACHE, driver_dir, job_result, start

TOPIC = "bench-spark-cluster"
GOAL = 1.6  # the issue's: 2 workers read at least 1.6 times as fast as 1, while the broker is not the limit
SAMPLE_S = 0.2
SUBMIT_TIMEOUT_S = 1800
# librdkafka postpones a partition's next fetch by fetch.queue.backoff.ms (1000) once queued.min.messages (100,000)
# are waiting in its queue: a task's consume(5000, 0.5 s) can then run dry and wait out its timeout mid-range
TUNED = {"fetch.queue.backoff.ms": "10"}
QUIET = 0.25  # --wait-quiet: the machine's busy share over QUIET_S seconds below which a submission starts
QUIET_S = 3.0
ROLES = ("broker", "zookeeper", "driver", "executor JVM", "executor Python", "Spark master+workers", "bench harness")


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


# ------------------------------------------------------------------------------------------ CPU from /proc


def stat_fields(stat_text: str) -> tuple[int, float]:
    """(parent pid, utime + stime seconds) of one ``/proc/<pid>/stat`` (the name may hold ``)``)."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass(frozen=True)
class Roles:
    """Who is who during one submission, by pid: a process counts for the nearest of these among itself and
    its ancestors (process groups do not do: PySpark's daemon makes a group of its own)."""

    broker: int
    zookeeper: int | None
    harness: int
    master: int | None
    workers: frozenset[int]
    driver: int | None


def role_of(chain: list[int], roles: Roles, is_executor_jvm: Callable[[], bool]) -> str | None:
    """The row of ``ROLES`` a process counts in, or None (the rest of the machine). ``chain``: its pid, its
    parent's, and so on up. The driver is spark-submit's JVM (its Python and planner workers below it); a
    worker's child is an executor JVM when its command line says so, anything further down is the executors'
    Python (PySpark's daemon and its workers)."""
    for depth, pid in enumerate(chain):
        if pid == roles.broker:
            return "broker"
        if pid == roles.zookeeper:
            return "zookeeper"
        if roles.driver is not None and pid == roles.driver:
            return "driver"
        if pid == roles.master or (pid in roles.workers and depth == 0):
            return "Spark master+workers"
        if pid in roles.workers:
            return "executor JVM" if depth == 1 and is_executor_jvm() else "executor Python"
        if pid == roles.harness:
            return "bench harness"
    return None


@dataclass(frozen=True)
class CpuSample:
    """At epoch second ``t``: CPU seconds used so far by each role (a process that ended keeps its last
    value, so each role only grows) and the machine's busy and total jiffies (all CPUs)."""

    t: float
    cpu: dict[str, float]
    busy_jiffies: int
    total_jiffies: int


class CpuTracker:
    """Samples ``/proc`` every ``SAMPLE_S`` in a thread while a submission runs. A pid's role is decided the
    first time it is seen, from its ancestors (pids of no role are not read again)."""

    def __init__(self, roles: Roles):
        self.roles = roles
        self.role: dict[int, str | None] = {}
        self.parent: dict[int, int] = {}
        self.last: dict[int, float] = {}
        self.samples: list[CpuSample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-tracker", daemon=True)

    def __enter__(self) -> "CpuTracker":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in self.role and self.role[pid] is None:
                continue
            try:
                self.parent[pid], cpu = stat_fields(Path(f"/proc/{pid}/stat").read_text())
            except (OSError, IndexError, ValueError):
                continue
            if pid not in self.role:
                self.role[pid] = role_of(self._chain(pid), self.roles, lambda: EXECUTOR_CLASS in _cmdline(pid))
            if self.role[pid] is not None:
                self.last[pid] = cpu
        totals = dict.fromkeys(ROLES, 0.0)
        for pid, cpu in self.last.items():
            totals[self.role[pid]] += cpu
        idle, total = machine_jiffies_of(Path("/proc/stat").read_text())
        self.samples.append(CpuSample(time.time(), totals, total - idle, total))

    def _chain(self, pid: int) -> list[int]:
        chain = [pid]
        while chain[-1] > 1 and len(chain) < 64:
            parent = self.parent.get(chain[-1])
            if parent is None:
                try:
                    parent = self.parent[chain[-1]] = stat_fields(Path(f"/proc/{chain[-1]}/stat").read_text())[0]
                except (OSError, IndexError, ValueError):
                    break
            chain.append(parent)
        return chain


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _at(samples: list[CpuSample], t: float) -> tuple[dict[str, float], float, float]:
    """Each role's CPU seconds, and the machine's busy and total jiffies, at epoch second ``t``: linear between
    the samples around it (the first or last sample outside them)."""
    if t <= samples[0].t:
        s = samples[0]
        return dict(s.cpu), s.busy_jiffies, s.total_jiffies
    for a, b in zip(samples, samples[1:]):
        if a.t <= t <= b.t:
            f = (t - a.t) / (b.t - a.t) if b.t > a.t else 1.0
            return ({r: a.cpu.get(r, 0.0) + f * (b.cpu.get(r, 0.0) - a.cpu.get(r, 0.0)) for r in b.cpu},
                    a.busy_jiffies + f * (b.busy_jiffies - a.busy_jiffies),
                    a.total_jiffies + f * (b.total_jiffies - a.total_jiffies))
    s = samples[-1]
    return dict(s.cpu), s.busy_jiffies, s.total_jiffies


def cpu_window(samples: list[CpuSample], t0: float, t1: float, cores: int) -> dict:
    """CPU seconds of each role between epoch seconds ``t0`` and ``t1``; ``other``: the machine's busy CPU
    seconds that no role used (other processes, the kernel's own threads); ``capacity``: ``cores`` x wall."""
    (c0, busy0, total0), (c1, busy1, total1) = _at(samples, t0), _at(samples, t1)
    cpu = {r: max(0.0, c1.get(r, 0.0) - c0.get(r, 0.0)) for r in ROLES}
    busy = max(0.0, busy1 - busy0) / CLOCK_TICKS
    total = max(0.0, total1 - total0) / CLOCK_TICKS
    return {"seconds": t1 - t0, "cpu": cpu, "other": max(0.0, busy - sum(cpu.values())), "busy": busy,
            "capacity": total if total > 0 else cores * (t1 - t0)}


def peak_share(samples: list[CpuSample], role: str, t0: float, t1: float, width: float = 1.0) -> float:
    """The largest CPU share (1.0 = one core) ``role`` used over any ``width`` seconds from ``t0`` to ``t1``."""
    if t1 - t0 <= width:
        return cpu_window(samples, t0, t1, 1)["cpu"][role] / max(t1 - t0, 1e-9)
    best, t = 0.0, t0
    while t + width <= t1:
        best = max(best, cpu_window(samples, t, t + width, 1)["cpu"][role] / width)
        t += SAMPLE_S
    return best


# ------------------------------------------------------------------------------------------ the event log


def _task_metric(task: dict, name: str) -> float:
    return float(task.get("Task Metrics", {}).get(name, 0) or 0)


def summarize_event_log(lines: Iterable[str]) -> dict:
    """What one application's Spark event log (JSON lines) says about its read: when the executors came,
    the SQL execution and its jobs, and the scan stage (the stage whose tasks read the most input records):
    wall time, tasks' run time, JVM CPU, deserialization and GC, and per executor its first task against the
    later ones. Times in ms (epoch for instants)."""
    app_start, executors, sql, jobs, stages, tasks = None, [], {}, [], {}, []
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        kind = event.get("Event", "")
        if kind == "SparkListenerApplicationStart":
            app_start = event["Timestamp"]
        elif kind == "SparkListenerExecutorAdded":
            executors.append(event["Timestamp"])
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            sql.setdefault("start", event["time"])
        elif kind.endswith("SparkListenerSQLExecutionEnd"):
            sql["end"] = event["time"]
        elif kind == "SparkListenerJobStart":
            jobs.append({"id": event["Job ID"], "start": event["Submission Time"]})
        elif kind == "SparkListenerJobEnd":
            for job in jobs:
                if job["id"] == event["Job ID"]:
                    job["end"] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stages[info["Stage ID"]] = {"tasks": info["Number of Tasks"], "submit": info.get("Submission Time"),
                                        "complete": info.get("Completion Time")}
        elif kind == "SparkListenerTaskEnd" and event.get("Task End Reason", {}).get("Reason") == "Success":
            tasks.append(event)
    records = {}
    for task in tasks:
        read = task.get("Task Metrics", {}).get("Input Metrics", {}).get("Records Read", 0)
        records[task["Stage ID"]] = records.get(task["Stage ID"], 0) + read
    scan_id = max(records, key=records.get) if records else None
    scan_tasks = sorted((t for t in tasks if t["Stage ID"] == scan_id), key=lambda t: t["Task Info"]["Launch Time"])
    by_executor: dict[str, list[dict]] = {}
    for task in scan_tasks:
        by_executor.setdefault(task["Task Info"]["Executor ID"], []).append(task)
    stage = stages.get(scan_id, {})
    return {
        "app_start": app_start, "executors_added": sorted(executors),
        "sql_start": sql.get("start"), "sql_end": sql.get("end"),
        "first_job_start": min((j["start"] for j in jobs), default=None),
        "last_job_end": max((j.get("end", 0) for j in jobs), default=None),
        "scan": {
            "stage": scan_id, "tasks": len(scan_tasks), "records": records.get(scan_id, 0),
            "submit": stage.get("submit"), "complete": stage.get("complete"),
            "wall_ms": (stage["complete"] - stage["submit"]) if stage.get("submit") and stage.get("complete") else None,
            "run_ms": sum(_task_metric(t, "Executor Run Time") for t in scan_tasks),
            "jvm_cpu_ms": sum(_task_metric(t, "Executor CPU Time") for t in scan_tasks) / 1e6,
            "deserialize_ms": sum(_task_metric(t, "Executor Deserialize Time") for t in scan_tasks),
            "gc_ms": sum(_task_metric(t, "JVM GC Time") for t in scan_tasks),
            "executors": {e: _executor_tasks(ts) for e, ts in sorted(by_executor.items())},
        },
    }


def _executor_tasks(tasks: list[dict]) -> dict:
    """One executor's scan tasks in launch order: the first (it starts the Python worker, imports pyarrow and
    confluent_kafka, warms the JIT) and the later ones, whose records over run time are its steady rate."""
    def records(t: dict) -> int:
        return t.get("Task Metrics", {}).get("Input Metrics", {}).get("Records Read", 0)

    later = tasks[1:]
    later_ms = sum(_task_metric(t, "Executor Run Time") for t in later)
    later_median = statistics.median(_task_metric(t, "Executor Run Time") for t in later) if later else None
    return {"tasks": len(tasks), "first_ms": _task_metric(tasks[0], "Executor Run Time"),
            "first_records": records(tasks[0]), "later_median_ms": later_median,
            "later_records": sum(records(t) for t in later), "later_run_ms": later_ms}


def steady_rate(scan: dict) -> float | None:
    """Records/s of the whole cluster once warm: each executor's later tasks' records over their run time,
    summed over the executors (each runs one task at a time). None when no executor ran two tasks."""
    rates = [e["later_records"] / (e["later_run_ms"] / 1000) for e in scan["executors"].values()
             if e["later_run_ms"] > 0]
    return sum(rates) if rates else None


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


# ------------------------------------------------------------------------------------------ the runs


def speedup(rate: float | None, baseline: float | None) -> float | None:
    return rate / baseline if rate and baseline else None


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


# ------------------------------------------------------------------------------------------ the report


def medians(runs: list[dict], records: int) -> dict[int, dict]:
    """Per worker count: the median action rate and steady rate over its rounds."""
    out: dict[int, dict] = {}
    for workers in sorted({r["workers"] for r in runs}):
        mine = [r for r in runs if r["workers"] == workers]
        steady = [r["steady_rate"] for r in mine if r["steady_rate"]]
        out[workers] = {"rate": statistics.median(records / r["action_s"] for r in mine),
                        "steady": statistics.median(steady) if steady else None}
    return out


def _x(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}x"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _share(part: float | None, whole: float) -> str:
    return "–" if part is None or not whole else f"{part / whole:.0%}"


def _ms_s(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.1f}"


def _planning_ms(run: dict) -> float | None:
    """From the start of the timed action (the SQL execution's end less the job's seconds) to its first Spark
    job: the driver's work (the data source's lookup, schema and ``partitions()`` in its Python workers)."""
    ev = run["events"]
    if not ev["first_job_start"] or not ev["sql_end"]:
        return None
    return ev["first_job_start"] - (ev["sql_end"] - run["action_s"] * 1000)


def format_report(result: dict) -> list[str]:
    o, m = result["options"], result["machine"]
    alone, tuned = result["reader_alone"]["default"], result["reader_alone"]["tuned"]
    n, size = o["records"], o["record_bytes"]
    runs = result["runs"]
    med = medians(runs, n)
    base = med[min(med)] if med else None
    lines = [
        f"`{o['command']}`",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, "
        f"confluent-kafka {m['confluent_kafka']} (librdkafka {m['librdkafka']}), pyspark {result['spark_version']}. "
        f"Spark standalone from the pyspark wheel, a fresh master + N workers per worker count, each worker 1 core "
        f"and {o['executor_memory']}, one executor of 1 core per worker; the driver (client mode), the broker, "
        f"ZooKeeper and the executors share the {m['cores']} cores.",
        "",
        f"{n:,} records of {size} B in {o['partitions']} partitions, 1 broker "
        f"(produced in {result['produce_s']:.1f} s). "
        f"Reader alone (`kafka_io.read_arrow` over the partitions one after another in one process, no Spark): "
        f"{alone['seconds']:.2f} s, {n / alone['seconds']:,.0f} records/s, {alone['cpu_s']:.2f} CPU s "
        f"({alone['cpu_s'] / n * 1e6:.2f} µs/record), the broker {alone['broker_cpu_s']:.2f} CPU s; with "
        + ", ".join(f"`{k}={v}`" for k, v in TUNED.items())
        + f": {tuned['seconds']:.2f} s, {n / tuned['seconds']:,.0f} records/s, {tuned['cpu_s']:.2f} CPU s.",
        "",
        "| workers | round | action s | records/s | MB/s (values) | speed-up | steady records/s | speed-up (steady) "
        "| spark-submit s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        rate = n / r["action_s"]
        lines.append(
            f"| {r['workers']} | {r['round']} | {r['action_s']:.2f} | {rate:,.0f} | {rate * size / 1e6:.1f} | "
            f"{_x(speedup(rate, base and base['rate']))} | {_rate(r['steady_rate'])} | "
            f"{_x(speedup(r['steady_rate'], base and base['steady']))} | {r['submit_s']:.1f} |")
    lines += ["", "Where the action's time goes (event log) and the broker (from /proc, during the scan stage):", "",
              "| workers | round | before the 1st job s | scan stage s | after it s | first task s per executor "
              "(later tasks' median) | broker CPU | broker peak 1 s | machine busy | busy before |",
              "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in runs:
        scan, cpu, planning = r["events"]["scan"], r["scan_cpu"], _planning_ms(r)
        after = (r["action_s"] * 1000 - planning - scan["wall_ms"]
                 if planning is not None and scan["wall_ms"] else None)
        firsts = "; ".join(f"{e['first_ms'] / 1000:.1f} ({_ms_s(e['later_median_ms'])})"
                           for e in scan["executors"].values())
        lines.append(
            f"| {r['workers']} | {r['round']} | {_ms_s(planning)} | {_ms_s(scan['wall_ms'])} | {_ms_s(after)} | "
            f"{firsts} | {cpu['cpu']['broker'] / cpu['seconds']:.0%} | {r['broker_peak']:.0%} | "
            f"{cpu['busy'] / cpu['capacity']:.0%} | {_share(r.get('busy_before'), 1)} |")
    lines += ["", "CPU during the scan stage, in cores (CPU seconds / stage seconds; from /proc), and the scan tasks' "
              "own metrics (event log, seconds summed over tasks):", "",
              "| workers | round | " + " | ".join(ROLES) + " | other processes | all | tasks' run s | tasks' JVM CPU s "
              "| GC s |",
              "|---:|---:|" + "---:|" * len(ROLES) + "---:|---:|---:|---:|---:|"]
    for r in runs:
        cpu, scan = r["scan_cpu"], r["events"]["scan"]
        wall = max(cpu["seconds"], 1e-9)
        lines.append(
            f"| {r['workers']} | {r['round']} | " + " | ".join(f"{cpu['cpu'][role] / wall:.2f}" for role in ROLES)
            + f" | {cpu['other'] / wall:.2f} | {cpu['busy'] / wall:.2f} | {scan['run_ms'] / 1000:.1f} | "
            f"{scan['jvm_cpu_ms'] / 1000:.1f} | {scan['gc_ms'] / 1000:.1f} |")
    lines += ["", "The reader's share of the executors' CPU (the reader alone's CPU seconds for the same records over "
              "the executor JVMs' + their Python workers' CPU seconds during the scan stage): "
              + ", ".join(f"{r['workers']} worker(s) round {r['round']}: {_share(alone['cpu_s'], _executors_cpu(r))}"
                          for r in runs) + "."]
    for workers, values in med.items():
        if base and workers != min(med):
            lines += ["", f"{workers} workers vs {min(med)}: {_x(speedup(values['rate'], base['rate']))} on the action "
                          f"(median of rounds), {_x(speedup(values['steady'], base['steady']))} steady; the goal is "
                          f"{GOAL}x."]
    return lines


def _executors_cpu(run: dict) -> float:
    return run["scan_cpu"]["cpu"]["executor JVM"] + run["scan_cpu"]["cpu"]["executor Python"]


def bench_command(options: SparkClusterBenchOptions, as_json: bool) -> int:
    result = run_spark_cluster_bench(options)
    print(json.dumps(result, indent=2) if as_json else "\n".join(format_report(result)))
    return 0

