"""scripts.tools.kafka_mirror_maker.topic_sync's decisions (pure): which source topics a flow mirrors, what the
target must create or grow, which configs follow, and which internal topics the flow needs where."""
from __future__ import annotations

from scripts.tools.kafka_mirror_maker.config import FlowConfig, parse
from scripts.tools.kafka_mirror_maker.topic_sync import TopicPlan, internal_topics, mirrors, plan_configs, plan_topics

IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"


def flow_of(name: str = "a->b", **extra: str) -> FlowConfig:
    props = {"clusters": "a, b, c", "a.bootstrap.servers": "a1:9092", "b.bootstrap.servers": "b1:9092",
             "c.bootstrap.servers": "c1:9092", "a->b.enabled": "true", **extra}
    return {flow.name: flow for flow in parse(props).flows}[name]


# --- mirrors -------------------------------------------------------------------------------------------------------

def test_default_flow_mirrors_ordinary_topics_and_remote_topics_of_a_third_cluster():
    flow = flow_of()
    assert mirrors(flow, "orders")
    assert mirrors(flow, "c.orders")       # from c, mirrored on to b as a.c.orders
    assert mirrors(flow, "heartbeats")     # heartbeats travel downstream


def test_topics_regex_and_exclude_decide():
    flow = flow_of(**{"a->b.topics": "app-.*, audit", "a->b.topics.exclude": "app-secret.*"})
    assert mirrors(flow, "app-orders") and mirrors(flow, "audit")
    assert not mirrors(flow, "audit2")                 # a whole-name match, not a search
    assert not mirrors(flow, "other")
    assert not mirrors(flow, "app-secret-keys")


def test_internal_topics_are_never_mirrored_even_when_the_filter_lets_them_through():
    flow = flow_of(**{"a->b.topics.exclude": ""})      # the default exclude would hide most of them
    for topic in ("__consumer_offsets", "__transaction_state", ".hidden", "mm2-offset-syncs.b.internal",
                  "c.checkpoints.internal", "connect-offsets-internal"):
        assert not mirrors(flow, topic), topic
    assert mirrors(flow, "x.replica")                  # excluded by default only, not internal


def test_default_exclude_hides_replica_topics():
    assert not mirrors(flow_of(), "x.replica")


def test_a_topic_that_came_from_the_target_is_not_mirrored_back():
    flow = flow_of()
    assert not mirrors(flow, "b.orders")               # b.x goes back to b: a cycle
    assert not mirrors(flow, "c.b.orders")             # came from b two hops up
    assert not mirrors(flow, "b.heartbeats")
    back = flow_of("b->a", **{"b->a.enabled": "true"})
    assert not mirrors(back, "a.orders") and mirrors(back, "c.orders") and mirrors(back, "orders")


def test_custom_separator_names_the_cycle():
    flow = flow_of(**{"replication.policy.separator": "_"})
    assert not mirrors(flow, "b_orders")
    assert mirrors(flow, "b.orders")                   # with separator _, "b.orders" is a local topic


def test_identity_policy_cannot_see_cycles_of_ordinary_topics_but_still_of_heartbeats():
    flow = flow_of(**{"replication.policy.class": IDENTITY})
    assert mirrors(flow, "orders")
    assert mirrors(flow, "b.orders")                   # names carry no source: mirrored
    assert not mirrors(flow, "b.heartbeats")           # heartbeats keep the default naming


# --- plan_topics ---------------------------------------------------------------------------------------------------

def test_plan_creates_missing_remote_topics_with_the_source_partition_count():
    plan = plan_topics(flow_of(), {"orders": 3, "payments": 1}, {})
    assert plan == TopicPlan(mirrored={"orders": ("a.orders", 3), "payments": ("a.payments", 1)},
                             create={"a.orders": 3, "a.payments": 1}, grow={})


def test_plan_grows_a_remote_topic_with_fewer_partitions():
    plan = plan_topics(flow_of(), {"orders": 5}, {"a.orders": 3})
    assert plan.create == {} and plan.grow == {"a.orders": 5}
    assert plan.mirrored == {"orders": ("a.orders", 5)}


def test_plan_never_shrinks_a_remote_topic_and_leaves_an_equal_one_alone():
    plan = plan_topics(flow_of(), {"orders": 2, "payments": 4}, {"a.orders": 6, "a.payments": 4})
    assert plan.create == {} and plan.grow == {}
    assert plan.mirrored == {"orders": ("a.orders", 2), "payments": ("a.payments", 4)}


def test_plan_leaves_out_excluded_internal_and_cyclic_topics():
    source = {"orders": 1, "secret": 1, "__consumer_offsets": 50, "b.orders": 2, "mm2-offset-syncs.b.internal": 1,
              "c.orders": 2}
    plan = plan_topics(flow_of(**{"a->b.topics.exclude": "secret"}), source, {"orders": 1})
    assert plan.mirrored == {"c.orders": ("a.c.orders", 2), "orders": ("a.orders", 1)}
    assert plan.create == {"a.c.orders": 2, "a.orders": 1}   # the target's own "orders" is another topic
    assert list(plan.mirrored) == sorted(plan.mirrored)


def test_plan_with_identity_policy_mirrors_onto_the_same_name():
    plan = plan_topics(flow_of(**{"replication.policy.class": IDENTITY}), {"orders": 3, "logs": 2},
                       {"orders": 1, "logs": 2})
    assert plan.mirrored == {"logs": ("logs", 2), "orders": ("orders", 3)}
    assert plan.create == {} and plan.grow == {"orders": 3}


def test_plan_of_nothing_is_empty_and_plans_are_independent():
    first = plan_topics(flow_of(), {}, {"a.orders": 1})
    assert first == TopicPlan()
    plan_topics(flow_of(), {"orders": 1}, {})
    assert first == TopicPlan()                             # no shared default dict between plans


# --- plan_configs --------------------------------------------------------------------------------------------------

def test_plan_configs_drops_the_default_excluded_properties_and_sorts():
    dynamic = {"retention.ms": "1000", "cleanup.policy": "compact", "min.insync.replicas": "2",
               "unclean.leader.election.enable": "true", "message.timestamp.type": "LogAppendTime",
               "message.timestamp.difference.max.ms": "5", "leader.replication.throttled.replicas": "*",
               "follower.replication.throttled.replicas": "*"}
    planned = plan_configs(flow_of(), dynamic)
    assert planned == {"cleanup.policy": "compact", "retention.ms": "1000"}
    assert list(planned) == ["cleanup.policy", "retention.ms"]


def test_plan_configs_follows_config_properties_exclude():
    flow = flow_of(**{"a->b.config.properties.exclude": "retention\\..*"})
    assert plan_configs(flow, {"retention.ms": "1", "retention.bytes": "2", "min.insync.replicas": "2"}) == \
        {"min.insync.replicas": "2"}
    nothing_excluded = flow_of(**{"config.properties.exclude": ""})
    assert plan_configs(nothing_excluded, {"min.insync.replicas": "2"}) == {"min.insync.replicas": "2"}


# --- internal_topics -----------------------------------------------------------------------------------------------

def test_internal_topics_by_default_offset_syncs_at_source_checkpoints_and_heartbeats_at_target():
    assert internal_topics(flow_of()) == (
        ("source", "mm2-offset-syncs.b.internal", 3, "offset-syncs.topic.replication.factor"),
        ("target", "a.checkpoints.internal", 3, "checkpoints.topic.replication.factor"),
        ("target", "heartbeats", 3, "heartbeats.topic.replication.factor"))


def test_internal_topics_take_each_replication_factor_of_the_flow():
    flow = flow_of(**{"offset-syncs.topic.replication.factor": "1", "a->b.checkpoints.topic.replication.factor": "2",
                      "heartbeats.topic.replication.factor": "-1"})
    assert [(topic, factor) for _, topic, factor, _ in internal_topics(flow)] == \
        [("mm2-offset-syncs.b.internal", 1), ("a.checkpoints.internal", 2), ("heartbeats", -1)]


def test_internal_topics_without_checkpoints_or_heartbeats():
    no_checkpoints = flow_of(**{"emit.checkpoints.enabled": "false"})
    assert [t for _, t, _, _ in internal_topics(no_checkpoints)] == ["mm2-offset-syncs.b.internal", "heartbeats"]
    no_heartbeats = flow_of(**{"a->b.emit.heartbeats.interval.seconds": "-1"})
    assert [t for _, t, _, _ in internal_topics(no_heartbeats)] == ["mm2-offset-syncs.b.internal",
                                                                      "a.checkpoints.internal"]
    neither = flow_of(**{"emit.checkpoints.enabled": "false", "emit.heartbeats.enabled": "false"})
    assert internal_topics(neither) == (("source", "mm2-offset-syncs.b.internal", 3,
                                         "offset-syncs.topic.replication.factor"),)


def test_internal_topics_are_named_by_the_flow_direction():
    flow = flow_of("c->a", **{"c->a.enabled": "true"})
    assert [(side, t) for side, t, _, _ in internal_topics(flow)] == \
        [("source", "mm2-offset-syncs.a.internal"), ("target", "c.checkpoints.internal"), ("target", "heartbeats")]


def test_internal_topic_names_keep_dots_whatever_the_separator():
    flow = flow_of(**{"replication.policy.separator": "_"})
    assert [t for _, t, _, _ in internal_topics(flow)] == ["mm2-offset-syncs.b.internal", "a.checkpoints.internal",
                                                            "heartbeats"]
