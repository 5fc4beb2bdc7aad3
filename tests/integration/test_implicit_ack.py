"""librdkafka acknowledges records implicitly, without an offset, when a Produce response said "possibly
persisted" (here REQUEST_TIMED_OUT, what a leader answers when acks=all outlives the request's timeout)
while a later request of the same partition was in flight and then succeeded: that success proves the
earlier sequences were written (``rd_kafka_handle_idempotent_Produce_success`` -> ``rd_kafka_dr_implicit_ack``
in librdkafka's rdkafka_request.c / rdkafka_broker.c), so the earlier records are reported delivered with
offset RD_KAFKA_OFFSET_INVALID (-1001; confluent-kafka's ``Message.offset()`` is then None). The broker
had answered with offsets; the client never learnt them.

Deterministic: a one-broker cluster advertises a proxy; the proxy turns the broker's answer to the first
Produce into REQUEST_TIMED_OUT and holds it until the second Produce went out. The record is in the log
once, at the offset the broker had answered. This is what the soak checker counts as "ok without offset"
(an implicit acknowledgement, checked by value), not as an anomaly.
"""
from __future__ import annotations

import dataclasses
import logging
import socket
import struct
import threading
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from scripts.local.zookeeper import find_free_base_port
from tests.integration.conditions import wait_for

PRODUCE = 0
TOPIC = "implicit"
TIMEOUT = 30


class FirstProduceTimesOut:
    """A TCP proxy for a broker: every frame passes unchanged, except the response to the first Produce
    request, which is held until a second Produce request has gone out and is then rewritten to
    REQUEST_TIMED_OUT (base offset -1) -- the broker itself answered it with an offset."""

    def __init__(self, port: int):
        self.server = socket.create_server(("127.0.0.1", port))
        self.target_port: int | None = None
        self.produce_requests = 0
        self.second_produce_sent = threading.Event()
        self.rewritten: list[tuple[int, int]] = []  # (error code, base offset) the broker had answered
        self._first_produce: tuple[int, int] | None = None  # (correlation id, version)
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self.target_port))
            requests: dict[int, tuple[int, int]] = {}
            threading.Thread(target=self._requests, args=(client, broker, requests), daemon=True).start()
            threading.Thread(target=self._responses, args=(broker, client, requests), daemon=True).start()

    def _requests(self, source: socket.socket, sink: socket.socket, requests: dict) -> None:
        for payload in _frames(source, sink):
            api_key, version, correlation_id = struct.unpack_from(">hhi", payload)
            requests[correlation_id] = (api_key, version)
            if api_key == PRODUCE:
                with self._lock:
                    self.produce_requests += 1
                    if self.produce_requests == 1:
                        self._first_produce = (correlation_id, version)
            sink.sendall(struct.pack(">i", len(payload)) + payload)
            if api_key == PRODUCE and self.produce_requests == 2:
                self.second_produce_sent.set()

    def _responses(self, source: socket.socket, sink: socket.socket, requests: dict) -> None:
        for payload in _frames(source, sink):
            (correlation_id,) = struct.unpack_from(">i", payload)
            api_key, version = requests.pop(correlation_id, (None, None))
            if api_key == PRODUCE and self._first_produce == (correlation_id, version):
                assert self.second_produce_sent.wait(TIMEOUT), "no second Produce while the first was held"
                sink.sendall(self._timed_out(version, payload))
            else:
                sink.sendall(struct.pack(">i", len(payload)) + payload)

    def _timed_out(self, version: int, payload: bytes) -> bytes:
        correlation_id, body = codec.decode_response(PRODUCE, version, payload)
        topic = body.responses[0]
        answered = topic.partition_responses[0]
        self.rewritten.append((int(answered.error_code), answered.base_offset))
        failed = dataclasses.replace(answered, error_code=codec.error_code(ErrorCode.REQUEST_TIMED_OUT),
                                     base_offset=-1)
        body = dataclasses.replace(body, responses=(dataclasses.replace(topic, partition_responses=(failed,)),))
        return codec.encode_response(PRODUCE, version, correlation_id, body)


def _frames(source: socket.socket, sink: socket.socket):
    """Each frame's payload until either side closes (then both are closed)."""
    try:
        while True:
            prefix = _read(source, 4)
            if prefix is None:
                return
            payload = _read(source, struct.unpack(">i", prefix)[0])
            if payload is None:
                return
            yield payload
    except OSError:
        return
    finally:
        for s in (source, sink):
            try:
                s.close()
            except OSError:
                pass


def _read(sock: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = sock.recv(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_timed_out_batch_followed_by_a_successful_one_is_acknowledged_without_an_offset(make_cluster):
    proxy = FirstProduceTimesOut(find_free_base_port(1))
    proxy_port = proxy.server.getsockname()[1]
    try:
        cluster, _ = make_cluster(1, properties={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"})
        proxy.target_port = cluster.kafka_port(cluster.broker_ids[0])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=TIMEOUT)[TOPIC].result(TIMEOUT)

        lines = Lines()
        rdkafka_log = logging.getLogger(f"rdkafka-{uuid.uuid4()}")
        rdkafka_log.addHandler(lines)
        rdkafka_log.setLevel(logging.DEBUG)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{proxy_port}", "enable.idempotence": True,
                             "acks": "all", "linger.ms": 0, "debug": "eos,msg", "logger": rdkafka_log})
        reports: dict[bytes, tuple] = {}

        def on_delivery(err, msg):
            reports[msg.value()] = (err, msg.offset())

        producer.produce(TOPIC, b"first", partition=0, on_delivery=on_delivery)
        wait_for(lambda: producer.poll(0.05) is not None and proxy.produce_requests >= 1, TIMEOUT,
                 "the first Produce sent")
        producer.produce(TOPIC, b"second", partition=0, on_delivery=on_delivery)  # in flight behind the first
        assert producer.flush(TIMEOUT) == 0

        assert proxy.rewritten == [(0, 0)]  # the broker wrote "first" at offset 0 and said so
        assert proxy.produce_requests == 2  # "first" was never sent again
        assert reports == {b"first": (None, None), b"second": (None, 1)}  # no error, offset unknown
        text = "\n".join(lines.lines)
        assert "Request timed out" in text
        assert "1 message(s) implicitly acked by subsequent batch success" in text

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        read: list[tuple[int, bytes]] = []

        def two_read():
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                read.append((message.offset(), message.value()))
            return len(read) >= 2
        try:
            wait_for(two_read, TIMEOUT, "both records read", interval=0)
        finally:
            consumer.close()
        assert read == [(0, b"first"), (1, b"second")]  # each once, "first" where the broker had said
    finally:
        proxy.close()
