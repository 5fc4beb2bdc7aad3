"""DynamicBrokerConfig: precedence, the live throttle rates and log defaults, validation."""
from __future__ import annotations

import pytest

from brokers.config import BrokerConfig
from brokers.dynamic_config.broker_config import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_KEYS,
    STATIC_BROKER_CONFIG,
    DynamicBrokerConfig,
    ReadOnlyConfigError,
    validate_broker_overrides,
)
from brokers.storage.log_config import LONG_MAX, InvalidConfigError

BASE = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1"}


def dynamic(**props: str) -> DynamicBrokerConfig:
    return DynamicBrokerConfig(1, BrokerConfig.from_properties({**BASE, **props}))


def test_throttle_rates_default_to_long_max_and_follow_the_precedence():
    config = dynamic()
    assert config.leader_replication_throttled_rate == config.follower_replication_throttled_rate == LONG_MAX
    config.update("<default>", {"leader.replication.throttled.rate": "1000"})
    assert config.leader_replication_throttled_rate == 1000
    config.update("1", {"leader.replication.throttled.rate": "500", "follower.replication.throttled.rate": "70"})
    assert (config.leader_replication_throttled_rate, config.follower_replication_throttled_rate) == (500, 70)
    assert config.synonyms("leader.replication.throttled.rate") == [
        ("leader.replication.throttled.rate", "500", DYNAMIC_BROKER_CONFIG),
        ("leader.replication.throttled.rate", "1000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("leader.replication.throttled.rate", str(LONG_MAX), DEFAULT_CONFIG)]
    config.update("1", {})
    assert config.leader_replication_throttled_rate == 1000


def test_other_brokers_entities_are_ignored():
    config = dynamic()
    assert not config.update("2", {"leader.replication.throttled.rate": "1"})
    assert config.leader_replication_throttled_rate == LONG_MAX


def test_log_defaults_layer_dynamic_over_static():
    config = dynamic(**{"log.retention.hours": "1", "log.segment.bytes": "4096", "min.insync.replicas": "2"})
    assert config.default_log_config().retention_ms == 3600000
    assert config.default_log_config().min_insync_replicas == 2  # the static broker setting counts
    config.update("<default>", {"log.retention.ms": "5000", "min.insync.replicas": "3"})
    config.update("1", {"log.segment.bytes": "2048"})
    log_config = config.default_log_config()
    assert (log_config.retention_ms, log_config.segment_bytes, log_config.min_insync_replicas) == (5000, 2048, 3)
    assert config.topic_synonyms("segment.bytes") == [
        ("log.segment.bytes", "2048", DYNAMIC_BROKER_CONFIG), ("log.segment.bytes", "4096", STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
    assert config.topic_synonyms("unclean.leader.election.enable") == []


def test_listeners_hear_only_real_changes():
    config = dynamic()
    heard = []
    config.add_listener(lambda c: heard.append(c.value("log.retention.ms")))
    assert config.update("<default>", {"log.retention.ms": "10"})
    assert not config.update("<default>", {"log.retention.ms": "10"})
    assert heard == ["10"]


def test_bad_values_from_zookeeper_are_dropped_not_applied():
    config = dynamic()
    config.update("1", {"log.retention.ms": "soon", "num.io.threads": "9", "log.segment.bytes": "2048"})
    assert config.overrides(per_broker=True) == {"log.segment.bytes": "2048"}


def test_validation_names_read_only_keys_and_bad_values():
    validate_broker_overrides({"leader.replication.throttled.rate": "0", "log.cleanup.policy": "compact,delete"})
    with pytest.raises(ReadOnlyConfigError, match="Cannot update these configs dynamically: num.io.threads"):
        validate_broker_overrides({"num.io.threads": "4", "log.retention.ms": "1"})
    with pytest.raises(InvalidConfigError, match="follower.replication.throttled.rate"):
        validate_broker_overrides({"follower.replication.throttled.rate": "-1"})
    with pytest.raises(InvalidConfigError, match="leader.replication.throttled.rate"):
        validate_broker_overrides({"leader.replication.throttled.rate": "fast"})
    with pytest.raises(InvalidConfigError, match="log.segment.bytes"):
        validate_broker_overrides({"log.segment.bytes": "1"})
    assert "log.retention.hours" not in DYNAMIC_KEYS and "log.retention.ms" in DYNAMIC_KEYS
