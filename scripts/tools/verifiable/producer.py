"""``kafka-verifiable-producer``: Kafka 2.8's ``VerifiableProducer`` (the producer Kafka's system tests drive),
over confluent-kafka (librdkafka).

    kafka-verifiable-producer --topic T --bootstrap-server HOST:PORT [--max-messages N] [--throughput N]
        [--acks 0|1|-1] [--producer.config FILE] [--message-create-time MS] [--value-prefix N]
        [--repeating-keys N]

It sends the values ``"0"``, ``"1"``, ... (``"P.0"``, ... with ``--value-prefix P``) to the topic, keys null or
``--repeating-keys``' (``pacing``), until ``--max-messages`` (-1: until stopped), at most ``--throughput``
records/s, without retries (Kafka's tool sets ``retries=0``; ``--producer.config`` may override it, and
every other setting: Kafka loads the file last). stdout, one JSON event per line (``events``)::

    {"timestamp":...,"name":"startup_complete"}
    {"timestamp":...,"name":"producer_send_success","key":null,"value":"0","topic":"t","partition":2,"offset":0}
    {"timestamp":...,"name":"producer_send_error","topic":"t","key":null,"value":"1","exception":"class ...",
     "message":"..."}
    {"timestamp":...,"name":"shutdown_complete"}
    {"timestamp":...,"name":"tool_data","sent":2,"acked":1,"target_throughput":-1,"avg_throughput":1.5}

One ``producer_send_success`` or ``producer_send_error`` per record sent. After the last record, or on SIGTERM
/ SIGINT, every record in flight is waited for and reported, then ``shutdown_complete`` and ``tool_data``.
Exit codes: 0 after ``--max-messages``, 128 + the signal when stopped by one, 1 for a bad flag or setting
(one line on stderr). Without any argument it prints its help (exit 0), as Kafka's tool does.
"""
from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from scripts.tools.common.client_properties import librdkafka_config
from scripts.tools.verifiable import events, flags
from scripts.tools.verifiable.pacing import CreateTimes, Keys, Throttler, value_of
from scripts.tools.verifiable.runtime import Output, Stopper, now_ms, read_properties, start_client, usage_error

PROG = "kafka-verifiable-producer"
FLUSH_SLICE_S = 0.1


class VerifiableProducer:
    """The send loop; ``on_delivery`` is the producer's delivery callback (one event line per record)."""

    def __init__(self, args: argparse.Namespace, out: Output, stopper: Stopper):
        self.args = args
        self.out = out
        self.stopper = stopper
        self.sent = 0
        self.acked = 0
        self.pending: list[str] = []
        self.producer: Producer | None = None

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        key, value = msg.key(), msg.value()
        key = None if key is None else key.decode()
        value = None if value is None else value.decode()
        if err is None:
            self.acked += 1
            self.pending.append(events.send_success(now_ms(), key, value, msg.topic(), msg.partition(), msg.offset()))
        else:
            self.pending.append(events.send_error(now_ms(), key, value, self.args.topic, err))

    def _serve(self, timeout: float) -> None:
        self.producer.poll(timeout)
        self._write_pending()

    def _write_pending(self) -> None:
        if self.pending:
            lines, self.pending = self.pending, []
            self.out.write(lines)

    def send(self, key: str | None, value: str, timestamp: int | None) -> None:
        """Kafka's ``send``: counted as sent, then queued; a full queue waits (Kafka's producer blocks), a record
        librdkafka refuses at once is a ``producer_send_error``."""
        self.sent += 1
        extra = {} if timestamp is None else {"timestamp": timestamp}
        payload, key_bytes = value.encode(), None if key is None else key.encode()
        while True:
            try:
                self.producer.produce(self.args.topic, payload, key_bytes, **extra)
                return
            except BufferError:
                self._serve(FLUSH_SLICE_S)
            except KafkaException as exc:
                self.pending.append(events.send_error(now_ms(), key, value, self.args.topic, exc))
                return

    def run(self, producer: Producer) -> int:
        self.producer = producer
        args = self.args
        start_ms = now_ms()
        keys, create_times = Keys(args.repeating_keys), CreateTimes(None if args.create_time == -1 else
                                                                     args.create_time, start_ms)
        throttler = Throttler(args.throughput, start_ms, lambda s: self.stopper.wait(s, self._serve),
                              time.monotonic_ns)
        self.out.write([events.startup_complete(now_ms())])
        limit = args.max_messages if args.max_messages >= 0 else None
        index = 0
        while (limit is None or index < limit) and not self.stopper.stopping:
            send_start = now_ms()
            self.send(keys.next(), value_of(index, args.value_prefix), create_times.next(now_ms()))
            self._serve(0)
            if throttler.should_throttle(index, send_start):
                throttler.throttle()
            index += 1
        return self.close(start_ms)

    def close(self, start_ms: int) -> int:
        """Kafka's shutdown hook: every record in flight reported, ``shutdown_complete``, ``tool_data``."""
        while self.producer.flush(FLUSH_SLICE_S) > 0:
            self._write_pending()
        self._write_pending()
        self.out.write([events.shutdown_complete(now_ms())])
        stop_ms = now_ms()
        self.out.write([events.tool_data(stop_ms, self.sent, self.acked, self.args.throughput,
                                         events.average_throughput(self.acked, stop_ms - start_ms))])
        return self.stopper.exit_code()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        flags.producer_parser().print_help()
        return 0
    try:
        args = flags.parse_producer(argv)
        properties = read_properties("--producer.config", args.config_file)
    except flags.UsageError as exc:
        return usage_error(PROG, exc)
    stopper = Stopper()
    tool = VerifiableProducer(args, Output(), stopper)
    config = {**flags.producer_config(args, librdkafka_config(properties)), "on_delivery": tool.on_delivery}
    producer = start_client(PROG, Producer, config, args.bootstrap, properties, "producer")
    if producer is None:
        return 1
    stopper.install()
    return tool.run(producer)


if __name__ == "__main__":
    sys.exit(main())
