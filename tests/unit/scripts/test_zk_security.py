"""A tool's ZooKeeper identity (scripts.tools.common.zk_security, zk_client.identity): KAFKA_OPTS' -D settings,
JAAS files and their Client section, --zk-tls-config-file, and the one line a NoAuth refusal prints."""
from __future__ import annotations

import pytest

from brokers.zk.errors import ConnectionLossError, NoAuthError
from brokers.zk.tls import ZkTls, kazoo_security
from scripts.tools.common import zk_client
from scripts.tools.common.zk_security import (DIGEST_MODULE, ZkClientIdentity, ZkSecurityError, digest_from_jaas,
                                              digest_of, jaas_sections, login_config_path, no_auth_message,
                                              system_properties, tls_from_properties)

CLIENT = f'Client {{\n  {DIGEST_MODULE} required\n  username="kafka"\n  password="zk-secret";\n}};\n'


# -- KAFKA_OPTS ------------------------------------------------------------------------------------
@pytest.mark.parametrize("opts, expected", [
    ("", {}),
    ("-Xmx1g -Djava.security.auth.login.config=/etc/kafka/jaas.conf",
     {"java.security.auth.login.config": "/etc/kafka/jaas.conf"}),
    ("-Da=1 -Da=2 -Db", {"a": "2", "b": ""}),
    ('-Djava.security.auth.login.config="/path with space/j.conf"',
     {"java.security.auth.login.config": "/path with space/j.conf"}),
    ("-D -XX:+UseG1GC", {}),
])
def test_system_properties(opts, expected):
    assert system_properties(opts) == expected


def test_unbalanced_quotes_in_kafka_opts_are_an_error():
    with pytest.raises(ZkSecurityError, match="KAFKA_OPTS"):
        system_properties('-Dx="open')


def test_login_config_path_takes_javas_double_equals_form():
    assert login_config_path({"java.security.auth.login.config": "=/j.conf"}) == "/j.conf"
    assert login_config_path({}) is None
    with pytest.raises(ZkSecurityError, match="names no file"):
        login_config_path({"java.security.auth.login.config": ""})


# -- JAAS ------------------------------------------------------------------------------------------
def test_jaas_sections_with_comments_and_several_sections():
    text = ("/* brokers */\nKafkaServer {\n org.apache.kafka.common.security.plain.PlainLoginModule required\n"
            ' username="admin" password="a//b;c";\n};\n// ZooKeeper\n' + CLIENT)
    sections = jaas_sections(text, "j.conf")
    assert list(sections) == ["KafkaServer", "Client"]
    assert sections["KafkaServer"][0][1] == {"username": "admin", "password": "a//b;c"}
    assert digest_of(sections, "Client", "j.conf") == "kafka:zk-secret"
    assert digest_of(sections, "Other", "j.conf") is None


@pytest.mark.parametrize("text, message", [
    ("Client { nonsense };", "section Client"),
    ("Client {", "expected 'Name {"),
    ('Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };', "Krb5LoginModule is not"),
    (f'Client {{ {DIGEST_MODULE} required username="kafka"; }};', 'password="..."'),
    (f'Client {{ {DIGEST_MODULE} required username="a:b" password="p"; }};', "cannot contain ':'"),
    ("Client { };", "has no login module"),
])
def test_unusable_jaas_files_name_the_problem(text, message):
    with pytest.raises(ZkSecurityError, match=message):
        digest_of(jaas_sections(text, "j.conf"), "Client", "j.conf")


def test_the_section_name_and_sasl_switch_follow_zookeepers_system_properties():
    other = CLIENT.replace("Client", "ZkTools")
    assert digest_from_jaas(other, "j.conf", {"zookeeper.sasl.clientconfig": "ZkTools"}) == "kafka:zk-secret"
    assert digest_from_jaas(other, "j.conf", {}) is None
    with pytest.raises(ZkSecurityError, match="zookeeper.sasl.client=false"):
        digest_from_jaas(CLIENT, "j.conf", {"zookeeper.sasl.client": "false"})


# -- --zk-tls-config-file --------------------------------------------------------------------------
def test_tls_is_off_unless_the_client_enables_it():
    assert tls_from_properties({"zookeeper.ssl.truststore.location": "ca.pem"}, "t") is None


def test_tls_settings_from_kafkas_keys():
    tls = tls_from_properties({"zookeeper.ssl.client.enable": "true", "zookeeper.clientCnxnSocket": "x.Netty",
                               "zookeeper.ssl.truststore.location": "/c/ca.pem",
                               "zookeeper.ssl.keystore.location": "/c/client.bin", "zookeeper.ssl.keystore.type": "PEM",
                               "zookeeper.ssl.keystore.password": "pw", "zookeeper.ssl.protocol": "TLSv1.2",
                               "zookeeper.ssl.endpoint.identification.algorithm": "", "unrelated": "ignored"}, "t")
    assert tls == ZkTls(ca="/c/ca.pem", keystore="/c/client.bin", key_password="pw", check_hostname=False)
    assert tls.client_auth and ZkClientIdentity(tls=tls).secure_acls
    assert tls_from_properties({"zookeeper.ssl.client.enable": "true"}, "t") == ZkTls()


@pytest.mark.parametrize("key, value, message", [
    ("zookeeper.ssl.keystore.location", "/c/k.jks", "type JKS is not supported"),
    ("zookeeper.ssl.truststore.location", "/c/t.p12", "type PKCS12 is not supported"),
    ("zookeeper.ssl.truststore.location", "/c/truststore", "cannot tell the type"),
    ("zookeeper.ssl.enabled.protocols", "TLSv1.3,TLSv1.1", "TLSv1.1 is not supported"),
    ("zookeeper.ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", "cipher.suites is not supported"),
    ("zookeeper.ssl.ocsp.enable", "true", "ocsp.enable=true is not supported"),
    ("zookeeper.ssl.endpoint.identification.algorithm", "LDAPS", "must be HTTPS or empty"),
])
def test_tls_settings_zkafka_cannot_honour_are_errors(key, value, message):
    with pytest.raises(ZkSecurityError, match=message):
        tls_from_properties({"zookeeper.ssl.client.enable": "true", key: value}, "t")


def test_kazoo_arguments():
    assert kazoo_security(None, None) == {"auth_data": None}
    kwargs = kazoo_security("u:p", ZkTls(ca="ca.pem", keystore="me.pem", key_password="k"))
    assert kwargs["auth_data"] == [("digest", "u:p")] and kwargs["use_ssl"] and kwargs["check_hostname"]
    assert (kwargs["certfile"], kwargs["keyfile"], kwargs["keyfile_password"], kwargs["ca"]) == (
        "me.pem", "me.pem", "k", "ca.pem")


# -- zk_client.identity (the files) and the NoAuth line ----------------------------------------------
def test_identity_from_the_environment_and_files(tmp_path):
    jaas, tls = tmp_path / "jaas.conf", tmp_path / "zk-tls.properties"
    jaas.write_text(CLIENT)
    tls.write_text("zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.location=/c/ca.pem\n")
    who = zk_client.identity(str(tls), {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
    assert (who.digest, who.tls, who.user, who.secure_acls) == ("kafka:zk-secret", ZkTls(ca="/c/ca.pem"), "kafka", True)
    assert who.source == f"Client section of {jaas}, {tls}"
    assert zk_client.identity(None, {}) == ZkClientIdentity()
    with pytest.raises(ZkSecurityError, match="cannot read the JAAS file"):
        zk_client.identity(None, {"KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path / 'nope'}"})
    with pytest.raises(ZkSecurityError, match="cannot read --zk-tls-config-file"):
        zk_client.identity(str(tmp_path / "nope"), {})


def test_the_gateway_gets_secure_acls_only_with_an_identity():
    assert zk_client.gateway("127.0.0.1:1", ZkClientIdentity()).secure_acls is False
    assert zk_client.gateway("127.0.0.1:1", ZkClientIdentity("u:p")).secure_acls is True


def test_a_no_auth_refusal_says_how_to_pass_credentials_or_whose_were_refused():
    line = zk_client.error_line("h:1/kafka", NoAuthError("NoAuthError"), ZkClientIdentity())
    assert line.startswith("Error: ZooKeeper at h:1/kafka refused the request (NoAuth")
    assert 'KAFKA_OPTS="-Djava.security.auth.login.config=/path/jaas.conf"' in line and "--zk-tls-config-file" in line
    assert "\n" not in line
    assert "-zk-tls-config-file FILE" in no_auth_message("h:1", ZkClientIdentity(), "-zk-tls-config-file")
    refused = zk_client.error_line("h:1", NoAuthError("x"), ZkClientIdentity("bob:pw", source="Client section of j"))
    assert "for user 'bob' (Client section of j)" in refused and "zookeeper.digest.credentials" in refused
    assert zk_client.error_line("h:1", ConnectionLossError("down"), ZkClientIdentity()) == "Error: ZooKeeper at h:1: down"
