"""CreatePartitions' decisions: ``assignment.partitions_to_add`` (Kafka 2.8's checks and messages, the
round robin continuing, explicit replica lists) and kafka-topics' ``--replica-assignment``."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.admin.assignment import assign_new_partitions, assign_replicas_to_brokers, partitions_to_add
from scripts.tools.kafka_topics.replica_assignment import new_replica_lists, parse_replica_assignment

EXISTING = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
LIVE = [1, 2, 3]


def refused(existing, live, total, assignments=None) -> tuple[ErrorCode, str]:
    with pytest.raises(KafkaError) as info:
        partitions_to_add(existing, live, total, assignments)
    return info.value.code, info.value.args[0]


# -- partitions_to_add ---------------------------------------------------------------------------------
def test_without_assignments_the_round_robin_continues():
    assert partitions_to_add(EXISTING, LIVE, 5) == assign_new_partitions(EXISTING, LIVE, 5)
    assert list(partitions_to_add(EXISTING, LIVE, 5)) == [3, 4]


def test_explicit_assignments_number_the_new_partitions_from_the_current_count():
    assert partitions_to_add(EXISTING, LIVE, 5, [[3, 1], [1, 2]]) == {3: [3, 1], 4: [1, 2]}


def test_fewer_or_as_many_partitions_are_invalid_partitions():
    assert refused(EXISTING, LIVE, 2) == (ErrorCode.INVALID_PARTITIONS,
                                          "Topic currently has 3 partitions, which is higher than the requested 2.")
    assert refused(EXISTING, LIVE, 3) == (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions.")
    assert refused(EXISTING, LIVE, 3, [[1, 2]])[0] == ErrorCode.INVALID_PARTITIONS  # counts are checked first


@pytest.mark.parametrize("assignments, message", [
    ([[1, 4], [2, 5]], "Unknown broker(s) in replica assignment: 4, 5."),
    ([[1, 2]], "Increasing the number of partitions by 2 but 1 assignments provided."),
    ([[1, 2], [2, 3], [3, 1]], "Increasing the number of partitions by 2 but 3 assignments provided."),
    ([], "Increasing the number of partitions by 2 but 0 assignments provided."),
    ([[1, 2], []], "Cannot have replication factor of 0 for partition id 4."),
    ([[1, 1], [2, 3]], "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3."),
    ([[1], [2, 3, 1]], "Inconsistent replication factor between partitions, partition 0 has 2 while "
                       "partitions [3, 4] have replication factors [1, 3], respectively."),
])
def test_bad_explicit_assignments_are_invalid_replica_assignment(assignments, message):
    assert refused(EXISTING, LIVE, 5, assignments) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def test_only_live_brokers_count():
    assert refused(EXISTING, [1, 2], 4, [[1, 3]])[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert refused(EXISTING, [1], 4)[0] == ErrorCode.INVALID_REPLICATION_FACTOR  # RF 2 on one live broker


@given(st.lists(st.integers(0, 20), min_size=1, max_size=6, unique=True), st.data())
def test_explicit_assignments_are_kept_as_given(brokers, data):
    rf = data.draw(st.integers(1, len(brokers)))
    current = data.draw(st.integers(1, 10))
    added = data.draw(st.integers(1, 10))
    existing = assign_replicas_to_brokers(brokers, current, rf, start_index=0)
    lists = [data.draw(st.permutations(brokers))[:rf] for _ in range(added)]
    result = partitions_to_add(existing, brokers, current + added, lists)
    assert result == {current + i: r for i, r in enumerate(lists)}
    assert not set(result) & set(existing)


# -- --replica-assignment ------------------------------------------------------------------------------
def test_parse_replica_assignment():
    assert parse_replica_assignment("1:2,2:3, 3 :1") == [[1, 2], [2, 3], [3, 1]]
    assert parse_replica_assignment("4") == [[4]]
    assert new_replica_lists("1:2,2:3,3:1,1:3", 3) == [[1, 3]]
    assert new_replica_lists("1:2", 3) == []
    assert new_replica_lists(None, 3) is None


@pytest.mark.parametrize("text, message", [
    ("1:2,x:3", "partition 1: 'x:3' is not a colon-separated list of broker ids"),
    ("1:2,,", "partition 1: '' is not"),
    ("1:1", "Partition replica lists may not contain duplicate entries: 1"),
    ("1:2,3", "Partition 1 has different replication factor: 3"),
])
def test_parse_replica_assignment_errors(text, message):
    with pytest.raises(ValueError) as info:
        parse_replica_assignment(text)
    assert str(info.value).startswith(message)
