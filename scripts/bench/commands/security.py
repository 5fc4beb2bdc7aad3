"""``zkafka bench security``: what security costs (authorizer decisions, PLAINTEXT/ACL/SASL/SSL throughput,
logins per second)."""
from __future__ import annotations

import argparse
from pathlib import Path

from scripts.bench.security_options import MODES, SIZES


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "security", help="what security costs: authorizer decisions with 0-100k ACLs, produce/consume over "
                         "PLAINTEXT with and without ACLs, SASL SCRAM-SHA-512 and SSL, and logins per second")
    p.set_defaults(run=run, subparser=p)
    p.add_argument("--records", type=int, default=1_000_000, help="records per produce/consume run (default 1000000)")
    p.add_argument("--record-size", type=int, default=100, help="bytes per record value (default 100)")
    p.add_argument("--reps", type=int, default=5,
                   help="runs per mode, alternating between modes, each mode first in turn (default 5)")
    p.add_argument("--logins", type=int, default=500, help="sequential logins per connection kind (default 500)")
    p.add_argument("--acls", type=int, default=10_000, help="ACLs loaded into the ACL modes' brokers (default 10000)")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {','.join(MODES)} (default all)")
    p.add_argument("--decision-sizes", default=",".join(map(str, SIZES)),
                   help="ACL counts for the in-process decision rates (default 0,100,10000,100000)")
    p.add_argument("--decision-seconds", type=float, default=0.2, help="seconds per decision-rate round (default 0.2)")
    p.add_argument("--dir", type=Path, default=None, help="where to run (default ./.zkafka)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    from scripts.bench.common import print_report
    from scripts.bench.security import format_report, run_security_bench
    from scripts.bench.security_options import options_from_args

    try:
        options = options_from_args(args)
    except ValueError as exc:
        args.subparser.error(str(exc))
    return print_report(run_security_bench(options), args.json, format_report)
