"""``zkafka demo transactions``: exactly-once consume-transform-produce, a copier killed mid-transaction and fenced."""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "transactions", help="exactly once, live: a transactional copier (consume-transform-produce) is killed "
                             "mid-transaction, its replacement with the same transactional.id fences it; "
                             "prints input vs output and the duplicates (0)")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                   help="an existing cluster (default: start a 3-broker cluster in a temp dir and stop it after)")
    p.add_argument("--records", type=int, default=30000, help="records seeded into the input (default 30000)")
    p.add_argument("--rate", type=int, default=3000, help="records/s each copier copies at most (default 3000)")


def run(args: argparse.Namespace) -> int:
    from scripts.demo.transactions import MIN_RECORDS, demo_command

    if args.records < MIN_RECORDS or args.rate < 1:
        args.subparser.error(f"--records must be at least {MIN_RECORDS} and --rate positive")
    return demo_command(args.bootstrap_server, args.records, args.rate)
