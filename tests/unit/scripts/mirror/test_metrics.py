"""scripts.tools.kafka_mirror_maker.metrics: a flow's accounting, its ``/api/v1/mirror`` snapshot (totals and
exact quantiles of the recent latencies) and its Prometheus text, read back with prometheus_client's parser."""
from __future__ import annotations

from collections import deque

import pytest
from prometheus_client.parser import text_string_to_metric_families

from scripts.tools.kafka_mirror_maker.metrics import LATENCY_BUCKETS_S, PREFIX, FlowMetrics, prometheus_text


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of every sample of ``text``; fails on text the parser refuses."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in out, f"duplicate sample {key}"
            out[key] = sample.value
    return out


def families(text: str) -> dict[str, str]:
    return {family.name: family.type for family in text_string_to_metric_families(text)}


# --- accounting ----------------------------------------------------------------------------------------------------

def test_acknowledgements_add_up_per_partition_and_keep_the_newest_and_largest_latency():
    metrics = FlowMetrics("a", "b")
    metrics.records_acknowledged("a.t", 0, 1, 10, 40)
    metrics.records_acknowledged("a.t", 0, 2, 30, 15)
    metrics.records_acknowledged("a.t", 1, 1, 5, 7)
    p0, p1 = metrics.partitions[("a.t", 0)], metrics.partitions[("a.t", 1)]
    assert (p0.record_count, p0.byte_count, p0.replication_latency_ms, p0.replication_latency_max_ms) == (3, 40, 15, 40)
    assert (p1.record_count, p1.byte_count, p1.replication_latency_ms, p1.replication_latency_max_ms) == (1, 5, 7, 7)
    assert metrics.latency.count == 3 and metrics.latency.sum == pytest.approx(0.062)
    assert list(metrics.recent_latencies_ms) == [40, 15, 7]


def test_polled_age_and_lag_per_partition_lag_never_negative():
    metrics = FlowMetrics("a", "b")
    metrics.record_polled("a.t", 0, 1234)
    metrics.set_lag("a.t", 0, 17)
    metrics.set_lag("a.t", 1, -3)                  # a stale cached watermark behind the acknowledged offset
    assert metrics.partitions[("a.t", 0)].record_age_ms == 1234 and metrics.partitions[("a.t", 0)].lag == 17
    assert metrics.partitions[("a.t", 1)].lag == 0
    assert metrics.partitions[("a.t", 0)].record_count == 0


def test_add_counts_flow_events():
    metrics = FlowMetrics("a", "b")
    metrics.add("checkpoints", 3)
    metrics.add("checkpoints")
    metrics.add("heartbeats")
    metrics.add("task_restarts", 2)
    metrics.add("offset_syncs", 5)
    assert (metrics.checkpoints, metrics.heartbeats, metrics.task_restarts, metrics.offset_syncs) == (4, 1, 2, 5)


def test_the_reservoir_keeps_the_newest_latencies_only():
    metrics = FlowMetrics("a", "b", recent_latencies_ms=deque(maxlen=3))
    for latency in (100, 1, 2, 3):
        metrics.records_acknowledged("a.t", 0, 1, 1, latency)
    assert metrics.snapshot()["replication_latency_ms"] == {"count": 3, "p50": 2, "p99": 3, "max": 3}
    assert metrics.partitions[("a.t", 0)].replication_latency_max_ms == 100   # the partition's max is all time


# --- snapshot ------------------------------------------------------------------------------------------------------

def test_snapshot_of_a_new_flow():
    assert FlowMetrics("a", "b").snapshot() == {
        "flow": "a->b", "source": "a", "target": "b", "record_count": 0, "byte_count": 0, "lag": 0,
        "replication_latency_ms": {"count": 0, "p50": None, "p99": None, "max": None},
        "checkpoints": 0, "checkpoint_latency_ms": 0, "heartbeats": 0, "offset_syncs": 0, "task_restarts": 0,
        "topics": 0, "partitions": []}


def test_snapshot_totals_and_sorted_partitions():
    metrics = FlowMetrics("a", "b")
    metrics.records_acknowledged("a.z", 0, 5, 50, 1)
    metrics.records_acknowledged("a.t", 1, 2, 20, 1)
    metrics.records_acknowledged("a.t", 0, 1, 10, 1)
    metrics.set_lag("a.t", 0, 4)
    metrics.set_lag("a.z", 0, 6)
    metrics.topics = 2
    snap = metrics.snapshot()
    assert (snap["record_count"], snap["byte_count"], snap["lag"], snap["topics"]) == (8, 80, 10, 2)
    assert [(p["topic"], p["partition"]) for p in snap["partitions"]] == [("a.t", 0), ("a.t", 1), ("a.z", 0)]
    assert snap["partitions"][0] == {"topic": "a.t", "partition": 0, "record_count": 1, "byte_count": 10,
                                     "record_age_ms": 0, "replication_latency_ms": 1, "replication_latency_max_ms": 1,
                                     "lag": 4}


@pytest.mark.parametrize("latencies, p50, p99", [
    ([7], 7, 7),
    ([1, 2], 2, 2),                               # index int(q * n): the upper one of two
    (list(range(1, 101)), 51, 100),
    (list(range(1, 1001)), 501, 991),
    (list(range(200, 0, -1)), 101, 199),          # sorted first: arrival order does not matter
])
def test_snapshot_quantiles_index_int_q_times_n_of_the_sorted_latencies(latencies, p50, p99):
    metrics = FlowMetrics("a", "b")
    for latency in latencies:
        metrics.records_acknowledged("a.t", 0, 1, 1, latency)
    assert metrics.snapshot()["replication_latency_ms"] == {"count": len(latencies), "p50": p50, "p99": p99,
                                                            "max": max(latencies)}


# --- Prometheus text -----------------------------------------------------------------------------------------------

def two_flows() -> list[FlowMetrics]:
    ab, ba = FlowMetrics("a", "b"), FlowMetrics("b", "a")
    ab.records_acknowledged("a.orders", 0, 3, 300, 4)      # 0.004 s
    ab.records_acknowledged("a.orders", 1, 1, 10, 2000)    # 2 s
    ab.record_polled("a.orders", 0, 12)
    ab.set_lag("a.orders", 1, 9)
    ab.add("checkpoints", 2)
    ab.add("heartbeats", 5)
    ab.checkpoint_latency_ms, ab.topics = 33, 1
    ba.add("task_restarts")
    return [ab, ba]


def test_prometheus_text_parses_with_the_families_and_types():
    text = prometheus_text(two_flows())
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert families(text) == {
        f"{PREFIX}_source_record_count": "counter", f"{PREFIX}_source_byte_count": "counter",
        f"{PREFIX}_source_record_age_ms": "gauge", f"{PREFIX}_source_replication_latency_ms": "gauge",
        f"{PREFIX}_source_replication_latency_max_ms": "gauge", f"{PREFIX}_source_lag": "gauge",
        f"{PREFIX}_checkpoints": "counter", f"{PREFIX}_checkpoint_latency_ms": "gauge",
        f"{PREFIX}_heartbeats": "counter", f"{PREFIX}_offset_syncs": "counter", f"{PREFIX}_task_restarts": "counter",
        f"{PREFIX}_topics": "gauge", f"{PREFIX}_replication_latency_seconds": "histogram"}


def test_prometheus_partition_series_carry_source_target_topic_partition():
    values = samples(prometheus_text(two_flows()))
    p0 = (("partition", "0"), ("source", "a"), ("target", "b"), ("topic", "a.orders"))
    p1 = (("partition", "1"), ("source", "a"), ("target", "b"), ("topic", "a.orders"))
    assert values[(f"{PREFIX}_source_record_count_total", p0)] == 3
    assert values[(f"{PREFIX}_source_byte_count_total", p0)] == 300
    assert values[(f"{PREFIX}_source_record_age_ms", p0)] == 12
    assert values[(f"{PREFIX}_source_replication_latency_ms", p1)] == 2000
    assert values[(f"{PREFIX}_source_replication_latency_max_ms", p1)] == 2000
    assert values[(f"{PREFIX}_source_lag", p1)] == 9
    assert values[(f"{PREFIX}_source_lag", p0)] == 0
    assert not [key for key in values if key[0].startswith(f"{PREFIX}_source_") and ("source", "b") in key[1]]


def test_prometheus_flow_series_one_per_flow():
    values = samples(prometheus_text(two_flows()))
    ab, ba = (("source", "a"), ("target", "b")), (("source", "b"), ("target", "a"))
    assert values[(f"{PREFIX}_checkpoints_total", ab)] == 2 and values[(f"{PREFIX}_checkpoints_total", ba)] == 0
    assert values[(f"{PREFIX}_heartbeats_total", ab)] == 5
    assert values[(f"{PREFIX}_checkpoint_latency_ms", ab)] == 33
    assert values[(f"{PREFIX}_topics", ab)] == 1
    assert values[(f"{PREFIX}_task_restarts_total", ba)] == 1 and values[(f"{PREFIX}_task_restarts_total", ab)] == 0
    assert values[(f"{PREFIX}_offset_syncs_total", ba)] == 0


def test_prometheus_histogram_is_cumulative_with_inf_sum_and_count():
    values = samples(prometheus_text(two_flows()))
    metric = f"{PREFIX}_replication_latency_seconds"

    def bucket(le: str, source: str = "a", target: str = "b") -> float:
        return values[(f"{metric}_bucket", (("le", le), ("source", source), ("target", target)))]

    les = [repr(float(b)) for b in LATENCY_BUCKETS_S] + ["+Inf"]
    counts = [bucket(le) for le in les]
    assert counts == sorted(counts)
    assert bucket("0.0025") == 0 and bucket("0.005") == 1 and bucket("1.0") == 1 and bucket("2.5") == 2
    assert bucket("+Inf") == 2
    assert values[(f"{metric}_count", (("source", "a"), ("target", "b")))] == 2
    assert values[(f"{metric}_sum", (("source", "a"), ("target", "b")))] == pytest.approx(2.004)
    assert bucket("+Inf", "b", "a") == 0 and values[(f"{metric}_count", (("source", "b"), ("target", "a")))] == 0


def test_prometheus_label_values_are_escaped():
    metrics = FlowMetrics('we"st', "back\\slash")
    metrics.records_acknowledged('odd"topic\\name\nline', 0, 1, 1, 1)
    text = prometheus_text([metrics])
    assert 'topic="odd\\"topic\\\\name\\nline"' in text
    values = samples(text)
    labels = (("partition", "0"), ("source", 'we"st'), ("target", "back\\slash"), ("topic", 'odd"topic\\name\nline'))
    assert values[(f"{PREFIX}_source_record_count_total", labels)] == 1


def test_prometheus_text_of_no_flow_is_only_help_and_type():
    text = prometheus_text([])
    assert all(line.startswith(("# HELP ", "# TYPE ")) for line in text.splitlines())
    assert samples(text) == {}
    assert len(families(text)) == 13
