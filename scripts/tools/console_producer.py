"""``kafka-console-producer``: one record per line of stdin, through confluent-kafka (librdkafka).

Kafka's flags::

    kafka-console-producer --bootstrap-server HOST:PORT --topic T
        [--property parse.key=true --property key.separator=:]  [--property ignore.error=true]
        [--property parse.headers=true] [--property null.marker=NULL]
        [--compression-codec [none|gzip|snappy|lz4|zstd]]  (the flag alone means gzip, as in Kafka)
        [--request-required-acks 0|1|-1|all] (default -1)  [--sync]  [--timeout LINGER_MS]
        [--request-timeout-ms MS] [--message-send-max-retries N] [--producer-property k=v ...]
        [--producer.config client.properties]

Lines are read as Kafka's ``LineMessageReader`` reads them: the line ending is dropped, an empty line
is a record with an empty value. With ``parse.key=true`` the key is what precedes the first
``key.separator`` (default a tab) and the value what follows it; a line without the separator is an
error, ``No key separator found on line number N: 'line'``, unless ``ignore.error=true`` (then the
whole line is the value and the key is null). With ``parse.headers=true`` a line starts with
``k1:v1,k2:v2`` and ``headers.delimiter`` (a tab), before the key; ``headers.separator`` (``,``) and
``headers.key.separator`` (``:``) can be changed. A key, value or header value equal to
``null.marker`` is null.

``--producer-property`` takes librdkafka's property names (most are Kafka's: ``linger.ms``,
``batch.size``, ``enable.idempotence``, ``client.id``, ...); an unknown one is a usage error.
``--producer.config`` is Kafka's client properties file (``security.protocol``, ``sasl.jaas.config``,
PEM ``ssl.*``: ``scripts.tools.common.client_properties``); as in Kafka, the tool's flags and then
``--producer-property`` override its keys. Credentials the brokers refuse: ``Error: ...``, exit 1.
``--sync`` waits for each record before reading the next line. At end of input every record is
waited for; a record that fails is reported on stderr like Kafka's ``ErrorLoggingCallback``
(``ERROR Error when sending message to topic T with key: 3 bytes, value: 5 bytes with error: ...``).

Exit codes: 0 every record delivered, 1 a record failed or a line was malformed (records read before
it are still sent), 2 bad flags.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import BinaryIO

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from scripts.tools.common import client_properties
from scripts.tools.common.key_values import key_values

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
READER_DEFAULTS = {"parse.key": "false", "key.separator": "\t", "ignore.error": "false", "null.marker": "",
                   "parse.headers": "false", "headers.delimiter": "\t", "headers.separator": ",",
                   "headers.key.separator": ":"}
BOOLEAN_PROPERTIES = ("parse.key", "parse.headers", "ignore.error")


Headers = list[tuple[str, bytes | None]]
Record = tuple[Headers | None, bytes | None, bytes | None]


class LineError(ValueError):
    """A line the reader cannot turn into a record (Kafka's KafkaException from LineMessageReader)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-console-producer",
                                     description="Read lines from stdin and send each as a record to a topic.")
    parser.add_argument("--bootstrap-server", "--broker-list", dest="bootstrap_server", required=True,
                        metavar="HOST:PORT[,HOST:PORT]", help="the brokers to connect to")
    parser.add_argument("--topic", required=True, help="the topic to produce to")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="line reader properties: " + ", ".join(READER_DEFAULTS))
    parser.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a producer (librdkafka) config property")
    parser.add_argument("--producer.config", dest="producer_config", metavar="config file",
                        help="producer config properties file (--producer-property overrides it)")
    parser.add_argument("--compression-codec", nargs="?", const="gzip", default="none", choices=CODECS,
                        help="compression for the record batches (the flag alone: gzip)")
    parser.add_argument("--request-required-acks", default="-1", choices=("0", "1", "-1", "all"),
                        help="acknowledgements the leader waits for (default -1, all in-sync replicas)")
    parser.add_argument("--sync", action="store_true", help="send each record synchronously")
    parser.add_argument("--timeout", type=int, metavar="MS", help="linger.ms: how long a batch waits for more records")
    parser.add_argument("--request-timeout-ms", type=int, metavar="MS", help="request.timeout.ms")
    parser.add_argument("--message-send-max-retries", type=int, metavar="N", help="retries")
    return parser


def reader_properties(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, str]:
    props = key_values(parser, "--property", items)
    unknown = sorted(set(props) - set(READER_DEFAULTS))
    if unknown:
        parser.error(f"unknown --property {unknown[0]!r} (known: {', '.join(READER_DEFAULTS)})")
    for key in BOOLEAN_PROPERTIES:
        if props.get(key, "false").strip().lower() not in ("true", "false"):
            parser.error(f"--property {key} takes true or false, got {props[key]!r}")
    for key in ("key.separator", "headers.delimiter", "headers.separator", "headers.key.separator"):
        if key in props and not props[key]:
            parser.error(f"--property {key} may not be empty")
    return {**READER_DEFAULTS, **props}


class LineReader:
    """Kafka's ``LineMessageReader``: one line -> (headers, key, value), bytes in and out."""

    def __init__(self, props: dict[str, str]):
        def flag(key: str) -> bool:
            return props[key].strip().lower() == "true"

        self.parse_key, self.parse_headers, self.ignore_error = (flag(k) for k in BOOLEAN_PROPERTIES)
        self.key_separator = props["key.separator"].encode()
        self.headers_delimiter = props["headers.delimiter"].encode()
        self.headers_separator = props["headers.separator"].encode()
        self.headers_key_separator = props["headers.key.separator"].encode()
        self.null_marker = props["null.marker"].encode() or None

    def records(self, stream: BinaryIO) -> Iterator[Record]:
        for number, raw in enumerate(stream, start=1):
            yield self.parse(raw.rstrip(b"\n").rstrip(b"\r"), number)

    def parse(self, line: bytes, number: int) -> Record:
        """(headers, key, value) of one line without its line ending; LineError if it is malformed."""
        rest, headers = line, None
        if self.parse_headers:
            found, rest = self._split(rest, self.headers_delimiter, "headers delimiter", line, number)
            headers = None if found is None else self._headers(found, number)
        key = None
        if self.parse_key:
            key, rest = self._split(rest, self.key_separator, "key separator", line, number)
        return headers, self._nullable(key), self._nullable(rest)

    def _split(self, text: bytes, separator: bytes, name: str, line: bytes, number: int) -> tuple[bytes | None, bytes]:
        index = text.find(separator)
        if index < 0:
            if self.ignore_error:
                return None, text
            raise LineError(f"No {name} found on line number {number}: '{line.decode(errors='replace')}'")
        return text[:index], text[index + len(separator):]

    def _headers(self, text: bytes, number: int) -> Headers:
        headers = []
        for pair in text.split(self.headers_separator):
            key, sep, value = pair.partition(self.headers_key_separator)
            if not sep:
                if not self.ignore_error:
                    raise LineError(f"No header key separator found in pair '{pair.decode(errors='replace')}' "
                                    f"on line number {number}")
                headers.append((pair.decode(errors="replace"), None))
                continue
            if self.null_marker is not None and key == self.null_marker:
                raise LineError(f"Header keys should not be equal to the null marker "
                                f"'{self.null_marker.decode()}' as they can't be null")
            headers.append((key.decode(errors="replace"), self._nullable(value)))
        return headers

    def _nullable(self, value: bytes | None) -> bytes | None:
        return None if value is None or (self.null_marker is not None and value == self.null_marker) else value


def _size(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def _report(topic: str, key: bytes | None, value: bytes | None, err: KafkaError) -> None:
    """Kafka's ErrorLoggingCallback line."""
    print(f"ERROR Error when sending message to topic {topic} with key: {_size(key)}, value: {_size(value)} "
          f"with error: {err.name()}: {err.str()}", file=sys.stderr)


def produce(producer: Producer, topic: str, reader: LineReader, stream: BinaryIO, sync: bool) -> int:
    """Send every line of ``stream``; the number of records that failed (a malformed line counts one)."""
    failed = 0

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal failed
        if err is not None:
            failed += 1
            _report(msg.topic(), msg.key(), msg.value(), err)

    try:
        for headers, key, value in reader.records(stream):
            while True:
                try:
                    producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered)
                    break
                except BufferError:  # the local queue is full: serve callbacks, then retry
                    producer.poll(0.1)
                except KafkaException as exc:  # refused before sending (e.g. MSG_SIZE_TOO_LARGE)
                    _report(topic, key, value, exc.args[0])
                    failed += 1
                    break
            producer.poll(0)
            if sync:
                _flush(producer)
    except LineError as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        failed += 1
    finally:
        _flush(producer)
    return failed


def _flush(producer: Producer) -> None:
    # In short steps so that Ctrl-C is seen; message.timeout.ms bounds how long a record can wait.
    while producer.flush(0.5) > 0:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    props = reader_properties(parser, args.property)
    file = client_properties.parse_flag(parser, "--producer.config", args.producer_config)
    config = {**client_properties.client_config(args.bootstrap_server, file),
              "compression.type": args.compression_codec, "acks": args.request_required_acks}
    for key, value in (("linger.ms", args.timeout), ("request.timeout.ms", args.request_timeout_ms),
                       ("retries", args.message_send_max_retries)):
        if value is not None:
            config[key] = str(value)
    config.update(key_values(parser, "--producer-property", args.producer_property))
    producer = client_properties.console_client(parser, Producer, args.bootstrap_server, config, "producer")  # file + flags
    if producer is None:
        return 1
    try:
        failed = produce(producer, args.topic, LineReader(props), sys.stdin.buffer, args.sync)
    except KeyboardInterrupt:
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
