"""A real ZooKeeper and 3 real brokers whose only listener is ``SSL://127.0.0.1:<port>`` with
``ssl.client.auth=required`` and ``inter.broker.listener.name=SSL``: replication runs over TLS (the
followers' fetchers present the broker certificate), confluent-kafka and kafka-python produce and consume
over TLS with a client certificate at RF 3 (including >1 MiB fetch ranges, which never go out with
sendfile on TLS), a client without a certificate or with an untrusted one is refused and writes nothing,
each failed handshake is one WARNING line in the broker's log naming the peer, the listener and the reason,
and /healthz shows each connection's principal (the certificate's DN)."""
from __future__ import annotations

import socket
import ssl

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from brokers.protocol import codec
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.zookeeper import find_free_base_port
from tests.certs import make_pki
from tests.integration.conditions import wait_for

ALICE = "User:CN=alice,OU=eng,O=zkafka"
BROKER = "User:CN=broker"
TIMEOUT = 60


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, pki):
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=6000, kafka_listener="SSL", properties={
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca), "ssl.client.auth": "required",
        "inter.broker.listener.name": "SSL", "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0", "replica.fetch.backoff.ms": "200"})
    c = Cluster(tmp_path_factory.mktemp("cluster"), spec)
    c.up(timeout=TIMEOUT)
    yield c
    c.down()


def tls(pki, cert=None, key=None) -> dict:
    """librdkafka's TLS settings, with a client certificate if given."""
    config = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}
    if cert is not None:
        config.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    return config


def create_topic(cluster, pki, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **tls(pki, pki.client_cert, pki.client_key)})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(TIMEOUT)


def replicas_caught_up(cluster, topic: str, end: int) -> bool:
    """Every broker's replica of ``topic``-0 holds ``end`` records (the followers copied them over TLS)
    and the leader's ISR is all three."""
    states = [(cluster.health(b) or {}).get("partitions", {}).get(f"{topic}-0") for b in cluster.broker_ids]
    return all(s and s["log_end_offset"] == end for s in states) and any(
        s["is_leader"] and sorted(s["isr"]) == [1, 2, 3] for s in states)


def end_offset(cluster, pki, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "watermarks",
                         **tls(pki, pki.client_cert, pki.client_key)})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)[1]
    finally:
        consumer.close()


def test_confluent_kafka_over_tls_at_rf3_with_mebibyte_fetches(cluster, pki):
    topic, value, count = "tls-confluent", b"x" * (200 * 1024), 16  # 3.2 MB: fetch ranges beyond 1 MiB
    create_topic(cluster, pki, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         **tls(pki, pki.client_cert, pki.client_key)})
    errors: list = []
    for i in range(count):
        producer.produce(topic, value[:-8] + b"%08d" % i, key=b"%d" % i, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(TIMEOUT) == 0 and errors == [None] * count
    wait_for(lambda: replicas_caught_up(cluster, topic, count), TIMEOUT, "all 3 replicas to copy the records over TLS")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "tls-readers",
                         "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 16 << 20,
                         "fetch.max.bytes": 64 << 20, **tls(pki, pki.client_cert, pki.client_key)})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list = []

        def read_all() -> bool:
            message = consumer.poll(1)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message.value())
            return len(got) >= count

        wait_for(read_all, TIMEOUT, f"{count} records consumed over TLS", interval=0)
        assert got == [value[:-8] + b"%08d" % i for i in range(count)]

        def principals() -> bool:  # the client's certificate DN, and the followers' fetchers' (the broker's)
            connections = [(cluster.health(b) or {}).get("connections", {}).get("SSL", {}) for b in cluster.broker_ids]
            return any(c.get(ALICE) for c in connections) and sum(c.get(BROKER, 0) for c in connections) >= 2

        wait_for(principals, TIMEOUT, "alice's and the fetchers' principals in /healthz")
    finally:
        consumer.close()


def test_kafka_python_over_tls(cluster, pki):
    topic = "tls-kafka-python"
    create_topic(cluster, pki, topic)
    settings = dict(bootstrap_servers=cluster.bootstrap_servers, security_protocol="SSL", ssl_cafile=str(pki.ca),
                    ssl_certfile=str(pki.client_cert), ssl_keyfile=str(pki.client_key))
    producer = KafkaProducer(acks="all", **settings)
    try:
        for i in range(10):
            producer.send(topic, f"python {i}".encode()).get(TIMEOUT)
    finally:
        producer.close(TIMEOUT)
    wait_for(lambda: replicas_caught_up(cluster, topic, 10), TIMEOUT, "all 3 replicas to copy the records over TLS")
    consumer = KafkaConsumer(consumer_timeout_ms=TIMEOUT * 1000, **settings)
    try:
        consumer.assign([KpTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = [next(consumer).value for _ in range(10)]
    finally:
        consumer.close()
    assert got == [f"python {i}".encode() for i in range(10)]


@pytest.mark.parametrize("who", ["no certificate", "untrusted certificate"])
def test_required_client_auth_refuses_clients_without_a_trusted_certificate(cluster, pki, who):
    topic = "tls-refused-" + who.split()[0]
    create_topic(cluster, pki, topic)
    certificate = (None, None) if who == "no certificate" else (pki.untrusted_cert, pki.untrusted_key)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 5000,
                         **tls(pki, *certificate)})
    errors: list = []
    producer.produce(topic, b"must not be written", on_delivery=lambda e, m: errors.append(e))
    producer.flush(30)
    assert len(errors) == 1 and errors[0] is not None  # the handshake failed: the message timed out
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "socket.timeout.ms": 3000,
                         **tls(pki, *certificate)})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    assert end_offset(cluster, pki, topic) == 0


def test_a_plaintext_and_an_ssl_listener_side_by_side(tmp_path, pki):
    """One broker, INTERNAL (PLAINTEXT) and EXTERNAL (SSL) listeners; ``listener.name.external.ssl.*``
    sets EXTERNAL's TLS alone, with ``ssl.client.auth=requested``: a client without a certificate is
    ``User:ANONYMOUS``, one with a trusted certificate is its DN, and PLAINTEXT works as before."""
    spec = ClusterSpec.on_free_ports(1, tick_time=500, session_timeout_ms=6000)
    internal = spec.kafka_port_base
    taken = (internal, spec.zookeeper_port, spec.http_port_base)
    external = wait_for(lambda: (port := find_free_base_port(1)) not in taken and port, 10, "a free port for EXTERNAL")
    spec.properties = {
        "listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SSL", "inter.broker.listener.name": "INTERNAL",
        "listener.name.external.ssl.keystore.type": "PEM",
        "listener.name.external.ssl.keystore.location": str(pki.server_keystore),
        "listener.name.external.ssl.truststore.type": "PEM",
        "listener.name.external.ssl.truststore.location": str(pki.ca),
        "listener.name.external.ssl.client.auth": "requested", "offsets.topic.num.partitions": "1"}
    cluster = Cluster(tmp_path / "cluster", spec)
    cluster.up(timeout=TIMEOUT)
    try:
        clients = {"anonymous": {"bootstrap.servers": f"127.0.0.1:{external}", **tls(pki)},
                   "alice": {"bootstrap.servers": f"127.0.0.1:{external}", **tls(pki, pki.client_cert, pki.client_key)},
                   "plaintext": {"bootstrap.servers": f"127.0.0.1:{internal}"}}
        admins = {name: AdminClient(config) for name, config in clients.items()}
        for name, admin in admins.items():  # each listener advertises its own port
            ports = [b.port for b in admin.list_topics(timeout=TIMEOUT).brokers.values()]
            assert ports == [internal if name == "plaintext" else external]

        def principals() -> dict:  # the clients (re)connect on their own threads: wait until all are in
            connections = (cluster.health(1) or {}).get("connections", {})
            return connections if ({"User:ANONYMOUS", ALICE} <= set(connections.get("EXTERNAL", {}))
                                   and connections.get("INTERNAL")) else {}

        connections = wait_for(principals, TIMEOUT, "the clients' connections with their principals in /healthz")
        assert set(connections["INTERNAL"]) == {"User:ANONYMOUS"}, connections
    finally:
        cluster.down()


def handshake_from_known_port(port: int, context: ssl.SSLContext | None) -> str:
    """Connect to ``port`` and try TLS with ``context`` (None: send a Kafka ApiVersions request in plain
    TCP); the broker refuses. Returns the peer as the broker sees it (``/127.0.0.1:<our port>``)."""
    raw = socket.create_connection(("127.0.0.1", port), TIMEOUT)
    peer = "/%s:%d" % raw.getsockname()[:2]
    request = codec.encode_request(18, 0, 1, "handshake-test", codec.build(codec.request_class(18, 0)))
    try:
        sock = raw if context is None else context.wrap_socket(raw, server_hostname="127.0.0.1")
        sock.sendall(request)  # TLS 1.3: the server checks the client's certificate after the client is done
        assert sock.recv(1 << 16) == b"", "the broker answered a client it must refuse"
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        pass  # the broker's alert or reset: refused either way
    finally:
        raw.close()
    return peer


def test_failed_handshakes_are_logged_with_the_peer_and_good_clients_still_served(cluster, pki):
    """Kafka's "Failed authentication with /<ip> (SSL handshake failed)": one WARNING line per refused
    handshake in the broker's log, naming the client's address and port, the listener and OpenSSL's reason
    (no asyncio traceback); the broker then serves a client with a trusted certificate as before."""
    broker = cluster.broker_ids[0]
    port, log = cluster.kafka_port(broker), cluster.broker_dir(broker) / "broker.log"

    def client(cert=None, key=None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(pki.ca))
        if cert is not None:
            context.load_cert_chain(str(cert), str(key))
        return context

    attempts = {
        "PEER_DID_NOT_RETURN_A_CERTIFICATE": client(),
        "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate": client(pki.untrusted_cert,
                                                                                    pki.untrusted_key),
        "CERTIFICATE_VERIFY_FAILED: certificate has expired": client(pki.expired_cert, pki.expired_key),
        "WRONG_VERSION_NUMBER": None,  # plain Kafka bytes on a TLS port
    }
    expected = {f"WARNING brokers.server.listener: Failed authentication with {handshake_from_known_port(port, c)} "
                f"on listener SSL (SSL handshake failed: {reason})" for reason, c in attempts.items()}

    def logged() -> set[str]:
        lines = log.read_text().splitlines()
        return {line.split(" ", 2)[2] for line in lines if "Failed authentication with" in line} & expected

    wait_for(lambda: logged() == expected, TIMEOUT, f"the broker's log lines {sorted(expected)}")
    others = [line for line in log.read_text().splitlines()
              if ("SSL handshake failed" in line and "brokers.server.listener" not in line) or " asyncio: " in line]
    assert others == []  # neither asyncio's "SSL handshake failed" nor its loop exception handler

    topic = "tls-after-refusals"
    create_topic(cluster, pki, topic)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                         **tls(pki, pki.client_cert, pki.client_key)})
    errors: list = []
    producer.produce(topic, b"still served", on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(TIMEOUT) == 0 and errors == [None]
    assert end_offset(cluster, pki, topic) == 1
