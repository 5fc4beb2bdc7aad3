"""``zkafka bench mirror``'s pure parts: the mirror's properties and the report."""
from __future__ import annotations

from brokers.config import parse_properties
from scripts.bench.mirror import mirror_config, render, summary
from scripts.tools.kafka_mirror_maker.config import parse

MACHINE = {"cpu": "CPU", "cores": 2, "memory_gib": 24, "kernel": "6", "python": "3.11", "confluent_kafka": "2",
           "librdkafka": "2"}


def result() -> dict:
    return {"date": "2026-11-27", "machine": MACHINE,
            "options": {"records": 1000, "record_bytes": 100, "partitions": 4, "rate": 10000, "seconds": 30.0},
            "direct": {"records_per_s": 40000.0, "mb_per_s": 4.0},
            "at_least_once": {"records_per_s": 30000.0, "mb_per_s": 3.0, "mirror_cpu_us_per_record": 12.5},
            "exactly_once": {"records_per_s": 10000.0, "mb_per_s": 1.0, "mirror_cpu_us_per_record": 30.0},
            "latency": {"achieved_rate": 9990.0, "received": 300000, "expected": 300000,
                        "age_ms": {"p50": 7.0, "p99": 40.0, "max": 90.0},
                        "replication_latency_ms": {"count": 300000, "p50": 5, "p99": 30, "max": 80}}}


def test_the_mirror_config_is_one_flow_of_the_topic_with_the_delivery_asked():
    for exactly_once in (False, True):
        config = parse(parse_properties(mirror_config("h:1", "h:2", "bulk", exactly_once)))
        (flow,) = config.flows
        assert (flow.source, flow.target, flow.exactly_once) == ("a", "b", exactly_once)
        assert flow.topic_allowed("bulk") and not flow.topic_allowed("bulk2")
        assert flow.replication_factor == 1 and config.clusters["b"].bootstrap_servers == "h:2"


def test_the_report_gives_each_run_against_direct_and_the_latencies():
    text = render(result(), "zkafka bench mirror")
    assert "| mirrored, at least once | 30,000 | 3.0 | 75% | 12.5 |" in text
    assert "| mirrored, exactly once | 10,000 | 1.0 | 25% | 30.0 |" in text
    assert "| direct into the target (no mirror) | 40,000 | 4.0 | — | — |" in text
    assert "| 7 | 40 | 90 |" in text and "| 5 | 30 | 80 |" in text
    assert "achieved 9,990/s; 300,000 of 300,000 received" in text


def test_summary_is_nearest_rank_and_empty_is_none():
    assert summary([]) == {"p50": None, "p99": None, "max": None}
    assert summary([float(v) for v in range(1, 101)]) == {"p50": 50.0, "p99": 99.0, "max": 100.0}
