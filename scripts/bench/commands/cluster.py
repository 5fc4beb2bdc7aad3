"""``zkafka bench cluster``: cluster up, topic creation, controller failover and controlled shutdown times."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cluster", help="cluster up, topic creation, controller failover, "
                                              "controlled shutdown times on real processes")
    p.set_defaults(run=run)
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--session-timeout-ms", type=int, default=6000)


def run(args: argparse.Namespace) -> int:
    """Flag errors are reported with ``zkafka``'s own usage line (``args.parser``)."""
    from scripts.bench.cluster import run_cluster_bench

    if args.rounds < 1 or args.brokers < 2 or args.partitions < 1 or args.session_timeout_ms < 1000:
        args.parser.error("bench cluster needs --rounds >= 1, --brokers >= 2, --partitions >= 1, "
                          "--session-timeout-ms >= 1000")
    run_cluster_bench(args.dir, args.rounds, args.brokers, args.session_timeout_ms, args.partitions)
    return 0
