"""``zkafka bench spark-cluster``'s pure parts: /proc parsing and process roles, CPU windows, the Spark event
log summary, the speed-up and the report."""
from __future__ import annotations

import json

import pytest

from scripts.bench import spark_cluster as sc
from scripts.bench import spark_cluster_cpu as sc_cpu
from scripts.bench import spark_cluster_report as sc_report
from scripts.bench.procstat import CLOCK_TICKS
from scripts.cli import main

ROLES = sc_cpu.Roles(broker=100, zookeeper=101, harness=10, master=200, workers=frozenset({201, 202}), driver=300)


def test_stat_fields_reads_the_parent_and_cpu_past_a_name_with_parentheses():
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    text = f"4242 (py (worker) x) S 17 4242 4242 0 -1 0 0 0 0 0 {3 * CLOCK_TICKS} {CLOCK_TICKS} 0 0 20 0 1 0"
    assert sc_cpu.stat_fields(text) == (17, 4.0)


@pytest.mark.parametrize("chain, executor_jvm, role", [
    ([100, 10, 1], False, "broker"),
    ([101, 10, 1], False, "zookeeper"),
    ([300, 10, 1], False, "driver"),                        # spark-submit's JVM, started by the harness
    ([305, 304, 300, 10, 1], False, "driver"),              # the driver JVM's Python daemon's worker
    ([200, 1], False, "Spark master+workers"),
    ([201, 1], False, "Spark master+workers"),              # a worker itself
    ([400, 201, 1], True, "executor JVM"),                  # a worker's child running the executor class
    ([401, 400, 201, 1], False, "executor Python"),         # PySpark's daemon below an executor
    ([402, 401, 400, 202, 1], True, "executor Python"),     # its workers (only depth 1 can be the JVM)
    ([10, 1], False, "bench harness"),
    ([900, 1], False, None),                                # someone else's process
    ([901, 899, 1], False, None),
])
def test_role_of_takes_the_nearest_known_ancestor(chain, executor_jvm, role):
    assert sc_cpu.role_of(chain, ROLES, lambda: executor_jvm) == role


def _sample(t: float, broker: float, executors: float, busy: int, total: int) -> sc_cpu.CpuSample:
    cpu = dict.fromkeys(sc_report.ROLES, 0.0)
    cpu.update({"broker": broker, "executor Python": executors})
    return sc_cpu.CpuSample(t, cpu, busy, total)


def test_cpu_window_interpolates_between_samples_and_counts_the_rest_as_other():
    ticks = CLOCK_TICKS
    samples = [_sample(0.0, 0.0, 0.0, 0, 0), _sample(10.0, 1.0, 10.0, 15 * ticks, 20 * ticks),
               _sample(20.0, 1.0, 20.0, 35 * ticks, 40 * ticks)]
    window = sc_cpu.cpu_window(samples, 5.0, 15.0, cores=2)
    assert window["seconds"] == 10.0
    assert window["cpu"]["broker"] == pytest.approx(0.5)
    assert window["cpu"]["executor Python"] == pytest.approx(10.0)
    assert window["busy"] == pytest.approx(17.5)  # 7.5 + 10 busy CPU seconds
    assert window["other"] == pytest.approx(17.5 - 10.5)
    assert window["capacity"] == pytest.approx(20.0)
    # outside the samples the ends hold, so nothing is invented
    assert sc_cpu.cpu_window(samples, -5.0, 0.0, cores=2)["cpu"]["broker"] == 0.0


def test_peak_share_finds_the_busiest_second():
    samples = [_sample(t / 10, min(max(0.0, (t - 50) / 10), 0.9), 0.0, 0, 0) for t in range(0, 101)]
    # the broker burns 1 core from 5.0 s to 5.9 s, nothing otherwise
    assert sc_cpu.peak_share(samples, "broker", 0.0, 10.0) == pytest.approx(0.9, abs=0.01)
    assert sc_cpu.peak_share(samples, "broker", 0.0, 4.0) == 0.0


def _task(stage: int, executor: str, launch: int, run_ms: int, records: int, cpu_ms: int = 100) -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Task End Reason": {"Reason": "Success"},
            "Task Info": {"Executor ID": executor, "Launch Time": launch, "Finish Time": launch + run_ms},
            "Task Metrics": {"Executor Run Time": run_ms, "Executor CPU Time": cpu_ms * 1_000_000,
                             "Executor Deserialize Time": 5, "JVM GC Time": 2,
                             "Input Metrics": {"Records Read": records}}}


def event_log() -> list[str]:
    events = [
        {"Event": "SparkListenerApplicationStart", "Timestamp": 1000},
        {"Event": "SparkListenerExecutorAdded", "Timestamp": 3000, "Executor ID": "1"},
        {"Event": "SparkListenerExecutorAdded", "Timestamp": 2500, "Executor ID": "0"},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "time": 5000},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 7000},
        _task(0, "0", 7100, 4000, 1000),   # executor 0's first task: starts the Python worker
        _task(0, "1", 7100, 5000, 1000),
        _task(0, "0", 11100, 1000, 1000),
        _task(0, "1", 12100, 500, 1000),
        _task(0, "0", 12100, 1000, 1000),
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task End Reason": {"Reason": "ExceptionFailure"},
         "Task Info": {"Executor ID": "0", "Launch Time": 7050}, "Task Metrics": {"Executor Run Time": 99}},
        {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 0, "Number of Tasks": 5,
                                                                 "Submission Time": 7050, "Completion Time": 13150}},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 13200},
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 13300},
        _task(2, "1", 13400, 100, 0),
        {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 2, "Number of Tasks": 1,
                                                                 "Submission Time": 13350, "Completion Time": 13550}},
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 13600},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "time": 13700},
    ]
    return [json.dumps(e) for e in events] + [""]


def test_summarize_event_log_finds_the_scan_stage_and_each_executors_first_task():
    summary = sc_report.summarize_event_log(event_log())
    assert summary["app_start"] == 1000 and summary["executors_added"] == [2500, 3000]
    assert (summary["sql_start"], summary["sql_end"]) == (5000, 13700)
    assert (summary["first_job_start"], summary["last_job_end"]) == (7000, 13600)
    scan = summary["scan"]
    assert (scan["stage"], scan["tasks"], scan["records"], scan["wall_ms"]) == (0, 5, 5000, 6100)
    assert scan["run_ms"] == 11500 and scan["jvm_cpu_ms"] == 500  # the failed attempt is not counted
    assert scan["deserialize_ms"] == 25 and scan["gc_ms"] == 10
    assert scan["executors"]["0"] == {"tasks": 3, "first_ms": 4000, "first_records": 1000, "later_median_ms": 1000,
                                      "later_records": 2000, "later_run_ms": 2000}
    assert scan["executors"]["1"]["later_median_ms"] == 500
    # executor 0: 2000 records in 2 s; executor 1: 1000 in 0.5 s
    assert sc_report.steady_rate(scan) == pytest.approx(1000 + 2000)


def test_steady_rate_needs_a_second_task_somewhere():
    scan = sc_report.summarize_event_log([json.dumps(_task(0, "0", 0, 1000, 500))])["scan"]
    assert scan["executors"]["0"]["later_median_ms"] is None
    assert sc_report.steady_rate(scan) is None


def test_read_event_log_reads_a_file_or_a_rolling_folder_in_order(tmp_path):
    single = tmp_path / "single"
    single.mkdir()
    (single / "app-1").write_text("a\nb\n")
    assert sc.read_event_log(single) == ["a", "b"]
    rolling = tmp_path / "rolling" / "eventlog_v2_app-2"
    rolling.mkdir(parents=True)
    for n, text in ((10, "ten"), (2, "two"), (1, "one")):
        (rolling / f"events_{n}_app-2").write_text(text + "\n")
    (rolling / "appstatus_app-2").write_text("")
    assert sc.read_event_log(rolling.parent) == ["one", "two", "ten"]
    compressed = tmp_path / "compressed"
    compressed.mkdir()
    (compressed / "app-3.zstd").write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(RuntimeError, match="compressed"):
        sc.read_event_log(compressed)
    with pytest.raises(RuntimeError, match="one event log"):
        sc.read_event_log(tmp_path / "rolling" / "eventlog_v2_app-2")


def test_speedup_and_medians():
    assert sc_report.speedup(160.0, 100.0) == pytest.approx(1.6)
    assert sc_report.speedup(None, 100.0) is None and sc_report.speedup(100.0, None) is None
    runs = [{"workers": 1, "action_s": 10.0, "steady_rate": 150.0},
            {"workers": 1, "action_s": 20.0, "steady_rate": None},
            {"workers": 1, "action_s": 40.0, "steady_rate": 50.0},
            {"workers": 2, "action_s": 8.0, "steady_rate": None}]
    med = sc_report.medians(runs, 1000)
    assert med[1] == {"rate": 50.0, "steady": 100.0}
    assert med[2] == {"rate": 125.0, "steady": None}


def _run(workers: int, action_s: float, steady: float, broker_cpu: float) -> dict:
    summary = sc_report.summarize_event_log(event_log())
    cpu = dict.fromkeys(sc_report.ROLES, 0.0)
    cpu.update({"broker": broker_cpu, "executor JVM": 6.0, "executor Python": 4.0})
    return {"workers": workers, "round": 1, "action_s": action_s, "submit_s": action_s + 20, "events": summary,
            "busy_before": 0.05, "executors": workers, "steady_rate": steady, "broker_peak": 0.4,
            "scan_cpu": {"seconds": 6.1, "cpu": cpu, "other": 0.5, "busy": 11.0, "capacity": 12.2},
            "action_cpu": {"seconds": action_s, "cpu": cpu, "other": 0.5, "busy": 11.0, "capacity": 2 * action_s}}


def test_format_report_has_the_rows_the_speedup_and_the_reader_share():
    result = {"options": {"records": 1_000_000, "record_bytes": 100, "partitions": 12, "workers": [1, 2],
                          "rounds": 1, "executor_memory": "1g", "quiet_wait_s": 0.0,
                          "command": "zkafka bench spark-cluster --records 1000000"},
              "machine": {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "kernel": "6.18", "python": "3.11.7",
                          "confluent_kafka": "2.16.1", "librdkafka": "2.16.0"},
              "spark_version": "4.3.0", "produce_s": 3.0,
              "reader_alone": {"default": {"records": 1_000_000, "seconds": 5.0, "cpu_s": 2.5, "broker_cpu_s": 0.5},
                               "tuned": {"records": 1_000_000, "seconds": 4.0, "cpu_s": 2.4, "broker_cpu_s": 0.5}},
              "runs": [_run(1, 10.0, 100_000.0, 0.61), _run(2, 8.0, 150_000.0, 1.22)]}
    lines = sc_report.format_report(result)
    text = "\n".join(lines)
    assert lines[0] == "`zkafka bench spark-cluster --records 1000000`"
    assert "2 cores" in text and "pyspark 4.3.0" in text
    assert "200,000 records/s, 2.50 CPU s (2.50 µs/record)" in text
    assert "with `fetch.queue.backoff.ms=10`: 4.00 s, 250,000 records/s, 2.40 CPU s." in text
    rows = [line for line in lines if line.startswith("| 1 | 1 |") or line.startswith("| 2 | 1 |")]
    assert rows[0] == "| 1 | 1 | 10.00 | 100,000 | 10.0 | 1.00x | 100,000 | 1.00x | 30.0 |"
    assert rows[1] == "| 2 | 1 | 8.00 | 125,000 | 12.5 | 1.25x | 150,000 | 1.50x | 28.0 |"
    # timeline: planning = first job (7000) - (sql end 13700 - 10 s) = 3.3 s; scan 6.1 s; after 0.6 s
    assert rows[2].startswith("| 1 | 1 | 3.3 | 6.1 | 0.6 | 4.0 (1.0); 5.0 (0.5) | 10% | 40% | 90% | 5% |")
    assert rows[3].startswith("| 2 | 1 | 1.3 | 6.1 |") and "| 20% |" in rows[3]
    # cores: executor JVM 6.0 / 6.1 s
    assert "| 0.98 | 0.66 |" in rows[4]
    assert "1 worker(s) round 1: 25%" in text  # 2.5 CPU s alone / (6 + 4) executors' CPU s
    assert lines[-1] == "2 workers vs 1: 1.25x on the action (median of rounds), 1.50x steady; the goal is 1.6x."


@pytest.mark.parametrize("flags, message", [
    (["--workers", "0"], "--workers takes positive counts"),
    (["--workers", "1,x"], "--workers takes positive counts"),
    (["--rounds", "0"], "must be positive"),
    (["--wait-quiet", "-1"], "--wait-quiet must not be negative"),
])
def test_flags_are_checked(capsys, flags, message):
    with pytest.raises(SystemExit) as raised:
        main(["bench", "spark-cluster", *flags])
    assert raised.value.code == 2
    assert message in capsys.readouterr().err
