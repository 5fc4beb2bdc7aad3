"""``zkafka bench spark-cluster``: the zkafka data source's batch read on a Spark standalone cluster of 1 worker,
then 2 (records/s, speed-up, where the CPU goes, whether the broker is the limit)."""
from __future__ import annotations

import argparse
import shlex


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "spark-cluster", help="spark-submit zkafka:count (a batch read of a whole topic) to a Spark standalone "
                              "cluster of 1 worker, then 2 (1 core each): records/s, speed-up, the reader's share "
                              "of the time, the broker's CPU")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=2_000_000, help="records produced and read (default 2000000)")
    p.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    p.add_argument("--partitions", type=int, default=12, help="partitions of the topic (default 12)")
    p.add_argument("--workers", default="1,2",
                   help="worker counts, each on a fresh Spark cluster, the smallest the speed-up's base (default 1,2)")
    p.add_argument("--rounds", type=int, default=1, help="submissions per worker count (default 1)")
    p.add_argument("--executor-memory", default="1g", help="each worker's memory and executor (default 1g)")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="before each submission wait up to SECONDS for the machine to be under 25%% busy over 3 s "
                        "(a shared machine; default 0: measure the 3 s and go)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.spark_cluster import SparkClusterBenchOptions, bench_command

    try:
        workers = tuple(int(w) for w in args.workers.split(","))
    except ValueError:
        workers = ()
    if not workers or min(workers) < 1:
        args.subparser.error("--workers takes positive counts separated by commas, e.g. 1,2")
    if min(args.records, args.record_size, args.partitions, args.rounds) < 1:
        args.subparser.error("--records, --record-size, --partitions and --rounds must be positive")
    if args.wait_quiet < 0:
        args.subparser.error("--wait-quiet must not be negative")
    options = SparkClusterBenchOptions(args.records, args.record_size, args.partitions, workers, args.rounds,
                                       args.executor_memory, args.wait_quiet, command="zkafka " + shlex.join(args.argv))
    return bench_command(options, args.json)
