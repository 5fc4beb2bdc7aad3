"""LogConfig (log_config.py): topic-level keys, Kafka's defaults, parsing and validation."""
from __future__ import annotations

import dataclasses

import pytest

from brokers.storage.log_config import INT_MAX, LONG_MAX, InvalidConfigError, LogConfig


def test_kafka_defaults():
    c = LogConfig()
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.segment_jitter_ms == 0
    assert c.retention_ms == 604800000
    assert c.retention_bytes == -1
    assert c.index_interval_bytes == 4096
    assert c.segment_index_bytes == 10485760
    assert c.cleanup_policy == "delete"
    assert c.delete_retention_ms == 86400000
    assert c.min_cleanable_dirty_ratio == 0.5
    assert c.min_compaction_lag_ms == 0
    assert c.file_delete_delay_ms == 60000
    assert c.flush_messages == LONG_MAX == 2**63 - 1
    assert c.flush_ms == LONG_MAX
    assert c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime"
    assert c.delete and not c.compact
    c.validate()


def test_empty_properties_give_defaults():
    assert LogConfig.from_properties({}) == LogConfig()


def test_key_names_are_kafkas():
    keys = set(LogConfig().to_properties())
    assert keys == {
        "segment.bytes", "segment.ms", "segment.jitter.ms", "segment.index.bytes", "index.interval.bytes",
        "retention.ms", "retention.bytes", "cleanup.policy", "delete.retention.ms", "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms", "file.delete.delay.ms", "flush.messages", "flush.ms", "max.message.bytes",
        "message.timestamp.type", "min.insync.replicas", "unclean.leader.election.enable",
        "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
        "message.format.version", "message.downconversion.enable",
    }


@pytest.mark.parametrize("version, magic", [
    ("2.8-IV1", 2), ("2.8", 2), ("2.8.2", 2), ("0.11.0", 2), ("0.11.0-IV2", 2), ("1.0", 2), ("1.0-IV0", 2),
    ("0.10.2", 1), ("0.10.2-IV0", 1), ("0.10.2.1", 1), ("0.10.0-IV1", 1), ("0.10", None), ("0.9.0", 0),
    ("0.8.2", 0), ("0.8.2.2", 0), ("0.9.0-IV0", None), ("2.9", None), ("3.0", None), ("2.8-IV2", None), ("", None),
])
def test_message_format_version_is_validated_as_kafkas_api_version(version, magic):
    if magic is None:
        with pytest.raises(InvalidConfigError, match="message.format.version"):
            LogConfig.from_properties({"message.format.version": version})
    else:
        config = LogConfig.from_properties({"message.format.version": version})
        assert (config.message_format_version, config.message_format_magic) == (version, magic)


def test_message_downconversion_enable():
    assert LogConfig().downconversion_enabled and LogConfig().message_format_version == "2.8-IV1"
    assert not LogConfig.from_properties({"message.downconversion.enable": "false"}).downconversion_enabled
    assert LogConfig.from_properties({"message.downconversion.enable": "TRUE"}).downconversion_enabled
    with pytest.raises(InvalidConfigError, match="message.downconversion.enable"):
        LogConfig.from_properties({"message.downconversion.enable": "yes"})


def test_topic_level_replication_keys_are_accepted_and_checked():
    config = LogConfig.from_properties({"min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
    assert (config.min_insync_replicas, config.unclean_leader_election_enable) == (2, "true")
    with pytest.raises(InvalidConfigError, match="unclean.leader.election.enable"):
        LogConfig.from_properties({"unclean.leader.election.enable": "maybe"})
    with pytest.raises(InvalidConfigError, match="min.insync.replicas"):
        LogConfig.from_properties({"min.insync.replicas": "0"})


def test_from_properties_parses_strings():
    c = LogConfig.from_properties({
        "segment.bytes": "1048576",
        "retention.ms": "-1",
        "retention.bytes": "5000",
        "min.cleanable.dirty.ratio": "0.25",
        "cleanup.policy": "compact",
        "message.timestamp.type": "LogAppendTime",
        "flush.messages": str(LONG_MAX),
    })
    assert c.segment_bytes == 1048576
    assert c.retention_ms == -1
    assert c.retention_bytes == 5000
    assert c.min_cleanable_dirty_ratio == 0.25
    assert c.cleanup_policy == "compact"
    assert c.compact and not c.delete
    assert c.message_timestamp_type == "LogAppendTime"
    assert c.flush_messages == LONG_MAX
    assert c.segment_ms == 604800000  # untouched keys keep their defaults


def test_from_properties_accepts_native_values():
    c = LogConfig.from_properties({"segment.bytes": 2048, "min.cleanable.dirty.ratio": 1})
    assert c.segment_bytes == 2048
    assert c.min_cleanable_dirty_ratio == 1.0
    assert isinstance(c.min_cleanable_dirty_ratio, float)


def test_from_properties_overrides_a_base():
    base = LogConfig(segment_bytes=4096, retention_ms=1000)
    c = LogConfig.from_properties({"retention.ms": "2000"}, base=base)
    assert c.segment_bytes == 4096
    assert c.retention_ms == 2000
    assert base.retention_ms == 1000  # frozen, unchanged


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LogConfig().segment_bytes = 1  # type: ignore[misc]


def test_unknown_key_error_names_the_key():
    with pytest.raises(InvalidConfigError, match=r"'segment\.bites'"):
        LogConfig.from_properties({"segment.bites": "100"})


def test_field_name_is_not_a_key():
    with pytest.raises(InvalidConfigError, match="segment_bytes"):
        LogConfig.from_properties({"segment_bytes": "100"})


@pytest.mark.parametrize(
    "key, value",
    [
        ("segment.bytes", "lots"),
        ("segment.bytes", "1.5"),
        ("retention.ms", ""),
        ("flush.ms", None),
        ("min.cleanable.dirty.ratio", "half"),
    ],
)
def test_bad_value_error_names_the_key(key, value):
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        LogConfig.from_properties({key: value})


@pytest.mark.parametrize(
    "key, value",
    [
        ("segment.bytes", "13"),
        ("segment.bytes", "0"),
        ("segment.ms", "0"),
        ("segment.jitter.ms", "-1"),
        ("segment.index.bytes", "7"),
        ("index.interval.bytes", "-1"),
        ("retention.ms", "-2"),
        ("retention.bytes", "-2"),
        ("delete.retention.ms", "-1"),
        ("min.compaction.lag.ms", "-1"),
        ("file.delete.delay.ms", "-1"),
        ("flush.messages", "0"),
        ("flush.ms", "-1"),
        ("max.message.bytes", "-1"),
        ("min.cleanable.dirty.ratio", "-0.1"),
        ("min.cleanable.dirty.ratio", "1.01"),
        ("min.cleanable.dirty.ratio", "nan"),
        ("message.timestamp.type", "WallClock"),
    ],
)
def test_out_of_range_values_raise_naming_the_key(key, value):
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        LogConfig.from_properties({key: value})


@pytest.mark.parametrize(
    "key, value",
    [
        ("segment.bytes", "14"),
        ("segment.ms", "1"),
        ("segment.index.bytes", "8"),
        ("index.interval.bytes", "0"),
        ("retention.ms", "-1"),
        ("retention.bytes", "-1"),
        ("flush.messages", "1"),
        ("max.message.bytes", "0"),
        ("min.cleanable.dirty.ratio", "0"),
        ("min.cleanable.dirty.ratio", "1"),
        ("segment.bytes", str(INT_MAX)),
    ],
)
def test_boundary_values_are_accepted(key, value):
    props = LogConfig.from_properties({key: value}).to_properties()
    assert float(props[key]) == float(value)


@pytest.mark.parametrize("key", ["segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes"])
def test_int_typed_keys_reject_values_above_int_max(key):
    """Kafka declares these topic configs as INT (Int.MaxValue is the ceiling); a segment above 2 GiB
    could not be indexed at all, since .index positions are signed 32-bit."""
    with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
        LogConfig.from_properties({key: str(INT_MAX + 1)})


def test_direct_construction_is_validated_by_validate():
    with pytest.raises(InvalidConfigError, match=r"segment\.bytes"):
        LogConfig(segment_bytes=1).validate()


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("delete", "delete"),
        ("compact", "compact"),
        ("compact,delete", "compact,delete"),
        ("delete,compact", "delete,compact"),
        ("compact, delete", "compact,delete"),
        (" delete , compact ", "delete,compact"),
    ],
)
def test_cleanup_policies(raw, normalized):
    c = LogConfig.from_properties({"cleanup.policy": raw})
    assert c.cleanup_policy == normalized
    assert c.compact == ("compact" in raw)
    assert c.delete == ("delete" in raw)


@pytest.mark.parametrize("raw", ["", "remove", "compact,remove", "compact;delete", "Delete", ","])
def test_bad_cleanup_policy(raw):
    with pytest.raises(InvalidConfigError, match=r"cleanup\.policy"):
        LogConfig.from_properties({"cleanup.policy": raw})


def test_to_properties_is_strings_and_round_trips():
    original = LogConfig.from_properties({
        "segment.bytes": "1048576",
        "cleanup.policy": "compact,delete",
        "min.cleanable.dirty.ratio": "0.75",
        "retention.ms": "-1",
        "message.timestamp.type": "LogAppendTime",
    })
    props = original.to_properties()
    assert all(isinstance(v, str) for v in props.values())
    assert props["segment.bytes"] == "1048576"
    assert props["cleanup.policy"] == "compact,delete"
    assert props["min.cleanable.dirty.ratio"] == "0.75"
    assert props["flush.messages"] == str(2**63 - 1)
    assert LogConfig.from_properties(props) == original


def test_defaults_round_trip():
    assert LogConfig.from_properties(LogConfig().to_properties()) == LogConfig()


# -- throttled replica lists ---------------------------------------------------------------------------
from brokers.storage.log_config import ALL_REPLICAS, parse_throttled_replicas  # noqa: E402


@pytest.mark.parametrize("value, expected", [
    ("", frozenset()),
    ("*", ALL_REPLICAS),
    (" * ", ALL_REPLICAS),
    ("0:101", frozenset({(0, 101)})),
    ("0:101, 1:102,0:101,", frozenset({(0, 101), (1, 102)})),
])
def test_throttled_replicas_parse(value, expected):
    assert parse_throttled_replicas("leader.replication.throttled.replicas", value) == expected


@pytest.mark.parametrize("value", ["0", "a:1", "0:b", "0:1:2", "*,0:1", "-1:2", "0;1"])
def test_bad_throttled_replicas_name_the_key(value):
    with pytest.raises(InvalidConfigError, match="follower.replication.throttled.replicas"):
        LogConfig.from_properties({"follower.replication.throttled.replicas": value})


def test_all_replicas_contains_everything_and_the_config_exposes_parsed_sets():
    config = LogConfig.from_properties({"leader.replication.throttled.replicas": "*",
                                        "follower.replication.throttled.replicas": "3:1"})
    assert (7, 9) in config.leader_throttled_replicas
    assert config.follower_throttled_replicas == frozenset({(3, 1)})
    assert LogConfig().leader_throttled_replicas == frozenset()
