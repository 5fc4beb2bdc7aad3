"""kafka-configs for users, the pure halves: --zookeeper's stored SCRAM credentials and describe lines,
--bootstrap-server's alterations and --command-config translation."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

from brokers.protocol.scram import ScramClient, ScramCredential, ScramServer
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config
from brokers.quotas.entities import QuotaEntity
from scripts.tools.kafka_configs.quotas import zookeeper_config
from scripts.tools.kafka_configs.users import UserConfigError, describe_lines

ALICE = QuotaEntity("alice", None)


def apply_changes(current: dict, added: dict, deleted: list) -> dict:
    """``--zookeeper --alter`` of user alice's znode."""
    return zookeeper_config(ALICE, current, added, deleted)
from scripts.tools.kafka_configs.users_admin import alterations, client_config


def test_add_config_stores_kafkas_credential_and_no_password():
    added = parse_add_config("SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=p]")
    config = apply_changes({}, added, [])
    assert "alice-secret" not in str(config)
    sha256 = ScramCredential.parse(config["SCRAM-SHA-256"])
    assert sha256.iterations == 8192 and ScramCredential.parse(config["SCRAM-SHA-512"]).iterations == 4096
    server, client = ScramServer("SCRAM-SHA-256"), ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server.client_first(client.client_first())
    client.verify(server.client_final(client.client_final(server.server_first(sha256))))
    assert set(apply_changes(config, {}, ["SCRAM-SHA-512"])) == {"SCRAM-SHA-256"}


@pytest.mark.parametrize("added, deleted, message", [
    ({"SCRAM-SHA-256": "iterations=100,password=p"}, [], "outside 4096-16384"),
    ({"SCRAM-SHA-256": "iterations=8192"}, [], "password is required"),
    ({"SCRAM-SHA-256": "password=p,salt=x"}, [], "expected"),
    ({"SCRAM-SHA-1": "password=p"}, [], "SCRAM-SHA-1"),
    ({"producer_byte_rate": "fast"}, [], "not a number"),
    ({}, ["SCRAM-SHA-512"], "Invalid config(s): SCRAM-SHA-512"),
])
def test_bad_user_configs(added, deleted, message):
    with pytest.raises((UserConfigError, ConfigCommandError), match=message.replace("(", r"\(").replace(")", r"\)")):
        apply_changes({}, added, deleted)


def test_describe_shows_iterations_only():
    config = apply_changes({}, {"SCRAM-SHA-512": "password=p", "producer_byte_rate": "1024"}, [])
    assert describe_lines("alice", config) == [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096"]
    assert describe_lines("alice", {"producer_byte_rate": "1024"}) == []
    assert QuotaEntity("CN=a,O=b", None).znode() == ("users", "CN%3Da%2CO%3Db")


def test_bootstrap_alterations():
    changes = alterations("alice", "SCRAM-SHA-512=[iterations=8192,password=s]", "SCRAM-SHA-256")
    assert isinstance(changes[0], UserScramCredentialDeletion) and changes[0].mechanism == ScramMechanism.SCRAM_SHA_256
    assert isinstance(changes[1], UserScramCredentialUpsertion)
    assert changes[1].scram_credential_info.iterations == 8192 and changes[1].password == b"s"
    with pytest.raises(ConfigCommandError, match="producer_byte_rate"):
        alterations("alice", "producer_byte_rate=1", None)


def test_command_config_translates_the_jaas_credentials(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="
                    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s";\n')
    assert client_config("h:1", str(path)) == {"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT",
                                               "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
                                               "sasl.password": "s", "log_level": "4"}
    with pytest.raises(ConfigCommandError, match="--command-config"):
        client_config("h:1", str(tmp_path / "missing"))
