"""Indexes built once from a history, in one pass, for every check.

Pairing: an ``invoke`` is paired with the next completion of the same ``(process, op)``. A process restarted
after a crash keeps its name and may reuse op numbers, so a ``crash`` invoke, or a second invoke of a pending
``(process, op)``, closes the pending ops of that process as ``info``; so does the end of the history.

Observations: every ``(key, offset, value)`` the history shows, from ok sends that learnt their offset, from
the sends of any transaction whose completion carries offsets, and from every poll (including the polls of
aborted transactions: they observed the log). ``version`` maps key -> offset -> the first value seen there.

Outcomes of a sent value: ``acked`` (an ok send, or a send of a committed transaction; the offset may be
None, an implicit acknowledgement), ``failed`` (a fail send: never written), ``aborted`` (a send of a failed
transaction: written, never visible under read_committed), ``indefinite`` (info sends, sends of info
transactions). A record is *visible* when it is acked or someone polled it, unless it is an aborted
transaction's (under read_committed).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from scripts.soak.history import FAIL, INFO, INVOKE, OK, Op, split_key

ABORTED = "aborted"


class Completed:
    """One op with its outcome. ``seq`` is the position of its invoke in the history (the invoke order)."""
    __slots__ = ("process", "op", "seq", "f", "type", "start", "end", "value")

    def __init__(self, invoke: Op, seq: int, completion: Op | None) -> None:
        self.process, self.op, self.seq, self.f, self.start = invoke.process, invoke.op, seq, invoke.f, invoke.time
        self.type = completion.type if completion is not None else INFO
        self.end = completion.time if completion is not None else None
        value = completion.value if completion is not None and completion.value is not None else invoke.value
        self.value = value if isinstance(value, list) else []

    @property
    def ident(self) -> list:
        return [self.process, self.op]


def pair(ops: Iterable[Op]) -> list[Completed]:
    """Every op with its outcome, in completion order; ops never completed come last as ``info``."""
    done: list[Completed] = []
    pending: dict[str, dict[int, tuple[int, Op]]] = defaultdict(dict)
    for seq, op in enumerate(ops):
        mine = pending[op.process]
        if op.type == INVOKE:
            if op.f == "crash":
                _close(mine, done)
            elif op.op in mine:
                seq0, old = mine.pop(op.op)
                done.append(Completed(old, seq0, None))
            mine[op.op] = (seq, op)
        else:
            seq0, invoke = mine.pop(op.op, (seq, op))
            done.append(Completed(invoke, seq0, op))
    for mine in pending.values():
        _close(mine, done)
    return done


def _close(pending: dict[int, tuple[int, Op]], done: list[Completed]) -> None:
    for seq, invoke in sorted(pending.values(), key=lambda p: p[0]):
        done.append(Completed(invoke, seq, None))
    pending.clear()


def sends_of(mops: list) -> Iterator[tuple[str, int | None, Any]]:
    """``(key, offset or None, value)`` of each send micro-op."""
    for m in mops:
        if m and m[0] == "send" and len(m) >= 3:
            x = m[2]
            if isinstance(x, list):
                yield m[1], x[0], x[1]
            else:
                yield m[1], None, x


def reads_of(mops: list) -> Iterator[tuple[str, int, Any]]:
    """``(key, offset, value)`` of each record every poll micro-op returned, in order."""
    for m in mops:
        if m and m[0] == "poll" and len(m) >= 2 and isinstance(m[1], dict):
            for key, pairs in m[1].items():
                for offset, value in pairs:
                    yield key, offset, value


def topic_of(key: str) -> str:
    return split_key(key)[0]


@dataclass
class VersionOrder:
    """One key's observed offsets in order, their values, and a prefix count of the visible ones."""
    offsets: list[int]
    values: list[Any]
    visible: list[bool]  # acked or polled, and not an aborted transaction's record (under read_committed)
    visible_before: list[int]  # visible_before[i] = visible entries among offsets[:i]

    def visible_between(self, low: int, high: int) -> int:
        """How many visible values sit at offsets strictly between ``low`` and ``high``."""
        i, j = bisect_right(self.offsets, low), bisect_left(self.offsets, high)
        return self.visible_before[j] - self.visible_before[i] if j > i else 0

    def span(self, low: int, high: int) -> range:
        """Indexes of the entries with ``low <= offset <= high``."""
        return range(bisect_left(self.offsets, low), bisect_right(self.offsets, high))


class HistoryIndex:
    """Everything the checks look up, built in one pass over the paired ops.

    A copier copies a value unchanged into another topic, so a record is identified by ``(topic, value)``
    (``tv``): ``acked``, ``polled``, ``where`` and the outcome sets are keyed by it. An aborted transaction's
    copy and the committed copy after it share a value, so an aborted send that learnt its offset is also
    known by position (``aborted_at``), and only the position tells which copy a poll read.
    """

    def __init__(self, ops: Iterable[Op], read_committed: bool = True) -> None:
        self.read_committed = read_committed
        self.completed = pair(ops)
        self.t0 = min((c.start for c in self.completed), default=0)  # examples give times from here
        self.version: dict[str, dict[int, Any]] = defaultdict(dict)
        self.clashes: dict[tuple[str, int], set] = {}
        self.where: dict[tuple[str, Any], tuple[str, int]] = {}
        self.elsewhere: dict[tuple[str, Any], set[tuple[str, int]]] = {}
        self.acked: dict[tuple[str, Any], tuple[str, int | None, Completed]] = {}
        self.failed: set[tuple[str, Any]] = set()
        self.aborted: set[tuple[str, Any]] = set()
        self.aborted_at: set[tuple[str, int]] = set()
        self.indefinite: set[tuple[str, Any]] = set()
        self.writer: dict[tuple[str, Any], Completed] = {}
        self.writer_at: dict[tuple[str, int], Completed] = {}
        self.polled: set[tuple[str, Any]] = set()
        self.max_read: dict[str, int] = {}
        self.subscribers: dict[str, frozenset[str]] = {}
        self.bumps: dict[str, list[int]] = defaultdict(list)  # process -> times its producer epoch bumps began
        self.stats = _Stats()
        self._topics: dict[str, str] = {}
        self._orders: dict[str, VersionOrder] = {}
        for c in self.completed:
            self._add(c)

    def topic(self, key: str) -> str:
        t = self._topics.get(key)
        if t is None:
            t = self._topics[key] = topic_of(key)
        return t

    def _add(self, c: Completed) -> None:
        self.stats.op(c)
        if c.f == "send":
            self._sends(c, c.type)
        elif c.f == "txn":
            self._sends(c, {OK: OK, FAIL: ABORTED, INFO: INFO}[c.type])
            self._reads(c)
        elif c.f == "poll" and c.type == OK:
            self._reads(c)
        elif c.f == "subscribe" and c.type != FAIL:
            topics = c.value[0][1] if c.value and len(c.value[0]) > 1 else []
            self.subscribers[c.process] = frozenset(topics or [])
        elif c.f == "epoch-bump":
            self.bumps[c.process].append(c.start)

    def spans_a_bump(self, c: Completed) -> bool:
        """Whether the producer of send ``c`` began an epoch bump while ``c`` was in flight."""
        end = c.end if c.end is not None else float("inf")
        return any(c.start < t < end for t in self.bumps.get(c.process, ()))

    def _sends(self, c: Completed, outcome: str) -> None:
        for key, offset, value in sends_of(c.value):
            tv = (self.topic(key), value)
            self.stats.send(c.f, outcome, offset)
            if outcome == OK:
                self.acked[tv] = (key, offset, c)
                self.writer[tv] = c
            else:
                self.writer.setdefault(tv, c)
                {FAIL: self.failed, ABORTED: self.aborted, INFO: self.indefinite}[outcome].add(tv)
            if offset is not None and outcome != FAIL:
                self.writer_at[(key, offset)] = c
                if outcome == ABORTED:
                    self.aborted_at.add((key, offset))
                self._observe(key, offset, value, tv, outcome != ABORTED)

    def _reads(self, c: Completed) -> None:
        """The hot loop of the index (every record every poll returned): ``_observe`` inlined."""
        max_read, polled, where, version = self.max_read, self.polled, self.where, self.version
        n = 0
        for m in c.value:
            if not (m and m[0] == "poll" and len(m) >= 2 and isinstance(m[1], dict)):
                continue
            for key, pairs in m[1].items():
                topic, at, high = self.topic(key), version[key], max_read.get(key, -1)
                for offset, value in pairs:
                    tv = (topic, value)
                    polled.add(tv)
                    if offset > high:
                        high = offset
                    seen = at.setdefault(offset, value)
                    if seen != value:
                        self.clashes.setdefault((key, offset), {seen}).add(value)
                    place = where.setdefault(tv, (key, offset))
                    if place[1] != offset or place[0] != key:
                        self.elsewhere.setdefault(tv, set()).add((key, offset))
                n += len(pairs)
                if high >= 0:
                    max_read[key] = high
        self.stats.values_read += n

    def _observe(self, key: str, offset: int, value: Any, tv: tuple[str, Any], placed: bool) -> None:
        at = self.version[key]
        seen = at.setdefault(offset, value)
        if seen != value:
            self.clashes.setdefault((key, offset), {seen}).add(value)
        if placed:
            place = self.where.setdefault(tv, (key, offset))
            if place != (key, offset):
                self.elsewhere.setdefault(tv, set()).add((key, offset))

    def is_aborted_read(self, key: str, offset: int, value: Any) -> bool:
        """Whether a poll of ``value`` at ``(key, offset)`` read a failed send or an aborted transaction's."""
        tv = (self.topic(key), value)
        if (key, offset) in self.aborted_at or tv in self.failed:
            return True
        # without the aborted copy's offset: aborted only when no copy that may be visible was sent
        return (tv in self.aborted and tv not in self.acked and tv not in self.indefinite
                and self.writer_at.get((key, offset)) is None)

    def _visible(self, key: str, offset: int, value: Any) -> bool:
        if (key, offset) in self.aborted_at:
            return not self.read_committed
        tv = (self.topic(key), value)
        return tv in self.acked or tv in self.polled

    def order(self, key: str) -> VersionOrder:
        """The version order of a key (built on first use)."""
        order = self._orders.get(key)
        if order is None:
            at = self.version.get(key, {})
            offsets = sorted(at)
            values = [at[o] for o in offsets]
            visible = [self._visible(key, o, v) for o, v in zip(offsets, values)]
            prefix, n = [0], 0
            for seen in visible:
                n += seen
                prefix.append(n)
            order = self._orders[key] = VersionOrder(offsets, values, visible, prefix)
        return order

    def stats_json(self) -> dict:
        s = self.stats.to_json()
        s["values_read_distinct"] = len(self.polled)
        s["highest_offset_read"] = dict(sorted(self.max_read.items()))
        return s


class _Stats:
    def __init__(self) -> None:
        self.ops: Counter = Counter()
        self.sends: Counter = Counter()
        self.txns: Counter = Counter()
        self.values_read = 0

    def op(self, c: Completed) -> None:
        self.ops[f"{c.f}:{c.type}"] += 1
        if c.f == "txn":
            self.txns[{OK: "committed", FAIL: "aborted", INFO: "indefinite"}[c.type]] += 1

    def send(self, f: str, outcome: str, offset: int | None) -> None:
        if f == "send":
            self.sends["implicit_acks" if outcome == OK and offset is None else outcome] += 1
        else:
            self.sends[f"txn_{outcome}"] += 1

    def to_json(self) -> dict:
        ops: dict[str, dict[str, int]] = {}
        for name, n in sorted(self.ops.items()):
            f, type_ = name.split(":")
            ops.setdefault(f, {})[type_] = n
        return {"ops": ops,
                "sends": {"ok": self.sends[OK], "implicit_acks": self.sends["implicit_acks"],
                          "fail": self.sends[FAIL], "info": self.sends[INFO],
                          "txn_ok": self.sends["txn_ok"], "txn_aborted": self.sends["txn_aborted"],
                          "txn_info": self.sends["txn_info"]},
                "polls": self.ops["poll:ok"], "values_read": self.values_read, "epoch_bumps": self.ops["epoch-bump:ok"],
                "txns": {k: self.txns[k] for k in ("committed", "aborted", "indefinite")}}
