"""coordinator.leader_election: every strategy against a plain brute-force reference, exhaustively.

The universe: replicas {0, 1, 2} in every assignment order, every ISR (every subset in every order,
including the empty one), every live set over {0, 1, 2, 3} (3 is a live broker that is not a replica)
and, for controlled shutdown, every shutting-down set.
"""
from __future__ import annotations

from itertools import combinations, permutations

import pytest

from brokers.model import NO_LEADER
from coordinator.leader_election import (
    ElectionResult,
    controlled_shutdown_election,
    offline_election,
    preferred_election,
    reassign_election,
    remove_replica_from_isr,
)

REPLICAS = (0, 1, 2)
ASSIGNMENTS = list(permutations(REPLICAS))
ISRS = [p for k in range(len(REPLICAS) + 1) for subset in combinations(REPLICAS, k) for p in permutations(subset)]
LIVE_SETS = [frozenset(c) for k in range(5) for c in combinations((0, 1, 2, 3), k)]
SHUTTING_DOWN_SETS = [frozenset(c) for k in range(4) for c in combinations(REPLICAS, k)]


def test_universe_sizes():
    assert (len(ASSIGNMENTS), len(ISRS), len(LIVE_SETS), len(SHUTTING_DOWN_SETS)) == (6, 16, 16, 8)


# -- brute-force references, written as plainly as the table in reference §3.2 ------------------------

def ref_offline(assignment, isr, live, unclean):
    for replica in assignment:
        if replica in live and replica in isr:
            return replica, tuple(b for b in isr if b in live)
    if unclean:
        for replica in assignment:
            if replica in live:
                return replica, (replica,)
    return None, tuple(isr)


def ref_reassign(target, isr, live):
    for replica in target:
        if replica in live and replica in isr:
            return replica, tuple(isr)
    return None, tuple(isr)


def ref_preferred(assignment, isr, live):
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return preferred, tuple(isr)
    return None, tuple(isr)


def ref_controlled_shutdown(assignment, isr, live, shutting_down):
    for replica in assignment:
        if replica in live and replica in isr and replica not in shutting_down:
            return replica, tuple(b for b in isr if b not in shutting_down)
    return None, tuple(isr)


def ref_remove_replica(leader, isr, replica):
    if replica not in isr:
        return leader, tuple(isr)
    new_leader = -1 if leader == replica else leader
    if len(isr) == 1:
        return new_leader, tuple(isr)
    return new_leader, tuple(b for b in isr if b != replica)


def as_pair(result: ElectionResult):
    assert isinstance(result, ElectionResult)
    assert isinstance(result.isr, tuple)
    return result.leader, result.isr


def is_first_qualifying(order, leader, condition):
    """Independent of the references: the leader qualifies and nobody before it in ``order`` does."""
    if leader is None:
        return not any(condition(r) for r in order)
    position = list(order).index(leader)
    return condition(leader) and not any(condition(r) for r in list(order)[:position])


# -- exhaustive comparisons ------------------------------------------------------------------------

@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.parametrize("unclean", [False, True])
def test_offline_election_exhaustive(assignment, unclean):
    for isr in ISRS:
        for live in LIVE_SETS:
            got = as_pair(offline_election(list(assignment), list(isr), live, unclean))
            assert got == ref_offline(assignment, isr, live, unclean), (assignment, isr, sorted(live), unclean)
            leader, new_isr = got
            clean_exists = any(r in live and r in isr for r in assignment)
            if clean_exists or not unclean:
                assert is_first_qualifying(assignment, leader, lambda r: r in live and r in isr)
            else:
                assert is_first_qualifying(assignment, leader, lambda r: r in live)
            if leader is not None:
                assert leader in new_isr and set(new_isr) <= live and leader != 3


@pytest.mark.parametrize("target", ASSIGNMENTS + [(2,), (1, 0), (2, 0, 1)])
def test_reassign_election_exhaustive(target):
    for isr in ISRS:
        for live in LIVE_SETS:
            got = as_pair(reassign_election(list(target), list(isr), live))
            assert got == ref_reassign(target, isr, live), (target, isr, sorted(live))
            assert is_first_qualifying(target, got[0], lambda r: r in live and r in isr)
            assert got[1] == isr


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_preferred_election_exhaustive(assignment):
    for isr in ISRS:
        for live in LIVE_SETS:
            got = as_pair(preferred_election(list(assignment), list(isr), live))
            assert got == ref_preferred(assignment, isr, live), (assignment, isr, sorted(live))
            assert got[0] in (None, assignment[0])
            assert got[1] == isr


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_controlled_shutdown_election_exhaustive(assignment):
    for isr in ISRS:
        for live in LIVE_SETS:
            for shutting_down in SHUTTING_DOWN_SETS:
                got = as_pair(controlled_shutdown_election(list(assignment), list(isr), live, shutting_down))
                expected = ref_controlled_shutdown(assignment, isr, live, shutting_down)
                assert got == expected, (assignment, isr, sorted(live), sorted(shutting_down))
                leader, new_isr = got
                assert is_first_qualifying(assignment, leader,
                                           lambda r: r in live and r in isr and r not in shutting_down)
                if leader is not None:
                    assert leader in new_isr and not set(new_isr) & shutting_down


@pytest.mark.parametrize("leader", [NO_LEADER, 0, 1, 2])
def test_remove_replica_from_isr_exhaustive(leader):
    for isr in ISRS:
        for replica in (0, 1, 2, 3):
            got = remove_replica_from_isr(leader, list(isr), replica)
            assert isinstance(got[1], tuple)
            assert got == ref_remove_replica(leader, isr, replica), (leader, isr, replica)
            if isr:
                assert got[1], "the ISR is never emptied (pitfall 9)"


# -- hand-picked cases (independent of the references) -------------------------------------------------

def test_offline_prefers_assignment_order_over_isr_order():
    result = offline_election([1, 2, 3], [3, 2], {2, 3}, unclean_allowed=False)
    assert result == ElectionResult(2, (3, 2))


def test_offline_filters_isr_to_live_brokers():
    assert offline_election([0, 1, 2], [0, 1, 2], {1, 2}, False) == ElectionResult(1, (1, 2))


def test_offline_clean_beats_unclean_even_when_allowed():
    # replica 0 is live but out of the ISR; 2 is live and in it: clean election picks 2.
    assert offline_election([0, 1, 2], [1, 2], {0, 2}, True) == ElectionResult(2, (2,))


def test_unclean_picks_first_live_replica_with_isr_of_just_itself():
    assert offline_election([0, 1, 2], [2], {0, 1}, True) == ElectionResult(0, (0,))


def test_without_unclean_a_dead_isr_means_no_leader_and_isr_untouched():
    assert offline_election([0, 1, 2], [2], {0, 1}, False) == ElectionResult(None, (2,))


def test_offline_ignores_live_brokers_outside_the_assignment():
    assert offline_election([0, 1], [0, 1, 5], {5}, True) == ElectionResult(None, (0, 1, 5))


def test_preferred_looks_only_at_the_first_assigned_replica():
    assert preferred_election([0, 1, 2], [1, 2], {0, 1, 2}) == ElectionResult(None, (1, 2))
    assert preferred_election([0, 1, 2], [1, 0], {0, 1, 2}) == ElectionResult(0, (1, 0))
    assert preferred_election([], [1], {1}) == ElectionResult(None, (1,))


def test_reassign_scans_target_replicas_and_keeps_isr():
    assert reassign_election([4, 5, 1], [1, 5], {1, 4, 5}) == ElectionResult(5, (1, 5))


def test_controlled_shutdown_skips_shutting_down_and_removes_them_from_isr():
    result = controlled_shutdown_election([0, 1, 2], [0, 1, 2], {0, 1, 2}, {0})
    assert result == ElectionResult(1, (1, 2))
    assert controlled_shutdown_election([0, 1], [0], {0, 1}, {0}) == ElectionResult(None, (0,))


def test_election_result_elected_flag():
    assert ElectionResult(0, (0,)).elected and not ElectionResult(None, (0,)).elected


# -- the OfflineReplica rule -----------------------------------------------------------------------------

def test_removing_a_follower_shrinks_the_isr():
    assert remove_replica_from_isr(0, [0, 1, 2], 1) == (0, (0, 2))


def test_removing_the_leader_sets_no_leader():
    assert remove_replica_from_isr(1, [0, 1, 2], 1) == (-1, (0, 2))
    assert NO_LEADER == -1


def test_single_member_isr_is_kept_but_loses_its_leadership():
    assert remove_replica_from_isr(2, [2], 2) == (-1, (2,))


def test_single_member_isr_is_kept_when_it_is_not_the_leader_either():
    assert remove_replica_from_isr(-1, [2], 2) == (-1, (2,))


def test_replica_outside_the_isr_changes_nothing():
    assert remove_replica_from_isr(0, [0, 1], 2) == (0, (0, 1))
