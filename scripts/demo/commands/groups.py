"""``zkafka demo groups``: a consumer group live, members joining, leaving and killed."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "groups", help="a consumer group live: members join one by one, one leaves, one is killed (SIGKILL); "
                       "every rebalance and each member's records/s; checks that no record was lost")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                   help="an existing cluster (default: start a 3-broker cluster in a temp dir and stop it after)")
    p.add_argument("--duration-s", type=float, default=40.0,
                   help="seconds from the first member to the producer's stop (default 40, at least 10)")
    p.add_argument("--rate", type=int, default=500, help="records/s the producer sends (default 500)")


def run(args: argparse.Namespace) -> int:
    from scripts.demo.groups import MIN_DURATION_S, demo_command

    if args.duration_s < MIN_DURATION_S or args.rate < 1:
        args.subparser.error(f"--duration-s must be at least {MIN_DURATION_S:g} and --rate positive")
    return demo_command(args.bootstrap_server, args.duration_s, args.rate)
