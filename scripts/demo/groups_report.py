"""What ``zkafka demo groups`` prints and checks, pure: member events (JSON lines) in, lines of text and
the at-least-once verdict out."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

MEMBERS = ("member-1", "member-2", "member-3")


def parse_event(line: str, keys: tuple[str, ...] = ("event", "member")) -> dict | None:
    """A member's report line (a JSON object with a string for each of ``keys``), or None for anything
    else (a stray print, a truncated line from a killed process). The mirror demo's app reports too."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not all(isinstance(event.get(k), str) for k in keys):
        return None
    return event


@dataclass(frozen=True)
class DeliveryCheck:
    produced: int          # values the producer had acknowledged
    consumed: int          # distinct values consumed
    deliveries: int        # values consumed, counting each time
    lost: tuple[int, ...]  # acknowledged, never consumed
    duplicates: int        # distinct values consumed more than once
    unacknowledged: int    # consumed although the producer never had an acknowledgement (failed or unknown)

    @property
    def redeliveries(self) -> int:
        return self.deliveries - self.consumed

    @property
    def ok(self) -> bool:
        return not self.lost

    def describe(self) -> str:
        text = (f"produced {self.produced:,} records (acknowledged), consumed {self.consumed:,} distinct values in "
                f"{self.deliveries:,} deliveries: {len(self.lost)} lost, {self.duplicates:,} duplicates "
                f"(values seen more than once, {self.redeliveries:,} extra deliveries)")
        if self.unacknowledged:
            text += f", {self.unacknowledged} consumed values the producer never saw acknowledged"
        return text


def check_delivery(acknowledged: Iterable[int], consumed: Counter) -> DeliveryCheck:
    """At-least-once: every acknowledged value must have been consumed at least once."""
    acked = set(acknowledged)
    lost = tuple(sorted(acked.difference(consumed)))
    return DeliveryCheck(produced=len(acked), consumed=len(consumed), deliveries=sum(consumed.values()), lost=lost,
                         duplicates=sum(1 for n in consumed.values() if n > 1),
                         unacknowledged=sum(1 for v in consumed if v not in acked))


def ranges(values: Iterable[int], limit: int = 10) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``"1-3, 7, 9-10"`` (at most ``limit`` runs, then ``...``)."""
    runs: list[list[int]] = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return text + (", ..." if len(runs) > limit else "")


def partition_list(partitions: Iterable[int]) -> str:
    return "[" + ",".join(str(p) for p in sorted(partitions)) + "]"


def describe_event(event: dict) -> str | None:
    """The live line for a member's report (None for the ones shown otherwise, e.g. consumed values)."""
    kind, member = event["event"], event["member"]
    if kind in ("assigned", "revoked", "lost"):
        generation = event.get("generation")
        details = [f"generation {generation if generation is not None else '?'}"]
        if event.get("member_id"):
            details.append(f"member id {event['member_id']}")
        if kind == "revoked" and event.get("committed") is not None:
            details.append("committed before giving them up" if event["committed"] else "nothing new to commit")
        verb = {"assigned": "assigned", "revoked": "revoked ", "lost": "LOST    "}[kind]
        return f"rebalance: {member} {verb} {partition_list(event.get('partitions', []))} ({', '.join(details)})"
    if kind == "started":
        return f"{member} started (pid {event.get('pid')}), subscribing"
    if kind == "closed":
        return (f"{member} closed cleanly ({event.get('commits', 0)} commits acknowledged, "
                f"{event.get('commit_errors', 0)} failed)")
    if kind == "commit_failed":
        return f"{member} commit failed: {event.get('error')}"
    if kind == "error":
        return f"{member} consumer error: {event.get('error')}"
    return None


@dataclass(frozen=True)
class Step:
    at_s: float
    action: str  # start | close | kill | stop-producer
    member: str = ""


def timeline(duration_s: float) -> list[Step]:
    """Members join one by one, one leaves cleanly, one is killed, then the producer stops."""
    d = float(duration_s)
    return [Step(0.0, "start", MEMBERS[0]), Step(round(0.15 * d, 1), "start", MEMBERS[1]),
            Step(round(0.3 * d, 1), "start", MEMBERS[2]), Step(round(0.5 * d, 1), "close", MEMBERS[1]),
            Step(round(0.65 * d, 1), "kill", MEMBERS[2]), Step(d, "stop-producer")]


def throughput_line(counts: dict[str, int], owned: dict[str, set[int]], states: dict[str, str],
                    produced: int, interval_s: float = 1.0) -> str:
    """``records/s  producer 500 | member-1 250 [0,1,2] | member-2 - (killed)``."""
    cells = [f"producer {produced / interval_s:,.0f}"]
    for name in MEMBERS:
        state = states.get(name, "waiting")
        if state == "running":
            cells.append(f"{name} {counts.get(name, 0) / interval_s:,.0f} {partition_list(owned.get(name, ()))}")
        elif counts.get(name):
            cells.append(f"{name} {counts[name] / interval_s:,.0f} ({state})")
        else:
            cells.append(f"{name} - ({state})")
    return "records/s  " + " | ".join(cells)


# -- member process ------------------------------------------------------------------------------
