"""The nemesis thread: runs a fault schedule against a ``ZkafkaCluster`` and logs what it did.

``Nemesis(cluster, schedule, log_path, hot_key)``: ``start()`` takes the time origin (monotonic) and starts
the thread; at each spec's ``at_s`` it starts the fault, at ``at_s + duration_s`` it heals it (heals before
starts at the same instant). Actions run one at a time, so an action that takes long (a SIGTERM waiting for
the controlled shutdown, a heal that restarts a broker) delays the ones behind it. A fault that cannot start
logs ``error`` and the schedule goes on; so does a heal that fails (``stop_and_heal`` heals everything
anyway).

``log_path``: one JSON object per line, also returned by ``events()``:
``{"time": monotonic_ns, "event": "start"|"heal"|"error", "kind", "target", "detail", "id", "nodes",
"brokers"}`` where ``target`` is the spec's role, ``id`` the spec's index in the schedule (a start and its
heal share it), ``nodes`` the node names the fault hit and ``brokers`` their broker ids. ``stop_and_heal``'s
sweep over the whole cluster logs ``{"event": "heal", "kind": "final", "target": "all", ...}`` when it found
something left to undo.
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

from zkafka.testing.cluster import ZkafkaCluster
from scripts.soak.nemesis.faults import Applied, Faults, heal_everything
from scripts.soak.nemesis.schedule import FaultSpec

READY_TIMEOUT_S = 180.0
JOIN_TIMEOUT_S = 150.0


def timeline(schedule: list[FaultSpec]) -> list[tuple[float, str, int]]:
    """``(at_s, "start"|"heal", index)`` in the order the nemesis acts: by time; at a tie the heals of
    faults that lasted first, then the starts, then the heals of instantaneous faults (after their start)."""
    def order(step: tuple[float, str, int]) -> tuple[float, int, int]:
        at_s, action, i = step
        rank = 1 if action == "start" else (2 if schedule[i].duration_s <= 0 else 0)
        return at_s, rank, i
    steps = [(s.at_s, "start", i) for i, s in enumerate(schedule)] + [(s.heal_s, "heal", i) for i, s in enumerate(schedule)]
    return sorted(steps, key=order)


class Nemesis:
    def __init__(self, cluster: ZkafkaCluster, schedule: list[FaultSpec], log_path: Path | str, hot_key: str):
        self.cluster = cluster
        self.schedule = list(schedule)
        self.log_path = Path(log_path)
        self.faults = Faults(cluster, hot_key)
        self._active: dict[int, Applied] = {}
        self._events: list[dict] = []
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()  # one action at a time: the thread's or stop_and_heal's
        self._data = threading.Lock()  # the events and counts (read while an action runs)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._origin: float | None = None

    # -- public ------------------------------------------------------------------------------------
    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._origin = time.monotonic()
        self._thread.start()

    def stop_and_heal(self) -> None:
        """Stop the schedule, heal every active fault (the last started first), sweep the cluster for
        anything left (``faults.heal_everything``), then wait until every broker is registered again.
        Idempotent."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_TIMEOUT_S)
        with self._lock:
            for i in sorted(self._active, reverse=True):
                self._heal(i)
            try:
                swept = heal_everything(self.cluster)
            except Exception as exc:  # noqa: BLE001 - logged; the readiness wait says whether it mattered
                self._log("error", "final", "all", f"final heal failed: {type(exc).__name__}: {exc}")
            else:
                if swept:
                    self._log("heal", "final", "all", "; ".join(swept))
        self.cluster.wait_until_ready(timeout=READY_TIMEOUT_S)

    def events(self) -> list[dict]:
        with self._data:
            return list(self._events)

    def counts(self) -> dict[str, int]:
        """Faults started, by kind."""
        with self._data:
            return dict(self._counts)

    # -- the thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        for at_s, action, i in timeline(self.schedule):
            delay = self._origin + at_s - time.monotonic()
            if self._stopping.wait(max(0.0, delay)):
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                if action == "start":
                    self._start(i)
                elif i in self._active:
                    self._heal(i)

    def _start(self, i: int) -> None:
        spec = self.schedule[i]
        try:
            applied = self.faults.start(spec)
        except Exception as exc:  # noqa: BLE001 - a fault that cannot start is logged; the schedule goes on
            self._log("error", spec.kind, spec.target, f"cannot start: {type(exc).__name__}: {exc}", i)
            return
        self._active[i] = applied
        with self._data:
            self._counts[spec.kind] += 1
        self._log("start", spec.kind, spec.target, applied.detail, i, applied)

    def _heal(self, i: int) -> None:
        spec, applied = self.schedule[i], self._active.pop(i)
        try:
            detail = applied.heal()
        except Exception as exc:  # noqa: BLE001 - the final sweep heals it
            self._log("error", spec.kind, spec.target, f"heal failed: {type(exc).__name__}: {exc}", i, applied)
            return
        self._log("heal", spec.kind, spec.target, detail, i, applied)

    def _log(self, event: str, kind: str, target: str, detail: str, i: int | None = None,
             applied: Applied | None = None) -> None:
        line = {"time": time.monotonic_ns(), "event": event, "kind": kind, "target": target, "detail": detail,
                "id": i, "nodes": applied.nodes if applied else [], "brokers": applied.brokers if applied else []}
        with self._data:
            self._events.append(line)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a") as out:
            out.write(json.dumps(line) + "\n")
