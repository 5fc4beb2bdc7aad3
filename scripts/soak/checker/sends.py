"""The checks of what the producers wrote: inconsistent-offsets, duplicate, lost-write, unseen,
nonmonotonic-send and int-nonmonotonic-send."""
from __future__ import annotations

from scripts.soak.checker.index import HistoryIndex, sends_of
from scripts.soak.checker.model import Findings
from scripts.soak.history import OK


def check_offsets(index: HistoryIndex, findings: Findings) -> None:
    """inconsistent-offsets: one (key, offset), several values; duplicate: one value at several offsets of a
    topic (a copy into another topic is no duplicate; nor is an aborted copy followed by a committed one);
    duplicate-after-bump when its send was in flight as its producer bumped its epoch."""
    for (key, offset), values in sorted(index.clashes.items()):
        findings.add("inconsistent-offsets", {"key": key, "offset": offset, "values": sorted(values)})
    for tv, places in index.elsewhere.items():
        committed = (places | {index.where[tv]}) - index.aborted_at
        if len(committed) > 1:
            writer = index.writer.get(tv)
            bumped = writer is not None and writer.f == "send" and index.spans_a_bump(writer)
            findings.add("duplicate-after-bump" if bumped else "duplicate",
                         {"value": tv[1], "at": [list(p) for p in sorted(committed)]})


def check_acked(index: HistoryIndex, findings: Findings) -> None:
    """unseen: an acked value nobody polled; lost-write: one of those with a higher offset of its key read."""
    polled, max_read = index.polled, index.max_read
    for tv, (key, offset, c) in index.acked.items():
        if tv in polled:
            continue
        example = {"key": key, "offset": offset, "value": tv[1], "process": c.process, "op": c.op}
        findings.add("unseen", example)
        if offset is not None and max_read.get(key, -1) > offset:
            findings.add("lost-write", dict(example, highest_read=max_read[key]))


def check_send_order(index: HistoryIndex, findings: Findings) -> None:
    """Per (process, key), the acked sends with offsets in invoke order land at increasing offsets."""
    last: dict[tuple[str, str], tuple[int, int, int]] = {}
    acked = sorted((c for c in index.completed if c.type == OK and c.f in ("send", "txn")), key=lambda c: c.seq)
    for c in acked:
        for key, offset, value in sends_of(c.value):
            if offset is None:
                continue
            chain = (c.process, key)
            before = last.get(chain)
            if before is not None and offset <= before[0]:
                kind = "int-nonmonotonic-send" if before[1] == c.seq else "nonmonotonic-send"
                findings.add(kind, {"process": c.process, "key": key, "offset": offset, "value": value,
                                    "previous_offset": before[0], "previous_value": before[2], "op": c.op})
            last[chain] = (offset, c.seq, value)

