"""scripts.tools.common.client_properties: Kafka's Java client properties (a tool's --command-config) -> librdkafka's
settings and the internal client's TLS context and SASL credentials."""
from __future__ import annotations

import argparse
import ssl

import pytest

from brokers.protocol.sasl import SaslClientConfig
from scripts.tools.common.client_properties import (ClientPropertiesError, check_login, connection_settings, from_flag,
                                       librdkafka_config, parse_flag, read, tool_config)
from tests.certs import make_pki

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="a b\\"c";'


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_sasl_jaas_config_becomes_librdkafkas_username_and_password():
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": JAAS,
             "client.id": "tool"}
    assert librdkafka_config(props) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                                        "sasl.username": "admin", "sasl.password": 'a b"c', "client.id": "tool"}
    assert connection_settings(props) == (None, SaslClientConfig("SCRAM-SHA-512", "admin", 'a b"c'))


def test_librdkafka_names_pass_and_win_over_the_jaas_options():
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "bob",
             "sasl.password": "b", "sasl.jaas.config": JAAS, "socket.timeout.ms": "1000"}
    assert librdkafka_config(props) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                        "sasl.username": "bob", "sasl.password": "b", "socket.timeout.ms": "1000"}
    assert connection_settings(props)[1] == SaslClientConfig("PLAIN", "bob", "b")


def test_pem_stores_become_librdkafkas_locations(pki):
    props = {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
             "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.client_keystore),
             "ssl.endpoint.identification.algorithm": ""}
    assert librdkafka_config(props) == {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca),
                                        "ssl.certificate.location": str(pki.client_keystore),
                                        "ssl.key.location": str(pki.client_keystore),
                                        "ssl.endpoint.identification.algorithm": "none"}
    context, sasl = connection_settings(props)
    assert sasl is None and isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.check_hostname
    context, _ = connection_settings({**props, "ssl.endpoint.identification.algorithm": "https"})
    assert context.check_hostname


def test_plaintext_needs_nothing():
    assert connection_settings({}) == (None, None)
    assert librdkafka_config({}) == {}


@pytest.mark.parametrize("props, words", [
    ({"ssl.keystore.location": "/k.jks", "ssl.keystore.type": "JKS"}, "ssl.keystore.type: JKS"),
    ({"ssl.truststore.location": "/t.p12", "ssl.truststore.type": "pkcs12"}, "ssl.truststore.type: PKCS12"),
    ({"sasl.jaas.config": "nonsense"}, "sasl.jaas.config"),
])
def test_unusable_properties_name_the_key(props, words):
    with pytest.raises(ClientPropertiesError, match=words):
        librdkafka_config(props)


@pytest.mark.parametrize("props, words", [
    ({"security.protocol": "SASL_PLAINTEXT"}, "needs sasl.jaas.config"),
    ({"security.protocol": "TLS"}, "security.protocol: 'TLS'"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"}, "ssl.*"),
])
def test_unusable_connection_settings_name_the_key(props, words):
    with pytest.raises(ClientPropertiesError, match=words):
        connection_settings(props)


def test_read_names_an_unreadable_file(tmp_path):
    (tmp_path / "c.properties").write_text("security.protocol = SASL_SSL\n# comment\n")
    assert read(str(tmp_path / "c.properties")) == {"security.protocol": "SASL_SSL"}
    with pytest.raises(ClientPropertiesError, match="cannot read .*missing"):
        read(str(tmp_path / "missing"))


# -- the one reader every tool uses: from_flag / parse_flag ----------------------------------------------

def test_from_flag_without_a_file_is_empty_and_with_one_its_properties(tmp_path):
    assert from_flag("--command-config", None) == {}
    path = tmp_path / "admin.properties"
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n")
    assert from_flag("--command-config", str(path)) == {"security.protocol": "SASL_PLAINTEXT",
                                                        "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}


@pytest.mark.parametrize("content, words", [
    (None, "cannot read {path}: No such file or directory"),
    ("=no key\n", "{path}:1: cannot parse '=no key'"),
    ("security.protocol=SASL_SSL\n", "security.protocol=SASL_SSL needs sasl.jaas.config"),
    ("security.protocol=SASL_PLAINTEXT\nsasl.jaas.config=nonsense\n", "sasl.jaas.config"),
    ("security.protocol=SSL\nssl.truststore.location=/t.jks\nssl.truststore.type=JKS\n", "ssl.truststore.type: JKS"),
    ("security.protocol=SSL\nssl.truststore.location=/nonexistent/ca.pem\n", "ssl.*: cannot load"),
    ("security.protocol=KERBEROS\n", "security.protocol: 'KERBEROS'"),
])
@pytest.mark.parametrize("flag", ["--command-config", "--admin.config", "--producer.config", "--consumer.config"])
def test_an_unusable_file_is_an_error_naming_the_flag_then_the_problem(tmp_path, content, words, flag):
    path = tmp_path / "client.properties"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ClientPropertiesError) as info:
        from_flag(flag, str(path))
    assert str(info.value).startswith(f"argument {flag}: ") and words.format(path=path) in str(info.value)


def test_parse_flag_exits_2_with_the_message(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="kafka-topics")
    with pytest.raises(SystemExit) as exit_:
        parse_flag(parser, "--command-config", str(tmp_path / "missing.properties"))
    assert exit_.value.code == 2
    assert (f"kafka-topics: error: argument --command-config: cannot read {tmp_path / 'missing.properties'}"
            in capsys.readouterr().err)


def test_tool_config_translates_and_names_the_bootstrap_servers():
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS,
             "bootstrap.servers": "ignored:1"}
    assert tool_config("127.0.0.1:1", props) == {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
        "sasl.password": 'a b"c', "bootstrap.servers": "127.0.0.1:1", "log_level": "4"}


def test_a_tool_logs_at_warn_as_kafka_tools_do_unless_its_properties_say_otherwise():
    assert tool_config("127.0.0.1:1", {})["log_level"] == "4"
    assert tool_config("127.0.0.1:1", {"log_level": "7"})["log_level"] == "7"


def test_check_login_leaves_a_broker_that_closes_without_answering_to_the_client():
    """Only a refused SASL exchange is a LoginError: a peer that accepts and closes is the network's."""
    import socket
    import threading
    server = socket.create_server(("127.0.0.1", 0))

    def accept_and_close():
        for _ in range(2):
            conn, _ = server.accept()
            conn.close()

    threading.Thread(target=accept_and_close, daemon=True).start()
    try:
        check_login(f"127.0.0.1:{server.getsockname()[1]}", {
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                'username="u" password="p";'}, timeout=5)
    finally:
        server.close()


def test_check_login_needs_no_broker_without_sasl_and_leaves_an_unreachable_one_to_the_client():
    check_login("127.0.0.1:1", {})  # PLAINTEXT: nothing to check, no connection
    check_login("127.0.0.1:1,not-a-host-port", {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                               "sasl.username": "u", "sasl.password": "p"}, timeout=2)


@pytest.mark.parametrize("argv, line", [
    (["kafka-acls", "--command-config", "{file}", "--list"],
     'Error while executing ACL command: argument --command-config: No such configuration property: "foo.bar"'),
    (["kafka-leader-election", "--admin.config", "{file}", "--election-type", "PREFERRED", "--all-topic-partitions"],
     'Error while making request: argument --admin.config: No such configuration property: "foo.bar"'),
    (["kafka-configs", "--command-config", "{file}", "--entity-type", "users", "--describe"],
     'Error while executing config command: argument --command-config: No such configuration property: "foo.bar"'),
    (["kafka-topics", "--command-config", "{file}", "--list"],
     'Error: argument --command-config: No such configuration property: "foo.bar"'),
])
def test_a_key_librdkafka_does_not_know_is_one_line_and_exit_1(tmp_path, argv, line):
    """Every admin tool opens its AdminClient through client_properties.admin_client: no traceback."""
    import subprocess
    import sys
    from pathlib import Path
    file = tmp_path / "client.properties"
    file.write_text("foo.bar=1\n")
    tool, *args = argv
    module = {"kafka-acls": "kafka_acls", "kafka-leader-election": "kafka_leader_election",
              "kafka-configs": "kafka_configs.command", "kafka-topics": "kafka_topics.command"}[tool]
    done = subprocess.run([sys.executable, "-m", f"scripts.tools.{module}", "--bootstrap-server", "127.0.0.1:1",
                           *(a.replace("{file}", str(file)) for a in args)], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[3])
    assert (done.returncode, done.stderr.strip().splitlines()) == (1, [line])
