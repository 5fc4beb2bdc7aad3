"""``zkafka``: the project's command line. Thin: parse flags, make one library call, print.

Subcommands so far: ``--version``, ``log dump <dir|file>``, ``bench storage``. Later issues add
``zookeeper``, ``cluster``, ``demo``.
"""
from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _version() -> str:
    try:
        return version("zkafka")
    except PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkafka", description="Kafka's classic architecture, in Python.")
    parser.add_argument("--version", action="version", version=f"zkafka {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    log_parser = commands.add_parser("log", help="inspect on-disk logs")
    log_commands = log_parser.add_subparsers(dest="log_command", metavar="SUBCOMMAND", required=True)
    dump = log_commands.add_parser("dump", help="print batches, offsets, timestamps, codecs, CRC validity, index entries "
                                                "(like Kafka's DumpLogSegments)")
    dump.add_argument("path", type=Path, help="a partition directory or a .log/.index/.timeindex file")
    dump.add_argument("--print-data-log", "--deep-iteration", dest="print_records", action="store_true",
                      help="also decode and print every record (key, value, headers)")
    dump.add_argument("--max-payload", type=int, default=60, help="bytes of key/value to print (default 60)")

    bench = commands.add_parser("bench", help="benchmarks")
    bench_commands = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", required=True)
    storage = bench_commands.add_parser("storage", help="log append/read throughput next to raw os.write")
    storage.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir under ./.zkafka)")
    storage.add_argument("--total-mib", type=int, default=1024, help="MiB appended per batch size (default 1024)")
    storage.add_argument("--batch-sizes", default="16384,1048576",
                         help="comma-separated producer batch sizes in bytes (default 16384,1048576)")
    storage.add_argument("--record-bytes", type=int, default=100, help="record value size (default 100)")
    storage.add_argument("--lookups", type=int, default=2000, help="random read/offset_for_timestamp lookups")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "log":
        from brokers.storage.dump import dump_path

        try:
            for line in dump_path(args.path, print_records=args.print_records, max_payload=args.max_payload):
                print(line)
        except (FileNotFoundError, ValueError) as exc:
            print(f"zkafka log dump: {exc}", file=sys.stderr)
            return 2
        except BrokenPipeError:
            return 0
        return 0
    if args.command == "bench":
        from scripts.bench_storage import run_storage_bench

        try:
            sizes = [int(s) for s in args.batch_sizes.split(",") if s]
        except ValueError:
            parser.error(f"--batch-sizes must be comma-separated integers, got {args.batch_sizes!r}")
        if args.total_mib <= 0 or any(s < 200 for s in sizes):
            parser.error("--total-mib must be positive and every batch size at least 200 bytes")
        run_storage_bench(args.dir, args.total_mib, sizes, args.record_bytes, args.lookups)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
