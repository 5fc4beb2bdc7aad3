"""A fuzz pass over SASL exchanges against a live SASL_PLAINTEXT broker, over real sockets: whatever a
client sends as SaslHandshake / SaslAuthenticate (junk tokens, mangled PLAIN or SCRAM messages, frames whose
body is not a SaslAuthenticate at all), the connection never becomes authenticated: a Metadata request
sent after it is never answered, the broker closes the connection. The positive control proves the probe
can see an authenticated connection (a correct PLAIN login gets its Metadata answered)."""
from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.local.cluster import running_cluster
from tests.integration.scram_users import add_scram_users

PROPERTIES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";',
    "offsets.topic.replication.factor": "1",
}
METADATA_CORRELATION = 99


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("sasl-fuzz") / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties=PROPERTIES) as c:
        add_scram_users(c, {"alice": "alice-secret"}, "SCRAM-SHA-256")
        add_scram_users(c, {"alice": "alice-secret"}, "SCRAM-SHA-512")
        yield c


def frame(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    payload = struct.pack(">hhih", api_key, version, correlation, 4) + b"fuzz" + body
    return struct.pack(">i", len(payload)) + payload


def handshake(mechanism: str) -> bytes:
    return frame(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism.encode())


def authenticate(correlation: int, token: bytes) -> bytes:
    return frame(36, 1, correlation, struct.pack(">i", len(token)) + token)


METADATA = frame(3, 4, METADATA_CORRELATION, struct.pack(">ib", -1, 0))  # v4: all topics, no auto-creation


def read_frame(sock: socket.socket) -> bytes | None:
    """One response frame, or None when the broker closed the connection."""
    def exactly(n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = sock.recv(n - len(data))
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not chunk:
                return None
            data += chunk
        return data
    size = exactly(4)
    return None if size is None else exactly(struct.unpack(">i", size)[0])


def exchange(cluster, mechanism: str, messages: list[bytes]) -> list[bytes]:
    """Handshake, the messages (each answered or not), then Metadata; every answer until the broker closes."""
    sock = socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10)
    answers = []
    try:
        for message in [handshake(mechanism), *messages, METADATA]:
            try:
                sock.sendall(message)
            except (BrokenPipeError, ConnectionResetError):
                break
            answer = read_frame(sock)
            if answer is None:
                break
            answers.append(answer)
    finally:
        sock.close()
    return answers


def answered_metadata(answers: list[bytes]) -> bool:
    return any(struct.unpack_from(">i", a)[0] == METADATA_CORRELATION for a in answers)


def test_a_correct_login_gets_metadata_answered(cluster):
    answers = exchange(cluster, "PLAIN", [authenticate(2, b"\0alice\0alice-secret")])
    assert answered_metadata(answers)


TOKENS = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda user, password: b"\0" + user + b"\0" + password,
              st.sampled_from([b"alice", b"", b"\xff\xfe", b"alice\0"]), st.binary(max_size=24)),
    st.builds(lambda nonce: b"n,,n=alice,r=" + nonce, st.binary(max_size=40)),
    st.builds(lambda nonce, proof: b"c=biws,r=" + nonce + b",p=" + proof, st.binary(max_size=40),
              st.binary(max_size=60)),
)
MESSAGES = st.one_of(
    st.builds(lambda i, token: authenticate(2 + i, token), st.integers(0, 5), TOKENS),
    st.builds(lambda junk: frame(36, 1, 7, junk), st.binary(max_size=64)),  # not a SaslAuthenticate body
    st.builds(lambda junk: frame(17, 1, 8, junk), st.binary(max_size=64)),  # nor a SaslHandshake one
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       messages=st.lists(MESSAGES, min_size=1, max_size=3))
def test_malformed_exchanges_never_authenticate(cluster, mechanism, messages):
    assert not answered_metadata(exchange(cluster, mechanism, messages))
