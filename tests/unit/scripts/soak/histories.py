"""A builder of synthetic soak histories for the checker's tests.

``History`` hands out monotonic times (1 ms apart unless ``at`` moves the clock) and per-process op
numbers; each helper appends an invoke and its completion in the shape ``scripts.soak.history`` documents.
Txn micro-ops are written as ``("send", key, offset, value)`` and ``("poll", {key: [(offset, value)]})``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from scripts.soak.history import FAIL, INFO, INVOKE, OK, Op

MS = 1_000_000


class History:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.now = 0
        self._next: dict[str, int] = defaultdict(int)

    def at(self, seconds: float) -> "History":
        self.now = max(self.now, int(seconds * 1e9))
        return self

    def _time(self) -> int:
        self.now += MS
        return self.now

    def invoke(self, process: str, f: str, value: Any) -> int:
        op = self._next[process]
        self._next[process] += 1
        self.ops.append(Op(self._time(), process, op, INVOKE, f, value))
        return op

    def complete(self, process: str, op: int, type_: str, f: str, value: Any, error: str | None = None) -> None:
        self.ops.append(Op(self._time(), process, op, type_, f, value, error))

    def send(self, process: str, key: str, value: int, offset: int | None = None, type_: str | None = OK) -> int:
        """An ok send at ``offset`` (None: an implicit ack); ``type_`` fail/info/None (never completed)."""
        op = self.invoke(process, "send", [["send", key, value]])
        if type_ == OK:
            self.complete(process, op, OK, "send", [["send", key, [offset, value]]])
        elif type_ is not None:
            self.complete(process, op, type_, "send", [["send", key, value]], error="TIMED_OUT")
        return op

    def poll(self, process: str, reads: dict[str, list[tuple[int, int]]]) -> int:
        op = self.invoke(process, "poll", [["poll", None]])
        self.complete(process, op, OK, "poll", [["poll", {k: [list(r) for r in rs] for k, rs in reads.items()}]])
        return op

    def txn(self, process: str, mops: list[tuple], type_: str = OK) -> int:
        invoked, done = [], []
        for m in mops:
            if m[0] == "send":
                _, key, offset, value = m
                invoked.append(["send", key, value])
                done.append(["send", key, [offset, value]] if offset is not None or type_ == OK else
                            ["send", key, value])
            else:
                invoked.append(["poll", None])
                done.append(["poll", {k: [list(r) for r in rs] for k, rs in m[1].items()}])
        op = self.invoke(process, "txn", invoked)
        self.complete(process, op, type_, "txn", done)
        return op

    def event(self, process: str, f: str, value: Any, type_: str = OK) -> int:
        op = self.invoke(process, f, [value])
        self.complete(process, op, type_, f, [value])
        return op

    def assign(self, process: str, keys: list[str]) -> int:
        return self.event(process, "assign", ["assign", keys])

    def subscribe(self, process: str, topics: list[str]) -> int:
        return self.event(process, "subscribe", ["subscribe", topics])

    def rebalance(self, process: str, assigned: list[str], revoked: list[str] = ()) -> int:
        return self.event(process, "rebalance", ["rebalance", {"assigned": assigned, "revoked": list(revoked)}])

    def commit(self, process: str, offsets: dict[str, int]) -> int:
        return self.event(process, "commit", ["commit", offsets])

    def renumber(self, process: str) -> None:
        """The process restarts counting its ops from 0 (an older HistoryWriter did)."""
        self._next[process] = 0

    def crash(self, process: str) -> int:
        return self.event(process, "crash", ["crash", None], INFO)


__all__ = ["History", "OK", "FAIL", "INFO"]
