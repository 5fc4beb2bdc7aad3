"""The nemesis' schedule: reproducible, every kind reachable, faults one at a time except the documented
compound ones, pauses past the ZooKeeper session timeout, and enough faults in a short run."""
from __future__ import annotations

import pytest

from scripts.soak.nemesis.schedule import (BACKGROUND, DURATIONS, FOREGROUND, KINDS, SESSION_S, TARGETS, FaultSpec,
                                           make_schedule)

ALL = list(KINDS)


def test_kinds_are_the_binding_names():
    assert set(KINDS) == {
        "kill-broker", "kill-leader", "kill-controller", "kill-all-brokers", "kill-zookeeper",
        "kill-zookeeper-leader", "term-leader", "term-controller", "pause-broker", "pause-controller",
        "partition-broker", "partition-controller-zk", "partition-minority", "partition-ring", "partition-clients",
        "degrade-network", "disk-unwritable", "disk-full", "reassign", "preferred-election"}
    assert set(TARGETS) == set(KINDS) == set(DURATIONS)


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert make_schedule(7, 5, ALL) == make_schedule(7, 5, ALL)
    assert make_schedule(7, 5, ALL) != make_schedule(8, 5, ALL)


def test_every_kind_is_reached():
    seen = {s.kind for s in make_schedule(1, 30, ALL)}
    assert seen == set(KINDS)


def test_only_the_requested_kinds_and_their_roles():
    for seed in range(20):
        for spec in make_schedule(seed, 10, ["pause-controller", "reassign"]):
            assert spec.kind in ("pause-controller", "reassign")
            assert spec.target in TARGETS[spec.kind]


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kill-everything"):
        make_schedule(1, 3, ["kill-everything"])


def test_three_minutes_at_a_mean_of_12_s_gives_ten_faults_of_several_kinds():
    schedules = [make_schedule(seed, 3, ALL, 12.0) for seed in range(200)]
    counts = [len(s) for s in schedules]
    assert sum(c >= 10 for c in counts) >= 0.97 * len(counts), sorted(counts)[:10]
    assert min(counts) >= 7 and sum(counts) / len(counts) >= 12
    assert all(len({spec.kind for spec in s}) >= 6 for s in schedules)


def test_every_fault_starts_after_the_warm_up_and_heals_before_the_end():
    for seed in range(50):
        for minutes in (1, 3, 10):
            for spec in make_schedule(seed, minutes, ALL):
                assert spec.at_s >= min(10.0, 6.0 * minutes) and spec.heal_s <= minutes * 60


def overlaps(schedule: list[FaultSpec]) -> list[tuple[FaultSpec, FaultSpec]]:
    return [(a, b) for i, a in enumerate(schedule) for b in schedule[i + 1:] if b.at_s < a.heal_s]


def test_faults_one_at_a_time_except_the_compound_ones():
    compounds = 0
    for seed in range(100):
        schedule = make_schedule(seed, 10, ALL)
        assert schedule == sorted(schedule, key=lambda s: s.at_s)
        for outer, inner in overlaps(schedule):
            assert outer.kind in BACKGROUND and inner.kind in FOREGROUND, (outer, inner)
            assert inner.at_s >= outer.at_s + 1.0 and inner.heal_s <= outer.heal_s - 2.0
            compounds += 1
    assert compounds >= 20  # they do happen


def test_no_compound_faults_when_the_kinds_exclude_them():
    for seed in range(50):
        assert not overlaps(make_schedule(seed, 10, ["kill-leader", "pause-broker", "partition-ring"]))


def test_quiet_between_faults():
    for seed in range(50):
        schedule = [s for s in make_schedule(seed, 10, ["kill-leader", "disk-full", "partition-ring"])]
        for a, b in zip(schedule, schedule[1:]):
            assert b.at_s - a.heal_s >= (8.0 if a.kind == "disk-full" else 2.0) - 1e-6


def test_some_quiet_windows():
    """Now and then a gap far longer than the mean and the previous fault's duration."""
    long_gaps = 0
    for seed in range(50):
        schedule = make_schedule(seed, 10, ["preferred-election"], 12.0)
        long_gaps += sum(b.at_s - a.at_s > 1.6 * 12.0 + 1 for a, b in zip(schedule, schedule[1:]))
    assert long_gaps >= 10


def test_gaps_average_about_the_mean_for_short_faults():
    schedule = make_schedule(3, 60, ["preferred-election", "kill-broker"], 12.0)
    gaps = [b.at_s - a.at_s for a, b in zip(schedule, schedule[1:])]
    assert 10.0 <= sum(gaps) / len(gaps) <= 16.0


def test_pauses_outlast_the_session_timeout():
    pauses = [s for seed in range(50) for s in make_schedule(seed, 5, ["pause-broker", "pause-controller"])]
    assert pauses and all(s.duration_s >= SESSION_S + 2 for s in pauses)


def test_kill_restarts_sometimes_before_sometimes_after_the_session_expired():
    kills = [s.duration_s for seed in range(50) for s in make_schedule(seed, 5, ["kill-leader"])]
    assert any(d < SESSION_S for d in kills) and any(d > SESSION_S for d in kills)
    assert all(1.0 <= d <= 2 * SESSION_S for d in kills)


def test_partitions_scale_with_the_run_length():
    def longest(minutes):
        return max(s.duration_s for seed in range(30) for s in make_schedule(seed, minutes, ["partition-clients"]))
    assert longest(3) < 20 < longest(20) <= 60


def test_preferred_election_is_instantaneous():
    assert all(s.duration_s == 0 for s in make_schedule(1, 5, ["preferred-election"]))
