"""``zkafka bench scale``: control-plane times, latency and idle cost against the number of partitions."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "scale", help="per partition count, on a fresh cluster each: topic creation, controller failover, "
                      "controlled shutdown, broker restart, unclean failure, Metadata and Produce/Fetch latency, "
                      "idle cost; seconds and ms per partition next to Kafka's published slopes")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--partitions", default="1000,5000,10000", help="partition counts, one cluster each "
                                                                   "(default 1000,5000,10000)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--replication-factor", type=int, default=3)
    p.add_argument("--topic-partitions", type=int, default=100, help="partitions per topic (default 100)")
    p.add_argument("--steps", default=",".join(_steps()), help=f"a subset of {','.join(_steps())} (creation "
                                                               "always runs)")
    p.add_argument("--session-timeout-ms", type=int, default=6000,
                   help="zookeeper.session.timeout.ms of the brokers (default 6000, tickTime 500)")
    p.add_argument("--idle-seconds", type=float, default=10.0, help="idle CPU window (default 10)")
    p.add_argument("--plot", type=Path, default=None, help="also write a log-log SVG plot of the times there")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _steps() -> tuple[str, ...]:
    from scripts.bench.scale import STEPS
    return STEPS


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.scale import parse_sizes, parse_steps
    from scripts.bench.scale_report import format_report, plot_svg
    from scripts.bench.scale_run import ScaleOptions, run_scale_bench

    try:
        sizes = parse_sizes(args.partitions)
    except ValueError as exc:
        args.subparser.error(f"--partitions: {exc}")
    try:
        steps = parse_steps(args.steps)
    except ValueError as exc:
        args.subparser.error(f"--steps: {exc}")
    if args.brokers < 2 or not 1 <= args.replication_factor <= args.brokers:
        args.subparser.error("--brokers must be at least 2 and --replication-factor 1..--brokers")
    if args.topic_partitions < 1 or args.idle_seconds <= 0:
        args.subparser.error("--topic-partitions must be positive and --idle-seconds > 0")
    if not 1000 <= args.session_timeout_ms <= 60000:
        args.subparser.error("--session-timeout-ms must be 1000..60000 (ZooKeeper runs with tickTime 500)")
    options = ScaleOptions(sizes, args.brokers, args.replication_factor, steps, args.session_timeout_ms,
                           args.topic_partitions, args.idle_seconds, args.dir)
    result = run_scale_bench(options)
    if args.plot:
        args.plot.write_text(plot_svg(result))
    return print_report(result, args.json, format_report)
