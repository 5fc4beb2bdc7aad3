"""The exactly-once copy checks: for each input topic -> output topic pair of ``CheckConfig.eos_pairs``, the
values read in the output topic are exactly the values acknowledged into the input topic, each at one offset.

A value is *in the input* when it was acknowledged into it or polled from it (an indefinite send that
landed may be copied); eos-missing counts acknowledged input values never read in the output.
"""
from __future__ import annotations

from collections import defaultdict

from scripts.soak.checker.index import HistoryIndex, reads_of
from scripts.soak.checker.model import CheckConfig, Findings


def check_eos(index: HistoryIndex, config: CheckConfig, findings: Findings) -> None:
    if not config.eos_pairs:
        return
    outputs = {out: inp for inp, out in config.eos_pairs.items()}
    read_in: dict[str, set] = defaultdict(set)
    read_out: dict[str, dict] = defaultdict(dict)
    doubled: dict[str, set] = defaultdict(set)
    topic = index.topic
    for c in index.completed:
        if c.f not in ("poll", "txn"):
            continue
        for key, offset, value in reads_of(c.value):
            t = topic(key)
            if t in config.eos_pairs:
                read_in[t].add(value)
            elif t in outputs:
                place = read_out[t].setdefault(value, (key, offset))
                if place != (key, offset):
                    doubled[t].add(value)
    acked_in: dict[str, dict] = defaultdict(dict)
    for (t, value), (key, offset, _) in index.acked.items():
        if t in config.eos_pairs:
            acked_in[t][value] = (key, offset)
    for inp, out in sorted(config.eos_pairs.items()):
        _compare(inp, out, acked_in[inp], read_in[inp], read_out[out], doubled[out], findings)


def _compare(inp: str, out: str, acked: dict, read_in: set, read_out: dict, doubled: set,
             findings: Findings) -> None:
    for value, (key, offset) in acked.items():
        if value not in read_out:
            findings.add("eos-missing", {"input": inp, "output": out, "key": key, "offset": offset,
                                         "value": value})
    for value, (key, offset) in read_out.items():
        if value not in acked and value not in read_in:
            findings.add("eos-extra", {"input": inp, "output": out, "key": key, "offset": offset,
                                       "value": value})
    for value in sorted(doubled):
        findings.add("eos-duplicate", {"output": out, "value": value, "first": list(read_out[value])})
