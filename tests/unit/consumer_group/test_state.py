"""Group states: Kafka 2.8's legal-move table (reference §5.2), checked pair by pair, and ``can_rebalance``."""
from __future__ import annotations

import itertools

import pytest

from consumer_group.coordinator.state import (
    VALID_PREVIOUS_STATES,
    GroupState,
    IllegalStateTransition,
    can_rebalance,
    check_transition,
)

E, PR, CR, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                   GroupState.STABLE, GroupState.DEAD)

# Kafka's GroupMetadata.validPreviousStates, written out as (from, to) pairs.
LEGAL = {
    (PR, E),
    (S, PR), (CR, PR), (E, PR),
    (PR, CR),
    (CR, S),
    (E, D), (PR, D), (CR, D), (S, D), (D, D),
}
ALL_PAIRS = list(itertools.product(GroupState, GroupState))


def test_the_table_is_exactly_kafkas():
    table = {(source, target) for target, sources in VALID_PREVIOUS_STATES.items() for source in sources}
    assert table == LEGAL
    assert set(VALID_PREVIOUS_STATES) == set(GroupState)


@pytest.mark.parametrize("source,target", sorted(LEGAL, key=str), ids=lambda s: str(s))
def test_legal_transition_passes(source, target):
    check_transition("g", source, target)


@pytest.mark.parametrize("source,target", [p for p in ALL_PAIRS if p not in LEGAL], ids=lambda s: str(s))
def test_illegal_transition_raises(source, target):
    with pytest.raises(IllegalStateTransition, match=f"group g: illegal transition {source} -> {target}"):
        check_transition("g", source, target)


def test_every_pair_is_classified():
    assert len(ALL_PAIRS) == 25
    assert len(LEGAL) == 11


@pytest.mark.parametrize("state,expected", [(E, True), (PR, False), (CR, True), (S, True), (D, False)],
                         ids=lambda s: str(s))
def test_can_rebalance(state, expected):
    assert can_rebalance(state) is expected


def test_state_names_are_kafkas():
    assert [str(s) for s in GroupState] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
