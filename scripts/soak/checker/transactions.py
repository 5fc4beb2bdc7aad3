"""The checks of transactions: G1a, precommitted-read, int-send-skip, G0 (ww cycles), G1c (wr-only cycles).

Nodes of the dependency graphs are committed transactions (ok ``txn`` ops), identified as ``[process, op]``.
ww: on a key, consecutive writes of two committed transactions in the version order (T1's offset below T2's).
wr: T2 polled a value T1 sent. Cycles are found as strongly connected components (an iterative Tarjan).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from scripts.soak.checker.index import Completed, HistoryIndex, reads_of, sends_of
from scripts.soak.checker.model import Findings
from scripts.soak.history import FAIL, OK

MAX_CYCLE_EXAMPLE = 8


def check_aborted_reads(index: HistoryIndex, findings: Findings) -> None:
    """G1a: a poll (of any op) read a value whose send failed or whose transaction aborted."""
    if not index.failed and not index.aborted:
        return
    for c in index.completed:
        if c.f not in ("poll", "txn"):
            continue
        for key, offset, value in reads_of(c.value):
            if index.is_aborted_read(key, offset, value):
                writer = index.writer_at.get((key, offset)) or index.writer[(index.topic(key), value)]
                findings.add("G1a", {"process": c.process, "op": c.op, "key": key, "offset": offset, "value": value,
                                     "writer": writer.ident, "writer_type": writer.type})


def check_transactions(index: HistoryIndex, findings: Findings) -> None:
    committed = [c for c in index.completed if c.f == "txn" and c.type == OK]
    for c in index.completed:
        if c.f == "txn" and c.type != FAIL:
            _precommitted(index, c, findings)
    for c in committed:
        _send_skips(index, c, findings)
    report_cycles("G0", ww_edges(index), findings)
    report_cycles("G1c", wr_edges(index, committed), findings)


def _precommitted(index: HistoryIndex, c: Completed, findings: Findings) -> None:
    """A copier reads a value in one topic and sends it to another: only a read in the topic sent to counts."""
    sent = {(index.topic(key), value) for key, _, value in sends_of(c.value)}
    if not sent:
        return
    for key, offset, value in reads_of(c.value):
        if (index.topic(key), value) in sent:
            findings.add("precommitted-read", {"process": c.process, "op": c.op, "key": key, "offset": offset,
                                               "value": value})


def _send_skips(index: HistoryIndex, c: Completed, findings: Findings) -> None:
    by_key: dict[str, list[int]] = defaultdict(list)
    for key, offset, _ in sends_of(c.value):
        if offset is not None:
            by_key[key].append(offset)
    for key, offsets in by_key.items():
        if len(offsets) < 2:
            continue
        offsets.sort()
        order = index.order(key)
        for i in order.span(offsets[0], offsets[-1]):
            if order.visible[i] and index.writer_at.get((key, order.offsets[i])) is not c:
                findings.add("int-send-skip", {"process": c.process, "op": c.op, "key": key,
                                               "offset": order.offsets[i], "value": order.values[i]})
                break


def ww_edges(index: HistoryIndex) -> dict[Completed, set[Completed]]:
    edges: dict[Completed, set[Completed]] = defaultdict(set)
    keys = {key for key, _, c in index.acked.values() if c.f == "txn"}
    for key in keys:
        before: Completed | None = None
        for offset in index.order(key).offsets:
            writer = index.writer_at.get((key, offset))
            if writer is None or writer.f != "txn" or writer.type != OK:
                continue
            if before is not None and before is not writer:
                edges[before].add(writer)
            before = writer
    return edges


def wr_edges(index: HistoryIndex, committed: list[Completed]) -> dict[Completed, set[Completed]]:
    edges: dict[Completed, set[Completed]] = defaultdict(set)
    for c in committed:
        for key, _, value in reads_of(c.value):
            writer = index.writer.get((index.topic(key), value))
            if writer is not None and writer is not c and writer.f == "txn" and writer.type == OK:
                edges[writer].add(c)
    return edges


def report_cycles(kind: str, edges: dict[Completed, set[Completed]], findings: Findings) -> None:
    for component in strongly_connected(edges):
        if len(component) > 1:
            members = sorted(component, key=lambda c: c.seq)[:MAX_CYCLE_EXAMPLE]
            findings.add(kind, {"transactions": [c.ident for c in members], "size": len(component)})


def strongly_connected(edges: dict[Any, set[Any]]) -> Iterable[list[Any]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit on long chains)."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    stack: list[Any] = []
    on_stack: set = set()
    counter = 0
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                yield _pop_component(stack, on_stack, node)


def _pop_component(stack: list, on_stack: set, root: Any) -> list:
    """Tarjan's step at a component's root: everything above it on the stack, and it, form the component."""
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component
