"""consumer_group.coordinator.views: ConsumerProtocolAssignment parsing and the admin API's group view."""
from __future__ import annotations

import struct

from hypothesis import given, strategies as st

from brokers.model import TopicPartition
from consumer_group.coordinator.group import GroupMetadata, MemberMetadata, OffsetAndMetadata
from consumer_group.coordinator.state import GroupState
from consumer_group.coordinator.views import group_view, parse_assignment


def encode_assignment(assignment: dict[str, list[int]], user_data: bytes = b"", version: int = 0) -> bytes:
    """ConsumerProtocolAssignment as the Java client writes it (written here from the schema)."""
    out = struct.pack(">hi", version, len(assignment))
    for topic, partitions in assignment.items():
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", len(user_data)) + user_data


topics = st.dictionaries(st.text(min_size=1, max_size=20), st.lists(st.integers(0, 2 ** 31 - 1), max_size=10),
                         max_size=5)


@given(topics, st.binary(max_size=20), st.integers(0, 3))
def test_assignments_parse_back_whatever_the_version_and_user_data(assignment, user_data, version):
    assert parse_assignment(encode_assignment(assignment, user_data, version)) == assignment


def test_empty_blob_is_no_assignment_and_garbage_is_none():
    assert parse_assignment(b"") == {}
    good = encode_assignment({"orders": [0, 1, 2]})
    assert parse_assignment(good[:-8]) is None  # cut inside the partitions array
    assert parse_assignment(struct.pack(">hi", 0, -1)) is None
    assert parse_assignment(struct.pack(">hih", 0, 1, -1)) is None
    assert parse_assignment(struct.pack(">hih", 0, 1, 2) + b"\xff\xfe" + struct.pack(">i", 0)) is None  # not UTF-8


def member(member_id: str, assignment: bytes) -> MemberMetadata:
    return MemberMetadata(member_id, None, "client-" + member_id, "/10.0.0.1", 30000, 10000, "consumer",
                          [("range", b"")], assignment=assignment)


def test_group_view_decodes_members_assignments_and_lists_offsets_in_order():
    group = GroupMetadata("g", state=GroupState.STABLE, generation_id=4, protocol_type="consumer",
                          protocol_name="range", leader_id="m1")
    group.members = {"m2": member("m2", encode_assignment({"b": [1]})),
                     "m1": member("m1", encode_assignment({"a": [2, 0], "b": [0]}))}
    group.offsets = {TopicPartition("b", 0): OffsetAndMetadata(7, "meta"), TopicPartition("a", 1): OffsetAndMetadata(3)}
    view = group_view(group, coordinator_id=2)
    assert (view["state"], view["protocol"], view["generation"], view["coordinator"]) == ("Stable", "range", 4, 2)
    assert [m["member_id"] for m in view["members"]] == ["m1", "m2"]
    assert view["members"][0]["assignment"] == [{"topic": "a", "partitions": [0, 2]}, {"topic": "b", "partitions": [0]}]
    assert [(o["topic"], o["partition"], o["committed_offset"]) for o in view["offsets"]] == [("a", 1, 3), ("b", 0, 7)]


def test_members_of_other_protocol_types_show_no_assignment():
    group = GroupMetadata("connect", state=GroupState.STABLE, protocol_type="connect", protocol_name="default")
    group.members = {"w": member("w", b"\x00\x01opaque")}
    assert group_view(group, 1)["members"][0]["assignment"] == []
