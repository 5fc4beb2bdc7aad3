"""``zkafka bench all``: the scenarios, against ours and (``--peer tansu``) the peer, in one run.

Single-broker scenarios run on a one-broker zkafka cluster and on the peer, alternating run by run
(ours, peer, ours, peer, ...) so that whatever else the machine does falls on both; RF 3 scenarios on
a three-broker cluster. Each scenario first runs once as a warm-up (a tenth of its records; not
counted), then ``reps`` times on fresh topics. The result holds every run, the summaries (median and
range), the ratios ours/peer and the goals (``scenarios.goals``).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from scripts.bench.common import machine
from scripts.bench.suite import runner
from scripts.bench.suite.scenarios import Scenario, goals, summarise_runs
from scripts.bench.suite.targets import Target, TansuTarget, ZkafkaTarget

WARM_UP_FRACTION = 10


@dataclass
class SuiteOptions:
    scenarios: list[Scenario]
    reps: int = 3
    peer: str | None = None
    duration_s: float = 10.0  # each latency run
    records_scale: float = 1.0  # multiplies every scenario's record cap (0.1 for a quick look)
    session_timeout_ms: int = 6000
    initial_rebalance_delay_ms: int = 3000
    directory: Path | None = None
    peer_binary: Path | None = None


def _scaled(s: Scenario, scale: float) -> Scenario:
    return replace(s, records=max(1000, int(s.records * scale)))


def _warm_up(target: Target, s: Scenario, options: SuiteOptions) -> None:
    if s.kind in ("produce", "consume"):
        runner.run_once(target, replace(s, records=max(1000, s.records // WARM_UP_FRACTION)), options.duration_s)
    elif s.kind == "latency":
        runner.run_once(target, s, min(2.0, options.duration_s))
    elif s.kind == "group":
        runner.run_once(target, s, options.duration_s)


def _run_on(targets: list[Target], scenarios: list[Scenario], options: SuiteOptions, runs: dict) -> None:
    for s in scenarios:
        on = [t for t in targets if t.name == "zkafka" or s.peer]
        for target in on:
            runner.progress(f"{s.id} ({s.title}) on {target.name}: warm-up")
            _warm_up(target, s, options)
        for rep in range(options.reps):
            for target in on:
                runner.progress(f"{s.id} on {target.name}: run {rep + 1}/{options.reps}")
                try:
                    result = runner.run_once(target, s, options.duration_s)
                except Exception as exc:  # noqa: BLE001 - one failed run is reported, the suite goes on
                    runner.progress(f"{s.id} on {target.name} failed: {type(exc).__name__}: {exc}")
                    result = {"error": f"{type(exc).__name__}: {exc}"}
                runs.setdefault(target.name, {}).setdefault(s.id, []).append(result)


def _with(targets: list[Target], body) -> None:
    started: list[Target] = []
    try:
        for target in targets:
            target.start()
            started.append(target)
        body(started)
    finally:
        for target in reversed(started):
            target.stop()


def run_suite(options: SuiteOptions) -> dict:
    base = Path(options.directory or ".zkafka")
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-suite-", dir=base))
    scenarios = [_scaled(s, options.records_scale) for s in options.scenarios]
    runs: dict[str, dict[str, list[dict]]] = {}
    settings = dict(session_timeout_ms=options.session_timeout_ms,
                    initial_rebalance_delay_ms=options.initial_rebalance_delay_ms)
    single = [s for s in scenarios if s.brokers == 1]
    if single:
        targets: list[Target] = [ZkafkaTarget(work, 1, **settings)]
        if options.peer == "tansu":
            targets.append(TansuTarget(options.peer_binary, work))
        _with(targets, lambda started: _run_on(started, single, options, runs))
    triple = [s for s in scenarios if s.brokers == 3]
    if triple:
        _with([ZkafkaTarget(work, 3, **settings)], lambda started: _run_on(started, triple, options, runs))
    shutil.rmtree(work, ignore_errors=True)
    summaries = {target: {sid: summarise_runs([r for r in rs if "error" not in r]) for sid, rs in by.items()}
                 for target, by in runs.items()}
    return {"machine": machine(), "options": {"reps": options.reps, "peer": options.peer,
                                              "duration_s": options.duration_s,
                                              "records_scale": options.records_scale, **settings},
            "scenarios": {s.id: s.title for s in scenarios}, "runs": runs, "summaries": summaries,
            "goals": goals(summaries, initial_delay_ms=options.initial_rebalance_delay_ms,
                           session_timeout_ms=options.session_timeout_ms, peer=options.peer or "tansu")}
