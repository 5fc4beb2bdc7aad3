"""``zkafka bench all`` end to end on a tiny scale (ours only): the suite starts its cluster, runs
produce, consume and group scenarios with a warm-up and repetitions, costs them from /proc, and its
report and goals come out whole. The numbers are not judged here: benchmarks are never asserted."""
from __future__ import annotations

from scripts.bench.suite import report
from scripts.bench.suite.scenarios import select
from scripts.bench.suite.suite import SuiteOptions, run_suite


def test_a_small_suite_run_measures_every_scenario_and_renders(tmp_path):
    options = SuiteOptions(select("P1,C1,G1"), reps=2, records_scale=0.02, initial_rebalance_delay_ms=0,
                           directory=tmp_path)
    result = run_suite(options)
    runs = result["runs"]["zkafka"]
    assert {sid: len(r) for sid, r in runs.items()} == {"P1": 2, "C1": 2, "G1": 2}
    assert not [r for rs in runs.values() for r in rs if "error" in r]
    for sid in ("P1", "C1"):
        for run in runs[sid]:
            assert run["records"] == 20_000 and run["records_per_s"] > 0
            assert run["broker_cpu_s"] >= 0 and run["peak_rss_mb"] > 10 and 0 <= run["idle_share"] <= 1
    assert all(0 < r["seconds"] < 10 for r in runs["G1"])
    summary = result["summaries"]["zkafka"]["P1"]["records_per_s"]
    assert summary.n == 2 and summary.low <= summary.median <= summary.high
    text = report.render(result, "zkafka bench all --scenarios P1,C1,G1")
    assert "| P1 | zkafka |" in text and "| G1 | zkafka |" in text and "| G1 first assignment s | ≤ 0.5 |" in text
    assert list(tmp_path.iterdir()) == []  # the suite's cluster and its files are gone
