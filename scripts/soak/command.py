"""``zkafka soak``: a containerized cluster under random compound faults for ``--minutes``, every operation
recorded and checked (Jepsen-style). Exit codes: 0 no anomaly, 1 anomalies, 2 bad flags, 3 the harness failed
(no Docker engine or image, the cluster did not start, ...)."""
from __future__ import annotations

import argparse
import shlex
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scripts.soak.runner import SoakOptions

EXIT_VALID, EXIT_ANOMALIES, EXIT_HARNESS = 0, 1, 3
MIN_BROKERS, MAX_BROKERS = 3, 5


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "soak", help="a containerized cluster under random compound faults; every operation recorded and checked "
                     "for lost writes, duplicates, order, transactions and groups; an HTML report")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--minutes", type=float, default=3.0, help="minutes of faults (default 3)")
    p.add_argument("--seed", type=int, default=None, help="the fault schedule's seed (default random; printed first)")
    p.add_argument("--brokers", type=int, default=3, help=f"brokers, {MIN_BROKERS}-{MAX_BROKERS} (default 3)")
    p.add_argument("--faults", default=None, metavar="KIND,...",
                   help="the fault kinds to inject, comma-separated (default all)")
    p.add_argument("--mean-interval-s", type=float, default=12.0, help="mean seconds between faults (default 12)")
    p.add_argument("--drain-seconds", type=float, default=60.0,
                   help="least seconds of drain after the heal (default 60; at most 3 times as long)")
    p.add_argument("--out", type=Path, default=None, help="the run's directory (default soak-runs/<time>-<seed>)")
    p.add_argument("--unsafe", action="store_true",
                   help="Jepsen's unsafe configuration: acks=1, min.insync.replicas=1, unclean leader election "
                        "(the checker must report lost writes)")
    p.add_argument("--rate", type=int, default=500, help="records/s written to the soak topic, over all its producers (default 500)")
    p.add_argument("--partitions", type=int, default=6, help="partitions of the soak topic (default 6)")


def fault_kinds(text: str | None, known: tuple[str, ...] | list[str]) -> list[str] | None:
    """``--faults``' kinds (None: all); ValueError naming the unknown ones."""
    if text is None:
        return None
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in known]
    if not kinds or unknown:
        raise ValueError(f"unknown fault kind(s) {', '.join(unknown) or '(none given)'}; "
                         f"known: {', '.join(known)}")
    return kinds


def options_from(args: argparse.Namespace, known_kinds) -> "SoakOptions":
    """``SoakOptions`` from the flags; ValueError naming the flag that is wrong."""
    from scripts.soak.runner import SoakOptions
    from scripts.soak.workloads.launcher import WorkloadPlan

    if args.minutes <= 0:
        raise ValueError("--minutes must be positive")
    if not MIN_BROKERS <= args.brokers <= MAX_BROKERS:
        raise ValueError(f"--brokers must be {MIN_BROKERS} to {MAX_BROKERS} (RF 3 with min.insync.replicas=2)")
    if args.mean_interval_s <= 0:
        raise ValueError("--mean-interval-s must be positive")
    if args.drain_seconds < 0:
        raise ValueError("--drain-seconds must not be negative")
    if args.rate < 1 or args.partitions < 1:
        raise ValueError("--rate and --partitions must be positive")
    if args.seed is not None and args.seed < 0:
        raise ValueError("--seed must not be negative")
    kinds = fault_kinds(args.faults, known_kinds)
    return SoakOptions(minutes=args.minutes, seed=args.seed, brokers=args.brokers, out_dir=args.out, kinds=kinds,
                       mean_interval_s=args.mean_interval_s, drain_min_s=args.drain_seconds,
                       drain_max_s=max(3 * args.drain_seconds, args.drain_seconds + 60), unsafe=args.unsafe,
                       plan=WorkloadPlan(rate=args.rate, partitions=args.partitions),
                       command="zkafka " + shlex.join(getattr(args, "argv", None) or ["soak"]))


def run(args: argparse.Namespace) -> int:
    try:
        from scripts.soak.nemesis.schedule import KINDS
        options = options_from(args, KINDS)
    except ValueError as exc:
        args.subparser.error(str(exc))  # exits 2
    try:
        from scripts.soak.runner import SoakHarnessError, run_soak
    except ImportError as exc:
        print(f"zkafka soak needs the soak extra (pip install 'zkafka[soak]'): {exc}")
        return EXIT_HARNESS
    try:
        outcome = run_soak(options)
    except SoakHarnessError as exc:
        print(f"zkafka soak: the harness failed: {exc}")
        return EXIT_HARNESS
    except Exception:  # noqa: BLE001 - the harness's own failure, not an anomaly: say so, with its traceback
        traceback.print_exc()
        print("zkafka soak: the harness failed (above); the cluster was removed")
        return EXIT_HARNESS
    return EXIT_VALID if outcome.valid else EXIT_ANOMALIES
