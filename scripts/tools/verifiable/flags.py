"""The flags of ``kafka-verifiable-producer`` and ``kafka-verifiable-consumer`` (pure): Kafka 2.8's
``VerifiableProducer`` / ``VerifiableConsumer`` argparse4j parsers, their Java types (``Integer``, ``Long``),
and the client settings Kafka's tools derive from them, in librdkafka's names.

    kafka-verifiable-producer --topic T (--bootstrap-server H:P | --broker-list H:P) [--max-messages N (-1)]
        [--throughput N (-1)] [--acks 0|1|-1 (-1)] [--producer.config FILE] [--message-create-time MS (-1)]
        [--value-prefix N] [--repeating-keys N]
    kafka-verifiable-consumer --topic T --group-id G (--bootstrap-server H:P | --broker-list H:P)
        [--group-instance-id I] [--max-messages N (-1)] [--session-timeout MS (30000)] [--verbose]
        [--enable-autocommit] [--reset-policy earliest|latest|none (earliest)]
        [--assignment-strategy JAVA_CLASS[,JAVA_CLASS...] (RangeAssignor)] [--consumer.config FILE]

A bad flag or value raises ``UsageError`` (the tools print it as one line and exit 1, as Kafka's tools exit 1
after argparse4j's error). ``--assignment-strategy`` takes Kafka's assignor class names and maps them to
librdkafka's assignors; librdkafka has no eager sticky assignor, so Kafka's ``StickyAssignor`` runs as
``cooperative-sticky``. ``--reset-policy none`` is librdkafka's ``error``.

Precedence as in Kafka: the producer's ``--producer.config`` overrides the flags' settings (Kafka loads the
file last); the consumer's flags override ``--consumer.config`` (Kafka loads it first).
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

JAVA_CONSUMER = "org.apache.kafka.clients.consumer."
ASSIGNORS = {f"{JAVA_CONSUMER}RangeAssignor": "range",
             f"{JAVA_CONSUMER}RoundRobinAssignor": "roundrobin",
             f"{JAVA_CONSUMER}CooperativeStickyAssignor": "cooperative-sticky",
             f"{JAVA_CONSUMER}StickyAssignor": "cooperative-sticky"}  # librdkafka has no eager sticky assignor
DEFAULT_ASSIGNOR = f"{JAVA_CONSUMER}RangeAssignor"
RESET_POLICIES = {"earliest": "earliest", "latest": "latest", "none": "error"}
INT_MIN, INT_MAX = -2**31, 2**31 - 1
LONG_MIN, LONG_MAX = -2**63, 2**63 - 1
# Kafka's producer defaults where librdkafka's differ in what the tool reports: Kafka's tool sets retries=0
# itself ("No producer retries"); delivery.timeout.ms is the Java producer's default (librdkafka: 300000).
PRODUCER_DEFAULTS = {"retries": "0", "delivery.timeout.ms": "120000"}
MAX_POLL_RECORDS = 500  # the Java consumer's max.poll.records; a --consumer.config may set it
# Kafka's tools log at WARN (config/tools-log4j.properties); librdkafka's INFO lines are not the tool's output.
LOG_LEVEL = {"log_level": "4"}


class UsageError(ValueError):
    """A bad flag or value: the tool prints ``<prog>: error: <message>`` and exits 1."""


class ToolParser(argparse.ArgumentParser):
    """argparse that raises ``UsageError`` instead of printing the usage and exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _java_number(name: str, low: int, high: int):
    def convert(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"could not convert '{text}' to {name}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"could not convert '{text}' to {name} (out of range)")
        return value
    convert.__name__ = name
    return convert


java_int = _java_number("Integer", INT_MIN, INT_MAX)
java_long = _java_number("Long", LONG_MIN, LONG_MAX)


def _connection(parser: argparse.ArgumentParser, verb: str) -> None:
    group = parser.add_argument_group("Connection Group", "Group of arguments for connection to brokers")
    exclusive = group.add_mutually_exclusive_group(required=True)
    exclusive.add_argument("--bootstrap-server", dest="bootstrap_server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                           help=f"REQUIRED: The server(s) to {verb}. Comma-separated list of Kafka brokers in the "
                                f"form HOST1:PORT1,HOST2:PORT2,...")
    exclusive.add_argument("--broker-list", dest="broker_list", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                           help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is "
                                "specified.  Comma-separated list of Kafka brokers in the form HOST1:PORT1,...")


def producer_parser() -> ToolParser:
    parser = ToolParser(prog="kafka-verifiable-producer", description=(
        'This tool produces increasing integers to the specified topic and prints JSON metadata to stdout on each '
        '"send" request, making externally visible which messages have been acked and which have not.'))
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="Produce messages to this topic.")
    _connection(parser, "connect to")
    parser.add_argument("--max-messages", type=java_int, default=-1, metavar="MAX-MESSAGES",
                        help="Produce this many messages. If -1, produce messages until the process is killed "
                             "externally. (default: -1)")
    parser.add_argument("--throughput", type=java_int, default=-1, metavar="THROUGHPUT",
                        help="If set >= 0, throttle maximum message throughput to *approximately* THROUGHPUT "
                             "messages/sec. (default: -1)")
    parser.add_argument("--acks", type=java_int, default=-1, choices=(0, 1, -1), metavar="ACKS",
                        help="Acks required on each produced message. See Kafka docs on acks for details. "
                             "(default: -1)")
    parser.add_argument("--producer.config", dest="config_file", metavar="CONFIG_FILE",
                        help="Producer config properties file.")
    parser.add_argument("--message-create-time", dest="create_time", type=java_long, default=-1,
                        metavar="CREATETIME", help="Send messages with creation time starting at the arguments "
                                                   "value, in milliseconds since epoch (default: -1)")
    parser.add_argument("--value-prefix", type=java_int, metavar="VALUE-PREFIX",
                        help="If specified, each produced value will have this prefix with a dot separator")
    parser.add_argument("--repeating-keys", type=java_int, metavar="REPEATING-KEYS",
                        help="If specified, each produced record will have a key starting at 0 increment by 1 up "
                             "to the number specified (exclusive), then the key is set to 0 again")
    return parser


def consumer_parser() -> ToolParser:
    parser = ToolParser(prog="kafka-verifiable-consumer", description=(
        "This tool consumes messages from a specific topic and emits consumer events (e.g. group rebalances, "
        "received messages, and offsets committed) as JSON objects to STDOUT."))
    _connection(parser, "connect to (REQUIRED unless --broker-list(deprecated) is specified)")
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="Consumes messages from this topic.")
    parser.add_argument("--group-id", required=True, metavar="GROUP_ID",
                        help="The groupId shared among members of the consumer group")
    parser.add_argument("--group-instance-id", metavar="GROUP_INSTANCE_ID",
                        help="A unique identifier of the consumer instance")
    parser.add_argument("--max-messages", type=java_int, default=-1, metavar="MAX-MESSAGES",
                        help="Consume this many messages. If -1 (the default), the consumer will consume until "
                             "the process is killed externally")
    parser.add_argument("--session-timeout", type=java_int, default=30000, metavar="TIMEOUT_MS",
                        help="Set the consumer's session timeout (default: 30000)")
    parser.add_argument("--verbose", action="store_true", help="Enable to log individual consumed records")
    parser.add_argument("--enable-autocommit", dest="autocommit", action="store_true",
                        help="Enable offset auto-commit on consumer")
    parser.add_argument("--reset-policy", default="earliest", choices=tuple(RESET_POLICIES),
                        help="Set reset policy (must be either 'earliest', 'latest', or 'none' (default: earliest)")
    parser.add_argument("--assignment-strategy", default=DEFAULT_ASSIGNOR, metavar="ASSIGNMENT_STRATEGY",
                        help=f"Set assignment strategy (e.g. {JAVA_CONSUMER}RoundRobinAssignor) "
                             f"(default: {DEFAULT_ASSIGNOR})")
    parser.add_argument("--consumer.config", dest="config_file", metavar="CONFIG_FILE",
                        help="Consumer config properties file (config options shared with command line "
                             "parameters will be overridden).")
    return parser


def parse_producer(argv: Sequence[str]) -> argparse.Namespace:
    """The producer's flags, checked (UsageError); ``bootstrap`` is --bootstrap-server else --broker-list."""
    args = producer_parser().parse_args(list(argv))
    if args.create_time < -1:
        raise UsageError(f"argument --message-create-time: invalid timestamp {args.create_time}: a creation time "
                         f"is non-negative (or -1 for none)")
    args.bootstrap = args.bootstrap_server or args.broker_list
    return args


def parse_consumer(argv: Sequence[str]) -> argparse.Namespace:
    """The consumer's flags, checked (UsageError); ``assignors`` holds librdkafka's assignor names."""
    args = consumer_parser().parse_args(list(argv))
    args.assignors = assignors(args.assignment_strategy)
    args.bootstrap = args.bootstrap_server or args.broker_list
    return args


def assignors(text: str) -> list[str]:
    """librdkafka's assignors for Kafka's comma-separated assignor class names (UsageError naming an unknown one)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ASSIGNORS]
    if unknown or not names:
        raise UsageError(f"argument --assignment-strategy: unknown assignor {unknown[0] if unknown else repr(text)} "
                         f"(known: {', '.join(ASSIGNORS)})")
    mapped: list[str] = []
    for name in names:
        if ASSIGNORS[name] not in mapped:
            mapped.append(ASSIGNORS[name])
    if "cooperative-sticky" in mapped and len(mapped) > 1:
        raise UsageError("argument --assignment-strategy: a cooperative assignor cannot be combined with eager ones "
                         "(librdkafka runs one rebalance protocol)")
    return mapped


def producer_config(args: argparse.Namespace, file_config: dict[str, str]) -> dict[str, str]:
    """librdkafka's settings for the producer: the flags', then ``file_config`` (``--producer.config`` in
    librdkafka's names) over them, as Kafka loads the file last."""
    return {**LOG_LEVEL, "bootstrap.servers": args.bootstrap, "acks": str(args.acks), **PRODUCER_DEFAULTS,
            **file_config}


def consumer_config(args: argparse.Namespace, file_config: dict[str, str]) -> tuple[dict[str, str], int]:
    """librdkafka's settings for the consumer (the flags over ``file_config``, as in Kafka) and how many records
    one poll returns at most (Kafka's ``max.poll.records``, which librdkafka does not know: taken out)."""
    config = {**LOG_LEVEL, **file_config}
    batch = config.pop("max.poll.records", None)
    try:
        max_poll = int(batch) if batch is not None else MAX_POLL_RECORDS
    except ValueError:
        raise UsageError(f"argument --consumer.config: max.poll.records: not a number: {batch!r}") from None
    if max_poll < 1:
        raise UsageError(f"argument --consumer.config: max.poll.records must be at least 1, not {max_poll}")
    config["group.id"] = args.group_id
    if args.group_instance_id is not None:
        config["group.instance.id"] = args.group_instance_id
    config.update({"bootstrap.servers": args.bootstrap, "enable.auto.commit": "true" if args.autocommit else "false",
                   "auto.offset.reset": RESET_POLICIES[args.reset_policy],
                   "session.timeout.ms": str(args.session_timeout),
                   "partition.assignment.strategy": ",".join(args.assignors)})
    return config, max_poll
