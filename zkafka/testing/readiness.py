"""When a zkafka in containers is ready: its Kafka port answers a request, then a produce is acknowledged.

A published port accepts TCP connections before anything listens behind it (Docker's proxy resets them),
and librdkafka backs off for seconds after such resets; so the Kafka port is first asked, over a plain
socket, for ApiVersions (v0: a 10-byte body-less request) until a response frame comes back, then for metadata until it names a
controller and every broker. Then a probe topic is created, one record is produced with ``acks=all`` and acknowledged, and the topic is deleted again
(gone from the metadata) so that the user's cluster starts empty.
"""
from __future__ import annotations

import socket
import struct
import time

from zkafka.testing.conditions import wait_for

PROBE_TOPIC = "_zkafka_readiness"
FAST_RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200}
API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, -1)  # size, api key, version, correlation id, null client id


def answers_api_versions(host: str, port: int, timeout: float = 1.0) -> bool:
    """One ApiVersions v0 round trip to ``host:port`` succeeded."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(API_VERSIONS_V0)
            header = sock.recv(8, socket.MSG_WAITALL)
            return len(header) == 8 and struct.unpack(">ii", header)[1] == 1
    except OSError:
        return False


def bootstrap_addresses(bootstrap_servers: str) -> list[tuple[str, int]]:
    addresses = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


def wait_until_answering(bootstrap_servers: str, timeout: float) -> None:
    for host, port in bootstrap_addresses(bootstrap_servers):
        wait_for(lambda: answers_api_versions(host, port), timeout, f"the Kafka port {host}:{port} to answer", 0.02)


def _wait_for_controller(admin, brokers: int, timeout: float) -> None:
    """Until the metadata names a controller and ``brokers`` brokers: a broker answers requests a moment
    before the controller's first UpdateMetadata reaches it, and librdkafka sends an admin request only to the
    controller its latest metadata named (waiting out the request's timeout when there was none)."""
    def known() -> bool:
        try:
            metadata = admin.list_topics(timeout=1)
        except Exception:  # noqa: BLE001 - KafkaException while the cluster comes up
            return False
        return metadata.controller_id >= 0 and len(metadata.brokers) >= brokers
    wait_for(known, timeout, f"metadata naming a controller and {brokers} broker(s)", 0.02)


def _create_probe(admin, replication_factor: int, timeout: float) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    def created() -> bool:
        future = admin.create_topics([NewTopic(PROBE_TOPIC, 1, replication_factor)], request_timeout=5)[PROBE_TOPIC]
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return True
            return False
        return True
    wait_for(created, timeout, f"topic {PROBE_TOPIC} to be created", 0.05)


def _produce_probe(bootstrap_servers: str, timeout: float) -> None:
    from confluent_kafka import Producer

    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all", **FAST_RECONNECT,
                         "message.timeout.ms": int(timeout * 1000), "topic.metadata.refresh.fast.interval.ms": 20})
    producer.produce(PROBE_TOPIC, b"ready", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(timeout)
    if errors != [None]:
        raise AssertionError(f"the readiness produce was not acknowledged: {errors or 'no answer'}")


def _delete_probe(admin, timeout: float) -> None:
    admin.delete_topics([PROBE_TOPIC], request_timeout=timeout)[PROBE_TOPIC].result()
    wait_for(lambda: PROBE_TOPIC not in admin.list_topics(timeout=timeout).topics, timeout,
             f"topic {PROBE_TOPIC} to be deleted", 0.02)


def wait_for_acknowledged_produce(bootstrap_servers: str, timeout: float = 60, replication_factor: int = 1) -> float:
    """Block until a produce with ``acks=all`` is acknowledged; returns the seconds it took. AssertionError
    (naming the step) after ``timeout`` seconds."""
    from confluent_kafka.admin import AdminClient

    started = time.monotonic()
    wait_until_answering(bootstrap_servers, timeout)
    admin = AdminClient({"bootstrap.servers": bootstrap_servers, **FAST_RECONNECT})
    remaining = max(1.0, timeout - (time.monotonic() - started))
    _wait_for_controller(admin, len(bootstrap_addresses(bootstrap_servers)), remaining)
    _create_probe(admin, replication_factor, remaining)
    _produce_probe(bootstrap_servers, remaining)
    acknowledged = time.monotonic() - started
    _delete_probe(admin, remaining)
    return acknowledged
