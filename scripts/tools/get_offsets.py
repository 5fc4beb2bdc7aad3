"""``kafka-get-offsets``: Kafka 2.8's ``GetOffsetShell`` (``kafka-run-class kafka.tools.GetOffsetShell``) over
confluent-kafka's AdminClient (ListOffsets to each partition's leader).

    kafka-get-offsets (--bootstrap-server | --broker-list) HOST:PORT --topic T [--partitions 0,1]
                      [--time -1|-2|<timestamp ms>] [--command-config FILE]

``--time``: -1 the latest offset (the high watermark), -2 the earliest (the log start offset, which
DeleteRecords and retention move), else the first offset whose timestamp is at or after the time.
Output, Kafka's line per partition (sorted by partition; an empty offset when no record qualifies):

    T:0:42
    T:1:

As Kafka's tool: ``Topic T does not exist`` (exit 1); ``Error: partition N does not exist`` for a
requested partition the topic lacks, ``Error: partition N does not have a leader. Skip getting offsets``.
``--offsets`` and ``--max-wait-ms`` are accepted and ignored (deprecated in Kafka 2.8 too);
``--bootstrap-server`` and ``--command-config`` are Kafka 3.0's (KIP-635), taken here as well.
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from scripts.tools.common.arguments import KafkaArgumentParser, host_port_list, partition_list
from scripts.tools.common.client_properties import admin_client, parse_flag
from scripts.tools.common.errors import java_exception

LATEST, EARLIEST = -1, -2
TIMEOUT_S = 30.0


def build_parser() -> KafkaArgumentParser:
    parser = KafkaArgumentParser(prog="kafka-get-offsets", description="An interactive shell for getting topic offsets.")
    servers = parser.add_mutually_exclusive_group(required=True)
    servers.add_argument("--bootstrap-server", type=host_port_list, metavar="HOST1:PORT1,...,HOST3:PORT3",
                         help="REQUIRED: The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
    servers.add_argument("--broker-list", dest="bootstrap_server", type=host_port_list,
                         metavar="hostname:port,...,hostname:port",
                         help="DEPRECATED, use --bootstrap-server instead.")
    parser.add_argument("--topic", required=True, metavar="topic", help="REQUIRED: The topic to get offset from.")
    parser.add_argument("--partitions", type=partition_list, default=[], metavar="partition ids",
                        help="comma separated list of partition ids. If not specified, it will find offsets for "
                             "all partitions")
    parser.add_argument("--time", type=int, default=LATEST, metavar="timestamp/-1(latest)/-2(earliest)",
                        help="timestamp of the offsets before that. [Note: No offset is returned, if the timestamp "
                             "greater than recently commited record timestamp is given.]")
    parser.add_argument("--command-config", metavar="config file",
                        help="Property file containing configs to be passed to Admin Client.")
    parser.add_argument("--offsets", type=int, help="DEPRECATED AND IGNORED: number of offsets returned")
    parser.add_argument("--max-wait-ms", type=int, help="DEPRECATED AND IGNORED: The max amount of time each fetch "
                                                        "request waits.")
    return parser


def offset_spec(time: int) -> OffsetSpec:
    if time == LATEST:
        return OffsetSpec.latest()
    if time == EARLIEST:
        return OffsetSpec.earliest()
    return OffsetSpec.for_timestamp(time)


def chosen_partitions(topic: str, known: dict[int, int], requested: list[int]) -> tuple[list[int], list[str]]:
    """The partitions to ask (sorted) and Kafka's error lines; ``known`` maps each partition to its leader
    (-1: none)."""
    errors = [f"Error: partition {p} does not exist" for p in sorted(set(requested) - set(known))]
    wanted = sorted(set(requested) & set(known)) if requested else sorted(known)
    asked = []
    for p in wanted:
        if known[p] < 0:
            errors.append(f"Error: partition {p} does not have a leader. Skip getting offsets")
        else:
            asked.append(p)
    return asked, errors


def offset_lines(topic: str, offsets: dict[int, int | None]) -> list[str]:
    """``topic:partition:offset``, an empty offset for none (-1)."""
    return [f"{topic}:{p}:{'' if o is None or o < 0 else o}" for p, o in sorted(offsets.items())]


def _partitions_of(admin: AdminClient, topic: str) -> dict[int, int] | None:
    # every topic, as Kafka's consumer.listTopics: a Metadata request naming the topic would auto-create it
    metadata = admin.list_topics(timeout=TIMEOUT_S).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return None
    return {p.id: p.leader for p in metadata.partitions.values()}


def run(admin: AdminClient, args: argparse.Namespace) -> int:
    known = _partitions_of(admin, args.topic)
    if known is None:
        print(f"Topic {args.topic} does not exist", file=sys.stderr)
        return 1
    if not known or (args.partitions and not set(args.partitions) & set(known)):
        print(f"Topic {args.topic} has 0 partitions" if not args.partitions else
              f"Topic {args.topic} does not have any of the requested partitions "
              f"{','.join(map(str, args.partitions))}", file=sys.stderr)
        return 1
    asked, errors = chosen_partitions(args.topic, known, args.partitions)
    for line in errors:
        print(line, file=sys.stderr)
    spec = offset_spec(args.time)
    futures = admin.list_offsets({TopicPartition(args.topic, p): spec for p in asked}, request_timeout=TIMEOUT_S)
    offsets: dict[int, int | None] = {}
    for tp, future in futures.items():
        try:
            offsets[tp.partition] = future.result(timeout=TIMEOUT_S).offset
        except KafkaException as exc:
            print(f"Error: partition {tp.partition}: {java_exception(exc)}", file=sys.stderr)
            offsets[tp.partition] = None
    for line in offset_lines(args.topic, offsets):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    properties = parse_flag(parser, "--command-config", args.command_config)
    admin = admin_client(AdminClient, args.bootstrap_server, properties, error="Error while making request: ",
                         flag="--command-config")
    if admin is None:
        return 1
    try:
        return run(admin, args)
    except (KafkaException, TimeoutError) as exc:
        print(f"Error while making request: {java_exception(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
