"""Kafka 2.8's ``ProducerPerformance`` statistics, output lines and throttle (pure: times are passed in).

Every ``REPORTING_INTERVAL_MS`` (5 s) in which records completed, a window line::

    N records sent, X.X records/sec (Y.YY MB/sec), Z.Z ms avg latency, W.W ms max latency.

and at the end (every record completed), the total::

    N records sent, X.XXXXXX records/sec (Y.YY MB/sec), Z.ZZ ms avg latency, W.WW ms max latency, P ms 50th, P ms 95th, P ms 99th, P ms 99.9th.

Kafka's formats exactly (``%d``, ``%.1f``, ``%f``, ``%.2f``; MB is 1024 * 1024 bytes). A record counts when
its delivery completes, failed or not, as in Kafka; its latency is from the send to the acknowledgement
(librdkafka's ``Message.latency()``, seconds with microsecond resolution: Kafka's own is whole milliseconds,
so avg and max here carry fractions, and the percentiles are rounded to the nearest millisecond).
Latencies arrive in batches (``Stats.add``), never one Python call per record. Percentiles are taken from
a sample as Kafka takes them: every ``sampling``-th completed record, ``sampling = n // min(n, 500000)``,
so at most ~500,000 are kept; the p-th percentile is ``sorted(sample)[int(p * len(sample))]``.

``Throttle`` is ``--throughput``: at most ``target * elapsed + 1`` records by each moment (a negative
target sends as fast as it can), so a batch never runs ahead of the schedule.
"""
from __future__ import annotations

from array import array
from collections.abc import Sequence

from scripts.tools.perf_test.formats import MB, java_divide, java_fixed

REPORTING_INTERVAL_MS = 5000
MAX_SAMPLES = 500_000
PERCENTILES = (0.5, 0.95, 0.99, 0.999)
UNLIMITED = 1 << 62


def sampling_for(num_records: int) -> int:
    """Kafka's ``numRecords / Math.min(numRecords, 500000)``: keep every n-th latency."""
    return max(1, num_records // max(1, min(num_records, MAX_SAMPLES)))


def window_line(count: int, nbytes: int, elapsed_ms: float, total_latency_ms: float, max_latency_ms: float) -> str:
    """Kafka's ``printWindow`` line."""
    records_per_s = java_divide(1000.0 * count, elapsed_ms)
    mb_per_s = java_divide(1000.0 * nbytes, elapsed_ms) / MB
    return (f"{count} records sent, {java_fixed(records_per_s, 1)} records/sec ({java_fixed(mb_per_s, 2)} MB/sec), "
            f"{java_fixed(java_divide(total_latency_ms, count), 1)} ms avg latency, "
            f"{java_fixed(max_latency_ms, 1)} ms max latency.")


def total_line(count: int, nbytes: int, elapsed_ms: float, total_latency_ms: float, max_latency_ms: float,
               percentiles_ms: Sequence[int]) -> str:
    """Kafka's ``printTotal`` line."""
    records_per_s = java_divide(1000.0 * count, elapsed_ms)
    mb_per_s = java_divide(1000.0 * nbytes, elapsed_ms) / MB
    p50, p95, p99, p999 = percentiles_ms
    return (f"{count} records sent, {java_fixed(records_per_s, 6)} records/sec ({java_fixed(mb_per_s, 2)} MB/sec), "
            f"{java_fixed(java_divide(total_latency_ms, count), 2)} ms avg latency, "
            f"{java_fixed(max_latency_ms, 2)} ms max latency, {p50} ms 50th, {p95} ms 95th, {p99} ms 99th, "
            f"{p999} ms 99.9th.")


def percentiles(sample: Sequence[float], points: Sequence[float] = PERCENTILES) -> list[float]:
    """Kafka's ``percentiles``: ``sorted(sample)[int(p * size)]`` for each p; 0 for an empty sample."""
    ordered = sorted(sample)
    return [ordered[int(p * len(ordered))] if ordered else 0.0 for p in points]


class Stats:
    """Kafka's ``Stats``: totals, the current window and the latency sample; latencies in seconds."""

    def __init__(self, num_records: int, start_ms: float, reporting_interval_ms: int = REPORTING_INTERVAL_MS):
        self.start_ms = self.window_start_ms = start_ms
        self.sampling = sampling_for(num_records)
        self.interval_ms = reporting_interval_ms
        self.sample = array("d")
        self.count = self.bytes = 0
        self.total_s = self.max_s = 0.0
        self._new_window(start_ms)

    def _new_window(self, now_ms: float) -> None:
        self.window_start_ms = now_ms
        self.window_count = self.window_bytes = 0
        self.window_total_s = self.window_max_s = 0.0

    def add(self, latencies_s: Sequence[float], nbytes: int, now_ms: float) -> str | None:
        """Records completed with these latencies and ``nbytes`` of values between them; the window line
        when the window is ``reporting_interval_ms`` old (a new window starts), else None."""
        if not latencies_s:
            return None
        first = (-self.count) % self.sampling  # the completion index of the next sample in this batch
        self.sample.extend(latencies_s[first::self.sampling])
        total, peak, count = sum(latencies_s), max(latencies_s), len(latencies_s)
        self.count += count
        self.bytes += nbytes
        self.total_s += total
        self.max_s = max(self.max_s, peak)
        self.window_count += count
        self.window_bytes += nbytes
        self.window_total_s += total
        self.window_max_s = max(self.window_max_s, peak)
        if now_ms - self.window_start_ms < self.interval_ms:
            return None
        line = window_line(self.window_count, self.window_bytes, now_ms - self.window_start_ms,
                           self.window_total_s * 1000.0, self.window_max_s * 1000.0)
        self._new_window(now_ms)
        return line

    def percentiles_ms(self) -> list[int]:
        return [int(value * 1000.0 + 0.5) for value in percentiles(self.sample)]

    def total(self, now_ms: float) -> str:
        return total_line(self.count, self.bytes, now_ms - self.start_ms, self.total_s * 1000.0,
                          self.max_s * 1000.0, self.percentiles_ms())


class Throttle:
    """``--throughput`` records/s from ``start_s`` (Kafka's ``ThroughputThrottler``, as a schedule)."""

    def __init__(self, target_per_s: int, start_s: float):
        self.target = target_per_s
        self.start_s = start_s

    def allowed(self, sent: int, now_s: float) -> int:
        """How many more records may be sent at ``now_s``, ``sent`` being sent already."""
        if self.target < 0:
            return UNLIMITED
        return max(0, int(self.target * (now_s - self.start_s)) + 1 - sent)

    def wait_s(self, sent: int, now_s: float) -> float:
        """Seconds until the next record is due (0 when it is due now)."""
        if self.target < 0:
            return 0.0
        return max(0.0, self.start_s + sent / self.target - now_s)
