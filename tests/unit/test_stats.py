"""brokers.stats: the plain counters /metrics is rendered from."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from brokers.stats import BrokerStats, LatencyHistogram


def test_cumulative_buckets_are_prometheus_le_semantics():
    histogram = LatencyHistogram((0.1, 1.0))
    for seconds in (0.05, 0.1, 0.5, 1.0, 3.0):
        histogram.observe(seconds)
    assert histogram.cumulative() == [("0.1", 2), ("1.0", 4), ("+Inf", 5)]  # a value on a bound counts in it
    assert histogram.count == 5 and histogram.sum == pytest.approx(4.65)


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=200))
def test_cumulative_counts_never_decrease_and_end_at_the_count(values):
    histogram = LatencyHistogram()
    for v in values:
        histogram.observe(v)
    counts = [n for _, n in histogram.cumulative()]
    assert counts == sorted(counts) and counts[-1] == len(values)
    for bound, n in histogram.cumulative()[:-1]:
        assert n == sum(v <= float(bound) for v in values)


@pytest.mark.parametrize("bounds", [(1.0, 0.5), (0.1, 0.1), ()])
def test_bounds_must_strictly_increase(bounds):
    if not bounds:
        assert LatencyHistogram(bounds).cumulative() == [("+Inf", 0)]
        return
    with pytest.raises(ValueError, match="strictly increasing"):
        LatencyHistogram(bounds)


def test_topic_traffic_and_requests_accumulate_per_key():
    stats = BrokerStats()
    stats.bytes_in("a", 100, 3)
    stats.bytes_in("a", 50, 2)
    stats.bytes_out("a", 70)
    stats.bytes_out("b", 5)
    stats.observe_request("Produce", 7, 0.001)
    stats.observe_request("Produce", 7, 0.002)
    stats.observe_request("Produce", 3, 0.5)
    assert (stats.topics["a"].bytes_in, stats.topics["a"].messages_in, stats.topics["a"].bytes_out) == (150, 5, 70)
    assert stats.topics["a"].produce_requests == 2 and stats.topics["b"].fetch_requests == 1
    assert stats.requests[("Produce", 7)].count == 2 and stats.requests[("Produce", 3)].count == 1
    stats.forget_topic("a")
    assert set(stats.topics) == {"b"}


def test_message_conversions_accumulate_per_topic():
    stats = BrokerStats()
    stats.message_conversions("a", produced=5)
    stats.message_conversions("a", fetched=7)
    stats.message_conversions("a", produced=1, fetched=2)
    assert (stats.topics["a"].produce_message_conversions, stats.topics["a"].fetch_message_conversions) == (6, 9)
