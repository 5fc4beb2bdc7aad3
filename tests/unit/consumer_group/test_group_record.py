"""The group metadata record (``group_record``, pure): Kafka's GroupMetadataValue v3 field names, the
round trip through the znode's JSON, what a malformed record is, and the group a record loads as."""
from __future__ import annotations

import json

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.zk.paths import ConsumerGroupMetadataZNode
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata
from consumer_group.coordinator.group_record import (
    GroupMetadataFenced,
    GroupRecord,
    MemberRecord,
    from_json,
    group_from_record,
    record_of,
    store_error,
    to_json,
)
from consumer_group.coordinator.state import GroupState
from tests.unit.consumer_group.test_coordinator import subscription

SUB = subscription("t", "u")
MEMBERS = (
    MemberRecord("m1", None, "c1", "/10.0.0.1", 30_000, 10_000, SUB, b"\x00\x01a"),
    MemberRecord("m2", "static-2", "c2", "/10.0.0.2", 40_000, 12_000, SUB, b""),
)
STABLE = GroupRecord("consumer", 7, "range", "m2", 1_700_000_000_000, MEMBERS)
EMPTY = GroupRecord("consumer", 8, None, None, 1_700_000_001_000)


def test_json_carries_kafkas_group_metadata_value_v3_field_names():
    value = to_json(STABLE)
    assert set(value) == {"protocolType", "generation", "protocol", "leader", "currentStateTimestamp", "members"}
    assert set(value["members"][0]) == {"memberId", "groupInstanceId", "clientId", "clientHost", "rebalanceTimeout",
                                        "sessionTimeout", "subscription", "assignment"}
    assert value["members"][0]["assignment"] == "AAFh"  # base64 of 00 01 'a'
    assert value["members"][1]["groupInstanceId"] == "static-2"


@pytest.mark.parametrize("record", [STABLE, EMPTY], ids=["stable", "empty"])
def test_round_trip_through_the_znode(record):
    data = ConsumerGroupMetadataZNode.encode(to_json(record))
    assert json.loads(data)["version"] == 3
    assert from_json(ConsumerGroupMetadataZNode.decode(data)) == record


def test_znode_path_and_version_check():
    assert ConsumerGroupMetadataZNode.path("g") == "/consumers/g/metadata"
    with pytest.raises(ValueError, match="version"):
        ConsumerGroupMetadataZNode.decode(b'{"version":2,"members":[]}')


def test_no_protocol_type_is_stored_as_the_empty_string():
    value = to_json(GroupRecord(None, 0, None, None, 5))
    assert value["protocolType"] == ""
    assert from_json(value).protocol_type is None


@pytest.mark.parametrize("mutate", [
    lambda v: v.pop("members"),
    lambda v: v.update(generation="7"),
    lambda v: v.update(protocol=None),
    lambda v: v.update(leader="nobody"),
    lambda v: v["members"][0].update(subscription="not base64!"),
    lambda v: v["members"][0].pop("sessionTimeout"),
    lambda v: v["members"][0].update(clientId=None),
], ids=["no-members", "generation-string", "members-without-protocol", "leader-not-a-member", "bad-base64",
        "no-session-timeout", "null-client-id"])
def test_malformed_records_are_value_errors(mutate):
    value = to_json(STABLE)
    mutate(value)
    with pytest.raises(ValueError):
        from_json(value)


def test_a_record_with_members_loads_stable_with_them():
    group = group_from_record("g", STABLE, now_ms=5)
    assert group.state is GroupState.STABLE and group.state_timestamp_ms == STABLE.current_state_timestamp_ms
    assert (group.generation_id, group.protocol_type, group.protocol_name, group.leader_id) == (7, "consumer",
                                                                                               "range", "m2")
    assert list(group.members) == ["m1", "m2"]
    m1 = group.get("m1")
    assert (m1.client_id, m1.client_host, m1.rebalance_timeout_ms, m1.session_timeout_ms, m1.assignment) == (
        "c1", "/10.0.0.1", 30_000, 10_000, b"\x00\x01a")
    assert m1.protocols == [("range", SUB)] and not m1.awaiting_join and not m1.awaiting_sync
    assert group.static_members == {"static-2": "m2"}
    assert group.subscribed_topics == {"t", "u"}
    assert group.candidate_protocols() == {"range"}  # a rejoin with the same protocol is consistent


def test_a_record_without_members_loads_empty():
    group = group_from_record("g", EMPTY, now_ms=5)
    assert group.state is GroupState.EMPTY and group.generation_id == 8 and group.protocol_type == "consumer"
    assert group.members == {} and group.leader_id is None and group.state_timestamp_ms == EMPTY.current_state_timestamp_ms


def test_a_record_without_a_state_timestamp_loads_stamped_now():
    assert group_from_record("g", GroupRecord("consumer", 1, None, None, -1), now_ms=42).state_timestamp_ms == 42


def test_record_of_a_group_takes_the_assignments_given_and_the_subscription_of_its_protocol():
    group = GroupMetadata("g", generation_id=3, protocol_name="range")
    group.add(MemberMetadata("m1", None, "c1", "/h", 100, 200, "consumer", [("rr", b"x"), ("range", SUB)],
                             assignment=b"old"))
    record = record_of(group, 99, {"m1": b"new"})
    assert record == GroupRecord("consumer", 3, "range", "m1", 99,
                                 (MemberRecord("m1", None, "c1", "/h", 100, 200, SUB, b"new"),))
    assert record_of(group, 99).members[0].assignment == b"old"


def test_record_round_trips_a_group():
    group = group_from_record("g", STABLE, now_ms=5)
    assert record_of(group, STABLE.current_state_timestamp_ms) == STABLE


@pytest.mark.parametrize("exc, error", [
    (GroupMetadataFenced("moved"), ErrorCode.NOT_COORDINATOR),
    (TimeoutError(), ErrorCode.REBALANCE_IN_PROGRESS),
    (OSError("zk down"), ErrorCode.COORDINATOR_NOT_AVAILABLE),
])
def test_store_errors_map_as_kafkas_store_group(exc, error):
    assert store_error(exc) is error
