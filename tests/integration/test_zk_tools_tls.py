"""The tools' ZooKeeper TLS (Kafka's ``--zk-tls-config-file``, zookeeper-shell's ``-zk-tls-config-file``) against a
real ZooKeeper serving only a ``secureClientPort`` with client authentication, started by zookeeper-server-start from
a Kafka-style properties file (Netty's jars come from the pyspark wheel). The client certificate is the tool's
ZooKeeper identity: the znodes kafka-configs creates are owned by ``x509:CN=...``. Certificates are made with
openssl at test time; every tool runs as the installed console script."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.local.zookeeper import find_free_base_port
from tests.certs import make_pki
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent


def tool(name: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
    result = subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=90, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def secure_zookeeper(tmp_path_factory):
    """(host:port, client TLS properties file, a directory for more files)."""
    directory = tmp_path_factory.mktemp("zk-tls")
    pki = make_pki(directory / "pki")
    port = find_free_base_port(1)
    (directory / "zookeeper.properties").write_text(
        f"dataDir={directory / 'data'}\nsecureClientPort={port}\nadmin.enableServer=false\ntickTime=500\n"
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
        f"ssl.keyStore.location={pki.server_keystore}\nssl.keyStore.type=PEM\n"
        f"ssl.trustStore.location={pki.ca}\nssl.trustStore.type=PEM\n"
        "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")
    client = directory / "zk-tls-client.properties"
    client.write_text("zookeeper.ssl.client.enable=true\n"
                      "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
                      f"zookeeper.ssl.keystore.location={pki.client_keystore}\nzookeeper.ssl.keystore.type=PEM\n"
                      f"zookeeper.ssl.truststore.location={pki.ca}\nzookeeper.ssl.truststore.type=PEM\n")
    server = subprocess.Popen([str(BIN / "zookeeper-server-start"), str(directory / "zookeeper.properties")],
                              cwd=directory, env={**os.environ, "LOG_DIR": str(directory / "logs")},
                              stdout=open(directory / "zookeeper.out", "wb"), stderr=subprocess.STDOUT)
    connect = f"127.0.0.1:{port}"
    try:
        wait_for(lambda: "binding to port" in (directory / "zookeeper.out").read_text() or server.poll() is not None,
                 60, "the TLS port to open")
        assert server.poll() is None, (directory / "zookeeper.out").read_text()
        yield connect, client, directory
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def test_zookeeper_shell_over_tls(secure_zookeeper):
    connect, client, _ = secure_zookeeper
    created = tool("zookeeper-shell", connect, "-zk-tls-config-file", str(client), "create", "/over-tls", "hi")
    assert (created.returncode, created.stderr) == (0, "Created /over-tls\n")
    got = tool("zookeeper-shell", connect, "-zk-tls-config-file", str(client), "get", "/over-tls")
    assert got.stdout.splitlines()[-1] == "hi"


def test_kafka_configs_over_tls_creates_znodes_its_certificate_owns(secure_zookeeper):
    connect, client, _ = secure_zookeeper
    added = tool("kafka-configs", "--zookeeper", connect, "--zk-tls-config-file", str(client), "--alter",
                 "--entity-type", "users", "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[password=bob-pw]")
    assert (added.returncode, added.stdout) == (0, "Completed updating config for entity: user-principal 'bob'.\n"), added
    acl = tool("zookeeper-shell", connect, "-zk-tls-config-file", str(client), "getAcl", "/config/users/bob")
    assert acl.stdout.splitlines()[-2:] == ["'x509,'CN=alice%2COU=eng%2CO=zkafka", ": cdrwa"], acl.stdout
    described = tool("kafka-configs", "--zookeeper", connect, "--zk-tls-config-file", str(client), "--describe",
                     "--entity-type", "users", "--entity-name", "bob")
    assert described.stdout == "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096\n"


def test_without_tls_or_with_an_unusable_file_one_line(secure_zookeeper):
    connect, _, directory = secure_zookeeper
    plain = tool("zookeeper-shell", connect, "-timeout", "2000", "ls", "/")
    assert plain.returncode == 1
    assert plain.stderr == f"Error: could not connect to ZooKeeper at {connect} within 2000 ms\n"
    jks = directory / "jks.properties"
    jks.write_text("zookeeper.ssl.client.enable=true\nzookeeper.ssl.keystore.location=/etc/kafka/client.keystore.jks\n")
    result = tool("kafka-configs", "--zookeeper", connect, "--zk-tls-config-file", str(jks), "--describe",
                  "--entity-type", "users", "--entity-name", "bob")
    assert result.returncode == 1
    assert result.stderr == (f"Error: {jks}: zookeeper.ssl.keystore.type JKS is not supported: zkafka reads PEM "
                             "(a key and certificate chain in one file)\n")
