"""``zkafka bench produce`` and ``zkafka bench consume``: confluent-kafka throughput and the broker's CPU cost."""
from __future__ import annotations

import argparse

KINDS = ("produce", "consume")


def add_parser(subparsers) -> None:
    for kind in KINDS:
        p = subparsers.add_parser(kind, help=f"{kind} throughput with confluent-kafka and the broker's CPU cost")
        p.set_defaults(run=run)
        p.add_argument("--records", type=int, default=2_000_000)
        p.add_argument("--record-size", type=int, default=100)
        p.add_argument("--acks", default="1", choices=["0", "1", "-1", "all"])
        p.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
        p.add_argument("--partitions", type=int, default=1)
        p.add_argument("--producers", type=int, default=1, help="producer processes")
        p.add_argument("--bootstrap-server", default=None,
                       help="an existing cluster (default: start a one-broker cluster)")
        p.add_argument("--broker-pid", type=int, default=None, help="broker to measure CPU of")


def run(args: argparse.Namespace) -> int:
    """``consume`` without ``--bootstrap-server`` produces first into the cluster it starts. Flag errors are
    reported with ``zkafka``'s own usage line (``args.parser``)."""
    from scripts.bench.clients import BenchOptions, run_client_bench

    if args.records < 1 or args.record_size < 1 or args.partitions < 1 or args.producers < 1:
        args.parser.error("--records, --record-size, --partitions and --producers must be positive")
    options = BenchOptions(args.records, args.record_size, args.acks, args.codec, args.partitions, args.producers)
    kind = "both" if args.bench_command == "consume" and args.bootstrap_server is None else args.bench_command
    run_client_bench(kind, options, args.bootstrap_server, args.broker_pid)
    return 0
