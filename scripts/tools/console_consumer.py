"""``kafka-console-consumer``: print a topic's records on stdout, through confluent-kafka (librdkafka).

Kafka's flags::

    kafka-console-consumer --bootstrap-server HOST:PORT --topic T
        [--from-beginning] [--partition P [--offset N|earliest|latest]]
        [--max-messages N] [--timeout-ms MS]
        [--property print.key=true --property print.offset=true --property print.timestamp=true
         --property print.partition=true --property print.headers=true --property print.value=false
         --property key.separator=SEP --property line.separator=SEP --property null.literal=TEXT]
        [--group G] [--consumer-property k=v ...] [--isolation-level read_committed|read_uncommitted]
        [--consumer.config client.properties]

Records are printed by Kafka's ``DefaultMessageFormatter``: the fields timestamp
(``CreateTime:1700000000000``, ``LogAppendTime:...`` or ``NO_TIMESTAMP``), partition (``Partition:0``),
offset (``Offset:7``), headers (``k1:v1,k2:v2`` or ``NO_HEADERS``), key and value, in that order, each
only if asked for (the value by default), separated by ``key.separator`` (a tab) and ended by
``line.separator`` (a newline); keys and values are written as raw bytes, a null one as ``null``.
At exit ``Processed a total of N messages`` goes to stderr.

Partitions are assigned, never subscribed: ``--partition P`` reads that partition from ``--offset``
(default ``latest``; ``--from-beginning`` means ``earliest``); without it every partition of the topic,
from the metadata, is read from the beginning (``--from-beginning``) or from its end. ``--group``
(default ``console-consumer-<random>``, as in Kafka) is only librdkafka's ``group.id``: the consumer
joins no group and commits no offset (``enable.auto.commit`` is off), so a second run does not resume
where the first stopped.

The consumer stops after ``--max-messages`` records, or when ``--timeout-ms`` passes without a record
(Kafka prints ``Error processing message, terminating consumer process`` with a TimeoutException then;
so does this tool, and it still exits 0), or on Ctrl-C / SIGTERM.

``--consumer.config`` is Kafka's client properties file (``security.protocol``, ``sasl.jaas.config``,
PEM ``ssl.*``: ``scripts.tools.common.client_properties``); its ``group.id`` and ``auto.offset.reset`` apply unless
``--group`` / ``--from-beginning`` say otherwise, and ``--consumer-property`` overrides its keys, as in
Kafka. Credentials the brokers refuse: ``Error: ...``, exit 1.

Exit codes: 0 ok, 1 the topic or partition does not exist, the brokers cannot be reached or a fatal
consumer error, 2 bad flags.
"""
from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from typing import BinaryIO

from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME,
                             Consumer, KafkaError, KafkaException, Message, TopicPartition)

from scripts.tools.common.errors import silence_stdout
from scripts.tools.common import client_properties
from scripts.tools.common.key_values import key_values

FORMATTER_DEFAULTS = {"print.timestamp": "false", "print.partition": "false", "print.offset": "false",
                      "print.headers": "false", "print.key": "false", "print.value": "true",
                      "key.separator": "\t", "line.separator": "\n", "headers.separator": ",",
                      "headers.key.separator": ":", "null.literal": "null"}
METADATA_TIMEOUT_S = 30.0
POLL_S = 0.2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-console-consumer",
                                     description="Print the records of a topic on stdout.")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]",
                        help="the brokers to connect to")
    parser.add_argument("--topic", required=True, help="the topic to consume")
    parser.add_argument("--partition", type=int, metavar="P", help="read only this partition")
    parser.add_argument("--offset", metavar="N|earliest|latest",
                        help="where to start in --partition (default latest)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset rather than the latest")
    parser.add_argument("--max-messages", type=int, metavar="N", help="exit after N records")
    parser.add_argument("--timeout-ms", type=int, metavar="MS", help="exit when no record arrives for MS ms")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="formatter properties: " + ", ".join(FORMATTER_DEFAULTS))
    parser.add_argument("--group", metavar="G", help="the consumer's group.id (no offsets are committed yet)")
    parser.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a consumer (librdkafka) config property")
    parser.add_argument("--consumer.config", dest="consumer_config", metavar="config file",
                        help="consumer config properties file (--consumer-property overrides it)")
    parser.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"),
                        help="isolation.level")
    return parser


def start_offset(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Kafka's checks and meaning of --partition / --offset / --from-beginning."""
    if args.partition is None:
        if args.offset is not None:
            parser.error("The partition is required when offset is specified.")
        return OFFSET_BEGINNING if args.from_beginning else OFFSET_END
    if args.partition < 0:
        parser.error(f"--partition must be >= 0, got {args.partition}")
    if args.offset is not None and args.from_beginning:
        parser.error("Options from-beginning and offset cannot be specified together.")
    offset = (args.offset or ("earliest" if args.from_beginning else "latest")).lower()
    if offset == "earliest":
        return OFFSET_BEGINNING
    if offset == "latest":
        return OFFSET_END
    if not offset.isdigit():
        parser.error(f"The provided offset value '{args.offset}' is incorrect. "
                     "Valid values are 'earliest', 'latest', or a non-negative long.")
    return int(offset)


class MessageFormatter:
    """Kafka's ``DefaultMessageFormatter``: timestamp, partition, offset, headers, key, value."""

    def __init__(self, props: dict[str, str]):
        self.flags = [props[f"print.{field}"].strip().lower() == "true"
                      for field in ("timestamp", "partition", "offset", "headers", "key", "value")]
        self.separator = props["key.separator"].encode()
        self.line_separator = props["line.separator"].encode()
        self.headers_separator = props["headers.separator"].encode()
        self.headers_key_separator = props["headers.key.separator"].encode()
        self.null = props["null.literal"].encode()

    def format(self, msg: Message) -> bytes:
        fields = [self._timestamp(msg), b"Partition:%d" % msg.partition(), b"Offset:%d" % msg.offset(),
                  self._headers(msg), self._nullable(msg.key()), self._nullable(msg.value())]
        chosen = [value for value, wanted in zip(fields, self.flags) if wanted]
        return self.separator.join(chosen) + self.line_separator if chosen else b""

    @staticmethod
    def _timestamp(msg: Message) -> bytes:
        kind, ts = msg.timestamp()
        if kind == TIMESTAMP_CREATE_TIME:
            return b"CreateTime:%d" % ts
        if kind == TIMESTAMP_LOG_APPEND_TIME:
            return b"LogAppendTime:%d" % ts
        return b"NO_TIMESTAMP"

    def _headers(self, msg: Message) -> bytes:
        headers = msg.headers()
        if not headers:
            return b"NO_HEADERS"
        return self.headers_separator.join(key.encode() + self.headers_key_separator + self._nullable(value)
                                           for key, value in headers)

    def _nullable(self, value: bytes | str | None) -> bytes:
        if value is None:
            return self.null
        return value.encode() if isinstance(value, str) else value


def formatter_properties(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, str]:
    props = key_values(parser, "--property", items)
    unknown = sorted(set(props) - set(FORMATTER_DEFAULTS))
    if unknown:
        parser.error(f"unknown --property {unknown[0]!r} (known: {', '.join(FORMATTER_DEFAULTS)})")
    for key, value in props.items():
        if key.startswith("print.") and value.strip().lower() not in ("true", "false"):
            parser.error(f"--property {key} takes true or false, got {value!r}")
    return {**FORMATTER_DEFAULTS, **props}


class TopicError(Exception):
    pass


def partitions_of(consumer: Consumer, topic: str, only: int | None) -> list[int]:
    metadata = consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
    if metadata is None or metadata.error is not None and metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        raise TopicError(f"topic {topic!r} does not exist")
    if metadata.error is not None:
        raise TopicError(f"topic {topic!r}: {metadata.error.name()}: {metadata.error.str()}")
    partitions = sorted(metadata.partitions)
    if only is None:
        return partitions
    if only not in partitions:
        raise TopicError(f"partition {only} of topic {topic!r} does not exist (it has {len(partitions)})")
    return [only]


def consume(consumer: Consumer, topic: str, partition: int | None, offset: int, formatter: MessageFormatter,
            out: BinaryIO, max_messages: int | None, timeout_ms: int | None) -> int:
    """Print records until a limit is reached; returns the exit code. Always reports the count."""
    count, code = 0, 0
    stop = []
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        consumer.assign([TopicPartition(topic, p, offset) for p in partitions_of(consumer, topic, partition)])
        last = time.monotonic()
        while not stop and (max_messages is None or count < max_messages):
            msg = consumer.poll(POLL_S)
            if msg is None:
                if timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                    print("ERROR Error processing message, terminating consumer process: TimeoutException: "
                          f"no record within --timeout-ms {timeout_ms}", file=sys.stderr)
                    break
                continue
            if msg.error() is not None:
                err = msg.error()
                print(f"{'ERROR' if err.fatal() else 'WARN'} {err.name()}: {err.str()}", file=sys.stderr)
                if err.fatal():
                    code = 1
                    break
                continue
            out.write(formatter.format(msg))
            out.flush()
            count += 1
            last = time.monotonic()
    except TopicError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        code = 1
    except KafkaException as exc:
        err = exc.args[0]
        print(f"Error: {err.name()}: {err.str()}" if isinstance(err, KafkaError) else f"Error: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:  # the reader went away (| head): stop quietly, and keep Python's exit flush quiet
        silence_stdout()
    finally:
        signal.signal(signal.SIGTERM, previous)
        consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    offset = start_offset(parser, args)
    formatter = MessageFormatter(formatter_properties(parser, args.property))
    for flag, value in (("--max-messages", args.max_messages), ("--timeout-ms", args.timeout_ms)):
        if value is not None and value < 0:
            parser.error(f"{flag} must be >= 0, got {value}")
    file = client_properties.parse_flag(parser, "--consumer.config", args.consumer_config)
    config = {**client_properties.client_config(args.bootstrap_server, file),
              "group.id": args.group or file.get("group.id") or f"console-consumer-{random.randrange(100000)}",
              "auto.offset.reset": "earliest" if args.from_beginning else file.get("auto.offset.reset", "latest")}
    if args.isolation_level:
        config["isolation.level"] = args.isolation_level
    config.update(key_values(parser, "--consumer-property", args.consumer_property))
    config["enable.auto.commit"] = "false"  # assigned partitions, no group membership: nothing is committed
    consumer = client_properties.console_client(parser, Consumer, args.bootstrap_server, config, "consumer")  # file + flags
    if consumer is None:
        return 1
    return consume(consumer, args.topic, args.partition, offset, formatter, sys.stdout.buffer,
                   args.max_messages, args.timeout_ms)


if __name__ == "__main__":
    sys.exit(main())
