"""The checker's vocabulary: its configuration, what the runner measured, the anomaly kinds and the result.

``KINDS`` is the table of every anomaly kind the checker knows: its description and whether it is allowed
under a given ``CheckConfig``. A ``CheckResult`` always carries every kind (count 0 when clean) and is valid
when no kind that is not allowed has a count above 0.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

MAX_EXAMPLES = 10


@dataclass(frozen=True)
class CheckConfig:
    idempotent: bool = True
    read_committed: bool = True
    rebalance_grace_s: float = 30.0
    leader_bound_s: float = 60.0
    eos_pairs: dict[str, str] = field(default_factory=dict)  # input topic -> the output topic its copiers write
    # (start_ns, end_ns) of faults that cut the clients from the cluster: a member cut off longer than its session
    # timeout loses its membership as in Kafka, so a rebalance from its start to rebalance_grace_s after its end
    # is expected (the rule is "no rebalance caused by a broker failure")
    client_fault_windows: tuple[tuple[int, int], ...] = ()


CLIENT_FAULTS = frozenset({"partition-clients"})


def client_fault_windows(events: list[dict], end_ns: int) -> tuple[tuple[int, int], ...]:
    """(start, heal) of every fault that cut the clients from the cluster, from the nemesis's events
    (``nemesis.jsonl``; a fault the final sweep healed ends at ``end_ns``)."""
    started: dict[object, int] = {}
    windows = []
    for e in events:
        if e.get("kind") not in CLIENT_FAULTS:
            continue
        if e["event"] == "start":
            started[e.get("id")] = e["time"]
        elif e["event"] == "heal" and e.get("id") in started:
            windows.append((started.pop(e.get("id")), e["time"]))
    windows.extend((start, end_ns) for start in started.values())
    return tuple(sorted(windows))


@dataclass(frozen=True)
class Availability:
    """Measured by the runner after the final heal."""
    healed_at_ns: int | None
    leaderless_after_heal: dict[str, float]  # key -> seconds until every live broker saw a live leader
    workloads_finished: dict[str, bool]  # process -> stopped cleanly


def _never(config: CheckConfig) -> bool:
    return False


def _always(config: CheckConfig) -> bool:
    return True


def _unless_idempotent(config: CheckConfig) -> bool:
    return not config.idempotent


def _unless_read_committed(config: CheckConfig) -> bool:
    return not config.read_committed


@dataclass(frozen=True)
class Kind:
    description: str
    allowed: Callable[[CheckConfig], bool] = _never


KINDS: dict[str, Kind] = {
    "lost-write": Kind("an acknowledged send was never polled, though a poll read a higher offset of its key"),
    "unseen": Kind("an acknowledged send (with or without its offset) was never polled by the end of the run"),
    "inconsistent-offsets": Kind("one (key, offset) holds more than one value, across all sends and polls"),
    "duplicate": Kind("one value sits at more than one (key, offset); allowed without idempotence",
                      _unless_idempotent),
    "duplicate-after-bump": Kind(
        "a duplicate whose send was in flight when its idempotent producer began an epoch bump: librdkafka re-sends "
        "what waits for a retry under the new epoch from sequence 0, so a copy a broker had written is written "
        "again (librdkafka #4953; no broker can tell, Kafka's neither)", _always),
    "G1a": Kind("aborted read: a poll read a value whose send failed or whose transaction aborted; "
                "allowed under read_uncommitted", _unless_read_committed),
    "nonmonotonic-send": Kind("a later send of one producer to one key landed at a lower offset"),
    "int-nonmonotonic-send": Kind("within one transaction, a later send to a key landed at a lower offset"),
    "nonmonotonic-poll": Kind("an assigned consumer read an offset not above the one it read before"),
    "int-nonmonotonic-poll": Kind("within one poll, an assigned consumer went backwards or repeated an offset"),
    "poll-skip": Kind("between two polls, an assigned consumer jumped over a visible value of the key"),
    "int-poll-skip": Kind("within one poll, an assigned consumer jumped over a visible value of the key"),
    "int-send-skip": Kind("another producer's value landed between two sends of one committed transaction "
                          "(Kafka does not isolate writes)", _always),
    "G0": Kind("a write cycle among committed transactions (Kafka does not isolate writes)", _always),
    "G1c": Kind("circular information flow: a cycle of committed transactions each reading another's writes "
                "(wr edges only); allowed under read_uncommitted", _unless_read_committed),
    "precommitted-read": Kind("a transaction read a value it had sent itself before committing"),
    "group-gap": Kind("a subscribed group skipped a visible offset between the first and the last it consumed"),
    "commit-backwards": Kind("a group's committed offset of a key went down"),
    "unexpected-rebalance": Kind("a group rebalanced with no member subscribing, crashing or leaving nearby"),
    "eos-missing": Kind("a value acknowledged into a copier's input topic was never read in its output topic"),
    "eos-extra": Kind("a value read in a copier's output topic was never written to its input topic"),
    "eos-duplicate": Kind("a value was read at two different offsets of a copier's output topic"),
    "unavailable": Kind("a key had no live leader for longer than the bound after the final heal"),
    "workload-unfinished": Kind("a workload process did not stop cleanly"),
}


@dataclass
class Anomaly:
    kind: str
    count: int
    examples: list[Any]
    allowed: bool
    description: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "count": self.count, "examples": self.examples, "allowed": self.allowed,
                "description": self.description}


@dataclass
class CheckResult:
    anomalies: dict[str, Anomaly]
    stats: dict
    valid: bool

    def to_json(self) -> dict:
        return {"valid": self.valid, "anomalies": {k: a.to_json() for k, a in self.anomalies.items()},
                "stats": self.stats}

    def summary_lines(self) -> list[str]:
        """The counts for a terminal: one line of stats, then each anomaly kind seen with two examples."""
        s = self.stats
        sends, txns = s.get("sends", {}), s.get("txns", {})
        lines = [f"sends ok {sends.get('ok', 0)} implicit-acks {sends.get('implicit_acks', 0)} fail "
                 f"{sends.get('fail', 0)} info {sends.get('info', 0)}; polls {s.get('polls', 0)} values read "
                 f"{s.get('values_read', 0)}; txns committed {txns.get('committed', 0)} aborted "
                 f"{txns.get('aborted', 0)} indefinite {txns.get('indefinite', 0)}; producer epoch bumps "
                 f"{s.get('epoch_bumps', 0)}"]
        seen = sorted((a for a in self.anomalies.values() if a.count), key=lambda a: (a.allowed, a.kind))
        for a in seen:
            lines.append(f"  {a.kind:<22} {a.count:>8}  {'allowed' if a.allowed else 'BAD'}  {a.description}")
            lines.extend(f"      e.g. {json.dumps(example)[:200]}" for example in a.examples[:2])
        if not seen:
            lines.append(f"  all {len(self.anomalies)} anomaly kinds: 0")
        return lines

    def failures(self) -> list[Anomaly]:
        """The anomalies that make the run invalid."""
        return [a for a in self.anomalies.values() if a.count and not a.allowed]


class Findings:
    """Counts per kind and the first ``MAX_EXAMPLES`` examples of each; the checks report into one of these."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {kind: 0 for kind in KINDS}
        self.examples: dict[str, list[Any]] = {kind: [] for kind in KINDS}

    def add(self, kind: str, example: Any, count: int = 1) -> None:
        self.counts[kind] += count
        if len(self.examples[kind]) < MAX_EXAMPLES:
            self.examples[kind].append(example)

    def result(self, config: CheckConfig, stats: dict) -> CheckResult:
        anomalies = {kind: Anomaly(kind, self.counts[kind], self.examples[kind], spec.allowed(config),
                                   spec.description) for kind, spec in KINDS.items()}
        valid = not any(a.count and not a.allowed for a in anomalies.values())
        return CheckResult(anomalies, stats, valid)
