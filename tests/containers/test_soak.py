"""``zkafka soak`` in CI: a short soak under random compound faults must report no anomaly (a fixed seed, and a
random one printed first), and the same machinery against Jepsen's unsafe configuration (acks=1,
``min.insync.replicas=1``, unclean leader election) must report lost writes: the proof that the checker can fail.

Each run leaves its directory (``report.html``, ``history.jsonl``, ``nemesis.jsonl``, ``check.json``,
``cluster.log``) under ``$ZKAFKA_TEST_ARTIFACTS`` (default ``<repo>/test-artifacts``); an assertion names it.
"""
from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path

import pytest

from scripts.soak.runner import SoakOptions, SoakOutcome, run_soak
from scripts.soak.workloads.launcher import WorkloadPlan

REPO = Path(__file__).resolve().parents[2]
FIXED_SEED = 24_2026
RANDOM_SEED = random.SystemRandom().randrange(1, 2**31)
UNSAFE_SEED = 1_2013
# The faults that lose acks=1 writes: the leader of the hot partition (or any broker) killed -9 with records it
# acknowledged but its followers have not fetched, and a leader paused past its session (replaced while frozen).
LOSSY_KINDS = ["kill-leader", "kill-broker", "pause-broker"]


def artifacts(name: str) -> Path:
    return Path(os.environ.get("ZKAFKA_TEST_ARTIFACTS") or REPO / "test-artifacts") / name


def where(outcome: SoakOutcome) -> str:
    return f"seed {outcome.seed}, report {outcome.report}\n{outcome.summary}"


def not_allowed(outcome: SoakOutcome) -> dict[str, int]:
    return {k: a.count for k, a in outcome.result.anomalies.items() if a.count and not a.allowed}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", [FIXED_SEED, RANDOM_SEED], ids=["fixed-seed", "random-seed"])
def test_short_soak_reports_no_anomaly(docker_ready, seed):
    """Without the transactional copiers: the CONCURRENT_TRANSACTIONS stall (seed 1590159789) is fixed and three
    runs with copiers were clean, but CI keeps the configuration that has passed here until more runs back the
    copiers (RELIABILITY.md). Exactly-once under a killed leader stays covered by test_txn_faults.py; `zkafka soak`
    runs the copiers by default."""
    plan = WorkloadPlan(copiers=False)
    outcome = run_soak(SoakOptions(minutes=3, seed=seed, mean_interval_s=8, drain_min_s=30, drain_max_s=150,
                                   plan=plan, out_dir=artifacts(f"soak-{seed}")))
    injected = Counter({k: n for k, n in outcome.fault_counts.items() if n})
    assert sum(injected.values()) >= 10 and len(injected) >= 4, f"faults injected {dict(injected)}; {where(outcome)}"
    assert not not_allowed(outcome), f"anomalies {not_allowed(outcome)}; {where(outcome)}"
    assert outcome.valid, where(outcome)
    assert outcome.result.stats["sends"]["ok"] > 0 and outcome.result.stats["values_read"] > 0, where(outcome)


@pytest.mark.timeout(900)
def test_unsafe_configuration_loses_acknowledged_writes(docker_ready):
    """Jepsen's 2013 Kafka finding, as a test: with acks=1 a leader acknowledges what only it has; killed or
    replaced before its followers fetched it, those records are gone (and unclean election may pick a
    follower that is further behind)."""
    outcome = run_soak(SoakOptions(minutes=2, seed=UNSAFE_SEED, kinds=LOSSY_KINDS, mean_interval_s=8,
                                   drain_min_s=20, drain_max_s=120, unsafe=True, plan=WorkloadPlan(rate=1500),
                                   out_dir=artifacts(f"soak-unsafe-{UNSAFE_SEED}")))
    anomalies = outcome.result.anomalies
    assert anomalies["lost-write"].count + anomalies["unseen"].count > 0, (
        f"the unsafe configuration lost no acknowledged write: the checker (or the faults) cannot catch it; "
        f"{where(outcome)}")
    assert not outcome.valid, where(outcome)
    assert anomalies["duplicate"].allowed, "without idempotence, duplicates are allowed"
