"""The pure parts of ``zkafka bench replication``: percentiles, schedules, stamps, placement, ratios."""
from __future__ import annotations

import pytest

from scripts.bench.replication import format_report
from scripts.bench.stats import (KREPS_RF1, KREPS_RF3_ACKS1, KREPS_RF3_ACKSALL, first_ack_after, latency_summary,
                                 parse_rates, percentile, read_stamp, replication_ratios, schedule, spread_assignment,
                                 stamped_value)
from scripts.cli import build_parser, main


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    assert percentile(values, 100) == 100
    assert percentile([7], 50) == percentile([7], 99.9) == 7
    thousand = list(range(1, 1001))
    assert percentile(thousand, 99.9) == 999 and percentile(thousand, 99) == 990 and percentile(thousand, 0.1) == 1


@pytest.mark.parametrize("q", [0, -1, 100.1])
def test_percentile_rejects_out_of_range(q):
    with pytest.raises(ValueError):
        percentile([1, 2], q)


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        percentile([], 50)


def test_latency_summary_in_milliseconds_sorted_and_counts_missing():
    summary = latency_summary([3_000_000, 1_000_000, 2_000_000], expected=5)
    assert summary == {"count": 3, "p50_ms": 2.0, "p99_ms": 3.0, "p99.9_ms": 3.0, "max_ms": 3.0, "missing": 2}
    empty = latency_summary([], expected=4)
    assert empty["count"] == 0 and empty["p99_ms"] is None and empty["max_ms"] is None and empty["missing"] == 4
    assert "missing" not in latency_summary([1])


def test_schedule_is_evenly_spaced_from_the_start():
    times = schedule(1_000, 10_000, 0.5)
    assert len(times) == 5_000
    assert times[0] == 1_000 and times[1] == 101_000 and times[-1] == 1_000 + 4_999 * 100_000
    assert all(b - a == 100_000 for a, b in zip(times, times[1:]))
    thirds = schedule(0, 3, 1)  # 333,333,333.3 ns apart: rounded, never drifting
    assert thirds == [0, 333_333_333, 666_666_667]
    assert schedule(5, 1, 0.1) == [5]  # at least one record


@pytest.mark.parametrize("rate,duration", [(0, 1), (-5, 1), (10, 0)])
def test_schedule_rejects_nonsense(rate, duration):
    with pytest.raises(ValueError):
        schedule(0, rate, duration)


def test_stamped_value_round_trips_and_has_the_record_size():
    value = stamped_value(1_234_567_890_123, 100)
    assert len(value) == 100 and read_stamp(value) == 1_234_567_890_123
    assert len(stamped_value(5, 8)) == 8


def test_spread_assignment_rotates_leaders_and_followers():
    assert spread_assignment(6, [1, 2, 3], 3) == [[1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 2, 3], [2, 3, 1], [3, 1, 2]]
    assert spread_assignment(6, [1, 2, 3], 1) == [[1], [2], [3], [1], [2], [3]]
    assert spread_assignment(1, [1, 2, 3], 3, first=1) == [[2, 3, 1]]
    with pytest.raises(ValueError):
        spread_assignment(1, [1, 2], 3)


def test_ratios_next_to_kreps():
    assert round(KREPS_RF3_ACKS1 / KREPS_RF1, 2) == 0.96 and round(KREPS_RF3_ACKSALL / KREPS_RF3_ACKS1, 2) == 0.54
    async_ratio, sync_ratio = replication_ratios(800_000, 776_000, 400_000)
    assert async_ratio.name == "RF3 acks=1 / RF1" and async_ratio.measured == pytest.approx(0.97)
    assert async_ratio.meets and async_ratio.describe() == "0.97 (Kreps 0.96, at or above)"
    assert sync_ratio.measured == pytest.approx(400_000 / 776_000)
    assert not sync_ratio.meets and sync_ratio.describe() == "0.52 (Kreps 0.54, below)"
    assert sync_ratio.as_dict() == {"name": "RF3 acks=all / RF3 acks=1", "measured": pytest.approx(0.5155, abs=1e-4),
                                    "kreps": 0.536, "meets": False}
    exactly = replication_ratios(100, 96, 51.84)  # equal to the rounded published ratios counts as meeting them
    assert [r.meets for r in exactly] == [True, True]


def test_ratio_without_a_measurement():
    missing = replication_ratios(None, 700_000, 0)
    assert all(r.measured is None and r.meets is None for r in missing)
    assert missing[0].describe() == "n/a (Kreps 0.96)"


def test_first_ack_after_the_kill_only_counts_records_sent_after_it():
    reports = [(90, 120, True),    # sent before the kill, acknowledged after it: not a recovery
               (100, 150, False),  # failed
               (110, 300, True),
               (105, 250, True)]
    assert first_ack_after(reports, 100) == 250
    assert first_ack_after(reports, 111) is None
    assert first_ack_after([], 0) is None


def test_parse_rates():
    assert parse_rates("1000,10000") == [1000, 10000]
    assert parse_rates("500, 2000,") == [500, 2000]
    for bad in ("", "0", "1k", "-1,5"):
        with pytest.raises(ValueError):
            parse_rates(bad)


def test_cli_defaults_and_validation(capsys):
    args = build_parser().parse_args(["bench", "replication"])
    assert (args.records, args.record_size, args.rates, args.duration, args.partitions, args.session_timeout_ms,
            args.max_in_flight, args.json) == (2_000_000, 100, "1000,10000", 10.0, 6, 6000, 5, False)
    for argv in (["--record-size", "4"], ["--max-in-flight", "0"], ["--rates", "fast"], ["--session-timeout-ms", "60000"]):
        with pytest.raises(SystemExit) as exc:
            main(["bench", "replication", *argv])
        assert exc.value.code == 2
    capsys.readouterr()


def _latency_row(rate: int) -> dict:
    summary = {"count": 10, "p50_ms": 1.0, "p99_ms": 2.0, "p99.9_ms": 3.0, "max_ms": 4.0, "missing": 0}
    return {"rate": rate, "duration_s": 2.0, "max_send_late_ms": 0.5, "ack": summary, "end_to_end": summary}


def test_report_tables():
    machine = {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "kernel": "6.1", "python": "3.11.7",
               "confluent_kafka": "2.16.1", "librdkafka": "2.16.0"}
    throughput = [{"run": run, "records_per_s": rate, "mb_per_s": rate / 1e4, "broker_cpu_s": 1.0, "errors": 0,
                   "catch_up_s": caught}
                  for run, rate, caught in (("RF1 acks=1", 800_000, 0.01), ("RF3 acks=1", 780_000, 1.5),
                                            ("RF3 acks=all", 430_000, None))]
    failover = {"session_timeout_ms": 6000, "killed_leader": 2, "controller": 1, "seconds": 6.4, "new_leader": 3,
                "leader_elected_s": 6.1, "failed": 0}
    result = {"machine": machine, "brokers": 3, "records": 2_000_000, "record_bytes": 100, "partitions": 6,
              "max_in_flight": 5,
              "throughput": throughput, "latency": [_latency_row(1000), _latency_row(10000)], "failover": failover}
    text = "\n".join(format_report(result))
    assert "| RF3 acks=1 | 780,000 | 78.0 | 1.00 | 0 | 1.50 |" in text
    assert "| RF3 acks=all | 430,000 | 43.0 | 1.00 | 0 | not within 60 s |" in text
    assert "| RF3 acks=1 / RF1 | 0.97 (Kreps 0.96, at or above) |" in text
    assert "| RF3 acks=all / RF3 acks=1 | 0.55 (Kreps 0.54, at or above) |" in text
    assert "| 10,000 | 2 | 1.00 | 2.00 | 3.00 | 4.00 | 1.00 | 2.00 | 3.00 | 4.00 | 0 | 0.50 |" in text
    assert "| 6000 | 6.10 | 6.40 | 3 | 0 |" in text
    assert "max.in.flight.requests.per.connection=5" in text
