"""``zkafka bench txn``: a transactional producer committing every 100 ms against the same producer idempotent
without transactions (throughput and its drop, commit latency), and read_committed against read_uncommitted."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "txn", help="transactions: 1 KB records, a transactional producer committing every 100 ms vs the same "
                    "producer idempotent (acks=all) without transactions; commit latency; read_committed vs "
                    "read_uncommitted consumer throughput")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of each producer run (default 10)")
    p.add_argument("--reps", type=int, default=3, help="runs of each mode, alternating (default 3)")
    p.add_argument("--record-size", type=int, default=1024, help="record value bytes (default 1024)")
    p.add_argument("--commit-interval-ms", type=int, default=100, help="ms between commits (default 100)")
    p.add_argument("--partitions", type=int, default=6, help="partitions of each topic (default 6)")
    p.add_argument("--brokers", type=int, default=3, help="brokers of the cluster (default 3; RF min(3, brokers))")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.txn import TxnBenchOptions, format_report, run_txn_bench

    if args.seconds <= 0 or min(args.reps, args.record_size, args.commit_interval_ms, args.partitions,
                                args.brokers) < 1:
        args.subparser.error("--seconds, --reps, --record-size, --commit-interval-ms, --partitions and --brokers "
                             "must be positive")
    options = TxnBenchOptions(args.seconds, args.reps, args.record_size, args.commit_interval_ms, args.partitions,
                              args.brokers, args.dir, command="zkafka " + shlex.join(args.argv))
    return print_report(run_txn_bench(options), args.json, format_report)
