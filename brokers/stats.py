"""Plain in-process counters for the broker's metrics: no library, no locks, no I/O.

The hot paths (request dispatch, produce, fetch, ZooKeeper calls) only add to these numbers; the HTTP
layer (``brokers.http.metrics``, the only prometheus-client importer) reads them at scrape time. So a
request costs a ``bisect`` and a few integer additions, and the broker's packages never see Prometheus.

Everything here is touched from the broker's event loop only, except ``LatencyHistogram.observe`` from
``ZkGateway`` (also on the loop: it times the awaited thread call, not inside the thread).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

# Seconds. Kafka's request latencies span 100 us (a cached metadata answer) to the long-poll wait (500 ms+).
REQUEST_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0, 30.0)
ZOOKEEPER_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class LatencyHistogram:
    """Cumulative-on-read histogram: ``counts[i]`` observations fell in ``(bounds[i-1], bounds[i]]``,
    the last slot holds those above every bound (Prometheus' ``+Inf``)."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...] = REQUEST_BUCKETS):
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"histogram bounds must be strictly increasing: {bounds}")
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``[(le, count of observations <= le), ..., ("+Inf", count)]``, as Prometheus exposes them."""
        out, running = [], 0
        for bound, n in zip(self.bounds, self.counts):
            running += n
            out.append((repr(float(bound)), running))
        out.append(("+Inf", self.count))
        return out


@dataclass
class TopicTraffic:
    """Kafka's BrokerTopicMetrics as totals: BytesInPerSec, BytesOutPerSec, MessagesInPerSec,
    TotalProduceRequestsPerSec, TotalFetchRequestsPerSec (fetches that returned records),
    ProduceMessageConversionsPerSec and FetchMessageConversionsPerSec (records up-converted from a
    Produce v0-2, down-converted for a Fetch v0-3)."""

    bytes_in: int = 0
    bytes_out: int = 0
    messages_in: int = 0
    produce_requests: int = 0
    fetch_requests: int = 0
    produce_message_conversions: int = 0
    fetch_message_conversions: int = 0


@dataclass
class BrokerStats:
    """Every counter one broker keeps. ``requests[(api, version)]`` is that API's latency histogram;
    ``request_errors[(api, version)]`` counts requests whose handler raised (the connection closed)."""

    requests: dict[tuple[str, int], LatencyHistogram] = field(default_factory=dict)
    request_errors: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    topics: dict[str, TopicTraffic] = field(default_factory=lambda: defaultdict(TopicTraffic))
    fetches_parked: int = 0  # Fetch requests long-polling now (Kafka's fetch purgatory size)
    isr_shrinks: int = 0
    isr_expands: int = 0
    event_loop_lag_s: float = 0.0
    event_loop_lag: LatencyHistogram = field(default_factory=lambda: LatencyHistogram(ZOOKEEPER_BUCKETS))

    def observe_request(self, api: str, version: int, seconds: float) -> None:
        histogram = self.requests.get((api, version))
        if histogram is None:
            histogram = self.requests[(api, version)] = LatencyHistogram()
        histogram.observe(seconds)

    def bytes_in(self, topic: str, size: int, messages: int) -> None:
        traffic = self.topics[topic]
        traffic.bytes_in += size
        traffic.messages_in += messages
        traffic.produce_requests += 1

    def bytes_out(self, topic: str, size: int) -> None:
        traffic = self.topics[topic]
        traffic.bytes_out += size
        traffic.fetch_requests += 1

    def message_conversions(self, topic: str, produced: int = 0, fetched: int = 0) -> None:
        traffic = self.topics[topic]
        traffic.produce_message_conversions += produced
        traffic.fetch_message_conversions += fetched

    def forget_topic(self, topic: str) -> None:
        self.topics.pop(topic, None)
