"""``zkafka bench security``'s options, checked from its flags, apart from the bench itself so that building the
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
