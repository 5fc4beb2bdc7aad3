"""Kafka's ``kafka-consumer-groups`` tables (pure): rows, lag, and the ``%-Ns`` padding Kafka prints.

``--describe``: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID, left-aligned
and padded as Kafka pads it (GROUP, TOPIC, CONSUMER-ID, HOST >= 15 wide; PARTITION 10; offsets and LAG 15).
Assigned partitions first, member by member (largest assignment first), then partitions with a committed
offset and no owner (CONSUMER-ID/HOST/CLIENT-ID ``-``). ``--members``: GROUP CONSUMER-ID HOST CLIENT-ID
#PARTITIONS; ``--state``: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS; ``--reset-offsets``:
GROUP TOPIC PARTITION NEW-OFFSET.
"""
from __future__ import annotations

from dataclasses import dataclass

from scripts.tools.kafka_consumer_groups.syntax import TP

MISSING = "-"


def lag(current: int | None, end: int | None) -> int | None:
    """Kafka's ``getLag``: unknown without a committed offset (or -1) or without a log end offset."""
    if current is None or current < 0 or end is None:
        return None
    return end - current


@dataclass(frozen=True)
class Member:
    consumer_id: str
    host: str
    client_id: str
    partitions: tuple[TP, ...] = ()


@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str
    partition: int
    current: int | None
    end: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING


def offset_rows(group: str, members: list[Member], committed: dict[TP, int], ends: dict[TP, int]) -> list[OffsetRow]:
    """Owned partitions (largest assignment first), then committed partitions nobody owns."""
    rows: list[OffsetRow] = []
    owned: set[TP] = set()
    for m in sorted((m for m in members if m.partitions), key=lambda m: (-len(m.partitions), m.consumer_id)):
        for tp in sorted(m.partitions):
            owned.add(tp)
            rows.append(OffsetRow(group, *tp, committed.get(tp), ends.get(tp), m.consumer_id, m.host, m.client_id))
    rows += [OffsetRow(group, *tp, committed[tp], ends.get(tp)) for tp in sorted(set(committed) - owned)]
    return rows


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], widths: list[int]) -> list[str]:
    """Kafka's ``%-Ns`` columns (the last one unpadded), after a blank line; no trailing blanks."""
    return [""] + [" ".join(c.ljust(w) for c, w in zip(cells, widths + [0])).rstrip() for cells in [header] + rows]


def _width(minimum: int, values: list[str]) -> int:
    return max([minimum] + [len(v) for v in values])


def format_offsets(rows: list[OffsetRow]) -> list[str]:
    cells = [(r.group, r.topic, str(r.partition), _cell(r.current), _cell(r.end), _cell(lag(r.current, r.end)),
              r.consumer_id, r.host, r.client_id) for r in rows]
    widths = [_width(15, [c[0] for c in cells]), _width(15, [c[1] for c in cells]), 10, 15, 15, 15,
              _width(15, [c[6] for c in cells]), _width(15, [c[7] for c in cells])]
    return _table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                   "CLIENT-ID"), cells, widths)


def format_members(group: str, members: list[Member]) -> list[str]:
    cells = [(group, m.consumer_id, m.host, m.client_id, str(len(m.partitions))) for m in members]
    widths = [_width(15, [c[i] for c in cells]) for i in range(4)]
    return _table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"), cells, widths)


def format_state(group: str, coordinator: str, strategy: str, state: str, members: int) -> list[str]:
    widths = [_width(25, [group]), _width(25, [coordinator]), 20, 15]
    return _table(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                  [(group, coordinator, strategy, state, str(members))], widths)


def format_reset(plans: dict[str, dict[TP, int]]) -> list[str]:
    cells = [(group, t, str(p), str(offset)) for group, plan in plans.items() for (t, p), offset in sorted(plan.items())]
    return _table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), cells, [30, 30, 10])
