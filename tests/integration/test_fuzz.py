"""Bad input against a live broker: every bad connection is closed, the broker keeps serving
others, and nothing already acknowledged is lost or changed."""
from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.local.cluster import running_cluster

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 4) + b"fuzz"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("fuzz") / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties={"offsets.topic.replication.factor": "1", "default.replication.factor": "1"}) as c:
        yield c


@pytest.fixture(scope="module")
def acked(cluster):
    """Records acknowledged before any fuzzing, to be read back unchanged at the end."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1"})
    results = []
    for i in range(100):
        producer.produce("precious", key=b"k%d" % i, value=b"value-%d" % i,
                         on_delivery=lambda err, msg: results.append((err, msg.offset())))
    assert producer.flush(60) == 0
    assert all(err is None for err, _ in results)
    return sorted(offset for _, offset in results)


def connect(cluster) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", cluster.kafka_port(1)), timeout=10)
    sock.settimeout(10)
    return sock


def closed_by_broker(sock: socket.socket) -> bool:
    """True once the broker closed the connection (reads EOF or a reset), within the socket timeout."""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    finally:
        sock.close()


def still_serving(cluster) -> bool:
    sock = connect(cluster)
    try:
        sock.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        body = _recv_exactly(sock, size)
        return struct.unpack_from(">ih", body) == (7, 0)  # correlation id echoed, no error
    finally:
        sock.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


BAD_FRAMES = {
    "size-below-header": struct.pack(">i", 3) + b"abc",
    "negative-size": struct.pack(">i", -5),
    "over-socket-request-max-bytes": struct.pack(">i", 104857601),
    "two-gib-prefix": struct.pack(">I", 2**31 - 1),
    "unknown-api-key": struct.pack(">i", 12) + struct.pack(">hhih", 999, 0, 1, -1) + b"xx",
    "produce-header-then-junk": struct.pack(">i", 30) + struct.pack(">hhih", 0, 7, 1, -1) + b"\xff" * 20,
    "fetch-header-then-junk": struct.pack(">i", 14) + struct.pack(">hhih", 1, 11, 1, -1) + b"\x00\x01\x02\x03",
    "client-id-longer-than-frame": struct.pack(">i", 10) + struct.pack(">hhih", 3, 4, 1, 500),
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_malformed_frames_close_only_that_connection(cluster, acked, name):
    bystander = connect(cluster)  # a healthy connection that must survive
    sock = connect(cluster)
    sock.sendall(BAD_FRAMES[name])
    assert closed_by_broker(sock), f"{name}: the broker kept the connection open"
    bystander.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
    assert struct.unpack(">i", _recv_exactly(bystander, 4))[0] > 0
    bystander.close()
    assert still_serving(cluster)


def test_each_bad_connection_is_logged_once_with_the_peer(cluster):
    sock = connect(cluster)
    port = sock.getsockname()[1]
    sock.sendall(BAD_FRAMES["negative-size"])
    assert closed_by_broker(sock)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [l for l in cluster.tail(1, 400).splitlines() if f"127.0.0.1:{port}" in l]
        if lines:
            break
        time.sleep(0.05)
    assert len(lines) == 1 and "closing connection" in lines[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.binary(min_size=1, max_size=2048), api_key=st.sampled_from([0, 1, 2, 3, 18, 19, 20, 22, 32]),
       api_version=st.integers(min_value=-1, max_value=20))
def test_random_bytes_after_a_valid_header(cluster, junk, api_key, api_version):
    header = struct.pack(">hhih", api_key, api_version, 99, 4) + b"fuzz"
    payload = header + junk
    sock = connect(cluster)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    sock.settimeout(2)
    try:  # either a well-formed response for the echoed correlation id, or a closed connection
        size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
        assert 4 <= size <= 10_000_000
        assert struct.unpack(">i", _recv_exactly(sock, 4))[0] == 99
    except (ConnectionError, ConnectionResetError, socket.timeout):
        pass
    finally:
        sock.close()


def test_truncated_frames_then_hang_up(cluster):
    for cut in (1, 3, 5, 9, 20):
        sock = connect(cluster)
        frame = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0
        sock.sendall(frame[:cut])
        sock.close()
    assert still_serving(cluster)


def test_nothing_acked_was_lost_or_changed(cluster, acked):
    """Runs last in this module (pytest keeps file order): everything acked before the fuzzing is intact."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "fuzz-check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("precious", 0, 0)])
    seen, deadline = [], time.monotonic() + 60
    while len(seen) < len(acked) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append((msg.offset(), msg.key(), msg.value()))
    consumer.close()
    assert [o for o, _, _ in seen] == acked
    assert [(k, v) for _, k, v in seen] == [(b"k%d" % i, b"value-%d" % i) for i in range(100)]
