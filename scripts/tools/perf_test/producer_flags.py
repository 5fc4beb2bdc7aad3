"""``kafka-producer-perf-test``'s flags (pure): Kafka 2.8's ``ProducerPerformance`` parser (argparse4j, whose
messages Python's argparse shares), its checks, the payload file and the producer's settings.

    kafka-producer-perf-test --topic TOPIC --num-records N (--record-size BYTES | --payload-file FILE
        [--payload-delimiter REGEX]) --throughput RECORDS_PER_S (-1: no throttle)
        (--producer-props K=V [K=V ...] | --producer.config FILE) [--print-metrics]
        [--transactional-id ID] [--transaction-duration-ms MS]

A problem is a ``UsageError``: the tool prints ``producer-performance: error: <message>`` (Kafka's prog
name), one line, and exits 1 as Kafka does. Beyond Kafka: ``--num-records`` below 1, a negative
``--record-size`` and ``--throughput 0`` (Kafka crashes on the first two, and hangs forever on the third)
are errors; a ``--producer-props`` value may contain ``=`` (``sasl.jaas.config``).

The producer's settings are made from these options by ``settings.producer_config``.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

PROG = "producer-performance"
DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")


class UsageError(ValueError):
    """Bad flags: one line, exit 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage too and exit 2
        raise UsageError(message)


def _java_number(kind: str, bits: int):
    def convert(text: str) -> int:
        value = int(text) if _JAVA_INT.match(text) else None
        if value is None or not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise argparse.ArgumentTypeError(f"could not convert '{text}' to {kind} (For input string: \"{text}\")")
        return value
    convert.__name__ = kind
    return convert


java_long, java_int = _java_number("Long", 64), _java_number("Integer", 32)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="This tool is used to verify the producer performance.")
    payload = parser.add_mutually_exclusive_group(required=True)
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="produce messages to this topic")
    parser.add_argument("--num-records", required=True, type=java_long, metavar="NUM-RECORDS",
                        help="number of messages to produce")
    payload.add_argument("--record-size", type=java_int, metavar="RECORD-SIZE",
                         help="message size in bytes. Note that you must provide exactly one of --record-size or "
                              "--payload-file.")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="file to read the message payloads from (UTF-8 text); a payload is picked at random "
                              "for each message. Note that you must provide exactly one of --record-size or "
                              "--payload-file.")
    parser.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                        help="delimiter (a regular expression) between the payloads of --payload-file "
                             "(default: new line)")
    parser.add_argument("--throughput", required=True, type=java_int, metavar="THROUGHPUT",
                        help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set "
                             "this to -1 to disable throttling.")
    parser.add_argument("--producer-props", nargs="+", action="extend", metavar="PROP-NAME=PROP-VALUE",
                        help="kafka producer related configuration properties like bootstrap.servers,client.id "
                             "etc. These configs take precedence over those passed via --producer.config.")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                        help="producer config properties file.")
    parser.add_argument("--print-metrics", action="store_true", help="print out metrics at the end of the test.")
    parser.add_argument("--transactional-id", default=DEFAULT_TRANSACTIONAL_ID, metavar="TRANSACTIONAL-ID",
                        help="The transactionalId to use if transaction-duration-ms is > 0.")
    parser.add_argument("--transaction-duration-ms", type=java_long, default=0, metavar="TRANSACTION-DURATION",
                        help="The max age of each transaction. The commitTransaction will be called after this "
                             "time has elapsed. Transactions are only enabled if this value is positive.")
    return parser


@dataclass(frozen=True)
class ProducerOptions:
    topic: str
    num_records: int
    record_size: int | None
    payload_file: str | None
    payload_delimiter: str
    throughput: int
    producer_props: dict[str, str]
    producer_config: str | None
    print_metrics: bool
    transactional_id: str | None  # None: no transactions
    transaction_duration_ms: int = 0

    @property
    def transactions(self) -> bool:
        return self.transactional_id is not None


def property_pairs(items: list[str]) -> dict[str, str]:
    """``--producer-props`` as a dict; Kafka's ``Invalid property: X`` for an item without ``KEY=``."""
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"Invalid property: {item}")
        props[key] = value
    return props


def parse(argv: list[str]) -> ProducerOptions:
    """The options of ``argv``; UsageError with the one-line message for anything Kafka refuses."""
    args = build_parser().parse_args(argv)
    if args.producer_props is None and args.producer_config is None:
        raise UsageError("Either --producer-props or --producer.config must be specified.")
    if args.num_records < 1:
        raise UsageError(f"argument --num-records: must be at least 1, not {args.num_records}")
    if args.record_size is not None and args.record_size < 0:
        raise UsageError(f"argument --record-size: must not be negative, not {args.record_size}")
    if args.throughput == 0:
        raise UsageError("argument --throughput: 0 would never send a second record (use -1 for no throttle)")
    try:
        re.compile(delimiter(args.payload_delimiter))
    except re.error as exc:
        raise UsageError(f"argument --payload-delimiter: not a regular expression: {exc}") from None
    return ProducerOptions(
        topic=args.topic, num_records=args.num_records, record_size=args.record_size,
        payload_file=args.payload_file, payload_delimiter=delimiter(args.payload_delimiter),
        throughput=args.throughput, producer_props=property_pairs(args.producer_props or []),
        producer_config=args.producer_config, print_metrics=args.print_metrics,
        transactional_id=args.transactional_id if args.transaction_duration_ms > 0 else None,
        transaction_duration_ms=args.transaction_duration_ms)


def delimiter(text: str) -> str:
    """Kafka replaces the help text's escaped default ``\\n`` with a new line."""
    return "\n" if text == "\\n" else text


def split_payloads(text: str, pattern: str) -> list[bytes]:
    """Java's ``String.split(regex)`` of the file's text (trailing empty payloads dropped), each UTF-8."""
    parts = re.split(pattern, text) if text else [""]
    while parts and parts[-1] == "":
        parts.pop()
    return [part.encode("utf-8") for part in parts]
