"""coordinator.partition_state_machine / replica_state_machine: every (from, to) pair, atomic moves."""
from __future__ import annotations

from itertools import product

import pytest

from brokers.model import TopicPartition
from coordinator import partition_state_machine as psm
from coordinator import replica_state_machine as rsm
from coordinator.partition_state_machine import (
    IllegalStateTransition,
    PartitionState,
    PartitionStates,
    check_transition,
)
from coordinator.replica_state_machine import (
    PartitionAndReplica,
    ReplicaState,
    ReplicaStates,
    check_replica_transition,
)

P = PartitionState
R = ReplicaState

# Kafka 2.8's validPreviousStates, copied by hand as (from, to) pairs.
LEGAL_PARTITION_MOVES = {
    (P.NonExistent, P.New),
    (P.New, P.Online), (P.Online, P.Online), (P.Offline, P.Online),
    (P.New, P.Offline), (P.Online, P.Offline), (P.Offline, P.Offline),
    (P.Offline, P.NonExistent),
}
LEGAL_REPLICA_MOVES = {
    (R.NonExistentReplica, R.NewReplica),
    (R.NewReplica, R.OnlineReplica), (R.OnlineReplica, R.OnlineReplica), (R.OfflineReplica, R.OnlineReplica),
    (R.ReplicaDeletionIneligible, R.OnlineReplica),
    (R.NewReplica, R.OfflineReplica), (R.OnlineReplica, R.OfflineReplica), (R.OfflineReplica, R.OfflineReplica),
    (R.ReplicaDeletionIneligible, R.OfflineReplica),
    (R.OfflineReplica, R.ReplicaDeletionStarted),
    (R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful),
    (R.OfflineReplica, R.ReplicaDeletionIneligible), (R.ReplicaDeletionStarted, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionSuccessful, R.NonExistentReplica),
}
PARTITION_PAIRS = list(product(PartitionState, PartitionState))
REPLICA_PAIRS = list(product(ReplicaState, ReplicaState))

TP = TopicPartition("orders", 3)
REPLICA = PartitionAndReplica(TP, 2)


def test_enums_have_kafkas_states_and_state_bytes():
    assert {s.name: s.value for s in PartitionState} == {"New": 0, "Online": 1, "Offline": 2, "NonExistent": 3}
    assert {s.name: s.value for s in ReplicaState} == {
        "NewReplica": 1, "OnlineReplica": 2, "OfflineReplica": 3, "ReplicaDeletionStarted": 4,
        "ReplicaDeletionSuccessful": 5, "ReplicaDeletionIneligible": 6, "NonExistentReplica": 7}
    assert (len(PARTITION_PAIRS), len(REPLICA_PAIRS)) == (16, 49)


# -- partition states: every pair ------------------------------------------------------------------

@pytest.mark.parametrize("current, target", PARTITION_PAIRS, ids=lambda s: s.name)
def test_partition_check_transition_every_pair(current, target):
    if (current, target) in LEGAL_PARTITION_MOVES:
        check_transition(current, target)
    else:
        with pytest.raises(IllegalStateTransition) as info:
            check_transition(current, target, TP)
        assert (info.value.current, info.value.target, info.value.key) == (current, target, TP)
        assert f"from {current.name} to {target.name}" in str(info.value)
        assert "orders-3" in str(info.value)


@pytest.mark.parametrize("current, target", PARTITION_PAIRS, ids=lambda s: s.name)
def test_partition_states_transition_every_pair(current, target):
    states = PartitionStates()
    states.set_initial(TP, current)
    if (current, target) in LEGAL_PARTITION_MOVES:
        moved = states.transition([TP], target)
        assert states.get(TP) is target
        assert moved == ([] if current is target else [TP])
    else:
        with pytest.raises(IllegalStateTransition):
            states.transition([TP], target)
        assert states.get(TP) is current


# -- replica states: every pair --------------------------------------------------------------------

@pytest.mark.parametrize("current, target", REPLICA_PAIRS, ids=lambda s: s.name)
def test_replica_check_transition_every_pair(current, target):
    if (current, target) in LEGAL_REPLICA_MOVES:
        check_replica_transition(current, target)
        rsm.check_transition(current, target)
    else:
        with pytest.raises(IllegalStateTransition) as info:
            check_replica_transition(current, target, REPLICA)
        assert (info.value.current, info.value.target, info.value.key) == (current, target, REPLICA)
        assert f"from {current.name} to {target.name}" in str(info.value)
        with pytest.raises(IllegalStateTransition):
            rsm.check_transition(current, target)


@pytest.mark.parametrize("current, target", REPLICA_PAIRS, ids=lambda s: s.name)
def test_replica_states_transition_every_pair(current, target):
    states = ReplicaStates()
    states.set_initial(REPLICA, current)
    if (current, target) in LEGAL_REPLICA_MOVES:
        moved = states.transition([REPLICA], target)
        assert states.get(REPLICA) is target
        assert moved == ([] if current is target else [REPLICA])
    else:
        with pytest.raises(IllegalStateTransition):
            states.transition([REPLICA], target)
        assert states.get(REPLICA) is current


def test_tables_are_exactly_the_legal_moves():
    assert {(prev, t) for t, prevs in psm.VALID_PREVIOUS_PARTITION_STATES.items() for prev in prevs} \
        == LEGAL_PARTITION_MOVES
    assert {(prev, t) for t, prevs in rsm.VALID_PREVIOUS_REPLICA_STATES.items() for prev in prevs} \
        == LEGAL_REPLICA_MOVES


# -- PartitionStates behaviour -----------------------------------------------------------------------

def tps(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition("t", p) for p in partitions]


def test_unknown_partitions_are_nonexistent():
    states = PartitionStates()
    assert states.get(TP) is P.NonExistent
    assert TP not in states and len(states) == 0


def test_full_lifecycle():
    states = PartitionStates()
    assert states.transition([TP], P.New) == [TP]
    assert states.transition([TP], P.Online) == [TP]
    assert states.transition([TP], P.Online) == []  # re-election: legal, state unchanged
    assert states.transition([TP], P.Offline) == [TP]
    assert states.transition([TP], P.Online) == [TP]
    assert states.transition([TP], P.Offline) == [TP]
    assert states.transition([TP], P.NonExistent) == [TP]
    assert states.get(TP) is P.NonExistent
    assert TP not in states and len(states) == 0  # deleted partitions are not kept


def test_transition_is_atomic_when_any_move_is_illegal():
    states = PartitionStates()
    a, b, c = tps(0, 1, 2)
    states.set_initial(a, P.Online)
    states.set_initial(b, P.Offline)
    # c is NonExistent: NonExistent -> Online is illegal, so a and b must not move either.
    before = states.items()
    with pytest.raises(IllegalStateTransition) as info:
        states.transition([a, b, c], P.Online)
    assert info.value.key == c
    assert states.items() == before
    assert (states.get(a), states.get(b), states.get(c)) == (P.Online, P.Offline, P.NonExistent)


def test_transition_is_atomic_when_the_illegal_move_comes_first():
    states = PartitionStates()
    a, b = tps(0, 1)
    states.set_initial(b, P.Online)
    with pytest.raises(IllegalStateTransition) as info:
        states.transition([a, b], P.Offline)  # a: NonExistent -> Offline is illegal; b alone would be legal
    assert info.value.key == a
    assert (states.get(a), states.get(b)) == (P.NonExistent, P.Online)


def test_transition_returns_only_partitions_whose_state_changed_in_input_order():
    states = PartitionStates()
    a, b, c = tps(0, 1, 2)
    states.set_initial(a, P.Online)
    states.set_initial(b, P.New)
    states.set_initial(c, P.Offline)
    assert states.transition([c, a, b, c], P.Online) == [c, b]
    assert all(states.get(tp) is P.Online for tp in (a, b, c))


def test_in_state_remove_and_clear():
    states = PartitionStates()
    a, b, c = tps(0, 1, 2)
    states.transition([a, b, c], P.New)
    states.transition([b], P.Online)
    assert states.in_state(P.New) == [a, c]
    assert states.in_state(P.Online) == [b]
    assert states.in_state(P.NonExistent) == []
    assert sorted(states) == [a, b, c]
    states.remove(a)
    assert states.get(a) is P.NonExistent and len(states) == 2
    states.clear()
    assert len(states) == 0 and states.get(b) is P.NonExistent


def test_set_initial_skips_checks_and_nonexistent_is_not_stored():
    states = PartitionStates()
    states.set_initial(TP, P.Offline)  # NonExistent -> Offline would be illegal as a transition
    assert states.get(TP) is P.Offline
    states.set_initial(TP, P.NonExistent)
    assert TP not in states


# -- ReplicaStates behaviour -------------------------------------------------------------------------

def test_replica_deletion_path_and_atomicity():
    states = ReplicaStates()
    r0, r1 = PartitionAndReplica(TP, 0), PartitionAndReplica(TP, 1)
    assert states.transition([r0, r1], R.NewReplica) == [r0, r1]
    states.transition([r0, r1], R.OnlineReplica)
    states.transition([r0, r1], R.OfflineReplica)
    states.transition([r0], R.ReplicaDeletionStarted)
    # r1 is OfflineReplica: it may not jump to ReplicaDeletionSuccessful, so r0 must not move either.
    with pytest.raises(IllegalStateTransition) as info:
        states.transition([r0, r1], R.ReplicaDeletionSuccessful)
    assert info.value.key == r1
    assert (states.get(r0), states.get(r1)) == (R.ReplicaDeletionStarted, R.OfflineReplica)
    states.transition([r1], R.ReplicaDeletionIneligible)
    states.transition([r1], R.OfflineReplica)
    states.transition([r1], R.ReplicaDeletionStarted)
    states.transition([r0, r1], R.ReplicaDeletionSuccessful)
    assert states.transition([r0, r1], R.NonExistentReplica) == [r0, r1]
    assert len(states) == 0 and states.get(r0) is R.NonExistentReplica


def test_replicas_of_a_partition_sorted_by_broker():
    states = ReplicaStates()
    other = TopicPartition("other", 0)
    replicas = [PartitionAndReplica(TP, 2), PartitionAndReplica(other, 0), PartitionAndReplica(TP, 0)]
    states.transition(replicas, R.NewReplica)
    assert states.replicas_of(TP) == [PartitionAndReplica(TP, 0), PartitionAndReplica(TP, 2)]


def test_partition_and_replica_is_a_frozen_hashable_key():
    key = PartitionAndReplica(TopicPartition("t", 1), 4)
    assert key == PartitionAndReplica(TopicPartition("t", 1), 4)
    assert len({key, PartitionAndReplica(TopicPartition("t", 1), 4)}) == 1
    with pytest.raises(AttributeError):
        key.replica = 5  # type: ignore[misc]
    assert str(key) == "[Topic=t,Partition=1,Replica=4]"
