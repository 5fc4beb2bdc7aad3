"""``zkafka bench formats``: down-/up-conversion of the old message formats and the max_timestamp repair, per MiB."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("formats", help="old message formats: down/up-conversion and max_timestamp repair cost")
    p.set_defaults(run=run)
    p.add_argument("--total-mib", type=int, default=16, help="MiB of records per case (default 16)")
    p.add_argument("--batch-bytes", type=int, default=16384, help="producer batch size in bytes (default 16384)")
    p.add_argument("--record-bytes", type=int, default=100, help="record value size (default 100)")
    p.add_argument("--read-bytes", type=int, default=1048576,
                   help="bytes of log one Fetch v0-3 partition read converts (default 1048576)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per case, the median is reported (default 3)")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.formats import run_formats_bench

    if min(args.total_mib, args.rounds, args.record_bytes, args.read_bytes) <= 0 or args.batch_bytes < 200:
        args.parser.error("sizes and --rounds must be positive, --batch-bytes at least 200")
    run_formats_bench(args.total_mib, args.batch_bytes, args.record_bytes, args.read_bytes, args.rounds)
    return 0
