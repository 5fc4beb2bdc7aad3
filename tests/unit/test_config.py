"""BrokerConfig: Kafka's keys and defaults from server.properties; bad keys and values are named."""
from __future__ import annotations

from pathlib import Path

import pytest

from brokers.config import BrokerConfig, ConfigError, is_sensitive, parse_properties
from brokers.model import EndPoint
from brokers.replication.fetcher import FetcherConfig
from brokers.storage.log_manager import LogManagerConfig
from consumer_group.coordinator.group_config import GroupConfig

SERVER_PROPERTIES = r"""
# A Kafka-style file
broker.id=1
zookeeper.connect=127.0.0.1:2181/zkafka
zookeeper.session.timeout.ms = 6000
log.dirs=/tmp/zk-a, /tmp/zk-b
listeners=PLAINTEXT://:9092
advertised.listeners=PLAINTEXT://broker1:9092
num.partitions: 3
! another comment style
log.retention.hours=168
log.retention.minutes=10
log.segment.bytes=1048576
log.cleanup.policy=compact,\
    delete
http.port 8081
num.network.threads=3
"""


def test_reads_a_kafka_server_properties(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(SERVER_PROPERTIES)
    config = BrokerConfig.from_file(path)
    assert config.broker_id == 1
    assert config.zookeeper_connect == "127.0.0.1:2181/zkafka"
    assert config.zookeeper_session_timeout_ms == 6000
    assert config.zookeeper_connection_timeout_ms == 6000  # defaults to the session timeout
    assert config.log_dirs == [Path("/tmp/zk-a"), Path("/tmp/zk-b")]
    assert config.listeners == [EndPoint("PLAINTEXT", "", 9092)]
    assert config.advertised_listeners == [EndPoint("PLAINTEXT", "broker1", 9092)]
    assert config["num.partitions"] == 3
    assert config.http_port == 8081
    # log.* keys become topic-level defaults; minutes beat hours (Kafka's precedence)
    assert config.log_defaults == {"retention.ms": "600000", "segment.bytes": "1048576",
                                   "cleanup.policy": "compact,delete"}


def test_message_format_broker_keys_are_topic_defaults():
    """A 2.x upgrade's server.properties (log.message.format.version=0.10.2) starts; the downconversion
    switch may change live, the format version may not (Kafka's DynamicLogConfig excludes it)."""
    from brokers.dynamic_config.broker_config import DYNAMIC_KEYS

    config = BrokerConfig.from_properties({"zookeeper.connect": "localhost:2181",
                                           "log.message.format.version": "0.10.2",
                                           "log.message.downconversion.enable": "false"})
    assert config.log_defaults == {"message.format.version": "0.10.2", "message.downconversion.enable": "false"}
    assert "log.message.downconversion.enable" in DYNAMIC_KEYS
    assert "log.message.format.version" not in DYNAMIC_KEYS


def test_kafka_defaults():
    config = BrokerConfig.from_properties({"zookeeper.connect": "localhost:2181"})
    assert config["default.replication.factor"] == 1
    assert config["unclean.leader.election.enable"] is False
    assert config["auto.create.topics.enable"] is True
    assert config["offsets.topic.num.partitions"] == 50
    assert config.log_dirs == [Path("/tmp/kafka-logs")]
    assert config.advertised_listeners == [EndPoint("PLAINTEXT", "127.0.0.1", 9092)]


@pytest.mark.parametrize("props, named", [
    ({"zookeeper.connect": "x", "num.partition": "1"}, "num.partition"),
    ({"zookeeper.connect": "x", "num.partitions": "three"}, "num.partitions"),
    ({"zookeeper.connect": "x", "delete.topic.enable": "yes"}, "delete.topic.enable"),
    ({"zookeeper.connect": "x", "listeners": "nonsense"}, "listeners"),
    ({"zookeeper.connect": "x", "num.partitions": "0"}, "num.partitions"),
    ({"num.partitions": "1"}, "zookeeper.connect"),
    ({"zookeeper.connect": "x", "http.port": "70000"}, "http.port"),
    ({"zookeeper.connect": "x", "zookeeper.set.acl": "true"}, "zookeeper.digest.credentials"),
    ({"zookeeper.connect": "x", "zookeeper.digest.credentials": "nocolon"}, "zookeeper.digest.credentials"),
    ({"zookeeper.connect": "x", "http.authentication.method": "DIGEST"}, "http.authentication.method"),
    ({"zookeeper.connect": "x", "control.plane.secret": "short"}, "control.plane.secret"),
])
def test_bad_keys_and_values_are_named(props, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        BrokerConfig.from_properties(props, "server.properties")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read broker config"):
        BrokerConfig.from_file(tmp_path / "nope.properties")


def test_properties_syntax():
    text = "a.b = c\\\n   d\nx:y\nz w\nesc=\\u0041\\tB\n  # indented comment\nempty=\n"
    assert parse_properties(text) == {"a.b": "cd", "x": "y", "z": "w", "esc": "A\tB", "empty": ""}


TWO_LISTENERS = {"zookeeper.connect": "zk:2181", "listeners": "INTERNAL://:9092,EXTERNAL://:19092",
                 "advertised.listeners": "INTERNAL://broker-1:9092,EXTERNAL://127.0.0.1:19092",
                 "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                 "inter.broker.listener.name": "INTERNAL"}


def test_two_listeners_one_for_brokers_one_for_the_host():
    config = BrokerConfig.from_properties(TWO_LISTENERS)
    assert [e.listener for e in config.listeners] == ["INTERNAL", "EXTERNAL"]
    assert [str(e) for e in config.advertised_listeners] == ["INTERNAL://broker-1:9092", "EXTERNAL://127.0.0.1:19092"]


@pytest.mark.parametrize("override, named", [
    ({"listeners": "INTERNAL://:9092,INTERNAL://:9093"}, "appear once"),
    ({"advertised.listeners": "INTERNAL://broker-1:9092,OTHER://h:1"}, "OTHER"),
    ({"inter.broker.listener.name": "REPLICATION"}, "inter.broker.listener.name"),
])
def test_listener_names_must_be_consistent(override, named):
    with pytest.raises(ConfigError, match=named):
        BrokerConfig.from_properties({**TWO_LISTENERS, **override})


def test_http_security_keys():
    default = BrokerConfig.from_properties({"zookeeper.connect": "x"}, "server.properties")
    assert (default["http.authentication.method"], default.control_plane_secret) == ("NONE", None)
    config = BrokerConfig.from_properties({"zookeeper.connect": "x", "http.authentication.method": "basic",
                                           "control.plane.secret": "s" * 16}, "server.properties")
    assert (config["http.authentication.method"], config.control_plane_secret) == ("BASIC", b"s" * 16)
    assert is_sensitive("control.plane.secret")


# -- the components' settings are views of the schema: a default lives only in SCHEMA -----------------
def _default_broker_config() -> BrokerConfig:
    return BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181"})


def test_group_config_defaults_are_the_schema_defaults():
    assert GroupConfig() == GroupConfig.from_broker(_default_broker_config())


def test_log_manager_config_defaults_are_the_schema_defaults():
    assert LogManagerConfig() == LogManagerConfig.from_broker(_default_broker_config())


def test_fetcher_config_defaults_are_the_schema_defaults():
    assert FetcherConfig(7) == FetcherConfig.from_broker(_default_broker_config(), 7)


def test_views_read_the_broker_config():
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "offsets.retention.minutes": "2",
                                           "log.cleaner.enable": "false", "replica.fetch.max.bytes": "100"})
    assert GroupConfig.from_broker(config).offsets_retention_ms == 120000
    assert LogManagerConfig.from_broker(config).cleaner_enable is False
    fetcher = FetcherConfig.from_broker(config, 3, ssl_context="tls")
    assert (fetcher.broker_id, fetcher.max_bytes, fetcher.ssl_context, fetcher.sasl) == (3, 100, "tls", None)
