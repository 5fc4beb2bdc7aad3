"""``zkafka bench testcontainers``: ZkafkaContainer and ZkafkaCluster, start() to the first acknowledged produce."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "testcontainers", help="zkafka.testing: start() to a test's first acknowledged produce, for ZkafkaContainer "
                               "and a ZkafkaCluster (needs Docker and the images: zkafka images build)")
    p.set_defaults(run=run)
    p.add_argument("--rounds", type=int, default=5, help="fresh containers per target (default 5)")
    p.add_argument("--brokers", type=int, default=3, help="the cluster's brokers (default 3)")
    p.add_argument("--zookeepers", type=int, default=3, choices=(1, 3), help="the cluster's ZooKeeper nodes (default 3)")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.testcontainers import format_report, run_testcontainers_bench

    if args.rounds < 1 or args.brokers < 1:
        args.parser.error("--rounds and --brokers must be at least 1")
    return print_report(run_testcontainers_bench(args.rounds, args.brokers, args.zookeepers), args.json, format_report)
