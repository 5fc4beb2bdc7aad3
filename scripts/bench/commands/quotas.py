"""``zkafka bench quotas``: P1 and C1 with no client quota, with quotas configured but never hit, and with one hit
(issue 28: what quota accounting costs a request)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "quotas", help="client quotas' cost: the suite's P1 and C1 on one broker with (a) no quota, (b) "
                       "/config/clients/<default> quotas configured but never hit (byte rates 10 GB/s, "
                       "request_percentage 1000000) and (c) a byte-rate quota that is hit; records/s, MB/s, "
                       "broker CPU-s per GB and the ratios (b)/(a)")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--reps", type=int, default=3, help="measured runs per configuration and scenario (default 3)")
    p.add_argument("--records-scale", type=float, default=1.0,
                   help="multiply P1's and C1's record caps, as `zkafka bench all` does (default 1)")
    p.add_argument("--hit-seconds", type=float, default=40.0,
                   help="(c)'s quota is each scenario's payload over this many seconds (default 40: a run of "
                        "~30 s, Kafka's rate letting the first 10 s worth through at once); 0 skips (c)")
    p.add_argument("--hit-rate", type=float, default=None,
                   help="(c)'s quota in MB/s instead (e.g. 20); one of a tenth of the payload per second or more "
                        "(10 MB/s for P1 at scale 1) is never hit: Kafka's rate lets 10 s worth through at once")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--write-benchmarks", type=Path, nargs="?", const=Path("BENCHMARKS.md"), default=None,
                   help="rewrite this bench's section of BENCHMARKS.md (or the file given)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.quotas import BURST_WINDOWS, MB, QuotaBenchOptions, render, run_quota_bench, write_section

    if args.reps < 1 or args.records_scale <= 0 or (args.hit_rate is not None and args.hit_rate <= 0):
        args.subparser.error("--reps must be >= 1, --records-scale and --hit-rate > 0")
    if args.hit_seconds != 0 and args.hit_seconds <= BURST_WINDOWS:
        args.subparser.error(f"--hit-seconds must be 0 (no hit quota) or more than {BURST_WINDOWS}: Kafka's rate "
                             f"lets {BURST_WINDOWS} s worth of the quota through at once")
    options = QuotaBenchOptions(args.reps, args.records_scale, args.hit_seconds,
                                args.hit_rate * MB if args.hit_rate else None, args.dir)
    result = run_quota_bench(options)
    if args.json:
        print(json.dumps(result, indent=2, default=lambda o: dataclasses.asdict(o)))
        return 0
    text = render(result, "zkafka " + shlex.join(args.argv))
    print(text)
    if args.write_benchmarks is not None:
        write_section(args.write_benchmarks, text)
    return 0
