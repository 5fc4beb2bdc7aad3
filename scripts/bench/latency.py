"""End-to-end and producer-ack latency at a fixed rate, with confluent-kafka, measured from each
record's *scheduled* send time.

A run precomputes its schedule (``scripts.bench.stats.schedule``); every record carries its scheduled time
(``CLOCK_MONOTONIC`` ns, the same clock in every process of this machine) in the first 8 bytes of
its value. The producer (this process, ``linger.ms=0``) sends each record once its time has come; if
it falls behind it sends late, and the lateness counts. ``max.in.flight.requests.per.connection``
matters here: librdkafka's default (1,000,000) with ``linger.ms=0`` turns every record into its own
ProduceRequest, while a bound (the Java producer's default is 5) lets records that arrive while
requests are in flight share the next one. Latencies:

- ack: delivery callback time - scheduled time (the broker's acknowledgement, acks=all: replicated);
- end to end: the time a consumer (its own process, ``fetch.wait.max.ms`` and
  ``fetch.queue.backoff.ms`` small) got the record from ``poll()`` - scheduled time.

Before the schedule starts one warm-up record (stamp 0) goes through, so that connections, metadata
and the consumer's fetch loop are up; it is not measured.
"""
from __future__ import annotations

import array
import multiprocessing
import time
from collections.abc import Callable
from queue import Empty

from confluent_kafka import Consumer, Producer, TopicPartition

from scripts.bench.stats import WARM_UP_STAMP, latency_summary, read_stamp, schedule, stamped_value

LATENCY_CONSUMER = {"fetch.wait.max.ms": 5, "fetch.queue.backoff.ms": 1, "fetch.min.bytes": 1,
                    "enable.auto.commit": False, "enable.partition.eof": False}
START_DELAY_S = 0.05  # between building the schedule and its first send time
MAX_SLEEP_S = 0.005
STOP_GRACE_S = 0.5  # a consumer stops this long after the producer is done and nothing arrives


class PacedProducer:
    """Sends stamped records on a schedule; remembers (scheduled, acked, ok) per delivery report."""

    def __init__(self, bootstrap: str, topic: str, record_bytes: int, acks: str = "all", partition: int = 0,
                 **settings):
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0,
                                  "enable.idempotence": False, **settings})
        self.topic, self.record_bytes, self.partition = topic, record_bytes, partition
        self.reports: list[tuple[int, int, bool]] = []
        self.max_late_ns = 0  # how far behind its schedule the producer ever sent

    def _delivered(self, err, msg) -> None:
        stamp = read_stamp(msg.value())
        if stamp != WARM_UP_STAMP:
            self.reports.append((stamp, time.monotonic_ns(), err is None))

    def _send(self, stamp: int) -> None:
        value = stamped_value(stamp, self.record_bytes)
        while True:
            try:
                self.producer.produce(self.topic, value, partition=self.partition, on_delivery=self._delivered)
                return
            except BufferError:
                self.producer.poll(0.01)

    def warm_up(self, timeout: float = 30.0) -> None:
        self._send(WARM_UP_STAMP)
        if self.producer.flush(timeout) > 0:
            raise TimeoutError(f"the warm-up record to {self.topic} was not acknowledged within {timeout:.0f} s")

    def run(self, send_times: list[int], keep_going: Callable[[int], bool] | None = None) -> int:
        """Send a record at each time (sleeping in between, serving delivery reports); stop early when
        ``keep_going(now_ns)`` says so. Returns how many were sent."""
        sent = 0
        while sent < len(send_times):
            now = time.monotonic_ns()
            if keep_going is not None and not keep_going(now):
                break
            if sent < len(send_times) and send_times[sent] <= now:
                self.max_late_ns = max(self.max_late_ns, now - send_times[sent])
            while sent < len(send_times) and send_times[sent] <= now:
                self._send(send_times[sent])
                sent += 1
            self.producer.poll(0)
            if sent < len(send_times):
                wait = (send_times[sent] - time.monotonic_ns()) / 1e9
                if wait > 0:
                    time.sleep(min(wait, MAX_SLEEP_S))
        return sent

    def flush(self, timeout: float = 60.0) -> int:
        return self.producer.flush(timeout)

    def ack_latencies(self) -> list[int]:
        return [acked - stamp for stamp, acked, ok in self.reports if ok]

    def failed(self) -> int:
        return sum(1 for _, _, ok in self.reports if not ok)


def _consume_worker(bootstrap: str, topic: str, partition: int, expected: int, stop, queue) -> None:
    """Consumer process: reports "warm" on the warm-up record, then the end-to-end latencies."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-latency-{topic}", **LATENCY_CONSUMER})
    consumer.assign([TopicPartition(topic, partition, 0)])
    latencies = array.array("q")
    warm, stop_seen = False, None
    try:
        while len(latencies) < expected:
            msg = consumer.poll(0.05)
            if stop_seen is None and stop.is_set():
                stop_seen = time.monotonic()
            if msg is None:
                if stop_seen is not None and time.monotonic() - stop_seen > STOP_GRACE_S:
                    break  # the producer is done and nothing more came
                continue
            if msg.error() is not None:
                continue
            received = time.monotonic_ns()
            stamp = read_stamp(msg.value())
            if stamp == WARM_UP_STAMP:
                if not warm:
                    queue.put(("warm", None))
                    warm = True
                continue
            latencies.append(received - stamp)
    finally:
        consumer.close()
        queue.put(("done", latencies.tobytes()))


def _await(queue, kind: str, timeout: float):
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            got, payload = queue.get(timeout=left)
        except Empty:
            break
        if got == kind:
            return payload
    raise TimeoutError(f"latency consumer: no {kind!r} within {timeout:.0f} s")


def run_latency(bootstrap: str, topic: str, rate: int, duration_s: float, record_bytes: int, **producer_settings) -> dict:
    """One fixed-rate run against partition 0 of an existing topic (acks=all; ``producer_settings`` are
    more librdkafka settings, e.g. ``max.in.flight.requests.per.connection``)."""
    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    expected = len(schedule(0, rate, duration_s))
    consumer = ctx.Process(target=_consume_worker, args=(bootstrap, topic, 0, expected, stop, queue), daemon=True)
    consumer.start()
    producer = PacedProducer(bootstrap, topic, record_bytes, **producer_settings)
    try:
        producer.warm_up()
        _await(queue, "warm", 60)
        send_times = schedule(time.monotonic_ns() + int(START_DELAY_S * 1e9), rate, duration_s)
        sent = producer.run(send_times)
        unacked = producer.flush(60)
        stop.set()
        e2e = array.array("q")
        e2e.frombytes(_await(queue, "done", 30))
    finally:
        stop.set()
        consumer.join(10)
        if consumer.is_alive():
            consumer.kill()
    return {"rate": rate, "duration_s": duration_s, "records": expected, "sent": sent,
            "max_send_late_ms": producer.max_late_ns / 1e6, "ack": latency_summary(producer.ack_latencies(), expected),
            "end_to_end": latency_summary(e2e, expected), "failed": producer.failed(), "unacked": unacked}
