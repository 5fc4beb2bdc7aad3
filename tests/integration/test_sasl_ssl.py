"""SASL_SSL end to end: ZooKeeper + 3 brokers whose only listener is SASL_SSL —
TLS from the ``ssl.*`` keys, SCRAM-SHA-512 inside it, replication between the brokers over the same
(inter-broker TLS + SASL). confluent-kafka and kafka-python produce and consume with SCRAM-SHA-512 over
TLS (RF 3, min.insync.replicas=3: an acknowledged write proves every follower authenticated); a wrong
password is refused and writes nothing; a client that does not trust the brokers' CA never gets in."""
from __future__ import annotations

import kafka
import kafka.errors
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, ClusterSpec
from tests.certs import make_pki
from tests.integration.scram_users import ADMIN_JAAS, add_scram_users
from tests.integration.test_console_tools import tool
from tests.integration.test_sasl import consume_all



@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, pki):
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=6000, properties={
        "listeners": "SASL_SSL://127.0.0.1:{kafka_port}", "inter.broker.listener.name": "SASL_SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": ADMIN_JAAS,
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
        "replica.fetch.backoff.ms": "200"})
    cluster = Cluster(tmp_path_factory.mktemp("sasl-ssl") / "cluster", spec)
    cluster.up(timeout=60)
    try:
        add_scram_users(cluster, {"admin": "admin-secret", "alice": "alice-secret"})
        yield cluster
    finally:
        cluster.down()


def confluent(cluster, pki, password="alice-secret", **extra) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca), "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
            "sasl.password": password, **extra}


def test_scram_over_tls_with_both_clients_at_rf3(cluster, pki):
    admin = AdminClient(confluent(cluster, pki))
    admin.create_topics([NewTopic("secure", 1, 3, config={"min.insync.replicas": "3"})])["secure"].result(30)
    producer = Producer(confluent(cluster, pki, acks="all"))
    for n in range(20):
        producer.produce("secure", value=b"c%d" % n)
    assert producer.flush(30) == 0
    python = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers.split(","), security_protocol="SASL_SSL",
                                 ssl_cafile=str(pki.ca), sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                 sasl_plain_password="alice-secret", acks="all")
    for n in range(20):
        python.send("secure", value=b"p%d" % n)
    python.flush(30)
    python.close()
    values = consume_all(confluent(cluster, pki), "secure", 40)
    assert sorted(values) == sorted([b"c%d" % n for n in range(20)] + [b"p%d" % n for n in range(20)])
    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers.split(","), security_protocol="SASL_SSL",
                                   ssl_cafile=str(pki.ca), sasl_mechanism="SCRAM-SHA-512",
                                   sasl_plain_username="alice", sasl_plain_password="alice-secret",
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([kafka.TopicPartition("secure", 0)])
    got = [m.value for m in consumer]
    consumer.close()
    assert len(got) == 40


def test_a_wrong_password_or_an_untrusted_broker_writes_nothing(cluster, pki):
    admin = AdminClient(confluent(cluster, pki))
    admin.create_topics([NewTopic("guarded", 1, 3)])["guarded"].result(30)
    errors = []
    producer = Producer(confluent(cluster, pki, password="wrong", **{"message.timeout.ms": 5000}))
    producer.produce("guarded", value=b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    assert errors and errors[0] is not None
    # trusting another CA than the brokers': the client refuses the brokers' certificate, never authenticates
    untrusted = Producer(confluent(cluster, pki, **{"ssl.ca.location": str(pki.dir / "other-ca.pem"),
                                                    "message.timeout.ms": 5000}))
    errors.clear()
    untrusted.produce("guarded", value=b"x", on_delivery=lambda err, msg: errors.append(err))
    untrusted.flush(15)
    assert errors and errors[0] is not None
    assert consume_all(confluent(cluster, pki), "guarded", 1) == []


def test_the_tools_over_sasl_ssl_with_a_client_properties_file(cluster, pki, tmp_path):
    """README's example: Kafka's Java client properties (sasl.jaas.config, a PEM truststore) for
    kafka-topics --command-config and the console tools' --producer.config / --consumer.config; the same
    file with a wrong password is one clear authentication error (exit 1)."""
    admin = tmp_path / "admin.properties"
    admin.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={ADMIN_JAAS}\n"
                     f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n")
    server = ["--bootstrap-server", cluster.bootstrap_servers]
    created = tool("kafka-topics", *server, "--command-config", str(admin), "--create", "--topic", "tools-tls",
                   "--partitions", "1", "--replication-factor", "3")
    assert (created.returncode, created.stdout) == (0, "Created topic tools-tls.\n"), created.stderr
    described = tool("kafka-topics", *server, "--command-config", str(admin), "--describe", "--topic", "tools-tls")
    assert described.stdout.startswith("Topic: tools-tls\tPartitionCount: 1\tReplicationFactor: 3"), described.stderr
    produced = tool("kafka-console-producer", *server, "--producer.config", str(admin), "--topic", "tools-tls",
                    stdin="over\ntls\n")
    assert produced.returncode == 0, produced.stderr
    consumed = tool("kafka-console-consumer", *server, "--consumer.config", str(admin), "--topic", "tools-tls",
                    "--from-beginning", "--max-messages", "2", timeout=60)
    assert (consumed.returncode, consumed.stdout) == (0, "over\ntls\n"), consumed.stderr
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(admin.read_text().replace("admin-secret", "wrong"))
    refused = tool("kafka-topics", *server, "--command-config", str(wrong), "--list")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: SASL SCRAM-SHA-512 authentication with"), \
        refused.stderr
