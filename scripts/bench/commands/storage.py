"""``zkafka bench storage``: log append/read throughput next to raw os.write."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("storage", help="log append/read throughput next to raw os.write")
    p.set_defaults(run=run)
    p.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir under ./.zkafka)")
    p.add_argument("--total-mib", type=int, default=1024, help="MiB appended per batch size (default 1024)")
    p.add_argument("--batch-sizes", default="16384,1048576",
                   help="comma-separated producer batch sizes in bytes (default 16384,1048576)")
    p.add_argument("--record-bytes", type=int, default=100, help="record value size (default 100)")
    p.add_argument("--lookups", type=int, default=2000, help="random read/offset_for_timestamp lookups")


def run(args: argparse.Namespace) -> int:
    """Flag errors are reported with ``zkafka``'s own usage line (``args.parser``)."""
    from scripts.bench.storage import run_storage_bench

    try:
        sizes = [int(s) for s in args.batch_sizes.split(",") if s]
    except ValueError:
        args.parser.error(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}")
    if args.total_mib <= 0 or any(s < 200 for s in sizes):
        args.parser.error("--total-mib must be positive and every batch size at least 200 bytes")
    run_storage_bench(args.dir, args.total_mib, sizes, args.record_bytes, args.lookups)
    return 0
