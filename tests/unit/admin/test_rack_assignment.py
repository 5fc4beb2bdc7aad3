"""brokers.admin.assignment, rack-aware: Kafka 2.8's ``AdminRackAwareTest`` cases, its worked examples
exactly and the rest through its ``checkReplicaDistribution`` rules, plus properties over random racks."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.admin.assignment import (
    assign_new_partitions,
    assign_replicas_to_brokers,
    partitions_to_add,
    rack_alternated_broker_list,
)
from brokers.protocol.errors import ErrorCode, KafkaError

SIX = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def check_distribution(assignment, racks, n_partitions, factor, *, rack_aware=True, leaders=True, replicas=True):
    """Kafka's ``RackAwareTest.checkReplicaDistribution``."""
    assert len(assignment) == n_partitions
    for replica_list in assignment.values():
        assert len(replica_list) == factor
        assert len(set(replica_list)) == factor, "more than one replica on the same broker"
    if rack_aware:
        assert all(len({racks[b] for b in r}) == factor for r in assignment.values()), "two replicas in one rack"
    n = len(racks)
    if leaders:
        counts = Counter(r[0] for r in assignment.values())
        assert [counts[b] for b in racks] == [n_partitions // n] * n, "preferred leaders are not even"
    if replicas:
        counts = Counter(b for r in assignment.values() for b in r)
        assert [counts[b] for b in racks] == [n_partitions * factor // n] * n, "replicas are not even"


# -- Kafka's worked examples (AdminUtils' scaladoc and AdminRackAwareTest), exactly -----------------------

def test_rack_alternated_broker_list_of_kafkas_example():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({b: r for b, r in racks.items() if b != 5}) == [0, 3, 1, 4, 2]


def test_rack_alternated_broker_list_of_the_scaladoc():
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_kafkas_worked_assignment_with_the_follower_shift_after_one_round():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assign_replicas_to_brokers(racks, 7, 3, start_index=0, start_partition_id=0) == {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3],
        6: [0, 4, 2],  # not 0,3,1 again: the followers shift after the first round
    }


# -- AdminRackAwareTest's other cases, through checkReplicaDistribution --------------------------------------

@pytest.mark.parametrize("start_index", [2, -1])
def test_assignment_with_rack_aware(start_index):
    check_distribution(assign_replicas_to_brokers(SIX, 6, 3, start_index=start_index), SIX, 6, 3)


def test_uneven_replicas_still_rack_aware():
    check_distribution(assign_replicas_to_brokers(SIX, 13, 3, start_index=0), SIX, 13, 3, leaders=False,
                       replicas=False)


def test_uneven_racks_keep_leaders_even():
    racks = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    check_distribution(assign_replicas_to_brokers(racks, 12, 3), racks, 12, 3, replicas=False)


@pytest.mark.parametrize("n_partitions", [12, 6])
def test_two_replicas_rack_aware(n_partitions):
    check_distribution(assign_replicas_to_brokers(SIX, n_partitions, 2), SIX, n_partitions, 2)


def test_rack_aware_expansion_from_partition_twelve():
    racks = {b + 6: r for b, r in SIX.items()}
    assignment = assign_replicas_to_brokers(racks, 12, 2, start_partition_id=12)
    assert sorted(assignment) == list(range(12, 24))
    check_distribution(assignment, racks, 12, 2)


def test_two_replicas_three_brokers_three_racks():
    racks = {0: "rack1", 1: "rack2", 4: "rack3"}
    check_distribution(assign_replicas_to_brokers(racks, 3, 2), racks, 3, 2)


def test_large_number_of_partitions():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
             6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}
    check_distribution(assign_replicas_to_brokers(racks, 96, 3), racks, 96, 3)


def test_more_replicas_than_racks_puts_one_in_every_rack():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas_to_brokers(racks, 6, 5)
    assert all(len(r) == 5 and len({racks[b] for b in r}) == 3 for r in assignment.values())


def test_fewer_replicas_than_racks_never_share_a_rack():
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas_to_brokers(racks, 6, 2)
    assert all(len({racks[b] for b in r}) == 2 for r in assignment.values())


def test_single_rack_is_still_even():
    racks = {b: "rack1" for b in range(6)}
    assignment = assign_replicas_to_brokers(racks, 6, 3)
    assert all(len(set(r)) == 3 for r in assignment.values())
    assert Counter(r[0] for r in assignment.values()) == {b: 1 for b in range(6)}


def test_skip_broker_with_replica_already_assigned():
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    check_distribution(assign_replicas_to_brokers(racks, 6, 4, start_index=2), racks, 6, 4, rack_aware=False,
                       leaders=False, replicas=False)


# -- the dispatch, the errors, and the admin paths' inputs -------------------------------------------------

def test_brokers_without_any_rack_take_the_rack_unaware_path():
    unaware = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert assign_replicas_to_brokers({b: None for b in range(5)}, 10, 3, start_index=0) == unaware


def test_some_brokers_without_a_rack_is_kafkas_error():
    with pytest.raises(KafkaError) as info:
        assign_replicas_to_brokers({0: "a", 1: None, 2: "b"}, 3, 2)
    assert info.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "Not all brokers have rack information" in str(info.value)


def test_replication_factor_above_the_brokers_is_refused_with_racks_too():
    with pytest.raises(KafkaError) as info:
        assign_replicas_to_brokers({0: "a", 1: "b"}, 3, 3)
    assert info.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_draws_are_the_start_index_then_the_shift_over_the_alternated_list():
    class Draws:
        def __init__(self):
            self.bounds = []

        def randrange(self, stop):
            self.bounds.append(stop)
            return 0

    draws = Draws()
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assign_replicas_to_brokers(racks, 7, 3, rng=draws) == assign_replicas_to_brokers(racks, 7, 3, start_index=0)
    assert draws.bounds == [6, 6]


def test_added_partitions_stay_rack_aware():
    racks = {0: "a", 1: "a", 2: "b", 3: "c"}
    existing = assign_replicas_to_brokers(racks, 4, 3, start_index=1)
    added = assign_new_partitions(existing, racks, 10)
    assert sorted(added) == list(range(4, 10))
    assert all(len({racks[b] for b in r}) == 3 for r in added.values())
    assert partitions_to_add(existing, racks, 10) == added


@given(st.dictionaries(st.integers(0, 40), st.sampled_from("abcde"), min_size=1, max_size=12),
       st.integers(1, 40), st.data())
def test_every_rack_aware_assignment_spreads_over_racks(racks, n_partitions, data):
    factor = data.draw(st.integers(1, len(racks)))
    assignment = assign_replicas_to_brokers(racks, n_partitions, factor, rng=random.Random(data.draw(st.integers())))
    n_racks = len(set(racks.values()))
    for replica_list in assignment.values():
        assert len(set(replica_list)) == factor
        assert len({racks[b] for b in replica_list}) == min(factor, n_racks)
