"""GroupMetadata / MemberMetadata: the pure half of Kafka's group coordinator (no loop, no clock)."""
from __future__ import annotations

import struct

import pytest

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import (
    GroupMetadata,
    JoinResult,
    MemberMetadata,
    SyncResult,
    parse_subscription_topics,
)
from consumer_group.coordinator.state import GroupState, IllegalStateTransition


def subscription(*topics: str, user_data: bytes | None = None, version: int = 0) -> bytes:
    """A ConsumerProtocolSubscription: int16 version, int32 topic count, int16-length topics, bytes user data."""
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        encoded = topic.encode()
        out += struct.pack(">h", len(encoded)) + encoded
    if user_data is None:
        return out + struct.pack(">i", -1)
    return out + struct.pack(">i", len(user_data)) + user_data


def member(member_id: str, protocols=None, instance_id: str | None = None, protocol_type: str = "consumer",
           rebalance_timeout_ms: int = 1000) -> MemberMetadata:
    if protocols is None:
        protocols = [("range", subscription("t"))]
    return MemberMetadata(member_id, instance_id, "client", "/127.0.0.1", rebalance_timeout_ms, 1000, protocol_type,
                          list(protocols))


def park_join(m: MemberMetadata) -> list[JoinResult]:
    answers: list[JoinResult] = []
    m.join_callback = answers.append
    return answers


def park_sync(m: MemberMetadata) -> list[SyncResult]:
    answers: list[SyncResult] = []
    m.sync_callback = answers.append
    return answers


# -- add / remove ------------------------------------------------------------------------------
def test_first_member_fixes_protocol_type_and_leads():
    group = GroupMetadata("g")
    group.add(member("a", protocol_type="consumer"))
    group.add(member("b"))
    assert group.protocol_type == "consumer"
    assert group.leader_id == "a" and group.is_leader("a") and not group.is_leader("b")
    assert group.size() == 2 and group.has("b") and group.get("b").member_id == "b"


def test_leader_succession_follows_insertion_order():
    group = GroupMetadata("g")
    for name in "abc":
        group.add(member(name))
    group.remove("a")
    assert group.leader_id == "b"
    group.remove("c")  # a follower leaving changes nothing
    assert group.leader_id == "b"
    group.remove("b")
    assert group.leader_id is None and group.size() == 0
    group.add(member("d"))
    assert group.leader_id == "d"


def test_remove_unknown_member_is_a_no_op():
    group = GroupMetadata("g")
    group.add(member("a"))
    assert group.remove("zz") is None
    assert group.size() == 1 and group.leader_id == "a"


def test_remove_drops_protocol_support_pending_sync_and_static_mapping():
    group = GroupMetadata("g")
    group.add(member("a", [("range", b""), ("rr", b"")], instance_id="i1"))
    group.add(member("b", [("range", b"")]))
    group.pending_sync = {"a", "b"}
    removed = group.remove("a")
    assert removed is not None and removed.member_id == "a"
    assert group.protocol_support["range"] == 1 and group.protocol_support["rr"] == 0
    assert group.pending_sync == {"b"}
    assert group.static_member_id("i1") is None


def test_add_consumes_a_pending_member_id():
    group = GroupMetadata("g")
    group.pending_members.add("a")
    group.add(member("a"))
    assert group.pending_members == set()


# -- protocols ---------------------------------------------------------------------------------
def test_protocol_support_counts_members_per_name():
    group = GroupMetadata("g")
    group.add(member("a", [("range", b""), ("rr", b"")]))
    group.add(member("b", [("rr", b""), ("sticky", b"")]))
    assert group.protocol_support["range"] == 1
    assert group.protocol_support["rr"] == 2
    assert group.protocol_support["sticky"] == 1
    assert group.candidate_protocols() == {"rr"}


def test_update_member_moves_protocol_support():
    group = GroupMetadata("g")
    a = member("a", [("range", b"")])
    group.add(a)
    group.update_member(a, [("rr", b"x")], 2000, 3000)
    assert group.protocol_support["range"] == 0 and group.protocol_support["rr"] == 1
    assert a.protocols == [("rr", b"x")] and a.rebalance_timeout_ms == 2000 and a.session_timeout_ms == 3000
    assert group.candidate_protocols() == {"rr"}


def test_supports_protocols_of_an_empty_group_needs_a_type_and_a_name():
    group = GroupMetadata("g")
    assert group.supports_protocols("consumer", ["range"])
    assert not group.supports_protocols("", ["range"])
    assert not group.supports_protocols("consumer", [])


def test_supports_protocols_needs_same_type_and_a_name_every_member_offers():
    group = GroupMetadata("g")
    group.add(member("a", [("range", b""), ("rr", b"")]))
    group.add(member("b", [("rr", b"")]))
    assert group.supports_protocols("consumer", ["rr"])
    assert group.supports_protocols("consumer", ["sticky", "rr"])
    assert not group.supports_protocols("consumer", ["range"])  # b does not offer it
    assert not group.supports_protocols("consumer", ["sticky"])
    assert not group.supports_protocols("connect", ["rr"])


def test_select_protocol_majority_of_first_choices_among_common_protocols():
    group = GroupMetadata("g")
    group.add(member("a", [("range", b""), ("rr", b"")]))
    group.add(member("b", [("rr", b""), ("range", b"")]))
    group.add(member("c", [("rr", b""), ("range", b"")]))
    assert group.select_protocol() == "rr"


def test_select_protocol_votes_only_for_candidates():
    # a's favourite (sticky) is not offered by everyone, so a votes for its next choice (range)
    group = GroupMetadata("g")
    group.add(member("a", [("sticky", b""), ("range", b""), ("rr", b"")]))
    group.add(member("b", [("range", b""), ("rr", b"")]))
    group.add(member("c", [("rr", b""), ("range", b"")]))
    assert group.candidate_protocols() == {"range", "rr"}
    assert group.select_protocol() == "range"


def test_member_vote_and_metadata():
    m = member("a", [("sticky", b"s"), ("range", b"r")])
    assert m.vote({"range", "rr"}) == "range"
    assert m.metadata("sticky") == b"s"
    with pytest.raises(KeyError):
        m.metadata("rr")
    assert m.matches([("sticky", b"s"), ("range", b"r")])
    assert not m.matches([("range", b"r"), ("sticky", b"s")])
    assert not m.matches([("sticky", b"s"), ("range", b"other")])


# -- joining -----------------------------------------------------------------------------------
def test_has_all_members_joined_counts_parked_joins_and_pending_ids():
    group = GroupMetadata("g")
    a, b = member("a"), member("b")
    group.add(a)
    group.add(b)
    assert not group.has_all_members_joined()
    park_join(a)
    assert group.num_awaiting_join() == 1 and not group.has_all_members_joined()
    assert [m.member_id for m in group.not_yet_rejoined_members()] == ["b"]
    park_join(b)
    assert group.has_all_members_joined()
    group.pending_members.add("c")  # KIP-394: an id handed out and not yet used
    assert not group.has_all_members_joined()
    group.pending_members.clear()
    assert group.has_all_members_joined()


def test_rebalance_timeout_is_the_members_maximum():
    group = GroupMetadata("g")
    assert group.rebalance_timeout_ms() == 0
    group.add(member("a", rebalance_timeout_ms=100))
    group.add(member("b", rebalance_timeout_ms=300))
    assert group.rebalance_timeout_ms() == 300


def test_maybe_elect_new_joined_leader_keeps_a_rejoined_leader():
    group = GroupMetadata("g")
    a, b = member("a"), member("b")
    group.add(a)
    group.add(b)
    park_join(a)
    park_join(b)
    assert group.maybe_elect_new_joined_leader() and group.leader_id == "a"


def test_maybe_elect_new_joined_leader_replaces_a_leader_that_did_not_rejoin():
    group = GroupMetadata("g")
    a, b, c = member("a"), member("b"), member("c")
    for m in (a, b, c):
        group.add(m)
    park_join(c)
    assert group.maybe_elect_new_joined_leader() and group.leader_id == "c"


def test_maybe_elect_new_joined_leader_fails_when_nobody_rejoined():
    group = GroupMetadata("g")
    group.add(member("a"))
    group.add(member("b"))
    assert not group.maybe_elect_new_joined_leader()
    assert group.leader_id == "a"


def test_init_next_generation_without_members_goes_empty():
    group = GroupMetadata("g", state=GroupState.PREPARING_REBALANCE, generation_id=3, protocol_name="range")
    group.pending_sync = {"gone"}
    group.init_next_generation(now_ms=1234)
    assert group.state is GroupState.EMPTY and group.state_timestamp_ms == 1234
    assert group.generation_id == 4 and group.protocol_name is None and group.pending_sync == set()


def test_init_next_generation_with_members_completes_rebalance():
    group = GroupMetadata("g", state=GroupState.PREPARING_REBALANCE, generation_id=1)
    group.add(member("a", [("range", b""), ("rr", b"")]))
    group.add(member("b", [("rr", b"")]))
    group.init_next_generation(now_ms=99)
    assert group.state is GroupState.COMPLETING_REBALANCE and group.state_timestamp_ms == 99
    assert group.generation_id == 2 and group.protocol_name == "rr"
    assert group.pending_sync == {"a", "b"}


def test_init_next_generation_only_from_preparing_rebalance():
    group = GroupMetadata("g", state=GroupState.STABLE)
    group.add(member("a"))
    with pytest.raises(IllegalStateTransition):
        group.init_next_generation(0)


def test_transition_to_records_timestamp_and_refuses_illegal_moves():
    group = GroupMetadata("g")
    group.transition_to(GroupState.PREPARING_REBALANCE, 10)
    assert group.is_(GroupState.PREPARING_REBALANCE) and group.state_timestamp_ms == 10
    assert not group.can_rebalance()
    with pytest.raises(IllegalStateTransition):
        group.transition_to(GroupState.STABLE, 20)
    assert group.is_(GroupState.PREPARING_REBALANCE) and group.state_timestamp_ms == 10


# -- static members ----------------------------------------------------------------------------
def test_replace_static_member_moves_identity_leadership_and_pending_sync():
    group = GroupMetadata("g")
    old = member("old", instance_id="i1")
    group.add(old)
    group.add(member("b"))
    group.pending_sync = {"old", "b"}
    old.assignment = b"assigned"
    replaced = group.replace_static_member("i1", "old", "new")
    assert replaced is old and replaced.member_id == "new" and replaced.assignment == b"assigned"
    assert not group.has("old") and group.get("new") is old
    assert group.static_member_id("i1") == "new"
    assert group.leader_id == "new"
    assert group.pending_sync == {"new", "b"}
    assert group.protocol_support["range"] == 2  # the same member, support unchanged


def test_static_member_fencing():
    group = GroupMetadata("g")
    group.add(member("m1", instance_id="i1"))
    assert not group.is_static_member_fenced("m1", "i1")
    assert not group.is_static_member_fenced("m1", None)  # dynamic-style request: not fenced
    assert not group.is_static_member_fenced("x", "unknown-instance")
    group.replace_static_member("i1", "m1", "m2")
    assert group.is_static_member_fenced("m1", "i1")
    assert not group.is_static_member_fenced("m2", "i1")
    assert group.static_member_id(None) is None


def test_remove_keeps_static_mapping_of_a_newer_holder():
    group = GroupMetadata("g")
    a = member("a", instance_id="i1")
    group.add(a)
    group.static_members["i1"] = "b"  # instance already taken over by another id
    group.remove("a")
    assert group.static_member_id("i1") == "b"


# -- results and answering parked requests -----------------------------------------------------
def test_join_result_members_only_for_the_leader():
    group = GroupMetadata("g", state=GroupState.PREPARING_REBALANCE)
    a = member("a", [("range", b"ma")], instance_id="ia")
    b = member("b", [("range", b"mb")])
    group.add(a)
    group.add(b)
    group.init_next_generation(0)
    leader = group.join_result(a)
    follower = group.join_result(b)
    assert leader == JoinResult(ErrorCode.NONE, "a", 1, "consumer", "range", "a",
                                (("a", "ia", b"ma"), ("b", None, b"mb")))
    assert follower == JoinResult(ErrorCode.NONE, "b", 1, "consumer", "range", "a", ())


def test_current_member_metadata_needs_a_protocol():
    group = GroupMetadata("g")
    group.add(member("a"))
    with pytest.raises(RuntimeError):
        group.current_member_metadata()


def test_answer_join_answers_exactly_once_and_clears_is_new():
    m = member("a")
    m.is_new = True
    answers = park_join(m)
    assert m.awaiting_join
    GroupMetadata.answer_join(m, JoinResult(ErrorCode.NONE, "a"))
    GroupMetadata.answer_join(m, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "a"))
    assert answers == [JoinResult(ErrorCode.NONE, "a")]
    assert not m.awaiting_join and not m.is_new


def test_answer_join_without_a_parked_request_keeps_is_new():
    m = member("a")
    m.is_new = True
    GroupMetadata.answer_join(m, JoinResult(ErrorCode.NONE, "a"))
    assert m.is_new


def test_answer_sync_answers_exactly_once():
    m = member("a")
    answers = park_sync(m)
    assert m.awaiting_sync
    GroupMetadata.answer_sync(m, SyncResult(ErrorCode.NONE, b"x"))
    GroupMetadata.answer_sync(m, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
    assert answers == [SyncResult(ErrorCode.NONE, b"x")] and not m.awaiting_sync


def test_set_and_propagate_assignment_fills_missing_members_with_empty():
    group = GroupMetadata("g")
    a, b = member("a"), member("b")
    group.add(a)
    group.add(b)
    answers_a, answers_b = park_sync(a), park_sync(b)
    group.set_and_propagate_assignment({"a": b"pa"})
    assert answers_a == [SyncResult(ErrorCode.NONE, b"pa", "consumer")]
    assert answers_b == [SyncResult(ErrorCode.NONE, b"", "consumer")]
    assert a.assignment == b"pa" and b.assignment == b""


def test_reset_and_propagate_assignment_error():
    group = GroupMetadata("g")
    a, b = member("a"), member("b")
    a.assignment = b"old"
    group.add(a)
    group.add(b)
    answers_a = park_sync(a)
    group.reset_and_propagate_assignment_error(ErrorCode.REBALANCE_IN_PROGRESS)
    assert answers_a == [SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)] and a.assignment == b""


# -- subscriptions -----------------------------------------------------------------------------
@pytest.mark.parametrize("topics", [(), ("t",), ("orders", "payments", "ünïcode")])
@pytest.mark.parametrize("user_data", [None, b"", b"\x00\x01user"])
def test_parse_subscription_topics_round_trip(topics, user_data):
    assert parse_subscription_topics(subscription(*topics, user_data=user_data)) == list(topics)


def test_parse_subscription_topics_ignores_later_versions_fields():
    # v1 appends owned partitions after the user data: the v0 prefix is all the broker reads
    v1 = subscription("a", "b", user_data=b"u", version=1) + struct.pack(">i", 0)
    assert parse_subscription_topics(v1) == ["a", "b"]


def test_parse_subscription_topics_accepts_memoryview():
    assert parse_subscription_topics(memoryview(subscription("a"))) == ["a"]


@pytest.mark.parametrize("data", [
    pytest.param(b"", id="empty"),
    pytest.param(b"\x00", id="truncated-version"),
    pytest.param(struct.pack(">h", 0) + b"\x00\x00", id="truncated-count"),
    pytest.param(struct.pack(">hi", 0, 2) + struct.pack(">h", 1) + b"a", id="fewer-topics-than-count"),
    pytest.param(struct.pack(">hi", 0, 1) + struct.pack(">h", 10) + b"abc", id="topic-longer-than-data"),
    pytest.param(struct.pack(">hi", 0, 1) + struct.pack(">h", 2) + b"\xff\xfe", id="invalid-utf8"),
])
def test_parse_subscription_topics_malformed_is_none(data):
    assert parse_subscription_topics(data) is None


@pytest.mark.parametrize("data", [
    pytest.param(struct.pack(">hi", 0, 1) + struct.pack(">h", -1) + struct.pack(">i", -1), id="null-topic-string"),
    pytest.param(struct.pack(">hi", 0, 2) + struct.pack(">h", -2) + b"ab", id="negative-topic-length"),
    pytest.param(struct.pack(">hi", 0, -1) + struct.pack(">i", -1), id="negative-topic-count"),
])
def test_parse_subscription_topics_negative_lengths_are_malformed(data):
    # Topics is a non-nullable array of non-nullable strings: Kafka's reader rejects negative sizes.
    assert parse_subscription_topics(data) is None


def consumer_group(*members: MemberMetadata) -> GroupMetadata:
    group = GroupMetadata("g", state=GroupState.PREPARING_REBALANCE)
    for m in members:
        group.add(m)
    group.init_next_generation(0)
    return group


def test_subscribed_topics_is_the_union_over_members():
    group = consumer_group(member("a", [("range", subscription("t1", "t2"))]),
                           member("b", [("range", subscription("t2", "t3"))]))
    assert group.subscribed_topics == {"t1", "t2", "t3"}


def test_subscribed_topics_reads_the_selected_protocols_metadata():
    group = consumer_group(member("a", [("sticky", subscription("x")), ("rr", subscription("y"))]),
                           member("b", [("rr", subscription("z"))]))
    assert group.protocol_name == "rr"
    assert group.subscribed_topics == {"y", "z"}


def test_subscribed_topics_unknown_when_a_member_does_not_parse():
    group = consumer_group(member("a", [("range", subscription("t1"))]), member("b", [("range", b"\x00")]))
    assert group.subscribed_topics is None


def test_subscribed_topics_unknown_for_other_protocol_types():
    group = consumer_group(member("a", [("cp", b"opaque")], protocol_type="connect"))
    assert group.subscribed_topics is None


def test_subscribed_topics_of_a_group_without_members_is_empty():
    assert GroupMetadata("g").subscribed_topics == set()
