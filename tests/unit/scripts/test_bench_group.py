"""``zkafka bench group``'s pure parts: summaries, the "both members share the partitions" test and the report."""
from __future__ import annotations

from scripts.bench.group import ALL, format_report, shared, summary_ms


def test_summary_is_median_and_max_in_ms():
    assert summary_ms([0.010, 0.030, 0.020]) == {"n": 3, "median_ms": 20.0, "max_ms": 30.0,
                                                 "all_ms": [10.0, 20.0, 30.0]}
    assert summary_ms([]) == {"n": 0, "median_ms": None, "max_ms": None, "all_ms": []}


def test_shared_needs_both_members_and_each_partition_once():
    assert shared(frozenset({0, 1, 2}), frozenset({3, 4, 5}))
    assert not shared(frozenset(ALL), frozenset())
    assert not shared(frozenset({0, 1, 2, 3}), frozenset({3, 4, 5}))
    assert not shared(frozenset({0, 1}), frozenset({3, 4, 5}))


def test_report_has_both_tables_machine_and_command():
    commit = {"mode": "asynchronous, 64 in flight", "seconds": 10.0, "commits": 12345, "commits_per_s": 1234.5,
              "partitions_per_s": 7407.0, "ack_p50_ms": 40.0, "ack_p99_ms": 80.5, "errors": 0, "broker_cpu_s": 9.5,
              "committed_matches": True}
    run = {"initial_rebalance_delay_ms": 3000, "first_assignment": summary_ms([3.1, 3.2]),
           "join": summary_ms([0.6]), "leave": summary_ms([0.4]), "commits": [commit, {**commit, "ack_p50_ms": None,
                                                                                      "committed_matches": False}]}
    result = {"machine": {"cpu": "CPU", "cores": 2, "memory_gib": 4.0, "kernel": "6.1", "python": "3.11",
                          "confluent_kafka": "2.6", "librdkafka": "2.6"},
              "command": "zkafka bench group --reps 2", "brokers": 3, "partitions": 6, "offsets_partitions": 6,
              "session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "reps": 2, "runs": [run]}
    lines = format_report(result)
    assert "Command: `zkafka bench group --reps 2`" in lines
    assert "| 3000 | 3,150 / 3,200 | 600 / 600 | 400 / 400 |" in lines
    assert ("| 3000 | asynchronous, 64 in flight | 10 | 12,345 | 1,234 | 7,407 | 40.0 | 80.5 | 0 | 9.50 | yes |"
            in lines)
    assert lines[-1].endswith("| - | 80.5 | 0 | 9.50 | NO |")
    assert all(line.count("|") in (0, 5, 12) for line in lines)
