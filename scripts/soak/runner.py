"""``zkafka soak``'s run: a containerized cluster (a 3-node ZooKeeper ensemble, 3-5 brokers), the workloads and
the nemesis for ``minutes``, the final heal, a drain, the checker, the report.

Steps (every one bounded; the cluster is always removed at the end):
1. the seed (random unless given) is printed first: ``soak seed: N``; the fault schedule follows from it;
2. the cluster starts with Kafka's safe settings (``min.insync.replicas=2``, RF 3, unclean election off), or
   with ``unsafe`` the configuration Jepsen's 2013 analysis lost writes with (``min.insync.replicas=1``,
   unclean election on, producers with acks=1 and no idempotence, no transactional copiers);
3. the topics are created and fully replicated; the workloads start; the nemesis starts once the histories show
   ok sends and polls, and the workload processes are supervised until ``minutes`` pass;
4. everything is healed; the producers stop; the readers, the group and the copiers drain for at least
   ``drain_min_s`` until they have read everything (and every key is led again), at most ``drain_max_s``;
   from the start of the heal, every second, each key's leader is looked up in every broker's metadata
   (the checker's ``Availability``);
5. the histories are merged and checked; ``out_dir`` gets ``history.jsonl``, ``nemesis.jsonl``, ``check.json``,
   ``report.html``, ``cluster.log`` and the per-process histories; an invalid run also keeps
   ``evidence/`` (scripts/soak/evidence.py: the brokers' whole logs and dumps of the partitions the anomalies name).

Failures of the harness itself (no Docker, the cluster did not start, the workload never got under way) raise
``SoakHarnessError``; anomalies are the checker's ``CheckResult``.
"""
from __future__ import annotations

import json
import random
import shutil
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from zkafka.testing.local_engine import use_local_engine

use_local_engine()  # before testcontainers is imported

from zkafka.images import broker_image, docker_problem, zookeeper_image  # noqa: E402
from zkafka.testing.cluster import ZkafkaCluster  # noqa: E402
from zkafka.testing.conditions import wait_for  # noqa: E402
from scripts.soak import history  # noqa: E402
from scripts.soak.checker import Availability, CheckConfig, CheckResult, check  # noqa: E402
from scripts.soak.checker.model import client_fault_windows  # noqa: E402
from scripts.soak.evidence import keep_evidence  # noqa: E402
from scripts.soak.drain import AvailabilityClock, HistoryTail, Progress  # noqa: E402
from scripts.soak.nemesis.nemesis import Nemesis  # noqa: E402
from scripts.soak.nemesis.schedule import KINDS, make_schedule  # noqa: E402
from scripts.soak.report import summary_text, write_report  # noqa: E402
from scripts.soak.topics import Watermarks, create_topics, led_keys, plan_keys, plan_topics, views  # noqa: E402
from scripts.soak.workloads.common import clean_stop  # noqa: E402
from scripts.soak.workloads.launcher import WorkloadPlan, start_workloads, stop_all, supervise  # noqa: E402

HOW_TO_GET_DOCKER = ("run compose/ensure-docker.sh (a Docker engine) and zkafka images build --offline "
                     f"(the images {broker_image()} and {zookeeper_image()})")

SAFE_PROPERTIES = {
    "min.insync.replicas": "2", "default.replication.factor": "3", "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "6",
    "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3", "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0", "replica.lag.time.max.ms": "6000", "replica.fetch.backoff.ms": "200",
}
UNSAFE_OVERRIDES = {"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}
UNDER_WAY_TIMEOUT_S = 120
SUPERVISE_INTERVAL_S = 1.0
STOP_TIMEOUT_S = 60


class SoakHarnessError(Exception):
    """The soak could not run (not an anomaly): no Docker engine or image, the cluster did not start, ..."""


@dataclass
class SoakOptions:
    minutes: float = 3.0
    seed: int | None = None             # None: random, printed first
    brokers: int = 3
    out_dir: Path | None = None         # None: soak-runs/<timestamp>-<seed>
    kinds: list[str] | None = None      # None: every kind the nemesis knows
    mean_interval_s: float = 12.0
    drain_min_s: float = 60.0
    drain_max_s: float = 180.0
    unsafe: bool = False
    plan: WorkloadPlan = field(default_factory=WorkloadPlan)
    command: str = ""                   # the command line, for the report


@dataclass
class SoakOutcome:
    result: CheckResult
    report: Path
    out_dir: Path
    fault_counts: dict[str, int]
    valid: bool
    seed: int = 0
    summary: str = ""


def broker_properties(unsafe: bool) -> dict[str, str]:
    return {**SAFE_PROPERTIES, **(UNSAFE_OVERRIDES if unsafe else {})}


def effective_plan(plan: WorkloadPlan, unsafe: bool) -> WorkloadPlan:
    """Unsafe: acks=1 without idempotence, and no copiers (transactions need acks=all)."""
    return replace(plan, acks="1", idempotence=False, copiers=False) if unsafe else plan


def check_config(plan: WorkloadPlan, unsafe: bool) -> CheckConfig:
    return CheckConfig(idempotent=not unsafe and plan.idempotence,
                       eos_pairs={plan.txn_input: plan.txn_output} if plan.copiers else {})


def random_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)


def default_out_dir(seed: int) -> Path:
    return Path("soak-runs") / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{seed}"


RUN_FILES = ("history.jsonl", "nemesis.jsonl", "check.json", "report.html", "cluster.log")


def fresh_run_dir(out_dir: Path) -> None:
    """``out_dir`` with an empty ``histories/`` and none of a previous run's files: the workloads and the
    nemesis append to their files, so a run into a reused directory must not find the last one's there."""
    shutil.rmtree(out_dir / "histories", ignore_errors=True)
    for name in RUN_FILES:
        (out_dir / name).unlink(missing_ok=True)
    (out_dir / "histories").mkdir(parents=True)


def run_soak(options: SoakOptions) -> SoakOutcome:
    seed = options.seed if options.seed is not None else random_seed()
    print(f"soak seed: {seed}", flush=True)
    problem = docker_problem()
    if problem is not None:
        raise SoakHarnessError(f"Docker is not ready ({problem}): {HOW_TO_GET_DOCKER}")
    out_dir = options.out_dir or default_out_dir(seed)
    fresh_run_dir(out_dir)
    plan = effective_plan(options.plan, options.unsafe)
    kinds = list(options.kinds or KINDS)
    schedule = make_schedule(seed, options.minutes, kinds, options.mean_interval_s)
    cluster = ZkafkaCluster(options.brokers, broker_properties(options.unsafe), small_log_dir=options.brokers)
    print(f"soak: {len(schedule)} faults over {options.minutes:g} min on {options.brokers} brokers; "
          f"writing to {out_dir}", flush=True)
    try:
        try:
            cluster.start()
            create_topics(cluster, plan_topics(plan))
        except Exception as exc:  # noqa: BLE001 - any failure here is the harness's
            raise SoakHarnessError(f"the cluster did not start: {type(exc).__name__}: {exc}") from exc
        outcome = _Run(cluster, options, plan, seed, out_dir, schedule).execute()
        evidence = keep_evidence(cluster, out_dir, outcome.result)
        if evidence is not None:
            print(f"soak: the brokers' logs and dumps of the partitions named are in {evidence}", flush=True)
        return outcome
    finally:
        try:
            (out_dir / "cluster.log").write_text(cluster.logs(tail=400))
        finally:
            cluster.stop()


class _Run:
    """One soak against a started cluster: workloads, nemesis, heal, drain, check, report."""

    def __init__(self, cluster: ZkafkaCluster, options: SoakOptions, plan: WorkloadPlan, seed: int,
                 out_dir: Path, schedule: list):
        self.cluster, self.options, self.plan, self.seed = cluster, options, plan, seed
        self.out_dir, self.schedule = out_dir, schedule
        self.history_dir = out_dir / "histories"
        self.tail = HistoryTail(self.history_dir)
        self.config = check_config(plan, options.unsafe)
        self.progress = Progress(self.config.eos_pairs)
        self.processes: list = []
        self.finished: dict[str, bool] = {}
        self.heal_problem: str | None = None
        self.drained = False

    def execute(self) -> SoakOutcome:
        self.processes = start_workloads(self.plan, self.cluster.bootstrap_servers, self.history_dir)
        try:
            self._wait_under_way()
            nemesis = Nemesis(self.cluster, self.schedule, self.out_dir / "nemesis.jsonl",
                              hot_key=history.key_of(self.plan.topic, 0))
            clock = self._faults(nemesis)
            print(f"soak: healed; faults {nemesis.counts()}; draining", flush=True)
            self._stop([p for p in self.processes if p.kind == "producer"])
            availability = self._drain(clock)
        finally:
            self._stop([p for p in self.processes if p.name not in self.finished])
        return self._check(nemesis, availability)

    def _wait_under_way(self) -> None:
        def under_way() -> bool:
            self._supervise()
            self.progress.absorb(self.tail.read())
            return self.progress.under_way
        try:
            wait_for(under_way, UNDER_WAY_TIMEOUT_S, "the workload under way (ok sends and polls)", interval=0.5)
        except AssertionError as exc:
            raise SoakHarnessError(f"{exc}; see {self.history_dir}") from exc

    def _faults(self, nemesis) -> AvailabilityClock:
        """The schedule for ``minutes``, then the final heal; availability is sampled from the heal's start."""
        nemesis.start()
        try:
            end = time.monotonic() + self.options.minutes * 60
            while time.monotonic() < end:
                self._supervise()
                self.progress.absorb(self.tail.read())
                time.sleep(min(SUPERVISE_INTERVAL_S, max(0.0, end - time.monotonic())))
        finally:
            clock = AvailabilityClock(time.monotonic_ns(), plan_keys(self.plan))
            healing = threading.Event()
            sampler = threading.Thread(target=self._sample, args=(clock, healing), name="availability", daemon=True)
            sampler.start()
            try:
                nemesis.stop_and_heal()
            except AssertionError as exc:  # a broker not back: the drain measures what that costs
                self.heal_problem = str(exc)
                print(f"soak: after the final heal: {exc}", flush=True)
            finally:
                healing.set()
                sampler.join()
        return clock

    def _sample(self, clock: AvailabilityClock, done: threading.Event) -> None:
        while not done.wait(SUPERVISE_INTERVAL_S):
            clock.observe(time.monotonic_ns(), led_keys(views(self.cluster), clock.keys))

    def _supervise(self) -> None:
        for name in supervise(self.processes):
            print(f"soak: {name} exited by itself; restarted", flush=True)

    def _drain(self, clock: AvailabilityClock) -> Availability:
        """Readers, group and copiers keep running until caught up and every key is led, for at least
        ``drain_min_s`` and at most ``drain_max_s``."""
        keys = clock.keys
        watermarks = Watermarks(self.cluster.bootstrap_servers)
        start = time.monotonic()
        lagging: dict = {"(no high watermarks yet)": {}}
        try:
            while True:
                clock.observe(time.monotonic_ns(), led_keys(views(self.cluster), keys))
                self._supervise()
                self.progress.absorb(self.tail.read())
                ends = watermarks.high(keys)
                if ends is not None:
                    lagging = self.progress.lagging(ends)
                elapsed = time.monotonic() - start
                if elapsed >= self.options.drain_max_s or (
                        elapsed >= self.options.drain_min_s and not lagging and clock.all_led):
                    break
                time.sleep(1.0)
        finally:
            watermarks.close()
        self.drained = not lagging
        unled = sorted(set(keys) - set(clock.led_since))
        print(f"soak: drain ended after {time.monotonic() - start:.0f} s: "
              + ("caught up" if not lagging else f"still behind: {_brief(lagging)}")
              + (f"; without a live leader everywhere: {', '.join(unled)}" if unled else ""), flush=True)
        return Availability(healed_at_ns=clock.healed_at_ns, leaderless_after_heal=clock.leaderless_after_heal(),
                            workloads_finished=self.finished)

    def _stop(self, processes: list) -> None:
        """SIGTERM to all of them at once; stopped cleanly = ``clean_stop`` of the exit code."""
        by_name = {p.name: p for p in processes}
        for name, code in stop_all(processes, STOP_TIMEOUT_S).items():
            self.finished[name] = clean_stop(code)
            if not clean_stop(code):
                print(f"soak: did not stop cleanly: {by_name[name].exit_summary()}\n"
                      f"    (its log: {self.history_dir / (name + '.log')})", flush=True)

    def _check(self, nemesis, availability: Availability) -> SoakOutcome:
        availability = replace(availability, workloads_finished=dict(self.finished))
        ops = history.merge(sorted(self.history_dir.glob("history-*.jsonl")))
        with open(self.out_dir / "history.jsonl", "w") as f:
            history.write(ops, f)
        config = replace(self.config, client_fault_windows=client_fault_windows(
            nemesis.events(), ops[-1].time if ops else 0))
        result = check(ops, config, availability)
        (self.out_dir / "check.json").write_text(json.dumps(result.to_json(), indent=1, default=str))
        counts = nemesis.counts()
        meta = self._meta(counts, len(ops))
        report = write_report(self.out_dir, ops, nemesis.events(), result, meta)
        summary = summary_text(result, meta)
        print(summary, flush=True)
        print(f"soak: report {report}", flush=True)
        return SoakOutcome(result=result, report=report, out_dir=self.out_dir, fault_counts=counts,
                           valid=result.valid, seed=self.seed, summary=summary)

    def _meta(self, counts: dict[str, int], ops: int) -> dict:
        o = self.options
        return {"seed": self.seed, "minutes": o.minutes, "brokers": o.brokers, "faults": counts,
                "faults_total": sum(counts.values()), "kinds": list(o.kinds or KINDS),
                "mean_interval_s": o.mean_interval_s, "unsafe": o.unsafe, "command": o.command,
                "plan": asdict(self.plan), "ops": ops, "workloads": [p.describe() for p in self.processes],
                "drained": self.drained, "heal_problem": self.heal_problem, "out_dir": str(self.out_dir)}


def _brief(lagging: dict) -> str:
    return "; ".join(f"{who}: {', '.join(f'{k} {got}/{want}' for k, (got, want) in list(keys.items())[:4])}"
                     for who, keys in lagging.items())
