"""What each version of the group APIs means (``consumer_group.coordinator.versions``), pure: Kafka 2.8's
KafkaApis and request/response classes are the reference for every expected value."""
from __future__ import annotations

import pytest

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator import versions
from consumer_group.coordinator.group import JoinResult

JOINED = JoinResult(ErrorCode.NONE, "m", 3, "consumer", "range", "m", (("m", None, b"md"),))
FAILED = JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "m")


@pytest.mark.parametrize("version", range(7))
def test_join_group_before_v7_answers_no_protocol_as_empty_and_no_protocol_type(version):
    assert versions.join_response(version, FAILED)["protocol_name"] == ""
    fields = versions.join_response(version, JOINED)
    assert (fields["protocol_name"], fields["protocol_type"]) == ("range", None)


def test_join_group_v7_answers_the_protocol_type_and_a_null_protocol_name_on_errors():
    assert (versions.join_response(7, FAILED)["protocol_name"], versions.join_response(7, FAILED)["protocol_type"]) \
        == (None, None)
    fields = versions.join_response(7, JOINED)
    assert (fields["protocol_type"], fields["protocol_name"], fields["generation_id"], fields["leader"]) == \
        ("consumer", "range", 3, "m")
    assert fields["members"] == [{"member_id": "m", "group_instance_id": None, "metadata": b"md"}]


def test_join_group_requires_a_known_member_id_from_v4():
    assert [versions.requires_known_member_id(v) for v in range(8)] == [False] * 4 + [True] * 4


@pytest.mark.parametrize("version, protocol_type, protocol_name, missing", [
    (4, None, None, False),  # before v5 the fields do not exist
    (5, None, None, True),
    (5, "consumer", None, True),
    (5, None, "range", True),
    (5, "consumer", "range", False),
])
def test_sync_group_v5_must_name_protocol_type_and_name(version, protocol_type, protocol_name, missing):
    assert versions.sync_protocol_missing(version, protocol_type, protocol_name) is missing


@pytest.mark.parametrize("version, retention, expected", [
    (0, 5000, None), (1, 5000, None),  # no retention field
    (2, 5000, 5000), (4, 5000, 5000), (3, -1, None),  # -1: the broker's retention
    (5, 5000, None), (8, None, None),  # v5+ dropped the field
])
def test_offset_commit_retention_time_counts_only_for_v2_to_v4(version, retention, expected):
    assert versions.retention_ms(version, retention) == expected


def test_authorized_operations_is_a_bit_per_operation_code():
    assert versions.authorized_operations([]) == 0
    assert versions.authorized_operations(versions.GROUP_OPERATIONS) == (1 << 3) | (1 << 6) | (1 << 8) == 328


@pytest.mark.parametrize("version, requested, error, expected", [
    (2, True, ErrorCode.NONE, versions.AUTHORIZED_OPERATIONS_OMITTED),  # no such field before v3
    (3, False, ErrorCode.NONE, versions.AUTHORIZED_OPERATIONS_OMITTED),  # not asked for
    (3, True, ErrorCode.NOT_COORDINATOR, versions.AUTHORIZED_OPERATIONS_OMITTED),  # not described
    (3, True, ErrorCode.NONE, 1 << 8),
    (5, True, ErrorCode.NONE, 1 << 8),
])
def test_describe_groups_authorized_operations_only_when_asked_on_v3_plus(version, requested, error, expected):
    assert versions.described_operations(version, requested, error, [8]) == expected
    assert versions.AUTHORIZED_OPERATIONS_OMITTED == -2147483648


@pytest.mark.parametrize("version, partition_error, listed", [(0, ErrorCode.NOT_COORDINATOR, True),
                                                               (1, ErrorCode.NOT_COORDINATOR, True),
                                                               (2, ErrorCode.NONE, False),
                                                               (7, ErrorCode.NONE, False)])
def test_offset_fetch_group_errors_go_per_partition_before_v2_and_to_the_top_from_v2(version, partition_error, listed):
    assert versions.offset_fetch_partition_error(version, ErrorCode.NOT_COORDINATOR) == partition_error
    assert versions.offset_fetch_error_lists_partitions(version) is listed


@pytest.mark.parametrize("version, states, expected", [
    (3, ["Stable"], frozenset()),  # no filter before v4
    (4, None, frozenset()), (4, [], frozenset()),  # null and empty: every state
    (4, ["Stable", "Empty"], frozenset({"Stable", "Empty"})),
])
def test_list_groups_states_filter_from_v4(version, states, expected):
    assert versions.states_filter(version, states) == expected
