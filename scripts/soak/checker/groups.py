"""The checks of subscribed consumer groups: group-gap, commit-backwards, unexpected-rebalance.

A group is every process that subscribed to the same set of topics. What a group consumed is every record
its members read in ok polls and committed transactions; on each key, from the first offset it consumed to
the highest, every visible value of the version order must be among them (position == consumed). Its
committed offsets, in completion order, never go down per key. A ``rebalance`` is expected within
``rebalance_grace_s`` after a member's ``subscribe``, or around a member's ``crash`` or leave (its last op,
overall and before each crash), or within a fault that cut the clients from the cluster (up to
``rebalance_grace_s`` after it healed: ``CheckConfig.client_fault_windows``); any other rebalance was caused by
the cluster. A rebalance is judged where it starts, once: a member's assignment that ends a spell in which it held
nothing (its partitions revoked or lost earlier) completes the rebalance that revocation began, however long the
group took (Kafka waits out the session of every member that never rejoins), and is not judged again; nor is a
revocation while another member is in such a spell (and its process still runs): the eager protocol revokes every
member in one rebalance, each on its next heartbeat after the coordinator began preparing it (say when the member
whose session timed out rejoins, as late as a coordinator answers), so that revocation is the same rebalance's.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict

from scripts.soak.checker.index import Completed, HistoryIndex, reads_of
from scripts.soak.checker.model import CheckConfig, Findings
from scripts.soak.history import OK


def groups_of(index: HistoryIndex) -> dict[frozenset[str], set[str]]:
    groups: dict[frozenset[str], set[str]] = defaultdict(set)
    for process, topics in index.subscribers.items():
        groups[topics].add(process)
    return dict(groups)


def check_groups(index: HistoryIndex, config: CheckConfig, findings: Findings) -> None:
    for topics, members in sorted(groups_of(index).items(), key=lambda g: sorted(g[0])):
        ops = sorted((c for c in index.completed if c.process in members), key=lambda c: c.seq)
        name = sorted(topics)
        _check_gaps(index, name, ops, findings)
        _check_commits(name, ops, findings)
        _check_rebalances(name, ops, config, index.t0, findings)


def _check_gaps(index: HistoryIndex, name: list[str], ops: list[Completed], findings: Findings) -> None:
    consumed: dict[str, set[int]] = defaultdict(set)
    for c in ops:
        if c.type == OK and c.f in ("poll", "txn"):
            for key, offset, _ in reads_of(c.value):
                consumed[key].add(offset)
    for key, offsets in sorted(consumed.items()):
        order = index.order(key)
        for i in order.span(min(offsets), max(offsets)):
            if order.visible[i] and order.offsets[i] not in offsets:
                findings.add("group-gap", {"group": name, "key": key, "offset": order.offsets[i],
                                           "value": order.values[i]})


def _check_commits(name: list[str], ops: list[Completed], findings: Findings) -> None:
    committed: dict[str, tuple[int, Completed]] = {}
    for c in sorted((c for c in ops if c.f == "commit" and c.type == OK), key=lambda c: c.end):
        for m in c.value:
            if not (m and m[0] == "commit" and isinstance(m[1], dict)):
                continue
            for key, offset in m[1].items():
                before = committed.get(key)
                if before is not None and offset < before[0]:
                    findings.add("commit-backwards", {"group": name, "key": key, "offset": offset,
                                                      "previous": before[0], "process": c.process, "op": c.op,
                                                      "previous_process": before[1].process})
                committed[key] = (offset, c)


def _check_rebalances(name: list[str], ops: list[Completed], config: CheckConfig, t0: int, findings: Findings) -> None:
    grace = int(config.rebalance_grace_s * 1e9)
    joins: list[int] = []
    leaves: list[int] = []
    gone: dict[str, list[int]] = defaultdict(list)  # per process, the last op before each crash and its very last
    last: dict[str, int] = {}
    for c in ops:
        if c.f == "subscribe":
            joins.append(c.start)
        elif c.f == "crash":
            leaves.append(c.start)
            if c.process in last:
                leaves.append(last[c.process])
                gone[c.process].append(last[c.process])
        last[c.process] = c.end if c.end is not None else c.start
    leaves.extend(last.values())
    for process, t in last.items():
        gone[process].append(t)
    joins.sort()
    leaves.sort()
    holding: dict[str, set[str]] = {}  # per member, the keys it holds after its last rebalance event
    waiting: dict[str, int] = {}  # per member holding nothing since a revocation: when that revocation came
    for c in sorted((c for c in ops if c.f == "rebalance" and c.type == OK), key=lambda c: c.start):
        t = c.start
        assigned, revoked = _moved(c)
        holding[c.process] = (holding.get(c.process, set()) - revoked) | assigned
        if not revoked and c.process in waiting:  # its assignment (maybe empty): the rebalance's second half
            del waiting[c.process]
            continue
        in_progress = _rebalance_in_progress(c.process, t, waiting, gone)
        if holding[c.process]:
            waiting.pop(c.process, None)
        elif revoked:
            waiting.setdefault(c.process, t)
        if in_progress:
            continue
        if bisect_right(joins, t) > bisect_left(joins, t - grace) or bisect_right(leaves, t + grace) > bisect_left(
                leaves, t - grace):
            continue
        if any(start <= t <= end + grace for start, end in config.client_fault_windows):
            continue
        findings.add("unexpected-rebalance", {"group": name, "process": c.process, "op": c.op,
                                              "at_s": round((t - t0) / 1e9, 3), "value": c.value})


def _rebalance_in_progress(process: str, t: int, waiting: dict[str, int], gone: dict[str, list[int]]) -> bool:
    """True when a member other than ``process`` has held nothing since a revocation before ``t`` and its process
    has not ended (crashed or made its last op) since: the group's rebalance that revocation began is under way."""
    return any(other != process and bisect_left(gone[other], since) == bisect_left(gone[other], t)
               for other, since in waiting.items())


def _moved(c: Completed) -> tuple[set[str], set[str]]:
    """(assigned, revoked) keys of the rebalance event ``c``."""
    assigned, revoked = set(), set()
    for m in c.value:
        if m and m[0] == "rebalance" and isinstance(m[1], dict):
            assigned |= set(m[1].get("assigned", ()))
            revoked |= set(m[1].get("revoked", ()))
    return assigned, revoked
