"""``zkafka bench mirror``: mirrored throughput (at least once, exactly once) against producing straight into the
target, and record age at the target at a fixed rate (issue 29)."""
from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "mirror", help="kafka-mirror-maker between two one-broker clusters: records/s mirrored (at least once, "
                       "exactly once) vs produced straight into the target, and record age at the target "
                       "(p50/p99) at a fixed rate")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=200_000, help="records per throughput run (default 200000)")
    p.add_argument("--record-bytes", type=int, default=100, help="value size (default 100)")
    p.add_argument("--partitions", type=int, default=4, help="partitions of each topic (default 4)")
    p.add_argument("--rate", type=int, default=10_000, help="records/s of the latency run (default 10000)")
    p.add_argument("--seconds", type=float, default=30.0, help="length of the latency run (default 30)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--write-benchmarks", type=Path, nargs="?", const=Path("BENCHMARKS.md"), default=None,
                   help="rewrite this bench's section of BENCHMARKS.md (or the file given)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.mirror import BEGIN, END, HEADING, MirrorBenchOptions, render, run_mirror_bench
    from scripts.bench.suite.report import write_section

    if min(args.records, args.record_bytes, args.partitions, args.rate) < 1 or args.seconds <= 0:
        args.subparser.error("--records, --record-bytes, --partitions, --rate and --seconds must be positive")
    options = MirrorBenchOptions(args.records, args.record_bytes, args.partitions, args.rate, args.seconds, args.dir)
    result = run_mirror_bench(options)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    text = render(result, "zkafka " + shlex.join(args.argv))
    print(text)
    if args.write_benchmarks is not None:
        write_section(args.write_benchmarks, text, BEGIN, END, HEADING)
    return 0
