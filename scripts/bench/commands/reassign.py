"""``zkafka bench reassign``: a partition moved between brokers, unthrottled and throttled."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "reassign", help="a partition moved between brokers on a 4-broker cluster, unthrottled and throttled, and "
                         "between its brokers' log dirs, "
                         "with an acks=all producer's latency during the moves")
    p.set_defaults(run=run)
    p.add_argument("--mib", type=int, default=200, help="size of the moved partition")
    p.add_argument("--throttle", type=int, default=10 * 1024 * 1024, help="B/s for the throttled move (0: skip)")
    p.add_argument("--rate", type=int, default=1000, help="the steady producer's records/s")
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.reassign import format_report, run_reassign_bench

    return print_report(run_reassign_bench(args.mib, args.throttle, args.rate, args.dir), args.json, format_report)
