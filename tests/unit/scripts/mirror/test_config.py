"""scripts.tools.kafka_mirror_maker.config: MM2's properties file (connect-mirror-maker.properties) -> clusters and
enabled flows, with Kafka 2.8's keys and defaults; every error names the key."""
from __future__ import annotations

import re

import pytest

from scripts.tools.kafka_mirror_maker.config import (ClusterConfig, FlowConfig, MirrorConfigError, MirrorMakerConfig,
                                                     load, parse)
from scripts.tools.kafka_mirror_maker.policy import DefaultReplicationPolicy, IdentityReplicationPolicy

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="mm2" password="s3cret";'

# Kafka 2.8.2's config/connect-mirror-maker.properties (its comments left out)
KAFKA_SAMPLE = """\
clusters = A, B
A.bootstrap.servers = A_host1:9092, A_host2:9092, A_host3:9092
B.bootstrap.servers = B_host1:9092, B_host2:9092, B_host3:9092
A->B.enabled = true
A->B.topics = .*
B->A.enabled = true
B->A.topics = .*
replication.factor=1
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1
# replication.policy.separator = _
"""


def base(**extra: str) -> dict[str, str]:
    return {"clusters": "a, b", "a.bootstrap.servers": "a1:9092", "b.bootstrap.servers": "b1:9092",
            "a->b.enabled": "true", **extra}


def flow_of(props: dict[str, str], name: str = "a->b") -> FlowConfig:
    flows = {flow.name: flow for flow in parse(props).flows}
    return flows[name]


def error_of(props: dict[str, str], only_clusters: list[str] | None = None) -> str:
    with pytest.raises(MirrorConfigError) as info:
        parse(props, only_clusters)
    return str(info.value)


# --- minimal config, defaults -------------------------------------------------------------------------------------

def test_minimal_config_is_one_flow_between_two_clusters():
    config = parse(base())
    assert isinstance(config, MirrorMakerConfig)
    assert [(f.source, f.target, f.name) for f in config.flows] == [("a", "b", "a->b")]
    assert config.clusters == {
        "a": ClusterConfig("a", "a1:9092", {"bootstrap.servers": "a1:9092"}, {}, {}, {}),
        "b": ClusterConfig("b", "b1:9092", {"bootstrap.servers": "b1:9092"}, {}, {}, {})}
    assert config.ignored == ()


def test_kafka_2_8_defaults():
    flow = flow_of(base())
    assert (flow.replication_factor, flow.offset_syncs_topic_replication_factor,
            flow.checkpoints_topic_replication_factor, flow.heartbeats_topic_replication_factor) == (2, 3, 3, 3)
    assert (flow.refresh_topics_enabled, flow.refresh_topics_interval_s) == (True, 600)
    assert (flow.refresh_groups_enabled, flow.refresh_groups_interval_s) == (True, 600)
    assert (flow.sync_topic_configs_enabled, flow.sync_topic_configs_interval_s) == (True, 600)
    assert (flow.emit_checkpoints_enabled, flow.emit_checkpoints_interval_s) == (True, 60)
    assert (flow.emit_heartbeats_enabled, flow.emit_heartbeats_interval_s) == (True, 1)
    assert (flow.sync_group_offsets_enabled, flow.sync_group_offsets_interval_s) == (False, 60)
    assert flow.offset_lag_max == 100
    assert flow.exactly_once is False
    assert flow.transaction_timeout_ms == 60000
    assert type(flow.policy) is DefaultReplicationPolicy and flow.policy.separator == "."
    assert flow.topics.pattern == "(?:.*)"
    assert isinstance(flow.topics_exclude, re.Pattern)


def test_default_topic_filter():
    flow = flow_of(base())
    for topic in ("orders", "a.orders", "my_topic-1", "internal"):
        assert flow.topic_allowed(topic), topic
    for topic in ("mm2-offsets.a.internal", "foo-internal", "b.checkpoints.internal", "orders.replica",
                  "__consumer_offsets", "__transaction_state"):
        assert not flow.topic_allowed(topic), topic


def test_default_group_filter():
    flow = flow_of(base())
    for group in ("app", "my-connect-group", "console-consumer"):
        assert flow.group_allowed(group), group
    for group in ("console-consumer-12345", "connect-sink", "__internal"):
        assert not flow.group_allowed(group), group


def test_default_config_property_filter():
    flow = flow_of(base())
    for name in ("retention.ms", "cleanup.policy", "segment.bytes", "compression.type"):
        assert flow.config_property_allowed(name), name
    for name in ("follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
                 "message.timestamp.difference.max.ms", "message.timestamp.type", "unclean.leader.election.enable",
                 "min.insync.replicas"):
        assert not flow.config_property_allowed(name), name


def test_kafka_sample_file(tmp_path):
    path = tmp_path / "connect-mirror-maker.properties"
    path.write_text(KAFKA_SAMPLE)
    config = load(path)
    assert [f.name for f in config.flows] == ["A->B", "B->A"]
    assert config.clusters["A"].bootstrap_servers == "A_host1:9092, A_host2:9092, A_host3:9092"
    assert config.clusters["A"].client == {"bootstrap.servers": "A_host1:9092, A_host2:9092, A_host3:9092"}
    flow = config.flows[0]
    assert (flow.replication_factor, flow.offset_syncs_topic_replication_factor,
            flow.checkpoints_topic_replication_factor, flow.heartbeats_topic_replication_factor) == (1, 1, 1, 1)
    assert config.ignored == ("config.storage.replication.factor", "offset.storage.replication.factor",
                              "status.storage.replication.factor")


def test_load_accepts_a_str_path(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = a, b\na.bootstrap.servers = x:1\nb.bootstrap.servers = y:2\na->b.enabled = true\n")
    assert [f.name for f in load(str(path)).flows] == ["a->b"]


def test_load_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nope.properties"
    with pytest.raises(MirrorConfigError, match=f"^{re.escape(str(path))}: cannot read the file"):
        load(path)


def test_load_directory_names_the_path(tmp_path):
    with pytest.raises(MirrorConfigError, match=f"^{re.escape(str(tmp_path))}: cannot read the file"):
        load(tmp_path)


def test_load_unparseable_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = a, b\n= orphan value\n")
    with pytest.raises(MirrorConfigError, match=f"^{re.escape(str(path))}:2: cannot parse"):
        load(path)


def test_load_properties_syntax(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_text("! comment\nclusters: a, \\\n  b\na.bootstrap.servers a:1\nb.bootstrap.servers=b:1\n"
                    "a->b.enabled=true\na->b.topics = foo\\u002Ebar\n")
    assert load(path).flows[0].topics.pattern == "(?:foo.bar)"


# --- enabled flows ------------------------------------------------------------------------------------------------

def test_flows_are_disabled_by_default():
    config = parse({"clusters": "a, b", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1"})
    assert config.flows == []
    assert list(config.clusters) == ["a", "b"]


def test_both_directions_in_the_order_of_clusters():
    config = parse(base(**{"b->a.enabled": "TRUE"}))
    assert [f.name for f in config.flows] == ["a->b", "b->a"]


def test_enabled_false_and_blank_values():
    assert parse(base(**{"a->b.enabled": " false "})).flows == []


def test_top_level_enabled_is_every_flows_default():
    props = {"clusters": "a, b, c", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
             "c.bootstrap.servers": "c:1", "enabled": "true", "b->a.enabled": "false"}
    assert [f.name for f in parse(props).flows] == ["a->b", "a->c", "b->c", "c->a", "c->b"]


def test_bad_enabled_names_the_key():
    assert error_of(base(**{"a->b.enabled": "yes"})) == "a->b.enabled: 'yes' is not a boolean (true or false)"
    assert error_of(base(enabled="1")).startswith("enabled: '1' is not a boolean")


# --- clusters -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("props, message", [
    ({}, "clusters: required"),
    ({"clusters": "  "}, "clusters: required"),
    ({"clusters": "a, a"}, "clusters: duplicate cluster alias 'a'"),
    ({"clusters": "a,,b"}, "clusters: invalid cluster alias ''"),
    ({"clusters": "a, b,"}, "clusters: invalid cluster alias ''"),
    ({"clusters": "us.east, b"}, "clusters: invalid cluster alias 'us.east'"),
    ({"clusters": "a>b, c"}, "clusters: invalid cluster alias 'a>b'"),
    ({"clusters": "a b, c"}, "clusters: invalid cluster alias 'a b'"),
])
def test_bad_clusters(props, message):
    assert error_of(props).startswith(message)


def test_aliases_may_use_dashes_and_underscores():
    props = {"clusters": "us-east, us_west", "us-east.bootstrap.servers": "e:1", "us_west.bootstrap.servers": "w:1",
             "us-east->us_west.enabled": "true", "us-east->us_west.topics": "t"}
    flow = parse(props).flows[0]
    assert (flow.source, flow.target, flow.topics.pattern) == ("us-east", "us_west", "(?:t)")


def test_alias_ending_with_a_dash():
    props = {"clusters": "a-, b", "a-.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1", "a-->b.enabled": "true"}
    assert [f.name for f in parse(props).flows] == ["a-->b"]


def test_flow_key_of_an_unknown_alias():
    assert error_of(base(**{"a->c.enabled": "true"})) == "a->c.enabled: unknown cluster alias 'c' (clusters = a, b)"
    assert error_of(base(**{"c->a.topics": "x"})) == "c->a.topics: unknown cluster alias 'c' (clusters = a, b)"
    assert error_of(base(**{"->b.enabled": "true"})).startswith("->b.enabled: unknown cluster alias ''")
    assert error_of(base(**{"a->b->c.enabled": "true"})).startswith("a->b->c.enabled: unknown cluster alias 'b->c'")


def test_unknown_alias_is_an_error_even_in_a_disabled_flow():
    assert error_of(base(**{"a->c.enabled": "false"})).startswith("a->c.enabled: unknown cluster alias 'c'")


def test_flow_to_itself():
    assert error_of(base(**{"a->a.enabled": "true"})) == \
        "a->a.enabled: a flow replicates between two different clusters"


def test_flow_key_without_setting():
    assert error_of(base(**{"a->b": "true"})) == "a->b: a flow key names a setting: a->b.<setting>"
    assert error_of(base(**{"a->b.": "true"})).startswith("a->b.: a flow key names a setting")


def test_bootstrap_servers_required_for_a_flows_clusters():
    props = base()
    del props["b.bootstrap.servers"]
    assert error_of(props) == "b.bootstrap.servers: required for the flows of cluster 'b'"
    assert error_of({**props, "b.bootstrap.servers": "  "}).startswith("b.bootstrap.servers: required")


def test_top_level_bootstrap_servers_is_no_clusters_default():
    props = base(**{"bootstrap.servers": "everyone:9092"})
    del props["b.bootstrap.servers"]
    assert error_of(props).startswith("b.bootstrap.servers: required")


def test_clusters_without_a_flow_need_no_bootstrap_servers():
    config = parse({"clusters": "a, b, c", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
                    "a->b.enabled": "true"})
    assert list(config.clusters) == ["a", "b"]


def test_clusters_without_a_flow_are_kept_when_configured():
    config = parse({"clusters": "c, a, b", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
                    "c.bootstrap.servers": "c:1", "a->b.enabled": "true"})
    assert list(config.clusters) == ["c", "a", "b"]


def test_clusters_without_a_flow_and_with_blank_bootstrap_servers_are_left_out():
    config = parse({"clusters": "a, b, c", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
                    "c.bootstrap.servers": " ", "a->b.enabled": "true"})
    assert list(config.clusters) == ["a", "b"]


def test_clusters_without_a_flow_are_checked_when_configured():
    props = {"clusters": "a, b, c", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
             "c.bootstrap.servers": "c:1", "c.security.protocol": "TLS", "a->b.enabled": "true"}
    assert error_of(props).startswith("c.security.protocol: 'TLS' is not one of")


def test_keys_of_an_alias_not_in_clusters_are_ignored():
    config = parse(base(**{"c.bootstrap.servers": "c:1", "c.security.protocol": "SSL"}))
    assert "c" not in config.clusters
    assert config.ignored == ("c.bootstrap.servers", "c.security.protocol")


# --- --clusters (only_clusters) -------------------------------------------------------------------------------------

def three(**extra: str) -> dict[str, str]:
    return {"clusters": "a, b, c", "a.bootstrap.servers": "a:1", "b.bootstrap.servers": "b:1",
            "c.bootstrap.servers": "c:1", "a->b.enabled": "true", "b->a.enabled": "true", "a->c.enabled": "true",
            **extra}


def test_only_clusters_keeps_the_flows_that_target_them():
    assert [f.name for f in parse(three(), ["b"]).flows] == ["a->b"]
    assert [f.name for f in parse(three(), ["a", "c"]).flows] == ["a->c", "b->a"]
    assert [f.name for f in parse(three(), None).flows] == ["a->b", "a->c", "b->a"]
    assert [f.name for f in parse(three(), []).flows] == ["a->b", "a->c", "b->a"]


def test_only_clusters_unknown_alias():
    assert error_of(three(), ["b", "x"]) == "--clusters: unknown cluster alias 'x' (clusters = a, b, c)"


def test_only_clusters_needs_bootstrap_servers_of_its_flows_only():
    props = three()
    del props["c.bootstrap.servers"]
    config = parse(props, ["b"])
    assert list(config.clusters) == ["a", "b"]
    assert error_of(props, ["c"]) == "c.bootstrap.servers: required for the flows of cluster 'c'"


def test_only_clusters_still_checks_every_enabled_flow():
    assert error_of(three(**{"a->c.replication.factor": "x"}), ["b"]).startswith("a->c.replication.factor:")


def test_disabled_flows_are_not_checked():
    assert parse(base(**{"b->a.enabled": "false", "b->a.topics": "bad["})).flows[0].name == "a->b"


# --- overrides and inheritance ------------------------------------------------------------------------------------

def test_flow_key_overrides_top_level_key():
    props = base(**{"b->a.enabled": "true", "topics": "orders.*", "a->b.topics": "payments", "replication.factor": "1",
                    "b->a.replication.factor": "3"})
    ab, ba = flow_of(props, "a->b"), flow_of(props, "b->a")
    assert ab.topic_allowed("payments") and not ab.topic_allowed("orders-eu")
    assert ba.topic_allowed("orders-eu") and not ba.topic_allowed("payments")
    assert (ab.replication_factor, ba.replication_factor) == (1, 3)


@pytest.mark.parametrize("key, field, value, expected", [
    ("replication.factor", "replication_factor", "5", 5),
    ("offset-syncs.topic.replication.factor", "offset_syncs_topic_replication_factor", "1", 1),
    ("checkpoints.topic.replication.factor", "checkpoints_topic_replication_factor", "2", 2),
    ("heartbeats.topic.replication.factor", "heartbeats_topic_replication_factor", "-1", -1),
    ("offset.lag.max", "offset_lag_max", "0", 0),
    ("offset.lag.max", "offset_lag_max", " 5000 ", 5000),
    ("sync.topic.configs.enabled", "sync_topic_configs_enabled", "false", False),
    ("sync.topic.configs.interval.seconds", "sync_topic_configs_interval_s", "30", 30),
    ("refresh.topics.enabled", "refresh_topics_enabled", "False", False),
    ("refresh.topics.interval.seconds", "refresh_topics_interval_s", "5", 5),
    ("refresh.groups.enabled", "refresh_groups_enabled", "false", False),
    ("refresh.groups.interval.seconds", "refresh_groups_interval_s", "0.5", 0.5),
    ("emit.checkpoints.enabled", "emit_checkpoints_enabled", "false", False),
    ("emit.checkpoints.interval.seconds", "emit_checkpoints_interval_s", "10", 10),
    ("emit.heartbeats.enabled", "emit_heartbeats_enabled", "false", False),
    ("emit.heartbeats.interval.seconds", "emit_heartbeats_interval_s", "+5", 5),
    ("sync.group.offsets.enabled", "sync_group_offsets_enabled", "true", True),
    ("sync.group.offsets.interval.seconds", "sync_group_offsets_interval_s", ".25", 0.25),
])
def test_every_setting_top_level_and_per_flow(key, field, value, expected):
    assert getattr(flow_of(base(**{key: value})), field) == expected
    assert getattr(flow_of(base(**{f"a->b.{key}": value})), field) == expected


@pytest.mark.parametrize("name", ["refresh.topics", "refresh.groups", "sync.topic.configs", "emit.checkpoints",
                                  "emit.heartbeats"])
def test_negative_interval_disables(name):
    field = name.replace(".", "_")
    flow = flow_of(base(**{f"a->b.{name}.interval.seconds": "-1"}))
    assert getattr(flow, f"{field}_enabled") is False
    assert getattr(flow, f"{field}_interval_s") == -1
    assert getattr(flow_of(base(**{f"{name}.interval.seconds": "-1"})), f"{field}_enabled") is False


def test_negative_interval_disables_sync_group_offsets_even_when_enabled():
    flow = flow_of(base(**{"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "-1"}))
    assert flow.sync_group_offsets_enabled is False


def test_deprecated_blacklist_names():
    flow = flow_of(base(**{"topics.blacklist": "secret.*", "groups.blacklist": "test-.*",
                           "config.properties.blacklist": "retention\\.ms"}))
    assert not flow.topic_allowed("secret-1") and flow.topic_allowed("__consumer_offsets")
    assert not flow.group_allowed("test-1") and flow.group_allowed("console-consumer-1")
    assert not flow.config_property_allowed("retention.ms") and flow.config_property_allowed("min.insync.replicas")


def test_exclude_wins_over_blacklist_at_the_same_level():
    flow = flow_of(base(**{"a->b.topics.exclude": "x", "a->b.topics.blacklist": "y"}))
    assert not flow.topic_allowed("x") and flow.topic_allowed("y")


def test_flow_level_blacklist_wins_over_top_level_exclude():
    flow = flow_of(base(**{"topics.exclude": "x", "a->b.topics.blacklist": "y"}))
    assert flow.topic_allowed("x") and not flow.topic_allowed("y")


def test_other_flow_keeps_the_defaults():
    props = base(**{"b->a.enabled": "true", "a->b.emit.heartbeats.enabled": "false"})
    assert flow_of(props, "a->b").emit_heartbeats_enabled is False
    assert flow_of(props, "b->a").emit_heartbeats_enabled is True


# --- value errors name the key ------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, message", [
    ("replication.factor", "two", "'two' is not an integer"),
    ("replication.factor", "1.5", "'1.5' is not an integer"),
    ("replication.factor", "", "'' is not an integer"),
    ("replication.factor", "1_0", "'1_0' is not an integer"),
    ("replication.factor", "0", "0 is not a replication factor (1 to 32767, or -1 for the broker's)"),
    ("replication.factor", "-2", "-2 is not a replication factor"),
    ("heartbeats.topic.replication.factor", "32768", "32768 is not a replication factor"),
    ("offset-syncs.topic.replication.factor", "x", "'x' is not an integer"),
    ("checkpoints.topic.replication.factor", "0", "0 is not a replication factor"),
    ("offset.lag.max", "-1", "-1 is less than 0"),
    ("offset.lag.max", "lots", "'lots' is not an integer"),
    ("transaction.timeout.ms", "0", "0 is less than 1"),
    ("transaction.timeout.ms", "1m", "'1m' is not an integer"),
    ("sync.topic.configs.enabled", "on", "'on' is not a boolean (true or false)"),
    ("emit.checkpoints.enabled", "", "'' is not a boolean"),
    ("emit.checkpoints.interval.seconds", "soon", "'soon' is not a number of seconds"),
    ("emit.heartbeats.interval.seconds", "0", "0 is not an interval (a negative one disables)"),
    ("refresh.topics.interval.seconds", "inf", "'inf' is not a number of seconds"),
    ("refresh.groups.interval.seconds", "nan", "'nan' is not a number of seconds"),
    ("sync.group.offsets.interval.seconds", "1e3", "'1e3' is not a number of seconds"),
    ("exactly.once.source.support", "yes", "'yes' is not one of enabled, preparing, disabled"),
    ("replication.policy.separator", "  ", "the separator is empty"),
])
def test_bad_values_name_the_key(key, value, message):
    assert error_of(base(**{key: value})).startswith(f"{key}: {message}")
    assert error_of(base(**{f"a->b.{key}": value})).startswith(f"a->b.{key}: {message}")


def test_bad_policy_class_names_the_key():
    message = error_of(base(**{"a->b.replication.policy.class": "com.example.MyPolicy"}))
    assert message.startswith("a->b.replication.policy.class: ")
    assert "com.example.MyPolicy" in message


@pytest.mark.parametrize("key", ["topic.filter.class", "group.filter.class", "config.property.filter.class"])
def test_custom_filter_classes_are_refused(key):
    assert error_of(base(**{key: "com.example.Filter"})).startswith(f"{key}: only org.apache.kafka.connect.mirror.")
    assert error_of(base(**{f"a->b.{key}": "com.example.Filter"})).startswith(f"a->b.{key}: only ")


def test_default_filter_classes_are_accepted():
    parse(base(**{"topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
                  "a->b.group.filter.class": " org.apache.kafka.connect.mirror.DefaultGroupFilter ",
                  "config.property.filter.class": "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"}))


# --- regular expressions ------------------------------------------------------------------------------------------

def test_topics_match_whole_names():
    flow = flow_of(base(**{"topics": "foo"}))
    assert flow.topic_allowed("foo")
    assert not flow.topic_allowed("foobar") and not flow.topic_allowed("xfoo")
    flow = flow_of(base(**{"topics": "foo.*"}))
    assert flow.topic_allowed("foobar") and not flow.topic_allowed("xfoo")


def test_regex_lists_are_comma_separated_with_blanks():
    flow = flow_of(base(**{"topics": " orders ,payments-.* , audit", "topics.exclude": "payments-test"}))
    assert [t for t in ("orders", "payments-eu", "payments-test", "audit", "orders2") if flow.topic_allowed(t)] == \
        ["orders", "payments-eu", "audit"]


def test_alternation_inside_an_item_does_not_leak():
    flow = flow_of(base(**{"topics": "a|b.*, c"}))
    assert all(flow.topic_allowed(t) for t in ("a", "b", "bz", "c"))
    assert not flow.topic_allowed("az") and not flow.topic_allowed("cz")


def test_exclude_takes_precedence_over_include():
    flow = flow_of(base(**{"groups": "app-.*", "groups.exclude": "app-test"}))
    assert flow.group_allowed("app-prod") and not flow.group_allowed("app-test") and not flow.group_allowed("other")


def test_empty_include_list_matches_nothing():
    flow = flow_of(base(**{"topics": "", "groups": " , "}))
    assert not flow.topic_allowed("orders") and not flow.topic_allowed("")
    assert not flow.group_allowed("app")


def test_empty_exclude_list_excludes_nothing():
    flow = flow_of(base(**{"topics.exclude": "", "groups.exclude": "", "config.properties.exclude": ""}))
    assert flow.topic_allowed("__consumer_offsets") and flow.topic_allowed("mm2-offsets.a.internal")
    assert flow.group_allowed("console-consumer-1")
    assert flow.config_property_allowed("min.insync.replicas")


def test_leading_inline_flags_apply_to_their_item():
    flow = flow_of(base(**{"topics": "(?i)orders, Audit"}))
    assert flow.topic_allowed("ORDERS") and flow.topic_allowed("Audit") and not flow.topic_allowed("audit")


@pytest.mark.parametrize("value, item", [("foo[", "foo["), ("ok, (bad", "(bad"), ("*", "*"), ("a)", "a)"),
                                         (r"\p{L}+", r"\p{L}+")])
def test_invalid_regex_names_the_key_and_the_expression(value, item):
    for key in ("topics", "a->b.topics.exclude", "groups", "a->b.groups.exclude", "config.properties.exclude"):
        message = error_of(base(**{key: value}))
        assert message.startswith(f"{key}: invalid regular expression {item!r}: "), message


def test_regexes_that_only_clash_together():
    message = error_of(base(**{"topics": "(?P<x>a), (?P<x>b)"}))
    assert message.startswith("topics: invalid regular expressions '(?P<x>a), (?P<x>b)': ")


def test_blacklist_regex_error_names_the_deprecated_key():
    assert error_of(base(**{"a->b.groups.blacklist": "x("})).startswith("a->b.groups.blacklist: invalid regular")


# --- clients: routing and librdkafka's names ----------------------------------------------------------------------

def test_cluster_client_keys():
    config = parse(base(**{"a.security.protocol": "SASL_SSL", "a.sasl.mechanism": "PLAIN", "a.sasl.jaas.config": JAAS,
                           "a.ssl.truststore.location": "/pki/ca.pem", "a.ssl.truststore.type": "PEM",
                           "a.ssl.endpoint.identification.algorithm": ""}))
    assert config.clusters["a"].client == {
        "bootstrap.servers": "a1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.username": "mm2", "sasl.password": "s3cret", "ssl.ca.location": "/pki/ca.pem",
        "ssl.endpoint.identification.algorithm": "none"}
    assert config.clusters["b"].client == {"bootstrap.servers": "b1:9092"}


def test_pem_keystore_becomes_certificate_and_key():
    config = parse(base(**{"b.security.protocol": "SSL", "b.ssl.keystore.location": "/pki/client.pem",
                           "b.ssl.key.password": "pw"}))
    assert config.clusters["b"].client == {
        "bootstrap.servers": "b1:9092", "security.protocol": "SSL", "ssl.certificate.location": "/pki/client.pem",
        "ssl.key.location": "/pki/client.pem", "ssl.key.password": "pw"}


def test_top_level_client_keys_are_every_clusters_defaults():
    config = parse(base(**{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                           "sasl.jaas.config": JAAS, "b.security.protocol": "PLAINTEXT"}))
    assert config.clusters["a"].client == {"bootstrap.servers": "a1:9092", "security.protocol": "SASL_PLAINTEXT",
                                           "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "mm2",
                                           "sasl.password": "s3cret"}
    assert config.clusters["b"].client["security.protocol"] == "PLAINTEXT"
    assert config.clusters["b"].client["sasl.username"] == "mm2"


def test_alias_credentials_win_over_top_level_ones():
    other = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="b-user" password="b-pw";'
    config = parse(base(**{"sasl.jaas.config": JAAS, "b.sasl.jaas.config": other}))
    assert (config.clusters["b"].client["sasl.username"], config.clusters["a"].client["sasl.username"]) == \
        ("b-user", "mm2")


def test_consumer_producer_admin_keys():
    config = parse(base(**{"a.consumer.max.poll.records": "50", "a.producer.linger.ms": "10",
                           "a.admin.request.timeout.ms": "5000", "b.producer.compression.type": "lz4"}))
    a, b = config.clusters["a"], config.clusters["b"]
    assert (a.consumer, a.producer, a.admin) == ({"max.poll.records": "50"}, {"linger.ms": "10"},
                                                 {"request.timeout.ms": "5000"})
    assert (b.consumer, b.producer, b.admin) == ({}, {"compression.type": "lz4"}, {})
    assert a.client == {"bootstrap.servers": "a1:9092"}


def test_top_level_role_keys_are_every_clusters_defaults():
    config = parse(base(**{"consumer.fetch.min.bytes": "1", "producer.acks": "all", "admin.retries": "3",
                           "b.producer.acks": "1"}))
    a, b = config.clusters["a"], config.clusters["b"]
    assert (a.consumer, a.producer, a.admin) == ({"fetch.min.bytes": "1"}, {"acks": "all"}, {"retries": "3"})
    assert (b.consumer, b.producer, b.admin) == ({"fetch.min.bytes": "1"}, {"acks": "1"}, {"retries": "3"})


def test_alias_client_key_wins_over_top_level_role_key():
    config = parse(base(**{"consumer.security.protocol": "SSL", "a.security.protocol": "PLAINTEXT"}))
    assert config.clusters["a"].consumer == {}
    assert config.clusters["a"].client["security.protocol"] == "PLAINTEXT"
    assert config.clusters["b"].consumer == {"security.protocol": "SSL"}


def test_role_credentials_are_translated():
    config = parse(base(**{"a.consumer.sasl.jaas.config": JAAS, "a.admin.ssl.truststore.location": "/ca.pem"}))
    assert config.clusters["a"].consumer == {"sasl.username": "mm2", "sasl.password": "s3cret"}
    assert config.clusters["a"].admin == {"ssl.ca.location": "/ca.pem"}


def test_mm2_settings_with_client_prefixes_are_not_client_keys():
    config = parse(base(**{"consumer.poll.timeout.ms": "500", "admin.timeout.ms": "1000"}))
    assert config.clusters["a"].consumer == {} and config.clusters["a"].admin == {}
    assert config.ignored == ("admin.timeout.ms", "consumer.poll.timeout.ms")


def test_other_alias_keys_are_ignored():
    config = parse(base(**{"a.client.id": "x", "b.offset.storage.replication.factor": "1"}))
    assert config.clusters["a"].client == {"bootstrap.servers": "a1:9092"}
    assert config.ignored == ("a.client.id", "b.offset.storage.replication.factor")


def test_jks_truststore_names_the_alias_key():
    message = error_of(base(**{"a.ssl.truststore.location": "/ca.jks", "a.ssl.truststore.type": "JKS"}))
    assert message.startswith("a.ssl.truststore.type: JKS is not supported for /ca.jks")


def test_jks_truststore_names_the_top_level_key():
    message = error_of(base(**{"ssl.truststore.location": "/ca.jks", "ssl.truststore.type": "jks"}))
    assert message.startswith("ssl.truststore.type: JKS is not supported")


def test_bad_jaas_config_names_the_key():
    assert error_of(base(**{"b.sasl.jaas.config": "nonsense"})).startswith("b.sasl.jaas.config: ")
    assert error_of(base(**{"a.producer.sasl.jaas.config": "nonsense"})).startswith("a.producer.sasl.jaas.config: ")


def test_bad_security_protocol_names_the_key():
    assert error_of(base(**{"a.security.protocol": "TLS"})) == \
        "a.security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    assert error_of(base(**{"security.protocol": "ssl_plain"})).startswith("security.protocol: 'ssl_plain' is not")
    assert parse(base(**{"security.protocol": "sasl_ssl", "sasl.jaas.config": JAAS})).clusters["a"].client[
        "security.protocol"] == "sasl_ssl"


def test_librdkafka_names_pass_through():
    config = parse(base(**{"a.sasl.username": "u", "a.sasl.password": "p", "a.ssl.ca.location": "/ca.pem"}))
    assert config.clusters["a"].client == {"bootstrap.servers": "a1:9092", "sasl.username": "u", "sasl.password": "p",
                                           "ssl.ca.location": "/ca.pem"}


# --- exactly once, transactions, policy ---------------------------------------------------------------------------

@pytest.mark.parametrize("props, expected", [
    ({"exactly.once.source.support": "enabled"}, True),
    ({"exactly.once.source.support": " ENABLED "}, True),
    ({"exactly.once.source.support": "preparing"}, False),
    ({"exactly.once.source.support": "disabled"}, False),
    ({"a->b.exactly.once.source.support": "enabled"}, True),
    ({"b.exactly.once.source.support": "enabled"}, True),
    ({"a.exactly.once.source.support": "enabled"}, False),
    ({"exactly.once.source.support": "enabled", "a->b.exactly.once.source.support": "disabled"}, False),
    ({"b.exactly.once.source.support": "enabled", "exactly.once.source.support": "disabled"}, True),
    ({"b.exactly.once.source.support": "disabled", "exactly.once.source.support": "enabled"}, False),
    ({"b.exactly.once.source.support": "enabled", "a->b.exactly.once.source.support": "preparing"}, False),
])
def test_exactly_once(props, expected):
    assert flow_of(base(**props)).exactly_once is expected


def test_exactly_once_per_target_cluster_names_its_key():
    assert error_of(base(**{"b.exactly.once.source.support": "on"})) == \
        "b.exactly.once.source.support: 'on' is not one of enabled, preparing, disabled"


@pytest.mark.parametrize("props, expected", [
    ({}, 60000),
    ({"transaction.timeout.ms": "30000"}, 30000),
    ({"a->b.transaction.timeout.ms": "15000", "transaction.timeout.ms": "30000"}, 15000),
    ({"b.producer.transaction.timeout.ms": "20000"}, 20000),
    ({"a.producer.transaction.timeout.ms": "20000"}, 60000),
    ({"producer.transaction.timeout.ms": "25000"}, 25000),
    ({"b.producer.transaction.timeout.ms": "20000", "producer.transaction.timeout.ms": "25000"}, 20000),
    ({"b.producer.transaction.timeout.ms": "20000", "transaction.timeout.ms": "30000"}, 20000),
    ({"b.producer.transaction.timeout.ms": "20000", "a->b.transaction.timeout.ms": "15000"}, 15000),
])
def test_transaction_timeout(props, expected):
    assert flow_of(base(**props)).transaction_timeout_ms == expected


def test_transaction_timeout_fallback_names_its_key():
    assert error_of(base(**{"b.producer.transaction.timeout.ms": "x"})) == \
        "b.producer.transaction.timeout.ms: 'x' is not an integer"


def test_replication_policy_per_flow():
    props = base(**{"b->a.enabled": "true", "replication.policy.separator": "_",
                    "b->a.replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"})
    ab, ba = flow_of(props, "a->b"), flow_of(props, "b->a")
    assert type(ab.policy) is DefaultReplicationPolicy and ab.policy.format_remote_topic("a", "t") == "a_t"
    assert type(ba.policy) is IdentityReplicationPolicy and ba.policy.separator == "_"


def test_short_policy_class_name():
    assert type(flow_of(base(**{"replication.policy.class": " DefaultReplicationPolicy "})).policy) is \
        DefaultReplicationPolicy


# --- ignored keys -------------------------------------------------------------------------------------------------

def test_unknown_keys_are_ignored_and_listed():
    config = parse(base(**{"offset.storage.replication.factor": "1", "tasks.max": "4",
                           "sync.topic.acls.enabled": "false",
                           "a->b.producer.client.id": "x", "a->b.sync.topic.acls.enabled": "false",
                           "bootstrap.servers": "x:1", "config.providers": "file", "topics": "t"}))
    assert config.ignored == ("a->b.producer.client.id", "a->b.sync.topic.acls.enabled", "bootstrap.servers",
                              "config.providers", "offset.storage.replication.factor", "sync.topic.acls.enabled",
                              "tasks.max")


def test_read_keys_are_not_listed():
    props = base(**{"b->a.enabled": "false", "topics.blacklist": "x", "a->b.groups.blacklist": "y",
                    "a.security.protocol": "PLAINTEXT", "ssl.truststore.type": "PEM", "consumer.x": "1",
                    "a.producer.y": "2", "b.exactly.once.source.support": "disabled", "transaction.timeout.ms": "1000",
                    "replication.policy.separator": ".", "emit.heartbeats.interval.seconds": "5"})
    assert parse(props).ignored == ()


# --- the dataclasses ----------------------------------------------------------------------------------------------

def test_configs_are_frozen():
    config = parse(base())
    with pytest.raises(AttributeError):
        config.flows[0].topics = re.compile("x")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        config.clusters["a"].alias = "z"  # type: ignore[misc]


def test_error_is_a_value_error():
    assert issubclass(MirrorConfigError, ValueError)
