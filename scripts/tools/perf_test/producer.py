"""``kafka-producer-perf-test``: Kafka 2.8's ``ProducerPerformance`` over confluent-kafka (librdkafka).

    kafka-producer-perf-test --topic T --num-records N --record-size B --throughput -1 \\
        --producer-props bootstrap.servers=HOST:PORT acks=all [--producer.config FILE] [--print-metrics]

Output (stdout), Kafka's lines exactly (``producer_stats``): a window line every 5 s while records
complete, then the total once every record completed::

    1000000 records sent, 812347.684809 records/sec (77.47 MB/sec), 161.08 ms avg latency, 329.32 ms max latency, 157 ms 50th, 301 ms 95th, 320 ms 99th, 327 ms 99.9th.

With ``--payload-file`` Kafka's two lines come first (``Reading payloads from: /abs/path``, ``Number of
messages read: N``); ``--print-metrics`` adds librdkafka's statistics in Kafka's metrics table
(``formats.metrics_table``). A record that fails is one line on stderr (Kafka's exception name and
message) and still counts, as in Kafka; the exit code is then 1 (Kafka's is 0).

The hot path does as little per record in Python as confluent-kafka allows: records go out ``CHUNK`` at a
time with ``produce_batch`` (reused message dicts), a delivery report (confluent-kafka calls back once per
record) only appends librdkafka's own latency (``Message.latency()``, from the send to the
acknowledgement) to a list, and the statistics fold those lists in bulk (``Stats.add``). ``--throughput`` limits each chunk to what the schedule allows (``Throttle``) and
serves delivery reports while it waits. With ``--transaction-duration-ms`` > 0 the records go in
transactions of that age (``--transactional-id``), committed between chunks.

Exit codes: 0 every record delivered, 1 bad flags (one line: ``producer-performance: error: ...``, as
Kafka's argparse4j prints it, without the usage), refused credentials or settings, or failed records.
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Producer

from scripts.tools.common import client_properties
from scripts.tools.common.errors import java_exception, quiet_on_broken_pipe
from scripts.tools.perf_test import formats, producer_flags, settings
from scripts.tools.perf_test.producer_flags import PROG, ProducerOptions, UsageError
from scripts.tools.perf_test.producer_stats import Stats, Throttle

CHUNK = 2000  # records per produce_batch
STATISTICS_INTERVAL_MS = 500  # librdkafka's statistics, with --print-metrics


def _now_ms() -> float:
    return time.monotonic() * 1000.0


def read_payloads(options: ProducerOptions) -> list[bytes] | None:
    """Kafka's ``--payload-file`` reading, with its two lines on stdout; None with ``--record-size``."""
    if options.payload_file is None:
        return None
    path = Path(options.payload_file)
    print(f"Reading payloads from: {path.absolute()}")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        text = ""
    if not text:
        raise UsageError("File does not exist or empty file provided.")
    payloads = producer_flags.split_payloads(text, options.payload_delimiter)
    print(f"Number of messages read: {len(payloads)}")
    if not payloads:
        raise UsageError(f"no payload in {path} between the delimiters {options.payload_delimiter!r}")
    return payloads


class Run:
    """One test: the producer, the delivery reports as they come, the statistics."""

    def __init__(self, producer: Producer, options: ProducerOptions, payloads: list[bytes] | None):
        self.producer, self.options, self.payloads = producer, options, payloads
        self.latencies: list[float] = []
        self.sizes: list[int] = []
        self.errors: list[KafkaError] = []
        self.failed = 0
        self.random = random.Random(0)
        value = bytes(self.random.choices(range(65, 91), k=options.record_size or 0))  # A-Z, as Kafka's
        self.fixed = [{"value": value} for _ in range(CHUNK)]
        self.delivered = self._delivery_callback()
        self.stats = Stats(options.num_records, _now_ms())

    def _delivery_callback(self):
        """The delivery report callback: per record only an append of librdkafka's latency (and, with payloads
        of several sizes, of the size), names bound once."""
        append, size, failed = self.latencies.append, self.sizes.append, self._failed

        def delivered(err: KafkaError | None, msg) -> None:
            if err is None:
                append(msg.latency())
            else:
                failed(err, msg.latency())

        def delivered_sized(err: KafkaError | None, msg) -> None:
            size(len(msg))
            if err is None:
                append(msg.latency())
            else:
                failed(err, msg.latency())

        return delivered if self.payloads is None else delivered_sized

    def _failed(self, err: KafkaError, latency: float | None) -> None:
        self.errors.append(err)
        self.latencies.append(latency or 0.0)

    def fold(self) -> None:
        """The delivery reports since the last fold into the statistics (a window line when one is due)."""
        for err in self.errors:
            print(java_exception(err), file=sys.stderr)
        self.failed += len(self.errors)
        self.errors.clear()
        if not self.latencies:
            return
        nbytes = sum(self.sizes) if self.payloads is not None else len(self.latencies) * (self.options.record_size or 0)
        line = self.stats.add(self.latencies, nbytes, _now_ms())
        self.latencies.clear()
        self.sizes.clear()
        if line is not None:
            print(line, flush=True)

    def _messages(self, count: int) -> list[dict]:
        if self.payloads is None:
            return self.fixed if count == CHUNK else self.fixed[:count]
        return [{"value": value} for value in self.random.choices(self.payloads, k=count)]

    def _send(self, count: int) -> int:
        """Queue ``count`` records; how many were queued or failed at once (the rest found the queue full)."""
        messages = self._messages(count)
        queued = self.producer.produce_batch(self.options.topic, messages, on_delivery=self.delivered)
        if queued == count:
            self.producer.poll(0)
            return count
        done = queued
        for message in messages:
            err = message.pop("_error", None)
            if err is not None and err.code() != KafkaError._QUEUE_FULL:  # refused at once: it completes failed
                self._failed(err, 0.0)
                self.sizes.append(len(message.get("value") or b""))
                done += 1
        self.producer.poll(0.005)  # the queue is full: serve delivery reports, then go on
        return done

    def produce(self) -> None:
        producer, options = self.producer, self.options
        throttle = Throttle(options.throughput, time.monotonic())
        sent, transaction_start = 0, None
        while sent < options.num_records:
            allowed = throttle.allowed(sent, time.monotonic())
            if allowed == 0:
                producer.poll(min(0.1, max(0.001, throttle.wait_s(sent, time.monotonic()))))
                self.fold()
                continue
            if options.transactions and transaction_start is None:
                producer.begin_transaction()
                transaction_start = _now_ms()
            sent += self._send(min(CHUNK, options.num_records - sent, allowed))
            if transaction_start is not None and _now_ms() - transaction_start >= options.transaction_duration_ms:
                producer.commit_transaction()
                transaction_start = None
            self.fold()
        if transaction_start is not None:
            producer.commit_transaction()
        while producer.flush(0.1) > 0:
            self.fold()
        self.fold()


def _wait_for_statistics(producer: Producer, latest: list[str]) -> dict:
    """librdkafka's next statistics document after the last record (its previous one if none comes)."""
    seen = len(latest)
    deadline = time.monotonic() + 3 * STATISTICS_INTERVAL_MS / 1000.0
    while len(latest) == seen and time.monotonic() < deadline:
        producer.poll(0.05)
    return json.loads(latest[-1]) if latest else {}


def _configure(options: ProducerOptions) -> dict[str, str]:
    file_props = client_properties.from_flag("--producer.config", options.producer_config)
    return settings.producer_config(file_props, options.producer_props, options.transactional_id)


def _start(config: dict[str, str]) -> Producer | None:
    """The producer, once the brokers took the credentials; None after the one-line error."""
    try:
        client_properties.check_login(config["bootstrap.servers"], config)
        return Producer(config)
    except (client_properties.LoginError, client_properties.ClientPropertiesError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
    except KafkaException as exc:  # librdkafka checks every setting here
        print(f"Error: invalid producer config: {exc.args[0].str() if exc.args else exc}", file=sys.stderr)
    return None


def run_tool(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        producer_flags.build_parser().print_help()
        return 0
    try:
        options = producer_flags.parse(argv)
        payloads = read_payloads(options)  # Kafka reads them before the properties
        config = _configure(options)
    except (UsageError, client_properties.ClientPropertiesError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    statistics: list[str] = []
    if options.print_metrics:
        config.update({"statistics.interval.ms": str(STATISTICS_INTERVAL_MS), "stats_cb": statistics.append})
    producer = _start(config)
    if producer is None:
        return 1
    try:
        if options.transactions:
            producer.init_transactions()
        run = Run(producer, options, payloads)
        run.produce()
    except KafkaException as exc:
        print(f"Error: {java_exception(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(run.stats.total(_now_ms()))
    if options.print_metrics:
        table = formats.metrics_table(formats.metrics_from_statistics(_wait_for_statistics(producer, statistics),
                                                                      "producer"))
        print("\n".join(table))
    return 1 if run.failed else 0


def main(argv: list[str] | None = None) -> int:
    return quiet_on_broken_pipe(run_tool, argv)


if __name__ == "__main__":
    sys.exit(main())
