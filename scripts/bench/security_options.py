"""``zkafka bench security``'s options and flags, apart from the bench itself so that building the
``zkafka`` parser imports nothing heavy."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from scripts.bench.security_acls import SIZES

MODES = ("plaintext", "plaintext-acl", "sasl-scram", "ssl", "plaintext-pread")


@dataclass
class SecurityBenchOptions:
    records: int = 1_000_000
    record_bytes: int = 100
    reps: int = 5
    logins: int = 500
    acls: int = 10_000  # the mix loaded into the ACL modes' brokers
    modes: tuple[str, ...] = MODES
    decision_sizes: tuple[int, ...] = SIZES
    decision_seconds: float = 0.2
    directory: Path | None = None


def with_modes(options: SecurityBenchOptions, text: str) -> SecurityBenchOptions:
    """``--modes a,b``: validated against MODES, in the given order."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in MODES]
    if not names or unknown:
        raise ValueError(f"--modes: unknown mode(s) {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(MODES)}")
    return replace(options, modes=names)


def add_parser(bench_commands) -> None:
    """``zkafka bench security``'s flags (scripts/cli.py)."""
    p = bench_commands.add_parser(
        "security", help="what security costs: authorizer decisions with 0-100k ACLs, produce/consume over "
                         "PLAINTEXT with and without ACLs, SASL SCRAM-SHA-512 and SSL, and logins per second")
    p.set_defaults(subparser=p)
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


def options_from_args(args) -> SecurityBenchOptions:
    """The flags, checked: a bad one is a ValueError naming it."""
    for flag in ("records", "record_size", "reps", "logins"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if args.acls < 0:
        raise ValueError(f"--acls must not be negative, got {args.acls}")
    if args.decision_seconds <= 0:
        raise ValueError(f"--decision-seconds must be positive, got {args.decision_seconds}")
    try:
        sizes = tuple(int(s) for s in args.decision_sizes.split(",") if s.strip())
    except ValueError:
        raise ValueError(f"--decision-sizes must be comma-separated integers, got {args.decision_sizes!r}") from None
    if any(s < 0 for s in sizes):
        raise ValueError(f"--decision-sizes must not be negative, got {args.decision_sizes!r}")
    options = SecurityBenchOptions(args.records, args.record_size, args.reps, args.logins, args.acls,
                                   decision_sizes=sizes, decision_seconds=args.decision_seconds, directory=args.dir)
    return with_modes(options, args.modes)
