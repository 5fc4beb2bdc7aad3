"""The tools' ``--zookeeper`` path against a secured ZooKeeper (``zookeeper.set.acl=true``, digest credentials),
following the README's bootstrap order: ZooKeeper first; the brokers' inter-broker SCRAM user created with
``kafka-configs --zookeeper`` as the brokers' ZooKeeper identity (``KAFKA_OPTS=-Djava.security.auth.login.config``
with a ``Client`` section); then 2 brokers replicating over SASL_PLAINTEXT as that user. Without credentials
kafka-configs, kafka-topics and zookeeper-shell get one clear line naming how to pass them (exit 1); with them they
work, and the znodes they create carry Kafka's secure ACLs. All tools run as the installed console scripts."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, ClusterSpec
from tests.integration.scram_users import ADMIN_JAAS

BIN = Path(sys.executable).parent
CHROOT = "/kafka"
DIGEST = "kafka:zk-secret"
JAAS = """// the brokers' ZooKeeper identity (zookeeper.digest.credentials=kafka:zk-secret)
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="zk-secret";
};
"""
PROPERTIES = {
    "zookeeper.set.acl": "true", "zookeeper.digest.credentials": DIGEST,
    "listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}", "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": ADMIN_JAAS,
    "offsets.topic.num.partitions": "1", "replica.fetch.backoff.ms": "200",
}


def tool(name: str, *args: str, jaas: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
    if jaas is not None:
        env["KAFKA_OPTS"] = f"-Xmx256m -Djava.security.auth.login.config={jaas}"
    result = subprocess.run([str(BIN / name), *args], input=stdin, capture_output=True, text=True, env=env, timeout=90)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(cluster, ZooKeeper connect string with the chroot, JAAS file): brokers started after the admin user."""
    directory = tmp_path_factory.mktemp("zk-secured")
    jaas = directory / "jaas.conf"
    jaas.write_text(JAAS)
    spec = ClusterSpec.on_free_ports(2, tick_time=500, session_timeout_ms=6000, properties=dict(PROPERTIES))
    connect = f"127.0.0.1:{spec.zookeeper_port}{CHROOT}"
    spec.properties["zookeeper.connect"] = connect
    cluster = Cluster(directory / "cluster", spec)
    try:
        cluster.zookeeper.start(60)
        created = tool("kafka-configs", "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name",
                       "admin", "--add-config", "SCRAM-SHA-256=[password=admin-secret]", jaas=jaas)
        assert (created.returncode, created.stdout) == (
            0, "Completed updating config for entity: user-principal 'admin'.\n"), created.stderr
        cluster.up(timeout=90)
        yield cluster, connect, jaas
    finally:
        cluster.down()


def scram(cluster: Cluster, **extra) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "admin", "sasl.password": "admin-secret", **extra}


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_the_admin_user_made_before_the_brokers_authenticates_and_replicates(secured):
    cluster, _, _ = secured
    admin = AdminClient(scram(cluster))
    admin.create_topics([NewTopic("replicated", 1, 2)])["replicated"].result(30)
    producer = Producer(scram(cluster, acks="all"))
    for n in range(20):
        producer.produce("replicated", value=b"v%d" % n)
    assert producer.flush(30) == 0  # acks=all with RF 2: the follower fetched, authenticated as admin


def test_without_credentials_the_tools_say_how_to_pass_them(secured):
    cluster, connect, _ = secured
    for result in (
        tool("kafka-configs", "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name", "eve",
             "--add-config", "SCRAM-SHA-256=[password=eve-secret]"),
        tool("kafka-configs", "--zookeeper", connect, "--describe", "--entity-type", "users", "--entity-name", "admin"),
        tool("kafka-topics", "--zookeeper", connect, "--create", "--topic", "forged", "--partitions", "1",
             "--replication-factor", "1"),
    ):
        line = one_error_line(result)
        assert line.startswith(f"Error: ZooKeeper at {connect} refused the request (NoAuth"), line
        assert 'KAFKA_OPTS="-Djava.security.auth.login.config=' in line and "--zk-tls-config-file" in line, line
    shell = tool("zookeeper-shell", connect, "get", "/config/users/admin")
    assert shell.returncode == 1
    assert shell.stderr == ("org.apache.zookeeper.KeeperException$NoAuthException: "
                            "KeeperErrorCode = NoAuth for /config/users/admin\n")


def test_with_the_jaas_file_the_tools_work_and_create_secure_znodes(secured):
    cluster, connect, jaas = secured
    added = tool("kafka-configs", "--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name",
                 "alice", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]", jaas=jaas)
    assert added.returncode == 0, added.stderr
    described = tool("kafka-configs", "--zookeeper", connect, "--describe", "--entity-type", "users",
                     "--entity-name", "alice", jaas=jaas)
    assert described.stdout == ("SCRAM credential configs for user-principal 'alice' are "
                                "SCRAM-SHA-512=iterations=8192\n"), described.stderr
    topic = tool("kafka-topics", "--zookeeper", connect, "--create", "--topic", "by-zk", "--partitions", "2",
                 "--replication-factor", "2", jaas=jaas)
    assert (topic.returncode, topic.stdout) == (0, "Created topic by-zk.\n"), topic.stderr
    acl = tool("zookeeper-shell", connect, "getAcl", "/brokers/topics/by-zk", jaas=jaas)
    lines = acl.stdout.splitlines()
    assert lines[-4].startswith("'digest,'kafka:") and lines[-3:] == [": cdrwa", "'world,'anyone", ": r"], acl.stdout
    secret = tool("zookeeper-shell", connect, "get", "/config/users/alice", jaas=jaas)
    assert secret.returncode == 0 and '"SCRAM-SHA-512":"salt=' in secret.stdout.splitlines()[-1], secret


def test_a_broken_jaas_file_is_one_line(secured, tmp_path):
    _, connect, _ = secured
    bad = tmp_path / "bad.conf"
    bad.write_text('Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };')
    for jaas, expected in ((tmp_path / "missing.conf", "cannot read the JAAS file"),
                           (bad, "Krb5LoginModule is not supported")):
        line = one_error_line(tool("kafka-configs", "--zookeeper", connect, "--describe", "--entity-type", "users",
                                   "--entity-name", "admin", jaas=jaas))
        assert line.startswith("Error: ") and expected in line, line
