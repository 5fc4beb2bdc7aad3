"""``kafka-transactions``' flags (pure): Kafka 3.x's ``TransactionsCommand`` parser, its subcommands and the
checks it makes after parsing (``problem``), with Kafka's messages.

    kafka-transactions --bootstrap-server host:port [--command-config FILE] COMMAND ...
      list
      describe --transactional-id ID
      describe-producers --topic T --partition P [--broker-id B]
      abort --topic T --partition P (--start-offset N | --producer-id I --producer-epoch E --coordinator-epoch C)
      find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MINUTES (15)]
"""
from __future__ import annotations

import argparse

COMMANDS = ("list", "describe", "describe-producers", "abort", "find-hanging")
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("zkafka")
    except PackageNotFoundError:
        return "0+unknown"


def _topic_partition(parser: argparse.ArgumentParser, required: bool, topic_help: str = "topic name") -> None:
    parser.add_argument("--topic", required=required, help=topic_help)
    parser.add_argument("--partition", type=int, required=required, help="partition number")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-transactions",
        description="This tool is used to analyze the transactional state of producers in the cluster. "
                    "It can be used to detect and recover from hanging transactions.")
    parser.add_argument("-v", "--version", action="version", version=_version(),
                        help="show the version of this Kafka distribution and exit")
    parser.add_argument("--command-config", metavar="FILE",
                        help="property file containing configs to be passed to admin client")
    parser.add_argument("--bootstrap-server", required=True, metavar="host:port",
                        help="hostname and port for the broker to connect to, in the form `host:port`  "
                             "(multiple comma-separated entries can be given)")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", required=True)
    commands.add_parser("list", help="list transactions")
    describe = commands.add_parser("describe", help="describe the state of an active transactional-id",
                                   description="Describe the state of an active transactional-id.")
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = commands.add_parser("describe-producers",
                                    help="describe the states of active producers for a topic partition")
    producers.add_argument("--broker-id", type=int,
                           help="optional broker id to describe the producer state on a specific replica")
    _topic_partition(producers, required=True)
    abort = commands.add_parser("abort", help="abort a hanging transaction (requires administrative privileges)")
    _topic_partition(abort, required=True)
    newer = abort.add_argument_group("Brokers on versions 3.0 and above", "For newer brokers, only the start "
                                     "offset of the transaction to be aborted is required")
    newer.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    older = abort.add_argument_group("Brokers on versions older than 3.0",
                                     "For older brokers, you must provide all of these arguments")
    older.add_argument("--producer-id", type=int, help="producer id")
    older.add_argument("--producer-epoch", type=int, help="producer epoch")
    older.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    hanging.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
                         help="maximum transaction timeout in minutes to limit the scope of the search "
                              "(15 minutes by default)")
    _topic_partition(hanging, required=False, topic_help="topic name to limit search to (required if "
                                                         "--partition is specified)")
    return parser


def problem(args: argparse.Namespace) -> str | None:
    """Kafka's checks after parsing (its messages; the tool prints them and exits 1), or None."""
    if args.command == "abort":
        if args.start_offset is None and args.producer_id is None:
            return ("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 "
                    "or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
        if args.start_offset is None and args.producer_epoch is None:
            return "Missing required argument --producer-epoch"
        if args.start_offset is None and args.coordinator_epoch is None:
            return "Missing required argument --coordinator-epoch"
    if args.command == "find-hanging":
        if args.topic is None and args.broker_id is None:
            return "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search"
        if args.partition is not None and args.topic is None:
            return "The --partition argument requires --topic to be provided"
    return None
