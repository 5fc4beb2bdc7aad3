"""SASL_PLAINTEXT end to end: ZooKeeper + 3 brokers whose only listener is SASL_PLAINTEXT, replicating
to each other over it with SCRAM-SHA-512 (inter-broker SASL), SCRAM users made with ``kafka-configs
--zookeeper``. confluent-kafka and kafka-python produce and consume with SCRAM-SHA-512, SCRAM-SHA-256
and PLAIN (RF 3, min.insync.replicas=3, so an acknowledged write proves the followers authenticated);
wrong passwords and unknown users get SASL_AUTHENTICATION_FAILED and write nothing; a raw client
sending Metadata before authenticating is disconnected. SaslHandshake v0 over raw sockets: raw PLAIN and
SCRAM tokens authenticate, and Metadata is answered; a wrong password, a Kafka request inside the token
exchange or a raw token before the handshake closes the connection with one log line."""
from __future__ import annotations

import logging
import socket
import struct
import time

import kafka
import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.sasl import SaslClient, SaslClientConfig
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.tools.kafka_configs import command as kafka_configs
from tests.integration.conditions import wait_for
from tests.integration.scram_users import ADMIN_JAAS

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_bob="bob-secret" user_admin="admin-secret";')
PROPERTIES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": ADMIN_JAAS,
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
    "replica.fetch.backoff.ms": "200",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=6000, properties=PROPERTIES)
    cluster = Cluster(tmp_path_factory.mktemp("sasl") / "cluster", spec)
    cluster.up(timeout=60)
    try:
        for user, add in (("admin", "SCRAM-SHA-512=[password=admin-secret]"),
                          ("alice", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
                                    "SCRAM-SHA-512=[password=alice-secret]")):
            assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                                       "--entity-name", user, "--add-config", add]) == 0
        yield cluster
    finally:
        cluster.down()


def confluent(cluster, mechanism="SCRAM-SHA-512", user="alice", password="alice-secret", **extra):
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password, **extra}


def python_client(cluster, mechanism="SCRAM-SHA-512", user="alice", password="alice-secret"):
    return dict(bootstrap_servers=cluster.bootstrap_servers.split(","), security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)


def create_topic(cluster, name):
    admin = AdminClient(confluent(cluster))
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "3"})])[name].result(30)


def consume_all(config, topic, count):
    consumer = Consumer({**config, "group.id": f"g-{topic}-{time.monotonic_ns()}", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values, deadline = [], time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def authentication_error(producer, errors):
    """The first _AUTHENTICATION error librdkafka reports through ``error_cb`` (polled for)."""
    def found():
        producer.poll(0.2)
        return next((e for e in errors if e.code() == KafkaError._AUTHENTICATION), None)
    return wait_for(found, 20, "an authentication error")


def end_offset(cluster, topic):
    consumer = Consumer({**confluent(cluster), "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
    finally:
        consumer.close()


def test_confluent_scram_sha_512_produce_and_kafka_python_consume_rf3(cluster):
    create_topic(cluster, "scram")
    producer = Producer(confluent(cluster, **{"acks": "all"}))
    delivered = []
    for i in range(10):
        producer.produce("scram", f"m{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 10  # acks=all with min.insync.replicas=3: both followers fetched over SASL
    consumer = kafka.KafkaConsumer(**python_client(cluster), auto_offset_reset="earliest",
                                   consumer_timeout_ms=20000, group_id="python-scram")
    try:
        consumer.subscribe(["scram"])
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert values == [f"m{i}".encode() for i in range(10)]


def test_kafka_python_plain_produce_and_confluent_scram_sha_256_consume(cluster):
    create_topic(cluster, "plain")
    producer = kafka.KafkaProducer(**python_client(cluster, "PLAIN", "bob", "bob-secret"), acks="all")
    try:
        for i in range(5):
            producer.send("plain", f"p{i}".encode()).get(timeout=30)
    finally:
        producer.close()
    assert consume_all(confluent(cluster, "SCRAM-SHA-256"), "plain", 5) == [f"p{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism,user,password", [
    ("SCRAM-SHA-512", "alice", "wrong"), ("SCRAM-SHA-512", "mallory", "alice-secret"),
    ("PLAIN", "bob", "wrong"), ("PLAIN", "alice", "alice-secret")])  # alice has no PLAIN password
def test_bad_credentials_are_refused_and_write_nothing(cluster, mechanism, user, password):
    if "refused" not in {t for t in AdminClient(confluent(cluster)).list_topics(timeout=20).topics}:
        create_topic(cluster, "refused")
    before = end_offset(cluster, "refused")
    errors = []
    producer = Producer(confluent(cluster, mechanism, user, password, **{"error_cb": errors.append,
                                                                          "message.timeout.ms": "3000"}))
    producer.produce("refused", b"must not land")
    failure = authentication_error(producer, errors)
    assert "Authentication failed" in failure.str() and user not in failure.str().split("error:")[-1]
    producer.flush(5)
    assert end_offset(cluster, "refused") == before
    line = f"failed authentication with SASL mechanism {mechanism}"  # one line per refusal: peer and mechanism
    wait_for(lambda: any(line in (cluster.broker_dir(b) / "broker.log").read_text() for b in cluster.broker_ids),
             10, f"the broker log line {line!r}")



def test_kafka_python_wrong_password_is_refused(cluster, caplog):
    """kafka-python 3.0 logs each refused bootstrap connection and gives up after its timeout."""
    with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(kafka.errors.KafkaTimeoutError):
        kafka.KafkaProducer(**python_client(cluster, "SCRAM-SHA-512", "alice", "wrong"))
    refusals = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    assert refusals and all("SASL_AUTHENTICATION_FAILED" in m or "Authentication failed" in m for m in refusals)


def raw_request(sock, api_key, version, correlation_id, **fields):
    body = codec.build(codec.request_class(api_key, version), **fields)
    sock.sendall(codec.encode_request(api_key, version, correlation_id, "raw", body))


def read_frame(sock):
    """One frame without its size prefix; None once the broker has closed the connection."""
    try:
        header = sock.recv(4, socket.MSG_WAITALL)
        if len(header) < 4:
            return None
        return sock.recv(struct.unpack(">i", header)[0], socket.MSG_WAITALL)
    except ConnectionResetError:
        return None


@pytest.mark.parametrize("with_api_versions", [False, True])
def test_metadata_before_authentication_disconnects(cluster, with_api_versions):
    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10) as sock:
        if with_api_versions:
            raw_request(sock, 18, 3, 1, client_software_name="raw", client_software_version="1")
            assert read_frame(sock) is not None
        raw_request(sock, 3, 4, 2, topics=None, allow_auto_topic_creation=False)
        assert read_frame(sock) is None  # closed without an answer


def test_kafka_configs_describes_users_without_secrets(cluster, capsys):
    assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--describe", "--entity-type", "users",
                               "--entity-name", "alice"]) == 0
    out = capsys.readouterr().out
    assert out == ("SCRAM credential configs for user-principal 'alice' are "
                   "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                               "--entity-name", "carol", "--add-config", "SCRAM-SHA-256=[password=c]"]) == 0
    create_topic(cluster, "carol")  # carol authenticates at once: brokers read credentials per authentication
    producer = Producer(confluent(cluster, "SCRAM-SHA-256", "carol", "c"))
    producer.produce("carol", b"hi")
    assert producer.flush(30) == 0
    assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                               "--entity-name", "carol", "--delete-config", "SCRAM-SHA-256"]) == 0
    errors = []
    refused = Producer(confluent(cluster, "SCRAM-SHA-256", "carol", "c", **{"error_cb": errors.append}))
    refused.produce("carol", b"no")
    assert "Authentication failed" in authentication_error(refused, errors).str()
    refused.flush(1)


def test_kafka_configs_over_the_brokers_manages_scram_users(cluster, tmp_path, capsys):
    """AlterUserScramCredentials / DescribeUserScramCredentials through confluent-kafka, authenticated as
    admin with Kafka's --command-config; the new user then authenticates."""
    client = tmp_path / "client.properties"
    client.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={ADMIN_JAAS}\n")
    common = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", str(client),
              "--entity-type", "users", "--entity-name", "dave"]
    assert kafka_configs.main([*common, "--alter", "--add-config",
                               "SCRAM-SHA-512=[iterations=8192,password=dave-secret],SCRAM-SHA-256=[password=x]"]) == 0
    assert kafka_configs.main([*common, "--alter", "--delete-config", "SCRAM-SHA-256"]) == 0
    assert kafka_configs.main([*common, "--describe"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-512=iterations=8192")
    assert kafka_configs.main([*common, "--alter", "--delete-config", "SCRAM-SHA-256"]) == 1  # no longer there
    assert "RESOURCE_NOT_FOUND" in capsys.readouterr().err
    create_topic(cluster, "dave")
    producer = Producer(confluent(cluster, "SCRAM-SHA-512", "dave", "dave-secret"))
    producer.produce("dave", b"hi")
    assert producer.flush(30) == 0


def test_kafka_configs_topics_and_brokers_over_the_brokers_with_command_config(cluster, tmp_path, capsys):
    """``--entity-type topics|brokers --bootstrap-server`` reach a SASL-only cluster with Kafka's
    ``--command-config`` (security.protocol, sasl.mechanism, sasl.jaas.config): confluent-kafka's
    IncrementalAlterConfigs and the internal client's DescribeConfigs / cluster-default alter both
    authenticate; without it the same describe is refused."""
    client = tmp_path / "admin.properties"
    client.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                      f"sasl.jaas.config={ADMIN_JAAS}\n")
    create_topic(cluster, "configured")
    sasl = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", str(client)]
    topic = [*sasl, "--entity-type", "topics", "--entity-name", "configured"]
    assert kafka_configs.main([*topic, "--alter", "--add-config", "retention.ms=12345"]) == 0
    assert kafka_configs.main([*topic, "--describe"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == ["Dynamic configs for topic configured are:",  # min.insync.replicas from create_topic
                        "  min.insync.replicas=3 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=3, "
                        "DEFAULT_CONFIG:min.insync.replicas=1}",
                        "  retention.ms=12345 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=12345, "
                        "DEFAULT_CONFIG:log.retention.ms=604800000}"]
    broker = [*sasl, "--entity-type", "brokers", "--entity-name", "2"]
    assert kafka_configs.main([*broker, "--alter", "--add-config", "leader.replication.throttled.rate=1048576"]) == 0
    assert kafka_configs.main([*broker, "--describe"]) == 0
    assert "  leader.replication.throttled.rate=1048576 sensitive=false" in capsys.readouterr().out
    default = [*sasl, "--entity-type", "brokers", "--entity-default"]
    assert kafka_configs.main([*default, "--alter", "--add-config", "follower.replication.throttled.rate=2048"]) == 0
    assert kafka_configs.main([*default, "--describe"]) == 0
    assert "  follower.replication.throttled.rate=2048 sensitive=false" in capsys.readouterr().out
    for command in (topic, broker, default):
        key = "retention.ms" if command is topic else ("leader" if command is broker else "follower")
        key = key if command is topic else f"{key}.replication.throttled.rate"
        assert kafka_configs.main([*command, "--alter", "--delete-config", key]) == 0
    assert kafka_configs.main([*topic, "--describe"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "Dynamic configs for topic configured are:",
        "  min.insync.replicas=3 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=3, "
        "DEFAULT_CONFIG:min.insync.replicas=1}"]

    plain = ["--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "topics", "--entity-name", "configured"]
    assert kafka_configs.main([*plain, "--describe"]) == 1  # no SASL: the broker closes the connection
    assert "Error while executing config command" in capsys.readouterr().err


# -- SaslHandshake v0: the tokens as raw size-prefixed frames (KIP-43; Sarama's default, Java before 1.0) --
def send_raw(sock, token):
    sock.sendall(struct.pack(">i", len(token)) + token)


def login_v0(sock, mechanism, user, password):
    """SaslHandshake v0, then the client's tokens raw: the broker's raw answers once the exchange completed
    (the client verified SCRAM's server-final), None if the broker closed the connection."""
    raw_request(sock, 17, 0, 1, mechanism=mechanism)
    handshake = codec.decode_response(17, 0, read_frame(sock))[1]
    assert handshake.error_code == ErrorCode.NONE and mechanism in handshake.mechanisms
    client, answers = SaslClient(SaslClientConfig(mechanism, user, password)), []
    token = client.first()
    while token is not None:
        send_raw(sock, token)
        if (answer := read_frame(sock)) is None:
            return None
        answers.append(answer)
        token = client.respond(answer)
    return answers


def metadata_brokers(sock):
    raw_request(sock, 3, 4, 9, topics=None, allow_auto_topic_creation=False)
    response = read_frame(sock)
    return None if response is None else {b.node_id for b in codec.decode_response(3, 4, response)[1].brokers}


def closed_with_log_line(cluster, sock, reason):
    """The broker closed ``sock`` (nothing more to read), and logged why once, naming this peer."""
    assert read_frame(sock) is None
    line = f"closing connection from 127.0.0.1:{sock.getsockname()[1]}: {reason}"
    log = cluster.broker_dir(1) / "broker.log"
    wait_for(lambda: line in log.read_text(), 10, f"the broker log line {line!r}")
    assert log.read_text().count(line) == 1


@pytest.mark.parametrize("mechanism,user,password", [
    ("PLAIN", "bob", "bob-secret"), ("SCRAM-SHA-256", "alice", "alice-secret"),
    ("SCRAM-SHA-512", "alice", "alice-secret")])
def test_sasl_handshake_v0_raw_tokens_authenticate(cluster, mechanism, user, password):
    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10) as sock:
        raw_request(sock, 18, 0, 1)  # ApiVersions before the handshake, as old clients probe
        assert read_frame(sock) is not None
        answers = login_v0(sock, mechanism, user, password)
        # PLAIN: the four zero bytes a v0 client waits for (an empty token); SCRAM: server-first, server-final
        assert answers == [b""] if mechanism == "PLAIN" else [a[:2] for a in answers] == [b"r=", b"v="]
        assert metadata_brokers(sock) == set(cluster.broker_ids)


@pytest.mark.parametrize("mechanism,user,password", [
    ("PLAIN", "bob", "wrong"), ("SCRAM-SHA-256", "alice", "wrong"), ("SCRAM-SHA-512", "mallory", "alice-secret")])
def test_sasl_handshake_v0_bad_credentials_close_the_connection(cluster, mechanism, user, password):
    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10) as sock:
        assert login_v0(sock, mechanism, user, password) is None
        closed_with_log_line(cluster, sock, f"failed authentication with SASL mechanism {mechanism}")


def test_a_kafka_request_inside_the_v0_exchange_closes_the_connection(cluster):
    """After SaslHandshake v0 every frame is a token, as in Kafka: Metadata fails as a PLAIN token."""
    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10) as sock:
        raw_request(sock, 17, 0, 1, mechanism="PLAIN")
        assert codec.decode_response(17, 0, read_frame(sock))[1].error_code == ErrorCode.NONE
        assert metadata_brokers(sock) is None
        closed_with_log_line(cluster, sock, "failed authentication with SASL mechanism PLAIN")


def test_a_raw_token_before_the_handshake_closes_the_connection(cluster):
    with socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10) as sock:
        send_raw(sock, b"\0bob\0bob-secret")
        closed_with_log_line(cluster, sock, "Unexpected Kafka request of type 98 (no Kafka request: a raw SASL "
                                            "token needs SaslHandshake v0 first)")
