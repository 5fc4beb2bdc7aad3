"""kafka-configs: Kafka's --add-config syntax and the flag checks (exit 2 naming the flag)."""
from __future__ import annotations

import pytest

from scripts.tools.kafka_configs.command import main
from scripts.tools.kafka_configs.syntax import parse_add_config, parse_delete_config


@pytest.mark.parametrize("text, expected", [
    ("retention.ms=1000", {"retention.ms": "1000"}),
    ("a=1,b=2", {"a": "1", "b": "2"}),
    (" a = 1 , b=2 ", {"a": "1", "b": "2"}),
    ("cleanup.policy=[compact,delete]", {"cleanup.policy": "compact,delete"}),
    ("leader.replication.throttled.replicas=[0:1,1:2],retention.ms=5",
     {"leader.replication.throttled.replicas": "0:1,1:2", "retention.ms": "5"}),
    ("ssl.endpoint.identification.algorithm=", {"ssl.endpoint.identification.algorithm": ""}),
])
def test_add_config_parses_kafkas_syntax(text, expected):
    assert parse_add_config(text) == expected


@pytest.mark.parametrize("text", ["retention.ms", "a=1,b", "=1", "a=1=2", "a=[1,2", "a=1,,b=2"])
def test_bad_add_config_is_rejected(text):
    with pytest.raises(ValueError, match="Invalid entity config"):
        parse_add_config(text)


def test_delete_config_splits_on_commas():
    assert parse_delete_config("a, b,c") == ["a", "b", "c"]
    with pytest.raises(ValueError):
        parse_delete_config("a,,b")


@pytest.mark.parametrize("argv, flag", [
    (["--entity-type", "topics", "--entity-name", "t", "--describe"], "--bootstrap-server"),
    (["--bootstrap-server", "h:1", "--entity-type", "ips", "--entity-name", "u", "--describe"], "--entity-type"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--entity-default", "--describe"], "--entity-default"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--entity-name", "t", "--alter"], "--add-config"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--alter", "--add-config", "a=1"], "--entity-name"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "a"],
     "--add-config"),
    (["--bootstrap-server", "h:1", "--entity-type", "brokers", "--entity-name", "x", "--describe"], "--entity-name"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--entity-name", "t", "--describe", "--delete-config", "a"],
     "--delete-config"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics", "--entity-name", "t", "--describe", "--bogus"], "--bogus"),
    (["--zookeeper", "h:1", "--entity-type", "topics", "--describe"], "--entity-name"),
    (["--zookeeper", "h:1", "--entity-type", "users", "--entity-name", "u", "--describe", "--all"], "--all"),
])
def test_bad_flags_exit_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("content, words", [
    (None, "--command-config: cannot read"),
    ("security.protocol=SASL_PLAINTEXT\n", "--command-config: security.protocol=SASL_PLAINTEXT needs sasl.jaas.config"),
    ("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/t.jks\n",
     "--command-config: ssl.truststore.type: JKS"),
])
@pytest.mark.parametrize("entity", [["topics", "--entity-name", "t"], ["brokers", "--entity-default"]])
def test_an_unusable_command_config_exits_1_naming_it_before_connecting(tmp_path, capsys, content, words, entity):
    path = tmp_path / "client.properties"
    if content is not None:
        path.write_text(content)
    assert main(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(path), "--describe",
                 "--entity-type", *entity]) == 1
    assert words in capsys.readouterr().err
