"""``zkafka bench replication``: RF 3 throughput ratios next to Kreps', acks=all latency, leader failover."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "replication", help="RF 3 on a 3-broker cluster: throughput ratios next to Kreps' (RF1 vs RF3 acks=1 vs "
                            "acks=all), acks=all latency at fixed rates, kill -9 leader failover")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=2_000_000, help="records per throughput run")
    p.add_argument("--record-size", type=int, default=100, help="record value bytes (at least 8)")
    p.add_argument("--rates", default="1000,10000", help="latency runs, records/s (default 1000,10000)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per latency run (default 10)")
    p.add_argument("--partitions", type=int, default=6, help="throughput topics' partitions (default 6)")
    p.add_argument("--session-timeout-ms", type=int, default=6000,
                   help="zookeeper.session.timeout.ms of the brokers (default 6000)")
    p.add_argument("--max-in-flight", type=int, default=5,
                   help="max.in.flight.requests.per.connection of the latency and failover producers "
                        "(default 5, the Java producer's; librdkafka's own is 1000000)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.replication import ReplicationBenchOptions, format_report, run_replication_bench
    from scripts.bench.stats import parse_rates

    try:
        rates = parse_rates(args.rates)
    except ValueError as exc:
        args.subparser.error(f"--rates: {exc}")
    if args.records < 1 or args.record_size < 8 or args.duration <= 0 or args.partitions < 1 or args.max_in_flight < 1:
        args.subparser.error("--records, --partitions and --max-in-flight must be positive, --record-size at least 8, "
                             "--duration > 0")
    if not 1000 <= args.session_timeout_ms <= 10000:
        args.subparser.error("--session-timeout-ms must be 1000..10000 (ZooKeeper runs with tickTime 500)")
    options = ReplicationBenchOptions(args.records, args.record_size, rates, args.duration, args.partitions,
                                      args.session_timeout_ms, args.dir, args.max_in_flight)
    return print_report(run_replication_bench(options), args.json, format_report)
