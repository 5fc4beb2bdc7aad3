"""The benchmark suite's scenarios, its summary statistics and its goals: pure data and arithmetic.

=====  ======================================================================  ========  ==========
id     what                                                                    cluster   peer too
=====  ======================================================================  ========  ==========
P1     produce 100 B, 1 partition, RF 1, acks=1                                1 broker  yes
P2     P1 with 1 KB records                                                    1 broker  yes
P3     P1 with lz4                                                             1 broker  yes
P4     produce 100 B, 1 partition, RF 3, acks=1                                3 brokers no
P5     P4 with acks=all                                                        3 brokers no
P6     produce 100 B, 6 partitions, 2 producer processes (the broker's limit)  1 broker  yes
C1     consume 1M x 100 B from offset 0 with assign()                          1 broker  yes
C2     C1 with lz4 batches (C2-lz4) and with 1 KB records (C2-1k)              1 broker  yes
L1     end-to-end latency at fixed rates, RF 1 and RF 3 acks=all, linger 0/5   both      RF 1 only
G1     first assignment of a new group                                         1 broker  yes
G2     rebalance when a member joins, leaves, and is killed                    1 broker  no
F1     leader killed under P5-like load: produce resumes, lost, duplicated     3 brokers no
=====  ======================================================================  ========  ==========

A scenario's numbers over its repetitions are summarised as median and range. Goals compare medians,
ours against the peer's where they say so; a goal whose inputs are missing is "not measured", never met.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Iterable

KREPS_RF3_OVER_RF1 = 0.96
KREPS_ACKS_ALL_OVER_ACKS_1 = 0.54


@dataclass(frozen=True)
class Scenario:
    id: str
    kind: str  # produce | consume | latency | group | failover
    title: str
    brokers: int = 1
    record_bytes: int = 100
    partitions: int = 1
    replication_factor: int = 1
    acks: str = "1"
    codec: str = "none"
    producers: int = 1
    records: int = 1_000_000  # the record cap of one run
    rate: int = 0  # latency: records/s
    linger_ms: int = 0
    peer: bool = True  # also run against the single-broker peer

    @property
    def payload_bytes(self) -> int:
        return self.records * self.record_bytes


def _latency(rate: int, rf: int, linger: int) -> Scenario:
    acks = "all" if rf == 3 else "1"
    return Scenario(f"L1-{rate // 1000}k-rf{rf}-l{linger}", "latency",
                    f"latency at {rate:,}/s, RF {rf} acks={acks}, linger {linger} ms", brokers=rf,
                    replication_factor=rf, acks=acks, rate=rate, linger_ms=linger, peer=rf == 1)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("P1", "produce", "produce 100 B, RF 1, acks=1"),
    Scenario("P2", "produce", "produce 1 KB, RF 1, acks=1", record_bytes=1000, records=300_000),
    Scenario("P3", "produce", "produce 100 B lz4, RF 1, acks=1", codec="lz4"),
    Scenario("P4", "produce", "produce 100 B, RF 3, acks=1", brokers=3, replication_factor=3, peer=False),
    Scenario("P5", "produce", "produce 100 B, RF 3, acks=all", brokers=3, replication_factor=3, acks="all",
             peer=False),
    Scenario("P6", "produce", "produce 100 B, 6 partitions, 2 producers", partitions=6, producers=2,
             records=2_000_000),
    Scenario("C1", "consume", "consume 1M x 100 B with assign()"),
    Scenario("C2-lz4", "consume", "consume 1M x 100 B lz4 batches", codec="lz4"),
    Scenario("C2-1k", "consume", "consume 300k x 1 KB", record_bytes=1000, records=300_000),
    *(_latency(rate, rf, linger) for rf in (1, 3) for linger in (0, 5) for rate in (1000, 10_000, 50_000)),
    Scenario("G1", "group", "first assignment of a new group"),
    Scenario("G2", "group", "rebalance: a member joins, one leaves, one is killed (kill -9)", peer=False),
    Scenario("F1", "failover", "leader killed under acks=all load", brokers=3, replication_factor=3, acks="all",
             peer=False),
)
BY_ID = {s.id: s for s in SCENARIOS}


def select(spec: str | None) -> list[Scenario]:
    """Scenarios by comma-separated ids or id prefixes ("P1,C", "L1-10k"); all of them for None."""
    if not spec:
        return list(SCENARIOS)
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    chosen = [s for s in SCENARIOS if any(s.id == w or s.id.startswith(w) for w in wanted)]
    unknown = [w for w in wanted if not any(s.id == w or s.id.startswith(w) for s in SCENARIOS)]
    if unknown:
        raise ValueError(f"unknown scenario {', '.join(unknown)}: one of {', '.join(BY_ID)}")
    return chosen


# -- summaries ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    def describe(self, fmt: str = "{:,.0f}") -> str:
        if self.n == 1:
            return fmt.format(self.median)
        return f"{fmt.format(self.median)} [{fmt.format(self.low)}–{fmt.format(self.high)}]"


def summarise(values: Iterable[float | None]) -> Summary | None:
    """Median and range of the values that were measured (None: not measured)."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return Summary(statistics.median(known), min(known), max(known), len(known))


def summarise_runs(runs: list[dict]) -> dict[str, Summary]:
    """Every numeric field the runs share, summarised (nested dicts flattened with dots)."""
    flat = [_flatten(r) for r in runs]
    keys = sorted({k for f in flat for k, v in f.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    out = {}
    for key in keys:
        summary = summarise(f.get(key) for f in flat)
        if summary is not None:
            out[key] = summary
    return out


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# -- goals --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Goal:
    name: str
    target: str
    value: float | None
    met: bool | None  # None: not measured

    def describe(self) -> str:
        shown = ("not measured" if self.value is None else
                 f"{self.value:.3f}" if abs(self.value) < 100 else f"{self.value:,.0f}")
        verdict = {True: "met", False: "missed", None: "—"}[self.met]
        return f"| {self.name} | {self.target} | {shown} | {verdict} |"


Results = dict[str, dict[str, dict[str, Summary]]]  # target -> scenario id -> metric -> summary


def _median(results: Results, target: str, scenario: str, metric: str) -> float | None:
    summary = results.get(target, {}).get(scenario, {}).get(metric)
    return summary.median if summary is not None else None


def _goal(name: str, target: str, value: float | None, test: Callable[[float], bool]) -> Goal:
    return Goal(name, target, value, None if value is None else test(value))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b not in (None, 0) else None


def goals(results: Results, *, initial_delay_ms: int, session_timeout_ms: int, peer: str = "tansu") -> list[Goal]:
    ours = lambda s, m: _median(results, "zkafka", s, m)  # noqa: E731
    theirs = lambda s, m: _median(results, peer, s, m)  # noqa: E731
    rate = "records_per_s"
    out = [
        _goal("P1 records/s ours/peer", "≥ 1.0", _ratio(ours("P1", rate), theirs("P1", rate)), lambda v: v >= 1.0),
        _goal("P3 records/s ours/peer", "≥ 1.0", _ratio(ours("P3", rate), theirs("P3", rate)), lambda v: v >= 1.0),
        _goal("P6 broker CPU-s per GB ours/peer", "≤ 1.0",
              _ratio(ours("P6", "cpu_s_per_gb"), theirs("P6", "cpu_s_per_gb")), lambda v: v <= 1.0),
        _goal("C1 records/s ours/peer", "≥ 2.0", _ratio(ours("C1", rate), theirs("C1", rate)), lambda v: v >= 2.0),
        _goal("C1 records/s", "≥ 900,000", ours("C1", rate), lambda v: v >= 900_000),
        _goal("P4/P1 records/s", f"≥ {KREPS_RF3_OVER_RF1}", _ratio(ours("P4", rate), ours("P1", rate)),
              lambda v: v >= KREPS_RF3_OVER_RF1),
        _goal("P5/P4 records/s", f"≥ {KREPS_ACKS_ALL_OVER_ACKS_1}", _ratio(ours("P5", rate), ours("P4", rate)),
              lambda v: v >= KREPS_ACKS_ALL_OVER_ACKS_1),
        _goal("L1 p99 end-to-end ms, 10k/s RF 3 acks=all", "≤ 5", ours("L1-10k-rf3-l0", "end_to_end.p99_ms"),
              lambda v: v <= 5.0),
        _goal("G1 first assignment s", f"≤ {initial_delay_ms / 1000 + 0.5:g}", ours("G1", "seconds"),
              lambda v: v <= initial_delay_ms / 1000 + 0.5),
        _goal("F1 produce resumes s", f"≤ {session_timeout_ms / 1000 + 2:g}", ours("F1", "seconds"),
              lambda v: v <= session_timeout_ms / 1000 + 2),
        _goal("F1 acknowledged records lost", "= 0", ours("F1", "lost"), lambda v: v == 0),
    ]
    return out
