"""brokers.admin.assignment: Kafka's rack-unaware replica assignment, CreatePartitions, topic names."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.admin.assignment import (
    MAX_TOPIC_NAME_LENGTH,
    assign_new_partitions,
    assign_replicas_to_brokers,
    topics_collide,
    validate_topic_name,
)


class FixedDraws:
    """A stand-in for random.Random that hands out queued values and records the bounds asked for."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)
        self.bounds: list[int] = []

    def randrange(self, stop: int) -> int:
        self.bounds.append(stop)
        return self.values.pop(0)


# -- the worked example and hand-computed cases ------------------------------------------------------

WORKED_EXAMPLE = {
    0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
    5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
}


def test_reference_worked_example_fixed_start_index_zero():
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, start_index=0) == WORKED_EXAMPLE


def test_reference_worked_example_with_random_draws_of_zero():
    draws = FixedDraws(0, 0)
    assert assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, rng=draws) == WORKED_EXAMPLE
    assert draws.bounds == [5, 5]  # start index, then shift, each in [0, n)


def test_fixed_start_index_also_fixes_the_shift():
    # B=[0,1,2], start=1, shift=1 (shift=0 would give partition 0 the replicas [1, 2]).
    assert assign_replicas_to_brokers([0, 1, 2], 4, 2, start_index=1) == {0: [1, 0], 1: [2, 1], 2: [0, 2], 3: [1, 2]}


def test_random_start_index_and_shift_are_drawn_in_that_order():
    # startIndex=2, shift=0 on B=[0..4]: partition 0 leads on broker 2, follower at offset 1 + 0 % 4.
    result = assign_replicas_to_brokers([0, 1, 2, 3, 4], 5, 2, rng=FixedDraws(2, 0))
    assert result == {0: [2, 3], 1: [3, 4], 2: [4, 0], 3: [0, 1], 4: [1, 2]}
    # startIndex=0, shift=2: follower offset 1 + 2 % 4 = 3.
    result = assign_replicas_to_brokers([0, 1, 2, 3, 4], 5, 2, rng=FixedDraws(0, 2))
    assert result == {0: [0, 3], 1: [1, 4], 2: [2, 0], 3: [3, 1], 4: [4, 2]}


def test_brokers_are_sorted_by_id_and_deduplicated():
    sorted_result = assign_replicas_to_brokers([10, 20, 30, 40, 50], 10, 3, start_index=0)
    assert assign_replicas_to_brokers([50, 30, 10, 40, 20, 30], 10, 3, start_index=0) == sorted_result
    assert sorted_result == {p: [10 * (b + 1) for b in replicas] for p, replicas in WORKED_EXAMPLE.items()}


def test_start_partition_id_numbers_partitions_and_drives_the_shift():
    result = assign_replicas_to_brokers([0, 1, 2, 3, 4], 5, 3, start_index=0, start_partition_id=5)
    assert result == {p: WORKED_EXAMPLE[p] for p in range(5, 10)}


def test_seeded_rng_is_reproducible_and_used():
    a = assign_replicas_to_brokers(range(7), 20, 3, rng=random.Random(42))
    b = assign_replicas_to_brokers(range(7), 20, 3, rng=random.Random(42))
    assert a == b
    seen = {tuple(map(tuple, assign_replicas_to_brokers(range(7), 20, 3, rng=random.Random(s)).values()))
            for s in range(30)}
    assert len(seen) > 1


def test_single_broker():
    assert assign_replicas_to_brokers([7], 3, 1) == {0: [7], 1: [7], 2: [7]}


# -- properties ------------------------------------------------------------------------------------

broker_lists = st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True)


@st.composite
def assignment_inputs(draw):
    brokers = draw(broker_lists)
    partitions = draw(st.integers(1, 60))
    rf = draw(st.integers(1, len(brokers)))
    start = draw(st.integers(-1, 3 * len(brokers)))
    seed = draw(st.integers(0, 2**32))
    return brokers, partitions, rf, start, seed


@given(assignment_inputs())
def test_every_partition_has_rf_distinct_replicas_from_the_brokers(inputs):
    brokers, partitions, rf, start, seed = inputs
    result = assign_replicas_to_brokers(brokers, partitions, rf, start_index=start, rng=random.Random(seed))
    assert list(result) == list(range(partitions))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)


@given(broker_lists, st.integers(1, 6), st.data())
def test_leaders_are_spread_evenly_when_partitions_are_a_multiple_of_brokers(brokers, rounds, data):
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 2**32))
    result = assign_replicas_to_brokers(brokers, rounds * len(brokers), rf, rng=random.Random(seed))
    leaders = Counter(replicas[0] for replicas in result.values())
    assert set(leaders) == set(brokers)
    assert max(leaders.values()) - min(leaders.values()) <= 1
    assert set(leaders.values()) == {rounds}


@given(assignment_inputs())
def test_leaders_go_round_robin_over_sorted_brokers(inputs):
    brokers, partitions, rf, start, seed = inputs
    result = assign_replicas_to_brokers(brokers, partitions, rf, start_index=start, rng=random.Random(seed))
    ordered = sorted(brokers)
    first = ordered.index(result[0][0])
    assert [result[p][0] for p in range(partitions)] == [ordered[(first + p) % len(ordered)] for p in range(partitions)]
    leaders = Counter(replicas[0] for replicas in result.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1


@given(broker_lists, st.integers(1, 40), st.integers(0, 2**32))
def test_replication_factor_equal_to_broker_count_puts_every_broker_in_every_partition(brokers, partitions, seed):
    result = assign_replicas_to_brokers(brokers, partitions, len(brokers), rng=random.Random(seed))
    for replicas in result.values():
        assert sorted(replicas) == sorted(brokers)


# -- validation errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("brokers, partitions, rf, code", [
    ([0, 1, 2], 3, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
    ([0, 1, 2], 3, -1, ErrorCode.INVALID_REPLICATION_FACTOR),
    ([0, 1, 2], 3, 4, ErrorCode.INVALID_REPLICATION_FACTOR),
    ([], 3, 1, ErrorCode.INVALID_REPLICATION_FACTOR),
    ([0, 1, 1, 1], 3, 3, ErrorCode.INVALID_REPLICATION_FACTOR),  # two distinct brokers only
    ([0, 1, 2], 0, 1, ErrorCode.INVALID_PARTITIONS),
    ([0, 1, 2], -5, 1, ErrorCode.INVALID_PARTITIONS),
])
def test_invalid_arguments_carry_kafka_error_codes(brokers, partitions, rf, code):
    with pytest.raises(KafkaError) as info:
        assign_replicas_to_brokers(brokers, partitions, rf)
    assert info.value.code is code
    assert int(info.value.code) == {ErrorCode.INVALID_REPLICATION_FACTOR: 38, ErrorCode.INVALID_PARTITIONS: 37}[code]


# -- CreatePartitions ------------------------------------------------------------------------------

@given(broker_lists, st.data())
def test_new_partitions_continue_the_full_assignment_within_the_first_round(brokers, data):
    # While no follower-shift bump has happened before the current count (current <= n), adding
    # partitions gives exactly what creating the topic with the total count would have given.
    n = len(brokers)
    rf = data.draw(st.integers(1, n))
    start = data.draw(st.integers(0, n - 1))
    current = data.draw(st.integers(1, n))
    total = data.draw(st.integers(current + 1, current + 30))
    existing = assign_replicas_to_brokers(brokers, current, rf, start_index=start)
    full = assign_replicas_to_brokers(brokers, total, rf, start_index=start)
    assert assign_new_partitions(existing, brokers, total) == {p: full[p] for p in range(current, total)}


@given(broker_lists, st.data())
def test_new_partitions_continue_the_full_assignment_leaders_for_any_count(brokers, data):
    n = len(brokers)
    rf = data.draw(st.integers(1, n))
    start = data.draw(st.integers(0, n - 1))
    current = data.draw(st.integers(1, 40))
    total = data.draw(st.integers(current + 1, current + 30))
    existing = assign_replicas_to_brokers(brokers, current, rf, start_index=start)
    full = assign_replicas_to_brokers(brokers, total, rf, start_index=start)
    added = assign_new_partitions(existing, brokers, total)
    assert {p: r[0] for p, r in added.items()} == {p: full[p][0] for p in range(current, total)}
    assert added == assign_replicas_to_brokers(brokers, total - current, rf, start_index=start,
                                               start_partition_id=current)


def test_new_partitions_restart_the_follower_shift_as_kafka_does():
    # Kafka's nextReplicaShift starts again at the fixed start index on every call, so past the first
    # round the followers differ from a one-shot assignment of the total (leaders still continue).
    existing = assign_replicas_to_brokers([0, 1, 2], 4, 2, start_index=0)
    assert existing == {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2]}
    assert assign_new_partitions(existing, [0, 1, 2], 5) == {4: [1, 2]}
    assert assign_replicas_to_brokers([0, 1, 2], 5, 2, start_index=0)[4] == [1, 0]


@given(broker_lists, st.data())
def test_new_partitions_continue_leader_round_robin_of_a_random_topic(brokers, data):
    rf = data.draw(st.integers(1, len(brokers)))
    current = data.draw(st.integers(1, 30))
    total = data.draw(st.integers(current + 1, current + 30))
    existing = assign_replicas_to_brokers(brokers, current, rf, rng=random.Random(data.draw(st.integers(0, 999))))
    added = assign_new_partitions(existing, brokers, total)
    assert list(added) == list(range(current, total))
    assert all(len(r) == rf == len(set(r)) for r in added.values())
    ordered = sorted(brokers)
    first = ordered.index(existing[0][0])
    merged = {**existing, **added}
    assert [merged[p][0] for p in range(total)] == [ordered[(first + p) % len(ordered)] for p in range(total)]


def test_new_partitions_start_at_next_broker_when_partition0_leader_is_gone():
    existing = {0: [2, 3], 1: [3, 4]}
    # brokers now [0, 1, 3, 4]: the first id >= 2 is 3, at index 2 -> start index 2 (shift 2).
    added = assign_new_partitions(existing, [4, 3, 1, 0], 4)
    assert added == assign_replicas_to_brokers([0, 1, 3, 4], 2, 2, start_index=2, start_partition_id=2)
    assert added == {2: [0, 4], 3: [1, 0]}


def test_new_partitions_start_at_index_zero_when_no_broker_id_is_as_large():
    existing = {0: [9, 1]}
    assert assign_new_partitions(existing, [1, 2, 3], 3) == assign_replicas_to_brokers(
        [1, 2, 3], 2, 2, start_index=0, start_partition_id=1)


@pytest.mark.parametrize("existing, brokers, total, code", [
    ({0: [0, 1], 1: [1, 0]}, [0, 1], 2, ErrorCode.INVALID_PARTITIONS),
    ({0: [0, 1], 1: [1, 0]}, [0, 1], 1, ErrorCode.INVALID_PARTITIONS),
    ({}, [0, 1], 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ({1: [0]}, [0, 1], 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ({0: [0, 1, 2]}, [0, 1], 3, ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_new_partitions_errors(existing, brokers, total, code):
    with pytest.raises(KafkaError) as info:
        assign_new_partitions(existing, brokers, total)
    assert info.value.code is code


# -- topic names -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "orders", "a", "...", "a..b", "__consumer_offsets", "my-topic_v1.2", "A-Z_a-z.0-9", "x" * MAX_TOPIC_NAME_LENGTH,
])
def test_legal_topic_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name", [
    "", ".", "..", "x" * (MAX_TOPIC_NAME_LENGTH + 1), "a/b", "a b", "a\\b", "topic:1", "tópico", "数据",
    "orders\n", "\norders", "a\tb", "a+b", "a,b", "a*",
])
def test_illegal_topic_names_raise_invalid_topic_exception(name):
    with pytest.raises(KafkaError) as info:
        validate_topic_name(name)
    assert info.value.code is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert int(info.value.code) == 17


def test_max_topic_name_length_is_kafkas():
    assert MAX_TOPIC_NAME_LENGTH == 249


@pytest.mark.parametrize("a, b, collide", [
    ("my.topic", "my_topic", True),
    ("my_topic", "my.topic", True),
    ("a.b_c", "a_b.c", True),
    ("same", "same", True),
    ("my.topic", "my-topic", False),
    ("my.topic", "mytopic", False),
    ("a", "b", False),
    ("a.", "a_", True),
    ("a..", "a_", False),
])
def test_topics_collide(a, b, collide):
    assert topics_collide(a, b) is collide
