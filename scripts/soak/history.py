"""The soak's history: one JSON line per operation, the shape Jepsen's Kafka checker reads (``jepsen.tests.kafka``).

Every workload process appends to its own file (``history-<process>.jsonl``; no two processes share a file)
and the runner merges them by ``time``. A line::

    {"time": 81234567890, "process": "producer-0", "op": 17, "type": "invoke", "f": "send",
     "value": [["send", "soak/2", 1043]]}
    {"time": 81240012345, "process": "producer-0", "op": 17, "type": "ok", "f": "send",
     "value": [["send", "soak/2", [5512, 1043]]]}

Fields:
- ``time``: ``time.monotonic_ns()`` (CLOCK_MONOTONIC: one clock for every process of this host).
- ``process``: the workload process that ran the op (``producer-0``, ``reader-1``, ``group-0``, ``copier-0``).
  A process restarted after a crash keeps its name; a ``crash`` op (type ``info``) marks the boundary.
- ``op``: per process, increasing; pairs an ``invoke`` with its completion (a producer has many sends in
  flight at once, unlike a Jepsen process).
- ``type``: ``invoke``; then exactly one of ``ok`` (it happened), ``fail`` (it definitely did not happen),
  ``info`` (indefinite: it may or may not have happened, e.g. a send whose delivery timed out). An invoke
  with no completion at the end of the history counts as ``info``.
- ``f``: ``send`` | ``poll`` | ``txn`` | ``assign`` | ``subscribe`` | ``commit`` | ``rebalance`` | ``crash`` |
  ``epoch-bump``.
- ``value``: a list of micro-ops (``txn`` has several; the others one):
  - ``["send", key, value]`` on invoke; ``["send", key, [offset, value]]`` on ok. ``offset`` is null
    when the client acknowledged the send without learning its offset (librdkafka's implicit
    acknowledgement of an idempotent batch after a later one succeeded).
  - ``["poll", {key: [[offset, value], ...]}]`` on ok (invoke: ``["poll", null]``).
  - ``["assign", [key, ...]]`` / ``["subscribe", [topic, ...]]`` / ``["rebalance", {"assigned": [key...],
    "revoked": [key...]}]`` (the group's callbacks, recorded as ok ops).
  - ``["commit", {key: offset}]``: the next offset to read, as Kafka commits it.
  - ``["epoch-bump", reason]`` (an ok op of an idempotent producer): librdkafka began draining to bump its
    producer epoch; what then waits for a retry is re-sent under the new epoch from sequence 0.
- ``error`` (optional, on fail/info): the client's error name.

A key is ``"<topic>/<partition>"``; values are integers unique per key (each producer owns a disjoint
range), never retried above the client (Jepsen's rule).
"""
from __future__ import annotations

import heapq
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
TYPES = (INVOKE, OK, FAIL, INFO)
FUNCTIONS = ("send", "poll", "txn", "assign", "subscribe", "commit", "rebalance", "crash", "epoch-bump")


def key_of(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def split_key(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("/")
    return topic, int(partition)


@dataclass(frozen=True, slots=True)
class Op:
    """One line of the history."""
    time: int
    process: str
    op: int
    type: str
    f: str
    value: Any = None
    error: str | None = None

    def to_json(self) -> str:
        line = {"time": self.time, "process": self.process, "op": self.op, "type": self.type, "f": self.f,
                "value": self.value}
        if self.error is not None:
            line["error"] = self.error
        return json.dumps(line, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> "Op":
        d = json.loads(line)
        if d.get("type") not in TYPES or d.get("f") not in FUNCTIONS:
            raise ValueError(f"not a history line: {line[:200]}")
        return cls(d["time"], d["process"], d["op"], d["type"], d["f"], d.get("value"), d.get("error"))


@dataclass
class HistoryWriter:
    """One process's history file; thread-safe (delivery callbacks and the main loop both write).
    Every line is flushed to the OS at once, so a killed workload loses nothing it recorded. Opening an
    existing file appends to it and numbers ops on from its highest."""
    path: Path
    process: str
    _file: IO[str] | None = field(default=None, init=False)
    _next_op: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        if Path(self.path).exists():  # a restarted process goes on numbering where its predecessor stopped
            _drop_torn_line(Path(self.path))
            self._next_op = max((o.op + 1 for o in read_file(self.path)), default=0)
        self._file = open(self.path, "a", buffering=1)

    def invoke(self, f: str, value: Any) -> int:
        with self._lock:
            op = self._next_op
            self._next_op += 1
            self._write(Op(time.monotonic_ns(), self.process, op, INVOKE, f, value))
            return op

    def complete(self, op: int, type_: str, f: str, value: Any, error: str | None = None) -> None:
        if type_ not in (OK, FAIL, INFO):
            raise ValueError(f"a completion is ok, fail or info, not {type_!r}")
        with self._lock:
            self._write(Op(time.monotonic_ns(), self.process, op, type_, f, value, error))

    def event(self, f: str, value: Any, type_: str = OK) -> None:
        """An op that completes as it happens (a rebalance callback, a crash): invoke and completion."""
        op = self.invoke(f, value)
        self.complete(op, type_, f, value)

    def _write(self, op: Op) -> None:
        self._file.write(op.to_json() + "\n")

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _drop_torn_line(path: Path) -> None:
    """Cut a last line its killed writer left without its newline, so that appending goes on cleanly."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def read_file(path: Path) -> Iterator[Op]:
    """A file's ops; a torn last line (the process was killed mid-write) is dropped, anything else bad raises."""
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines):
        if not line:
            continue
        try:
            yield Op.from_json(line)
        except ValueError:
            if n == len(lines) - 1:  # no newline after it: torn
                return
            raise


def merge(paths: Iterable[Path]) -> list[Op]:
    """Every process's ops in one list ordered by time (each file is already in time order)."""
    return list(heapq.merge(*(read_file(p) for p in paths), key=lambda o: o.time))


def write(ops: Iterable[Op], out: IO[str]) -> None:
    for op in ops:
        out.write(op.to_json() + "\n")
