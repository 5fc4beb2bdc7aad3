"""MirrorMaker 2's replication policies (scripts/tools/kafka_mirror_maker/policy.py): Kafka 2.8's
DefaultReplicationPolicy (Java's String.split included), Kafka 3.x's IdentityReplicationPolicy, MM2's own
topic names, internal topics, heartbeats, cycles, and the class names ``replication.policy.class`` accepts."""
from __future__ import annotations

import pytest

from scripts.tools.kafka_mirror_maker.policy import (DefaultReplicationPolicy, IdentityReplicationPolicy,
                                                     ReplicationPolicy, policy_for)

DEFAULT = DefaultReplicationPolicy()
UNDERSCORE = DefaultReplicationPolicy("_")
ARROW = DefaultReplicationPolicy("->")
IDENTITY = IdentityReplicationPolicy()
IDENTITY_UNDERSCORE = IdentityReplicationPolicy("_")
ALL = [DEFAULT, UNDERSCORE, ARROW, IDENTITY, IDENTITY_UNDERSCORE]


# -- DefaultReplicationPolicy ---------------------------------------------------------------------------

@pytest.mark.parametrize("policy, source, topic, remote", [
    (DEFAULT, "us-west", "topic1", "us-west.topic1"),
    (DEFAULT, "us-east", "us-west.topic1", "us-east.us-west.topic1"),
    (DEFAULT, "a", "heartbeats", "a.heartbeats"),
    (UNDERSCORE, "us-west", "topic1", "us-west_topic1"),
    (UNDERSCORE, "b", "a_x", "b_a_x"),
    (ARROW, "a", "x.y", "a->x.y"),
])
def test_default_format_remote_topic(policy, source, topic, remote):
    assert policy.format_remote_topic(source, topic) == remote


@pytest.mark.parametrize("policy, topic, source, upstream, original", [
    (DEFAULT, "topic1", None, None, "topic1"),
    (DEFAULT, "us-west.topic1", "us-west", "topic1", "topic1"),
    (DEFAULT, "us-east.us-west.topic1", "us-east", "us-west.topic1", "topic1"),
    (DEFAULT, "c.b.a.x", "c", "b.a.x", "x"),
    (DEFAULT, "us_west.my_topic", "us_west", "my_topic", "my_topic"),
    # Java's String.split: trailing empty strings dropped, leading and inner ones kept
    (DEFAULT, "", None, None, ""),
    (DEFAULT, "a.", None, None, "a."),
    (DEFAULT, "a..", None, None, "a.."),
    (DEFAULT, "...", None, None, "..."),
    (DEFAULT, "a..b", "a", ".b", "b"),
    (DEFAULT, ".a", "", "a", "a"),
    (DEFAULT, "a.b.", "a", "b.", "b."),
    (UNDERSCORE, "us-west_topic1", "us-west", "topic1", "topic1"),
    (UNDERSCORE, "b_a_x", "b", "a_x", "x"),
    (UNDERSCORE, "us-west.topic1", None, None, "us-west.topic1"),
    (UNDERSCORE, "a_", None, None, "a_"),
    (UNDERSCORE, "a__b", "a", "_b", "b"),
    (ARROW, "b->a->x", "b", "a->x", "x"),
    (ARROW, "a-x>y", None, None, "a-x>y"),
    (ARROW, "a->", None, None, "a->"),
])
def test_default_parses_remote_topics(policy, topic, source, upstream, original):
    assert policy.topic_source(topic) == source
    assert policy.upstream_topic(topic) == upstream
    assert policy.original_topic(topic) == original


@pytest.mark.parametrize("policy", [DEFAULT, UNDERSCORE, ARROW])
@pytest.mark.parametrize("topic", ["x", "orders.v2", "a_b-c", "tópico"])
def test_default_round_trips_through_hops(policy, topic):
    once = policy.format_remote_topic("east", topic)
    twice = policy.format_remote_topic("west", once)
    assert policy.topic_source(twice) == "west"
    assert policy.upstream_topic(twice) == once
    assert policy.topic_source(once) == "east"
    assert policy.upstream_topic(once) == topic


# -- IdentityReplicationPolicy --------------------------------------------------------------------------

@pytest.mark.parametrize("topic", ["topic1", "us-west.topic1", "b.a.x", "my-heartbeats", "heartbeats2",
                                   "xheartbeats"])
def test_identity_keeps_names_and_knows_no_source(topic):
    assert IDENTITY.format_remote_topic("us-west", topic) == topic
    assert IDENTITY.topic_source(topic) is None
    assert IDENTITY.upstream_topic(topic) == topic  # as Kafka 3.x: any topic may be remote
    assert IDENTITY.original_topic(topic) == topic
    assert not IDENTITY.is_heartbeats_topic(topic)


@pytest.mark.parametrize("policy, source, topic, remote", [
    (IDENTITY, "a", "heartbeats", "a.heartbeats"),
    (IDENTITY, "b", "a.heartbeats", "b.a.heartbeats"),
    (IDENTITY_UNDERSCORE, "a", "heartbeats", "a_heartbeats"),
    (IDENTITY_UNDERSCORE, "b", "a_heartbeats", "b_a_heartbeats"),
    (IDENTITY_UNDERSCORE, "a", "a.heartbeats", "a.heartbeats"),  # no separator boundary: not a heartbeat
])
def test_identity_names_heartbeats_as_the_default_policy(policy, source, topic, remote):
    assert policy.format_remote_topic(source, topic) == remote


@pytest.mark.parametrize("policy, topic, source, upstream", [
    (IDENTITY, "heartbeats", None, None),
    (IDENTITY, "a.heartbeats", "a", "heartbeats"),
    (IDENTITY, "b.a.heartbeats", "b", "a.heartbeats"),
    (IDENTITY_UNDERSCORE, "b_a_heartbeats", "b", "a_heartbeats"),
])
def test_identity_parses_heartbeats_as_the_default_policy(policy, topic, source, upstream):
    assert policy.topic_source(topic) == source
    assert policy.upstream_topic(topic) == upstream
    assert policy.original_topic(topic) == "heartbeats"
    assert policy.is_heartbeats_topic(topic)


def test_identity_cannot_detect_cycles_except_for_heartbeats():
    assert not IDENTITY.is_cycle("topic1", "a")
    assert not IDENTITY.is_cycle("a.topic1", "a")
    assert IDENTITY.is_cycle("a.heartbeats", "a")
    assert IDENTITY.is_cycle("b.a.heartbeats", "a")
    assert not IDENTITY.is_cycle("b.a.heartbeats", "c")
    assert not IDENTITY.is_cycle("heartbeats", "a")


# -- MM2's own topics -----------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ALL)
def test_mm2_topic_names_ignore_the_separator(policy):
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.offset_syncs_topic("us-east") == "mm2-offset-syncs.us-east.internal"
    assert policy.checkpoints_topic("us-west") == "us-west.checkpoints.internal"
    assert policy.is_checkpoints_topic("us-west.checkpoints.internal")
    assert not policy.is_checkpoints_topic("us-west.checkpoints")
    assert policy.is_internal_topic(policy.offset_syncs_topic("b"))
    assert policy.is_internal_topic(policy.checkpoints_topic("a"))
    assert not policy.is_internal_topic(policy.heartbeats_topic())  # heartbeats are mirrored


@pytest.mark.parametrize("policy, topic, heartbeats", [
    (DEFAULT, "heartbeats", True),
    (DEFAULT, "a.heartbeats", True),
    (DEFAULT, "b.a.heartbeats", True),
    (DEFAULT, "c.b.a.heartbeats", True),
    (DEFAULT, "my-heartbeats", False),
    (DEFAULT, "heartbeats.a", False),
    (DEFAULT, "a.heartbeats.x", False),
    (DEFAULT, "a_heartbeats", False),
    (DEFAULT, "Heartbeats", False),
    (UNDERSCORE, "a_heartbeats", True),
    (UNDERSCORE, "b_a_heartbeats", True),
    (UNDERSCORE, "a.heartbeats", False),
    (ARROW, "b->a->heartbeats", True),
])
def test_is_heartbeats_topic(policy, topic, heartbeats):
    assert policy.is_heartbeats_topic(topic) is heartbeats


@pytest.mark.parametrize("topic, internal", [
    ("__consumer_offsets", True),
    ("__transaction_state", True),
    (".hidden", True),
    ("mm2-offset-syncs.b.internal", True),
    ("a.checkpoints.internal", True),
    ("mm2-configs.a.internal", True),
    ("connect-offsets-internal", True),
    ("us-west.__consumer_offsets", False),  # Kafka's rule: only the name's start counts
    ("orders", False),
    ("internal", False),
    ("orders.internal.v2", False),
    ("a.heartbeats", False),
    ("_single_underscore", False),
])
def test_is_internal_topic(topic, internal):
    assert DEFAULT.is_internal_topic(topic) is internal
    assert IDENTITY.is_internal_topic(topic) is internal


def test_custom_separator_internal_suffix_is_internal_too():
    """Kafka 3.1+ names MM2's topics with the custom separator (mm2-offset-syncs_b_internal): never mirror them."""
    assert UNDERSCORE.is_internal_topic("mm2-offset-syncs_b_internal")
    assert UNDERSCORE.is_internal_topic("a_checkpoints_internal")
    assert not DEFAULT.is_internal_topic("a_checkpoints_internal")
    assert ARROW.is_internal_topic("x->internal")


# -- cycles ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, topic, target, cycle", [
    (DEFAULT, "x", "b", False),
    (DEFAULT, "b.x", "b", True),
    (DEFAULT, "a.x", "b", False),
    (DEFAULT, "a.b.x", "b", True),
    (DEFAULT, "c.a.b.x", "b", True),
    (DEFAULT, "c.a.x", "b", False),
    (DEFAULT, "b.heartbeats", "b", True),
    (DEFAULT, "a.b.heartbeats", "b", True),
    (DEFAULT, "a.heartbeats", "b", False),
    (DEFAULT, "heartbeats", "b", False),
    (DEFAULT, "bb.x", "b", False),
    (DEFAULT, "b", "b", False),
    (DEFAULT, "b.", "b", False),
    (UNDERSCORE, "b_x", "b", True),
    (UNDERSCORE, "a_b_x", "b", True),
    (UNDERSCORE, "b.x", "b", False),
    (UNDERSCORE, "a_b.x", "b", False),
    (ARROW, "a->b->x", "b", True),
])
def test_is_cycle(policy, topic, target, cycle):
    assert policy.is_cycle(topic, target) is cycle


def test_a_topic_mirrored_back_and_forth_is_a_cycle_at_every_hop():
    topic = DEFAULT.format_remote_topic("a", "orders")      # on b
    back = DEFAULT.format_remote_topic("b", topic)          # would be on a
    assert DEFAULT.is_cycle(topic, "a") and DEFAULT.is_cycle(back, "a") and DEFAULT.is_cycle(back, "b")
    assert not DEFAULT.is_cycle(topic, "c")


# -- construction and policy_for ------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [
    ("org.apache.kafka.connect.mirror.DefaultReplicationPolicy", DefaultReplicationPolicy),
    ("org.apache.kafka.connect.mirror.IdentityReplicationPolicy", IdentityReplicationPolicy),
    ("DefaultReplicationPolicy", DefaultReplicationPolicy),
    ("IdentityReplicationPolicy", IdentityReplicationPolicy),
    ("  DefaultReplicationPolicy ", DefaultReplicationPolicy),
])
def test_policy_for(name, cls):
    policy = policy_for(name, "_")
    assert type(policy) is cls
    assert policy.separator == "_"
    assert isinstance(policy, ReplicationPolicy)
    assert policy_for(name).separator == "."


@pytest.mark.parametrize("name", ["com.example.MyPolicy", "defaultreplicationpolicy", "",
                                  "org.apache.kafka.connect.mirror.ReplicationPolicy",
                                  "org.apache.kafka.connect.mirror.MirrorClient"])
def test_policy_for_rejects_other_classes(name):
    with pytest.raises(ValueError) as error:
        policy_for(name, ".")
    message = str(error.value)
    assert repr(name) in message
    assert "org.apache.kafka.connect.mirror.DefaultReplicationPolicy" in message
    assert "IdentityReplicationPolicy" in message


def test_policy_for_rejects_non_strings():
    with pytest.raises(ValueError, match="None"):
        policy_for(None, ".")


@pytest.mark.parametrize("separator", ["", None, 1])
def test_separator_must_be_a_non_empty_string(separator):
    with pytest.raises(ValueError, match="replication.policy.separator"):
        DefaultReplicationPolicy(separator)
    with pytest.raises(ValueError, match="replication.policy.separator"):
        policy_for("IdentityReplicationPolicy", separator)


def test_base_policy_is_abstract():
    with pytest.raises(TypeError):
        ReplicationPolicy()


def test_repr():
    assert repr(UNDERSCORE) == "DefaultReplicationPolicy(separator='_')"
    assert repr(IDENTITY) == "IdentityReplicationPolicy(separator='.')"
