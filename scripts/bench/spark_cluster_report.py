"""``zkafka bench spark-cluster``'s pure parts about a run: the summary of one application's Spark event log
(the scan stage, each executor's first task against its later ones, the steady rate), the speed-up, the medians
of the rounds and the markdown report. Pure: it reads event-log lines and the result dict of
``scripts.bench.spark_cluster.run_spark_cluster_bench``."""
from __future__ import annotations

import json
import statistics
from collections.abc import Iterable

GOAL = 1.6  # the issue's: 2 workers read at least 1.6 times as fast as 1, while the broker is not the limit
# librdkafka postpones a partition's next fetch by fetch.queue.backoff.ms (1000) once queued.min.messages (100,000)
# are waiting in its queue: a task's consume(5000, 0.5 s) can then run dry and wait out its timeout mid-range
TUNED = {"fetch.queue.backoff.ms": "10"}
ROLES = ("broker", "zookeeper", "driver", "executor JVM", "executor Python", "Spark master+workers", "bench harness")


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


# ------------------------------------------------------------------------------------------ the report


def speedup(rate: float | None, baseline: float | None) -> float | None:
    return rate / baseline if rate and baseline else None


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
