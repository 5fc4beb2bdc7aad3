"""``kafka-leader-election``: Kafka 2.8's ``LeaderElectionCommand`` over confluent-kafka's AdminClient
(ElectLeaders, sent to the controller).

    kafka-leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN
        (--topic T --partition P | --all-topic-partitions | --path-to-json-file FILE) [--admin.config FILE]

The election type is case-insensitive. The JSON file is Kafka's format,
``{"partitions": [{"topic": "t", "partition": 0}, ...]}``; a partition named twice is an error, as in
Kafka. Output, Kafka's lines (partitions sorted here):

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: ...

Exit codes: 0 when every partition was elected or needed no election, 1 when any failed (or the
request did), 2 for bad flags or an unreadable/malformed JSON file (the message names the flag).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from scripts.tools.common.client_properties import admin_client, parse_flag
from scripts.tools.common.errors import java_exception

RESULT_TIMEOUT_S = 65.0  # librdkafka's request timeout (socket.timeout.ms, 60 s) and a margin
SOURCES = ("--topic", "--all-topic-partitions", "--path-to-json-file")


def election_type(text: str) -> str:
    value = text.strip().upper()
    if value not in ("PREFERRED", "UNCLEAN"):
        raise argparse.ArgumentTypeError(f"{text!r} is not an election type (PREFERRED or UNCLEAN)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-leader-election",
        description="This tool attempts to elect a new leader from a set of topic partitions. The type of elections "
                    "supported are preferred replicas and unclean replicas.")
    parser.add_argument("--bootstrap-server", required=True, metavar="host:port",
                        help="A hostname and port for the broker to connect to, in the form host:port. REQUIRED.")
    parser.add_argument("--admin.config", dest="admin_config", metavar="config file",
                        help="Configuration properties files to pass to the admin client")
    parser.add_argument("--election-type", required=True, type=election_type, metavar="election type",
                        help='Type of election to attempt: "preferred" or "unclean". REQUIRED.')
    parser.add_argument("--topic", metavar="topic name", help="Name of topic for which to perform an election.")
    parser.add_argument("--partition", type=int, metavar="partition id",
                        help="Partition id for which to perform an election. REQUIRED if --topic is specified.")
    parser.add_argument("--all-topic-partitions", action="store_true",
                        help="Perform election on all of the topic partitions.")
    parser.add_argument("--path-to-json-file", metavar="Path to JSON file",
                        help='The JSON file with the partitions to elect leaders for: {"partitions": '
                             '[{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]}')
    return parser


def problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags (naming them), or None."""
    given = [flag for flag, present in zip(SOURCES, (args.topic is not None, args.all_topic_partitions,
                                                      args.path_to_json_file is not None)) if present]
    if len(given) > 1:
        return f"{given[0]} cannot be used with {given[1]}"
    if args.partition is not None and args.topic is None:
        return "--partition is only allowed with --topic"
    if not given:
        return f"one of {', '.join(SOURCES)} is required"
    if args.topic is not None and args.partition is None:
        return "--partition is required when --topic is specified"
    if args.partition is not None and args.partition < 0:
        return f"--partition must be >= 0, not {args.partition}"
    return None


def parse_election_json(text: str) -> list[tuple[str, int]]:
    """Kafka's replica election data: ``{"partitions": [{"topic": T, "partition": P}, ...]}``."""
    try:
        data = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if data is None:
        raise ValueError("Replica election data is empty")
    if not isinstance(data, dict) or "partitions" not in data:
        raise ValueError('Replica election data is missing "partitions" field')
    if not isinstance(data["partitions"], list):
        raise ValueError('"partitions" must be a list')
    partitions = []
    for entry in data["partitions"]:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic or not isinstance(partition, int) or isinstance(partition, bool):
            raise ValueError(f'bad partition entry {json.dumps(entry)} (expected {{"topic": string, "partition": int}})')
        partitions.append((topic, partition))
    duplicates = sorted({f"{t}-{p}" for t, p in partitions if partitions.count((t, p)) > 1})
    if duplicates:
        raise ValueError(f"Replica election data contains duplicate partitions: {','.join(duplicates)}")
    return partitions


def is_election_not_needed(error: Any) -> bool:
    if isinstance(error, KafkaException) and error.args:
        error = error.args[0]
    return isinstance(error, KafkaError) and error.code() == KafkaError.ELECTION_NOT_NEEDED


def report(kind: str, results: dict, out=print) -> int:
    """Kafka's three lines; 1 if any partition failed."""
    ok = sorted((tp for tp, e in results.items() if e is None), key=lambda tp: (tp.topic, tp.partition))
    noop = sorted((tp for tp, e in results.items() if e is not None and is_election_not_needed(e)),
                  key=lambda tp: (tp.topic, tp.partition))
    failed = sorted(((tp, e) for tp, e in results.items() if e is not None and not is_election_not_needed(e)),
                    key=lambda item: (item[0].topic, item[0].partition))
    name = lambda tp: f"{tp.topic}-{tp.partition}"  # noqa: E731
    if ok:
        out(f"Successfully completed leader election ({kind}) for partitions {', '.join(map(name, ok))}")
    if noop:
        out(f"Valid replica already elected for partitions {', '.join(map(name, noop))}")
    for tp, error in failed:
        out(f"Error completing leader election ({kind}) for partition: {name(tp)}: {java_exception(error)}")
    return 1 if failed else 0


def run(args: argparse.Namespace, partitions: list[tuple[str, int]] | None, properties: dict[str, str]) -> int:
    """``properties``: Kafka's client properties of ``--admin.config`` (``scripts.tools.common.client_properties``)."""
    admin = admin_client(AdminClient, args.bootstrap_server, properties, error="Error while making request: ",
                         flag="--admin.config")
    if admin is None:
        return 1
    kind = ElectionType.PREFERRED if args.election_type == "PREFERRED" else ElectionType.UNCLEAN
    tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    if tps == []:
        return 0  # nothing to elect (an empty JSON list)
    try:
        # no request_timeout/operation_timeout: confluent-kafka 2.16's binding rejects both keywords
        # (its argument parser is one format letter short), so librdkafka's defaults apply
        results = admin.elect_leaders(kind, tps).result(timeout=RESULT_TIMEOUT_S)
    except KafkaException as exc:
        print(f"Error while making request: {java_exception(exc)}", file=sys.stderr)
        return 1
    except TimeoutError:
        print("Timeout waiting for election results", file=sys.stderr)
        return 1
    return report(args.election_type, results)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (message := problem(args)) is not None:
        parser.error(message)
    partitions: list[tuple[str, int]] | None = None
    if args.topic is not None:
        partitions = [(args.topic, args.partition)]
    elif args.path_to_json_file is not None:
        try:
            with open(args.path_to_json_file, encoding="utf-8") as f:
                partitions = parse_election_json(f.read())
        except (OSError, ValueError) as exc:
            parser.error(f"argument --path-to-json-file: {args.path_to_json_file}: {exc}")
    return run(args, partitions, parse_flag(parser, "--admin.config", args.admin_config))


if __name__ == "__main__":
    sys.exit(main())
