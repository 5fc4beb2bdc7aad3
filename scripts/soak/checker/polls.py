"""The checks of assigned consumers: nonmonotonic-poll, int-nonmonotonic-poll, poll-skip, int-poll-skip.

Per process and key, in completion order, each offset read must be above the one read before, with no
visible value of the version order strictly between them (under read_committed, aborted records and
transaction markers take offsets without being visible, so a gap of offsets alone proves nothing).
An ``assign``, ``subscribe``, ``rebalance`` or ``crash`` of the process starts its tracking afresh; so does a
transaction whose outcome is unknown (the copier may have rewound). The polls of an aborted transaction are
not consumption (the copier rewinds to its last committed position) and are not tracked. Processes that ever
subscribed are checked as groups instead.
"""
from __future__ import annotations

from scripts.soak.checker.index import Completed, HistoryIndex, reads_of
from scripts.soak.checker.model import Findings
from scripts.soak.history import INFO, OK

RESETS = ("assign", "subscribe", "rebalance", "crash")


def check_polls(index: HistoryIndex, findings: Findings) -> None:
    positions: dict[str, dict[str, tuple[int, int]]] = {}
    for c in index.completed:
        if c.process in index.subscribers:
            continue
        if c.f in RESETS or (c.f == "txn" and c.type == INFO):
            positions[c.process] = {}
        elif c.type == OK and c.f in ("poll", "txn"):
            _track(index, c, positions.setdefault(c.process, {}), findings)


def _track(index: HistoryIndex, c: Completed, position: dict[str, tuple[int, int]], findings: Findings) -> None:
    for key, offset, value in reads_of(c.value):
        before = position.get(key)
        position[key] = (offset, c.seq)
        if before is None:
            continue
        previous, seq = before
        inside = seq == c.seq
        if offset <= previous:
            kind = "int-nonmonotonic-poll" if inside else "nonmonotonic-poll"
        elif offset == previous + 1 or not index.order(key).visible_between(previous, offset):
            continue
        else:
            kind = "int-poll-skip" if inside else "poll-skip"
        example = {"process": c.process, "op": c.op, "key": key, "offset": offset, "value": value,
                   "previous_offset": previous}
        if kind.endswith("skip"):
            order = index.order(key)
            example["skipped"] = [[order.offsets[i], order.values[i]] for i in order.span(previous + 1, offset - 1)
                                  if order.visible[i]][:5]
        findings.add(kind, example)

