"""``kafka-verifiable-consumer``: Kafka 2.8's ``VerifiableConsumer`` (the group consumer Kafka's system tests
drive), over confluent-kafka (librdkafka).

    kafka-verifiable-consumer --topic T --group-id G --bootstrap-server HOST:PORT [--group-instance-id I]
        [--max-messages N] [--session-timeout MS] [--verbose] [--enable-autocommit]
        [--reset-policy earliest|latest|none] [--assignment-strategy JAVA_CLASS] [--consumer.config FILE]

It subscribes to the topic in the group and prints, one JSON event per line (``events``)::

    {"timestamp":...,"name":"startup_complete"}
    {"timestamp":...,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"records_consumed","count":20,"partitions":[{"topic":"t","partition":0,"count":20,
     "minOffset":0,"maxOffset":19}]}
    {"timestamp":...,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":20}],"success":true}
    {"timestamp":...,"name":"partitions_revoked","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"shutdown_complete"}

- ``records_consumed`` after each poll that returned records (``batches``); with ``--verbose`` a
  ``record_data`` line per record before it (key, value, topic, partition, offset).
- Without ``--enable-autocommit``, after each poll the offsets after the records processed are committed
  synchronously and the result is an ``offsets_committed`` (``"success":false`` and ``"error"`` when it failed).
  With it, librdkafka commits in the background and nothing is printed for it, as in Kafka.
- The group's rebalance callbacks, as Kafka's consumer calls them: eager assignors (range, roundrobin) revoke
  every partition at each rebalance (``partitions_revoked``, possibly ``[]``) and then assign the whole new
  assignment; the cooperative sticky assignor assigns only the partitions added (possibly ``[]``) and revokes
  only those taken away. The first assignment has no revocation before it; closing revokes what is assigned.

It stops after ``--max-messages`` records (-1: until stopped) or on SIGTERM / SIGINT: the consumer is closed
(leaving the group, ``partitions_revoked``), then ``shutdown_complete``. Exit codes: 0 after
``--max-messages``, 128 + the signal when stopped by one, 1 for a bad flag or setting (one line on stderr) or
when the consumer failed (``ERROR Error during processing, terminating consumer process: ...`` on stderr,
then the same close; Kafka's tool exits 0 there).
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from scripts.tools.common.client_properties import librdkafka_config
from scripts.tools.verifiable import batches, events, flags
from scripts.tools.verifiable.runtime import Output, Stopper, now_ms, read_properties, start_client, usage_error

PROG = "kafka-verifiable-consumer"
POLL_TIMEOUT_S = 0.1  # how long one poll waits; a stop signal is seen between polls
FATAL_CODES = {KafkaError._AUTO_OFFSET_RESET}  # Kafka's poll throws NoOffsetForPartitionException: fatal


class ConsumerFailed(Exception):
    """An error Kafka's tool would end on (its poll or commit threw)."""


class VerifiableConsumer:
    def __init__(self, args: argparse.Namespace, out: Output, stopper: Stopper, max_poll: int):
        self.args = args
        self.out = out
        self.stopper = stopper
        self.max_poll = max_poll
        self.cooperative = args.assignors == ["cooperative-sticky"]
        self.consumed = 0
        self.closing = False
        self.consumer: Consumer | None = None

    @property
    def finished(self) -> bool:
        return 0 <= self.args.max_messages <= self.consumed

    def on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.out.write([events.partitions_assigned(now_ms(), [(p.topic, p.partition) for p in partitions])])

    def on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Kafka revokes [] only at an eager rebalance; librdkafka also when closing or in a cooperative one.
        if not partitions and (self.closing or self.cooperative):
            return
        self.out.write([events.partitions_revoked(now_ms(), [(p.topic, p.partition) for p in partitions])])

    def poll(self) -> list[Message]:
        """The records of one poll; ConsumerFailed on an error Kafka's poll would throw, other errors on stderr."""
        records = []
        for message in self.consumer.consume(self.max_poll, POLL_TIMEOUT_S):
            error = message.error()
            if error is None:
                records.append(message)
            elif error.fatal() or error.code() in FATAL_CODES:
                raise ConsumerFailed(error)
            elif error.code() != KafkaError._PARTITION_EOF:
                print(f"WARN {events.java_exception_text(error)}", file=sys.stderr, flush=True)
        return records

    def process(self, records: list[Message]) -> None:
        batch = batches.take(records, self.args.max_messages, self.consumed)
        timestamp = now_ms()
        lines = [events.record_data(timestamp, _text(r.key()), _text(r.value()), r.topic(), r.partition(),
                                    r.offset()) for r in batch.records] if self.args.verbose else []
        lines.append(events.records_consumed(timestamp, batch.count, batch.summaries))
        self.consumed += batch.taken
        self.out.write(lines)
        if not self.args.autocommit and batch.offsets:
            self.commit(batch.offsets)

    def commit(self, offsets: list[tuple[str, int, int]]) -> None:
        """Kafka's ``commitSync`` of ``offsets`` and its ``offsets_committed``; a fenced static member is fatal."""
        error = None
        try:
            result = self.consumer.commit(offsets=[TopicPartition(t, p, o) for t, p, o in offsets],
                                          asynchronous=False)
            failed = [tp.error for tp in result or [] if tp.error is not None]
            error = events.error_message(failed[0]) if failed else None
        except KafkaException as exc:
            if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].fatal():
                raise ConsumerFailed(exc.args[0]) from None
            error = events.error_message(exc)
        self.out.write([events.offsets_committed(now_ms(), offsets, error)])

    def run(self, consumer: Consumer) -> int:
        self.consumer = consumer
        failed = False
        self.out.write([events.startup_complete(now_ms())])
        try:
            consumer.subscribe([self.args.topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                               on_lost=self.on_revoke)
            while not self.finished and not self.stopper.stopping:
                records = self.poll()
                if records:
                    self.process(records)
        except (ConsumerFailed, KafkaException) as exc:
            error = exc.args[0] if exc.args else exc
            print(f"ERROR Error during processing, terminating consumer process: {events.java_exception_text(error)}",
                  file=sys.stderr, flush=True)
            failed = True
        finally:
            self.closing = True
            try:
                consumer.close()
            except (KafkaException, RuntimeError) as exc:
                print(f"WARN closing the consumer: {exc}", file=sys.stderr, flush=True)
            self.out.write([events.shutdown_complete(now_ms())])
        return 1 if failed else self.stopper.exit_code()


def _text(data: bytes | None) -> str | None:
    """Kafka's ``StringDeserializer``: UTF-8, malformed bytes replaced."""
    return None if data is None else data.decode("utf-8", errors="replace")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        flags.consumer_parser().print_help()
        return 0
    try:
        args = flags.parse_consumer(argv)
        properties = read_properties("--consumer.config", args.config_file)
        config, max_poll = flags.consumer_config(args, librdkafka_config(properties))
    except flags.UsageError as exc:
        return usage_error(PROG, exc)
    consumer = start_client(PROG, Consumer, config, args.bootstrap, properties, "consumer")
    if consumer is None:
        return 1
    stopper = Stopper()
    stopper.install()
    return VerifiableConsumer(args, Output(), stopper, max_poll).run(consumer)


if __name__ == "__main__":
    sys.exit(main())
