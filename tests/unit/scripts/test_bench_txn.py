"""``zkafka bench txn``'s pure parts: the summary (medians, the drop against the idempotent baseline, commit
latency, the read ratio), the check that every read read the whole topic, and the report's lines."""
from __future__ import annotations

import pytest

from scripts.bench.txn import ReadCountMismatch, check_read_counts, commit_percentiles, format_report, summarize


def produce_row(mode: str, rate: float, p50: float | None = None, p99: float | None = None) -> dict:
    return {"mode": mode, "topic": "t", "records": int(rate), "errors": 0, "seconds": 1.0, "records_per_s": rate,
            "mb_per_s": rate / 1000, "commits": 10 if p50 is not None else 0, "commit_p50_ms": p50,
            "commit_p99_ms": p99}


ROWS = [produce_row("idempotent", 1000), produce_row("transactional", 900, 5.0, 20.0),
        produce_row("idempotent", 1200), produce_row("transactional", 950, 7.0, 40.0),
        produce_row("idempotent", 1100), produce_row("transactional", 1000, 6.0, 30.0)]
READS = [{"isolation": "read_committed", "records": 10, "seconds": 1.0, "records_per_s": 2000.0},
         {"isolation": "read_uncommitted", "records": 10, "seconds": 1.0, "records_per_s": 2500.0}]


def test_summary_compares_medians_and_keeps_the_worst_p99():
    s = summarize(ROWS, READS)
    assert s["median_records_per_s"] == {"idempotent": 1100, "transactional": 950}
    assert s["drop_percent"] == pytest.approx((1 - 950 / 1100) * 100)
    assert s["commit_p50_ms_median"] == 6.0 and s["commit_p99_ms_max"] == 40.0
    assert s["read_records_per_s"] == {"read_committed": 2000.0, "read_uncommitted": 2500.0}


def test_report_lists_every_run_and_the_drop():
    result = {"machine": {"cpu": "cpu", "cores": 2, "python": "3.11", "confluent_kafka": "2", "librdkafka": "2"},
              "command": "zkafka bench txn", "options": {"brokers": 3, "partitions": 6, "replication_factor": 3,
                                                         "record_bytes": 1024, "seconds": 10.0,
                                                         "commit_interval_ms": 100},
              "produce": ROWS, "consume": READS, "summary": summarize(ROWS, READS)}
    lines = format_report(result)
    assert sum(1 for line in lines if line.startswith("| ") and "transactional" in line) == 3
    assert any("drop 13.6 %" in line for line in lines)
    assert "median read_committed / read_uncommitted: 0.800" in lines


def test_commit_percentiles_of_whole_commits_and_their_end_txn_part():
    commits = [(0.1, 0.002), (0.3, 0.004), (0.2, 0.003)]
    assert commit_percentiles(commits) == pytest.approx(
        {"commit_p50_ms": 200.0, "commit_p99_ms": 300.0, "end_txn_p50_ms": 3.0, "end_txn_p99_ms": 4.0})
    assert commit_percentiles([]) == {"commit_p50_ms": None, "commit_p99_ms": None, "end_txn_p50_ms": None,
                                      "end_txn_p99_ms": None}


def test_every_read_must_read_every_record_produced_whatever_its_isolation_level():
    check_read_counts(READS * 3, 10)
    early = [READS[0], {**READS[1], "records": 7}]  # read_uncommitted stopped at an early end-of-partition
    with pytest.raises(ReadCountMismatch, match="10 records were produced.*read_committed 10, read_uncommitted 7"):
        check_read_counts(early, 10)
    with pytest.raises(ReadCountMismatch):  # both ended early alike: the ratio would still be of nothing
        check_read_counts([{**r, "records": 4} for r in READS], 10)
