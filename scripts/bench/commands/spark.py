"""``zkafka bench spark``: the zkafka PySpark data source next to a plain confluent-kafka consumer."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "spark", help="the zkafka PySpark data source on a 1-broker cluster: a plain confluent-kafka consumer vs "
                      "spark.read.format('zkafka') count() vs the same read written as parquet, rows/s")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=1_000_000, help="records produced and read (default 1000000)")
    p.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    p.add_argument("--partitions", type=int, default=6, help="partitions of the topic (default 6)")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.spark import SparkBenchOptions, bench_command

    if args.records < 1 or args.record_size < 1 or args.partitions < 1:
        args.subparser.error("--records, --record-size and --partitions must be positive")
    return bench_command(SparkBenchOptions(args.records, args.record_size, args.partitions), args.argv[2:])
