"""TLS on a real KafkaListener in-process (no ZooKeeper; tests/integration/test_kafka_api_local.py's
Broker): the handshake with ``ssl.client.auth=required`` (a trusted client certificate becomes the
connection's principal; none, an untrusted or an expired one is refused before any request is handled,
and logged with the peer and OpenSSL's reason),
a Fetch of a >1 MiB file range over TLS (sendfile would have put plaintext under the TLS stream), and a
broker whose SSL listener has a bad keystore exiting at start-up with the key and the file named."""
from __future__ import annotations

import logging
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from brokers.config import BrokerConfig
from brokers.model import TopicPartition as TP
from brokers.protocol import codec
from brokers.protocol.record import Record, build_batch
from brokers.server.apis import KafkaApis
from brokers.server.listener import SENDFILE_MIN_BYTES, KafkaListener
from brokers.server.tls import listener_contexts, listener_principal_mappers
from tests.certs import make_pki
from tests.integration.conditions import wait_for
from tests.integration.test_kafka_api_local import BASE_TS, TIMEOUT, Broker, fetch_request, read_frames

ALICE = "User:CN=alice,OU=eng,O=zkafka"
ONLY_OPS = "^CN=(.*?),OU=ops,.*$"  # alice is OU=eng: no rule made of this applies to her
CN_OF_ENG = "RULE:^CN=([^,]*),OU=eng,.*$/$1/"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory, pki):
    """The local broker plus an SSL listener (client auth required) on the same KafkaApis; every
    handled request's (api key, principal) is recorded."""
    b = Broker(tmp_path_factory.mktemp("broker"))
    config = BrokerConfig.from_properties({
        "zookeeper.connect": "127.0.0.1:2181", "ssl.keystore.type": "PEM",
        "listeners": "SSL://127.0.0.1:0,MAPPED://127.0.0.1:0,UNMAPPED://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,MAPPED:SSL,UNMAPPED:SSL",
        "listener.name.mapped.ssl.principal.mapping.rules": f"RULE:{ONLY_OPS}/ops-$1/U, {CN_OF_ENG}",
        "listener.name.unmapped.ssl.principal.mapping.rules": f"RULE:{ONLY_OPS}/$1/",
        "ssl.keystore.location": str(pki.server_keystore), "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca), "ssl.client.auth": "required"})
    mappers = listener_principal_mappers(config)
    apis = KafkaApis(b.context)
    b.handled = []

    async def handle(frame, connection):
        b.handled.append((int.from_bytes(frame[:2], "big"), connection.principal, connection.tls))
        return await apis.handle(frame, connection)

    async def start():
        b.ssl_listener, b.mapped, b.unmapped = (
            KafkaListener(handle, "127.0.0.1", 0, listener_name=name, security_protocol="SSL",
                          ssl_context=listener_contexts(config)[name], principal_mapper=mappers[name])
            for name in ("SSL", "MAPPED", "UNMAPPED"))
        for listener in (b.ssl_listener, b.mapped, b.unmapped):
            await listener.start()

    b.call(start())
    yield b
    for listener in (b.ssl_listener, b.mapped, b.unmapped):
        b.call(listener.stop())
    b.stop()


def client(pki, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def api_versions_over(broker, context: ssl.SSLContext, listener=None) -> socket.socket:
    port = (listener or broker.ssl_listener).port
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), TIMEOUT),
                               server_hostname="127.0.0.1")
    sock.sendall(codec.encode_request(18, 0, 7, "tls-test", codec.build(codec.request_class(18, 0))))
    return sock


def test_a_trusted_client_certificate_is_the_principal(broker, pki):
    before = len(broker.handled)
    with api_versions_over(broker, client(pki, pki.client_cert, pki.client_key)) as sock:
        (frame,) = read_frames(sock, 1)
    correlation_id, body = codec.decode_response(18, 0, frame)
    assert correlation_id == 7 and body.error_code == 0
    assert broker.handled[before:] == [(18, ALICE, True)]


@pytest.mark.parametrize("who, reason", [
    ("no certificate", "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    ("untrusted CA", "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate"),
    ("expired", "CERTIFICATE_VERIFY_FAILED: certificate has expired")])
def test_required_client_auth_refuses_before_any_request_is_handled(broker, pki, who, reason, caplog):
    """...and the listener logs the refusal with the peer (Kafka's "Failed authentication with /<ip>")."""
    cert = {"no certificate": (None, None), "untrusted CA": (pki.untrusted_cert, pki.untrusted_key),
            "expired": (pki.expired_cert, pki.expired_key)}[who]
    before = len(broker.handled)
    caplog.set_level(logging.DEBUG, logger="brokers.server.listener")
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError)):
        # TLS 1.3: the client's handshake ends before the server checks its certificate, so the
        # refusal (an alert, then the close) arrives on the first read
        with api_versions_over(broker, client(pki, *cert)) as sock:
            peer = "/%s:%d" % sock.getsockname()[:2]
            read_frames(sock, 1)
    assert broker.handled[before:] == []
    line = f"Failed authentication with {peer} on listener SSL (SSL handshake failed: {reason})"
    wait_for(lambda: any(r.getMessage() == line and r.levelno == logging.WARNING for r in caplog.records), TIMEOUT,
             f"the log line {line!r}")


def test_a_peer_that_disconnects_mid_handshake_is_no_warning_and_the_listener_serves_on(broker, pki, caplog):
    caplog.set_level(logging.DEBUG, logger="brokers.server.listener")
    with socket.create_connection(("127.0.0.1", broker.ssl_listener.port), TIMEOUT) as probe:  # a port probe
        peer = "/%s:%d" % probe.getsockname()[:2]
    wait_for(lambda: any(peer in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records), TIMEOUT,
             "the probe's DEBUG line")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and peer in r.getMessage()]
    with api_versions_over(broker, client(pki, pki.client_cert, pki.client_key)) as sock:
        (frame,) = read_frames(sock, 1)
    assert codec.decode_response(18, 0, frame)[1].error_code == 0


def test_a_fetch_of_more_than_a_mebibyte_over_tls_arrives_whole(broker, pki):
    """A range >= SENDFILE_MIN_BYTES, which a PLAINTEXT connection sends with os.sendfile, is read
    with pread and encrypted on a TLS one: the client gets the log's bytes exactly."""
    broker.call(broker._lead("big-tls", 1))
    partition = broker.replica_manager.partitions[TP("big-tls", 0)]
    chunk = 1 << 18
    for i in range(3 * SENDFILE_MIN_BYTES // chunk):
        partition.log.append_as_leader(build_batch([Record(0, 0, None, bytes([i]) * chunk)], base_timestamp=BASE_TS), 0)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    stored = partition.log.read(0, 1 << 30).records.read()
    assert len(stored) > 2 * SENDFILE_MIN_BYTES
    context = client(pki, pki.client_cert, pki.client_key)
    with context.wrap_socket(socket.create_connection(("127.0.0.1", broker.ssl_listener.port), TIMEOUT),
                             server_hostname="localhost") as sock:
        sock.sendall(codec.encode_request(1, 11, 1, "tls-fetch", fetch_request("big-tls", 0, 0)))
        (frame,) = read_frames(sock, 1)
    correlation_id, body = codec.decode_response(1, 11, frame)
    assert correlation_id == 1
    assert bytes(body.responses[0].partitions[0].records) == stored


def test_mapping_rules_turn_the_certificate_dn_into_the_principal(broker, pki):
    """ssl.principal.mapping.rules, per listener: the first rule that applies names the principal."""
    before = len(broker.handled)
    with api_versions_over(broker, client(pki, pki.client_cert, pki.client_key), broker.mapped) as sock:
        read_frames(sock, 1)
    assert broker.handled[before:] == [(18, "User:alice", True)]


def test_a_certificate_no_mapping_rule_applies_to_is_refused_and_logged(broker, pki, caplog):
    caplog.set_level(logging.DEBUG, logger="brokers.server.listener")
    before = len(broker.handled)
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError)):
        with api_versions_over(broker, client(pki, pki.client_cert, pki.client_key), broker.unmapped) as sock:
            peer = "/%s:%d" % sock.getsockname()[:2]
            read_frames(sock, 1)
    assert broker.handled[before:] == []
    line = (f"Failed authentication with {peer} on listener UNMAPPED (No rules apply to CN=alice,OU=eng,O=zkafka, "
            f"rules [RULE:{ONLY_OPS}/$1/])")
    wait_for(lambda: any(r.getMessage() == line and r.levelno == logging.WARNING for r in caplog.records), TIMEOUT,
             f"the log line {line!r}")


def test_a_bad_mapping_rule_stops_start_up_naming_the_key_and_the_rule(tmp_path, pki):
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\nlisteners=SSL://127.0.0.1:0\n"
                          f"log.dirs={tmp_path / 'logs'}\nssl.keystore.type=PEM\n"
                          f"ssl.keystore.location={pki.server_keystore}\n"
                          "ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/X\n")
    done = subprocess.run([sys.executable, "-m", "brokers", "--config", str(properties)], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2
    assert "ssl.principal.mapping.rules (listener SSL): Invalid rule: `RULE:^CN=(.*)$/$1/X`" in done.stderr


def test_a_bad_keystore_stops_start_up_naming_the_key_and_the_file(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\nlisteners=SSL://127.0.0.1:0\n"
                          f"log.dirs={tmp_path / 'logs'}\nssl.keystore.type=PEM\n"
                          f"ssl.keystore.location={tmp_path / 'missing.pem'}\n")
    done = subprocess.run([sys.executable, "-m", "brokers", "--config", str(properties)], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2
    assert f"ssl.keystore.location (listener SSL): cannot read {tmp_path / 'missing.pem'}" in done.stderr
