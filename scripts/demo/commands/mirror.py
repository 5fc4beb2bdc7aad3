"""``zkafka demo mirror``: a consumer group fails over to a second cluster from MirrorMaker 2's translated offsets."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "mirror", help="mirroring between clusters, live: kafka-mirror-maker copies cluster a to cluster b while a "
                       "group reads at a; a fails (SIGKILL); the group moves to b from its translated offsets "
                       "(translate-offsets --execute); prints produced N, consumed N, re-read <= window")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=10_000, help="records produced at cluster a (default 10000)")
    p.add_argument("--rate", type=int, default=1000, help="records/s the producer sends (default 1000)")
    p.add_argument("--read-rate", type=int, default=300,
                   help="records/s the group reads at cluster a (default 300; at b it reads as fast as it can)")
    p.add_argument("--checkpoint-interval-s", type=float, default=1.0,
                   help="emit.checkpoints.interval.seconds and sync.group.offsets.interval.seconds (default 1)")
    p.add_argument("--exactly-once", action="store_true",
                   help="mirror exactly once (exactly.once.source.support = enabled)")


def run(args: argparse.Namespace) -> int:
    from scripts.demo.mirror import MIN_RECORDS, demo_command

    if args.records < MIN_RECORDS or args.rate < 1 or args.read_rate < 1 or args.checkpoint_interval_s <= 0:
        args.subparser.error(f"--records must be at least {MIN_RECORDS}, --rate, --read-rate and "
                             f"--checkpoint-interval-s positive")
    return demo_command(args.records, args.rate, args.read_rate, args.checkpoint_interval_s, args.exactly_once)
