"""``zkafka demo cluster`` (``make demo``): a cluster left running, walked through with Kafka's tools."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster", help="`make demo`: preflight checks, ZooKeeper + brokers under --dir (left running), topic demo, "
                        "records through kafka-console-producer/-consumer, a short consumer-group demo, then how to "
                        "connect and stop")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--dir", type=Path, default=Path(".zkafka"), help="cluster directory (default ./.zkafka)")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    p.add_argument("--records", type=int, default=5000, help="records produced and consumed (default 5000)")
    p.add_argument("--groups-seconds", type=float, default=20.0,
                   help="duration of the consumer-group demo (default 20, at least 10)")
    p.add_argument("--no-groups", dest="groups", action="store_false", help="skip the consumer-group demo")
    p.add_argument("--zookeeper-port", type=int, default=2181)
    p.add_argument("--kafka-port-base", type=int, default=9092, help="broker i listens on BASE+i-1 (default 9092)")
    p.add_argument("--http-port-base", type=int, default=8080, help="broker i serves HTTP on BASE+i-1 (default 8080)")


def run(args: argparse.Namespace) -> int:
    from scripts.demo import cluster
    from scripts.demo.groups import MIN_DURATION_S

    if not 1 <= args.brokers <= 64 or args.records < 1:
        args.subparser.error("--brokers must be between 1 and 64 and --records positive")
    if args.groups and args.groups_seconds < MIN_DURATION_S:
        args.subparser.error(f"--groups-seconds must be at least {MIN_DURATION_S:g} (or --no-groups)")
    ports = (args.zookeeper_port, args.kafka_port_base, args.http_port_base)
    if not all(0 < p and p + args.brokers <= 65536 for p in ports):
        args.subparser.error("ports must be between 1 and 65535")
    return cluster.demo_command(cluster.DemoOptions(args.dir, args.brokers, args.records, args.groups_seconds,
                                                    args.groups, *ports))
