"""Pure helpers of the benchmarks: latency percentiles, send schedules, replica placement and the
comparison with Jay Kreps' published replication numbers. No I/O, no clients: unit-tested directly.

Kreps, "Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)" (2014),
one producer thread, 100-byte records, 6 partitions: no replication 821,557 records/s; 3x
asynchronous replication (acks=1) 786,980; 3x synchronous replication (acks=all) 421,823.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

KREPS_RF1 = 821_557
KREPS_RF3_ACKS1 = 786_980
KREPS_RF3_ACKSALL = 421_823

PERCENTILES = (50.0, 99.0, 99.9)
STAMP = struct.Struct(">q")  # the scheduled send time (monotonic ns) at the front of a record's value
WARM_UP_STAMP = 0  # a record that only proves the path works; never measured


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values: the smallest value with at least q % of the
    values at or below it (so p100 is the max and a p99.9 over 100 values is the max too)."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0 < q <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {q}")
    rank = math.ceil(q / 100 * len(sorted_values) - 1e-9)
    return sorted_values[max(rank, 1) - 1]


def latency_summary(latencies_ns: Sequence[int], expected: int | None = None) -> dict:
    """p50/p99/p99.9/max in milliseconds (None when nothing was measured), the count and, when
    ``expected`` is given, how many never arrived."""
    values = sorted(latencies_ns)
    summary: dict = {"count": len(values)}
    for q in PERCENTILES:
        summary[f"p{q:g}_ms"] = percentile(values, q) / 1e6 if values else None
    summary["max_ms"] = values[-1] / 1e6 if values else None
    if expected is not None:
        summary["missing"] = max(expected - len(values), 0)
    return summary


def schedule(start_ns: int, rate: float, duration_s: float) -> list[int]:
    """Send times (ns) of ``rate`` records per second for ``duration_s``, evenly spaced from
    ``start_ns``. Latency is measured from these times, whenever the record really went out, so a
    producer that falls behind shows up in the numbers (no coordinated omission)."""
    if rate <= 0 or duration_s <= 0:
        raise ValueError("rate and duration must be positive")
    count = max(1, round(rate * duration_s))
    interval = 1e9 / rate
    return [start_ns + round(i * interval) for i in range(count)]


def stamped_value(scheduled_ns: int, record_bytes: int) -> bytes:
    """A record value of ``record_bytes`` (at least 8) that starts with its scheduled send time."""
    return STAMP.pack(scheduled_ns) + b"x" * max(record_bytes - STAMP.size, 0)


def read_stamp(value: bytes) -> int:
    return STAMP.unpack_from(value)[0]


def spread_assignment(partitions: int, brokers: Sequence[int], replication_factor: int,
                      first: int = 0) -> list[list[int]]:
    """Replicas per partition, leaders round-robin over ``brokers`` starting at index ``first``,
    followers the next brokers in order (Kafka's rack-unaware layout without the random start)."""
    if not 1 <= replication_factor <= len(brokers):
        raise ValueError(f"replication factor {replication_factor} needs 1..{len(brokers)} brokers")
    n = len(brokers)
    return [[brokers[(first + p + r) % n] for r in range(replication_factor)] for p in range(partitions)]


@dataclass(frozen=True)
class Ratio:
    name: str
    measured: float | None
    published: float

    @property
    def meets(self) -> bool | None:
        return None if self.measured is None else self.measured >= round(self.published, 2)

    def describe(self) -> str:
        """E.g. ``0.93 (Kreps 0.96, below)``."""
        if self.measured is None:
            return f"n/a (Kreps {self.published:.2f})"
        verdict = "at or above" if self.meets else "below"
        return f"{self.measured:.2f} (Kreps {self.published:.2f}, {verdict})"

    def as_dict(self) -> dict:
        return {"name": self.name, "measured": self.measured, "kreps": round(self.published, 3), "meets": self.meets}


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def replication_ratios(rf1: float | None, rf3_acks1: float | None, rf3_acksall: float | None) -> list[Ratio]:
    """The two ratios the replication goal is stated in, next to Kreps' (0.96 and 0.54)."""
    return [Ratio("RF3 acks=1 / RF1", _ratio(rf3_acks1, rf1), KREPS_RF3_ACKS1 / KREPS_RF1),
            Ratio("RF3 acks=all / RF3 acks=1", _ratio(rf3_acksall, rf3_acks1), KREPS_RF3_ACKSALL / KREPS_RF3_ACKS1)]


def parse_rates(text: str) -> list[int]:
    """``"1000,10000"`` -> ``[1000, 10000]``; every rate must be a positive integer."""
    try:
        rates = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"rates must be comma-separated integers, got {text!r}") from None
    if not rates or any(r <= 0 for r in rates):
        raise ValueError(f"rates must be positive, got {text!r}")
    return rates


def first_ack_after(reports: Sequence[tuple[int, int, bool]], since_ns: int) -> int | None:
    """The earliest successful acknowledgement (ns) of a record scheduled at or after ``since_ns``,
    given delivery reports ``(scheduled_ns, acked_ns, ok)``."""
    acks = [acked for scheduled, acked, ok in reports if ok and scheduled >= since_ns]
    return min(acks) if acks else None
