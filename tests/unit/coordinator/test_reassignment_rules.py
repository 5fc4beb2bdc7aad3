"""KIP-455's reassignment rules (pure): the assignment while moving, validation, cancel, completion."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.model import ReplicaAssignment
from brokers.protocol.errors import ErrorCode
from coordinator import reassignment_rules as rules

LIVE = {1, 2, 3, 4, 5}


def test_reassign_to_puts_the_targets_first_then_the_origin_and_names_what_is_added_and_removed():
    move = ReplicaAssignment((1, 2)).reassign_to((3, 4))
    assert move == ReplicaAssignment((3, 4, 1, 2), adding=(3, 4), removing=(1, 2))
    assert move.is_being_reassigned and move.origin_replicas == (1, 2) and move.target_replicas == (3, 4)


def test_an_overlapping_target_keeps_the_shared_replica_once():
    move = ReplicaAssignment((1, 2, 3)).reassign_to((3, 4, 1))
    assert move == ReplicaAssignment((3, 4, 1, 2), adding=(4,), removing=(2,))


def test_reordering_only_is_not_a_reassignment_in_progress():
    move = ReplicaAssignment((1, 2)).reassign_to((2, 1))
    assert move == ReplicaAssignment((2, 1)) and not move.is_being_reassigned


def test_a_new_target_for_a_moving_partition_starts_from_its_origin_not_from_the_union():
    moving = ReplicaAssignment((1, 2)).reassign_to((3, 4))
    again = rules.build_reassignment(moving, [5, 1])
    assert again == ReplicaAssignment((5, 1, 2), adding=(5,), removing=(2,))


def test_cancelling_reverts_to_the_origin_in_rs_order_and_nothing_to_cancel_is_none():
    moving = ReplicaAssignment((1, 2)).reassign_to((2, 4))
    assert moving.replicas == (2, 4, 1)
    assert rules.build_reassignment(moving, None) == ReplicaAssignment((2, 1))
    assert rules.build_reassignment(ReplicaAssignment((1, 2)), None) is None


@pytest.mark.parametrize("target, fragment", [
    ([], "Empty replica list"),
    ([1, 1], "Duplicate replica ids"),
    ([1, -1], "Invalid broker id"),
    ([1, 9], "not alive"),
])
def test_invalid_targets_are_invalid_replica_assignment_naming_the_problem(target, fragment):
    code, message = rules.validate_target(target, ReplicaAssignment((1, 2)), LIVE)
    assert code is ErrorCode.INVALID_REPLICA_ASSIGNMENT and fragment in message


def test_only_added_replicas_must_be_alive():
    assert rules.validate_target([1, 3], ReplicaAssignment((1, 2)), {1, 3}) is None  # 2 is dead but only leaves
    assert rules.validate_target([1, 2], ReplicaAssignment((1, 2)), {1}) is None  # nothing added


def test_complete_when_every_target_is_in_the_isr():
    move = ReplicaAssignment((1, 2)).reassign_to((3, 4))
    assert not rules.is_complete(move, (1, 2, 3))
    assert rules.is_complete(move, (1, 2, 3, 4)) and rules.is_complete(move, (4, 3))
    assert rules.completed(move) == ReplicaAssignment((3, 4))


def test_the_leader_moves_unless_it_is_a_live_target():
    move = ReplicaAssignment((1, 2)).reassign_to((2, 3))
    assert rules.leader_must_move(1, move, LIVE)
    assert not rules.leader_must_move(2, move, LIVE)
    assert rules.leader_must_move(2, move, LIVE - {2})


replica_lists = st.lists(st.integers(1, 8), min_size=1, max_size=5, unique=True)


@given(replica_lists, replica_lists)
def test_any_move_keeps_origin_and_target_recoverable(origin, target):
    move = ReplicaAssignment(tuple(origin)).reassign_to(tuple(target))
    assert move.origin_replicas == tuple(r for r in move.replicas if r in origin)
    assert set(move.origin_replicas) == set(origin)
    assert move.target_replicas == tuple(target)
    assert set(move.replicas) == set(origin) | set(target)
    assert not set(move.adding) & set(origin) and not set(move.removing) & set(target)
