"""The benchmark suite's pure parts: /proc parsing, scenario selection, summaries, goals, and how its
section of BENCHMARKS.md is rewritten."""
from __future__ import annotations

import pytest

from scripts.bench import procstat
from scripts.bench.suite import report
from scripts.bench.suite.scenarios import BY_ID, SCENARIOS, Summary, goals, select, summarise, summarise_runs

STAT = "4242 (python3 (x) y) S 1 2 3 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 4 0 12345 100000 2000"


def test_cpu_seconds_are_utime_plus_stime_even_with_parentheses_in_the_name():
    assert procstat.cpu_seconds_of(STAT) == pytest.approx((250 + 50) / procstat.CLOCK_TICKS)


def test_peak_rss_is_vmhwm_in_bytes():
    status = "Name:\tpython3\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40000 kB\n"
    assert procstat.peak_rss_bytes_of(status) == 51200 * 1024
    assert procstat.peak_rss_bytes_of("Name:\tkthread\n") == 0


def test_idle_share_counts_idle_and_iowait_over_every_jiffy():
    before = procstat.Sample({1: 2.0, 2: 5.0}, *procstat.machine_jiffies_of("cpu  100 0 100 700 100 0 0 0 0 0\n"))
    after = procstat.Sample({1: 3.5, 2: 4.0}, *procstat.machine_jiffies_of("cpu  200 0 200 1000 200 0 0 0 0 0\n"))
    assert procstat.idle_share_between(before, after) == pytest.approx(400 / 600)
    assert procstat.cpu_between(before, after) == pytest.approx(1.5)  # pid 2 went away: not negative


def test_select_by_id_and_prefix_and_refuse_unknown_ones():
    assert [s.id for s in select("P1,C2")] == ["P1", "C2-lz4", "C2-1k"]
    assert {s.id for s in select("L1-10k")} == {"L1-10k-rf1-l0", "L1-10k-rf1-l5", "L1-10k-rf3-l0", "L1-10k-rf3-l5"}
    assert select(None) == list(SCENARIOS)
    with pytest.raises(ValueError, match="unknown scenario X9"):
        select("P1,X9")


def test_the_peer_runs_only_single_broker_scenarios():
    assert all(s.brokers == 1 for s in SCENARIOS if s.peer)
    assert {s.id for s in SCENARIOS if s.peer} >= {"P1", "P2", "P3", "P6", "C1", "C2-lz4", "C2-1k", "G1"}
    assert BY_ID["P5"].acks == "all" and BY_ID["P5"].replication_factor == 3


def test_summaries_take_median_and_range_of_what_was_measured():
    assert summarise([3.0, None, 1.0, 2.0]) == Summary(2.0, 1.0, 3.0, 3)
    assert summarise([None]) is None
    runs = [{"records_per_s": 10, "ack": {"p99_ms": 1.0}, "ok": True}, {"records_per_s": 30, "ack": {"p99_ms": 3.0}}]
    summaries = summarise_runs(runs)
    assert summaries["records_per_s"].median == 20 and summaries["ack.p99_ms"].high == 3.0
    assert "ok" not in summaries  # booleans are not numbers to summarise
    assert Summary(2.0, 1.0, 3.0, 3).describe("{:.1f}") == "2.0 [1.0–3.0]"


def s(value: float) -> Summary:
    return Summary(value, value, value, 1)


def test_goals_compare_medians_and_say_not_measured_when_inputs_are_missing():
    results = {"zkafka": {"P1": {"records_per_s": s(900_000)}, "P4": {"records_per_s": s(870_000)},
                          "P5": {"records_per_s": s(400_000)}, "C1": {"records_per_s": s(1_000_000)},
                          "G1": {"seconds": s(3.4)}, "F1": {"seconds": s(9.0), "lost": s(0)}},
               "tansu": {"P1": {"records_per_s": s(1_000_000)}, "C1": {"records_per_s": s(212_000)}}}
    by_name = {g.name: g for g in goals(results, initial_delay_ms=3000, session_timeout_ms=6000)}
    assert by_name["P1 records/s ours/peer"].met is False and by_name["P1 records/s ours/peer"].value == 0.9
    assert by_name["C1 records/s ours/peer"].met is True and by_name["C1 records/s"].met is True
    assert by_name["P4/P1 records/s"].met is True  # 0.967 >= 0.96
    assert by_name["P5/P4 records/s"].met is False  # 0.46 < 0.54
    assert by_name["G1 first assignment s"].met is True  # 3.4 <= 3.5
    assert by_name["F1 produce resumes s"].met is False  # 9.0 > 8
    assert by_name["F1 acknowledged records lost"].met is True
    assert by_name["P3 records/s ours/peer"].met is None and "not measured" in by_name["P3 records/s ours/peer"].describe()


def test_the_benchmarks_section_is_replaced_between_its_markers_and_nothing_else_changes(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\nkept\n")
    report.write_section(path, "first")
    report.write_section(path, "second\n")
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nkept\n") and text.count(report.BEGIN) == 1
    assert "second" in text and "first" not in text
    path.write_text(text + "\n## Later section\nalso kept\n")
    report.write_section(path, "third")
    assert "## Later section\nalso kept" in path.read_text() and "second" not in path.read_text()
