"""``zkafka bench group``: consumer-group rebalances and offset commits on a 3-broker cluster."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "group", help="consumer groups on a 3-broker cluster, with group.initial.rebalance.delay.ms 3000 and 0: "
                      "subscribe -> first assignment, rebalance on join and on a clean leave, offset commits/s")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--reps", type=int, default=5, help="repetitions of each rebalance measurement (default 5)")
    p.add_argument("--commit-seconds", type=float, default=10.0, help="seconds of each offset-commit run (default 10)")
    p.add_argument("--in-flight", type=int, default=64,
                   help="asynchronous commits outstanding at once in the pipelined commit run (default 64)")
    p.add_argument("--delays", default="3000,0",
                   help="group.initial.rebalance.delay.ms of each cluster run (default 3000,0)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def parse_delays(args: argparse.Namespace) -> list[int]:
    try:
        delays = [int(d) for d in args.delays.split(",") if d.strip()]
    except ValueError:
        args.subparser.error(f"--delays must be comma-separated integers, got {args.delays!r}")
    if not delays or any(d < 0 for d in delays):
        args.subparser.error("--delays needs at least one delay, none negative")
    return delays


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.group import GroupBenchOptions, format_report, run_group_bench

    delays = parse_delays(args)
    if args.reps < 1 or args.commit_seconds <= 0 or args.in_flight < 1:
        args.subparser.error("--reps and --in-flight must be positive, --commit-seconds > 0")
    options = GroupBenchOptions(delays, args.reps, args.commit_seconds, args.in_flight, args.dir,
                                command="zkafka " + shlex.join(args.argv))
    return print_report(run_group_bench(options), args.json, format_report)
