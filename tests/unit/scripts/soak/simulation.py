"""A seeded-random simulation of a clean soak: producers with sends in flight (acked, implicitly acked,
indefinite that landed or not, failed), transactional copiers that abort at random or crash on a commit of
unknown outcome (committed or not) and restart from the committed position, an assigned reader and a
subscribed group (random rebalances, a commit after each poll), all interleaved, then a final drain. Every
history it writes is correct, so the checker must find it valid."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .histories import FAIL, INFO, OK, History

SOAK = [f"soak/{p}" for p in range(3)]
TXN_IN = [f"txn-in/{p}" for p in range(2)]
TXN_OUT = [f"txn-out/{p}" for p in range(2)]


@dataclass
class Entry:
    offset: int
    value: int | None  # None: a transaction marker
    visible: bool


@dataclass
class Log:
    entries: dict[str, list[Entry]] = field(default_factory=lambda: {k: [] for k in SOAK + TXN_IN + TXN_OUT})

    def append(self, key: str, value: int | None, visible: bool) -> Entry:
        entries = self.entries[key]
        entry = Entry(len(entries), value, visible)
        entries.append(entry)
        return entry

    def after(self, key: str, offset: int, limit: int) -> list[Entry]:
        """Up to ``limit`` visible entries at or above ``offset``."""
        return [e for e in self.entries[key][offset:] if e.visible][:limit]


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.h = History()
        self.log = Log()
        self.values = {"p0": 0, "p1": 10**6, "p2": 2 * 10**6}
        self.in_flight: dict[str, list[tuple[int, str, int, Entry | None, str | None]]] = {p: [] for p in self.values}
        self.copied = {k: 0 for k in TXN_IN}  # the copier's committed position per input key
        self.read = {k: 0 for k in SOAK + TXN_IN + TXN_OUT}  # the reader's position
        self.committed = {k: 0 for k in SOAK}  # the group's committed offsets
        self.owner: dict[str, str] = {}

    def run(self, steps: int) -> History:
        self.h.assign("r0", SOAK + TXN_IN + TXN_OUT)
        for member in ("g0", "g1"):
            self.h.subscribe(member, ["soak"])
        self.rebalance()
        for c, key in enumerate(TXN_IN):
            self.h.assign(f"c{c}", [key])
        actions = [self.send, self.send, self.send, self.deliver, self.deliver, self.copy, self.reader_poll,
                   self.group_poll, self.rebalance]
        for _ in range(steps):
            self.rng.choice(actions)()
        self.drain()
        return self.h

    def send(self) -> None:
        process = self.rng.choice(list(self.values))
        key = self.rng.choice(TXN_IN if process == "p2" else SOAK)
        self.values[process] += 1
        value = self.values[process]
        outcome = self.rng.choices([OK, "implicit", "info-landed", INFO, FAIL, None], [80, 5, 4, 4, 4, 3])[0]
        entry = self.log.append(key, value, True) if outcome in (OK, "implicit", "info-landed") else None
        op = self.h.invoke(process, "send", [["send", key, value]])
        self.in_flight[process].append((op, key, value, entry, outcome))

    def deliver(self) -> None:
        process = self.rng.choice(list(self.values))
        flight = self.in_flight[process]
        for _ in range(min(len(flight), self.rng.randint(1, 4))):
            op, key, value, entry, outcome = flight.pop(0)
            if outcome == OK or outcome == "implicit":
                offset = entry.offset if outcome == OK else None
                self.h.complete(process, op, OK, "send", [["send", key, [offset, value]]])
            elif outcome is not None:
                self.h.complete(process, op, INFO if outcome != FAIL else FAIL, "send", [["send", key, value]])

    def copy(self, force: bool = False) -> None:
        c = self.rng.randrange(len(TXN_IN))
        key_in, key_out = TXN_IN[c], TXN_OUT[c]
        records = self.log.after(key_in, self.copied[key_in], self.rng.randint(1, 4))
        if not records:
            return
        outcome = OK if force else self.rng.choices([OK, FAIL, INFO], [75, 17, 8])[0]
        commit = outcome == OK or (outcome == INFO and self.rng.random() < 0.5)  # info: the commit may be done
        mops: list[tuple] = [("poll", {key_in: [(e.offset, e.value) for e in records]})]
        for e in records:
            offset = self.log.append(key_out, e.value, commit).offset
            mops.append(("send", key_out, offset if outcome == OK else None, e.value))
        self.log.append(key_out, None, False)
        self.h.txn(f"c{c}", mops, outcome)
        if outcome == INFO:  # the copier exits; its replacement starts from the committed position
            self.h.crash(f"c{c}")
        if commit:
            self.copied[key_in] = records[-1].offset + 1

    def reader_poll(self, limit: int | None = None) -> int:
        keys = self.rng.sample(list(self.read), self.rng.randint(1, 3)) if limit is None else list(self.read)
        reads = {}
        for key in keys:
            records = self.log.after(key, self.read[key], limit or self.rng.randint(1, 5))
            if records:
                reads[key] = [(e.offset, e.value) for e in records]
                self.read[key] = records[-1].offset + 1
        if reads:
            self.h.poll("r0", reads)
        return len(reads)

    def group_poll(self, member: str | None = None, limit: int | None = None) -> int:
        member = member or self.rng.choice(["g0", "g1"])
        reads = {}
        for key in [k for k, m in self.owner.items() if m == member]:
            records = self.log.after(key, self.committed[key], limit or self.rng.randint(1, 5))
            if records:
                reads[key] = [(e.offset, e.value) for e in records]
        if reads:
            self.h.poll(member, reads)
            offsets = {k: rs[-1][0] + 1 for k, rs in reads.items()}
            self.h.commit(member, offsets)
            self.committed.update(offsets)
        return len(reads)

    def rebalance(self) -> None:
        before = dict(self.owner)
        self.owner = {k: self.rng.choice(["g0", "g1"]) for k in SOAK}
        for member in ("g0", "g1"):
            mine = [k for k, m in self.owner.items() if m == member]
            self.h.rebalance(member, mine, [k for k, m in before.items() if m == member])

    def drain(self) -> None:
        for process in self.values:
            while self.in_flight[process]:
                self.deliver()
        for c, key in enumerate(TXN_IN):
            while self.log.after(key, self.copied[key], 1):
                self.copy(force=True)
        while self.reader_poll(limit=10**6):
            pass
        for member in ("g0", "g1"):
            self.group_poll(member, limit=10**6)
