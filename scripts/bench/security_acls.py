"""``zkafka bench security``, in process: what one authorizer decision costs with 0 to 100,000 ACLs.

``acl_mix(n)`` is a deterministic, realistic set of ``n`` ACL entries (``brokers.security.acls.Acls``), by
entry index ``i`` modulo 20:

* 0-13 (70 %): a literal topic ACL, ``team<t>.orders-<i>`` with ``t = i mod T``, ALLOW Read (odd
  ``i``) or Write (even) for ``User:app<i mod U>``, host ``*``;
* 14-16 (15 %): a prefixed topic ACL, ``team<p>.`` with ``p = (i div 20) mod T``, ALLOW All for
  ``User:svc<i>`` (one of the team's services; ~15 per team prefix at every size);
* 17 (5 %): a literal topic DENY Write for ``User:app<i mod U>`` from host ``10.0.0.<i mod 250>``;
* 18 (5 %): a prefixed topic DENY Read for ``User:intern`` on ``team<t>.orders-<i>``;
* 19 (5 %): a literal group ACL, ``group-<i>``, ALLOW Read for ``User:app<i mod U>``;

and entry 0 is replaced by the wildcard: literal topic ``*``, ALLOW Describe for ``User:monitor``.
``U`` = max(1, n / 10) users, ``T`` = max(2, n / 100) teams, so a team prefix covers ~70 topics at
every size (``team1.orders-1``, ``User:app1`` and ``User:svc34`` on ``team1.`` exist from n = 40 on). Every
entry differs from the others in its pattern or its principal, so the mix holds exactly ``n``. Entries of one pattern share its set, as in ZooKeeper (one znode per pattern).

The decisions timed are ``AclAuthorizer.authorize``'s two steps, ``matching_acls`` (with the prefix
index the authorizer keeps) then ``decide`` (see ``CASES``), plus ``decide_any``
(``authorizeByResourceType``, InitProducerId without IdempotentWrite), which scans every ACL.
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable

from brokers.security import acls as acl
from brokers.security.acls import AclEntry, Acls, ResourcePattern

SUPER_USER = "User:admin"
HOST = "192.168.1.7"
SIZES = (0, 100, 10_000, 100_000)


def _entry(i: int, users: int, teams: int) -> tuple[ResourcePattern, AclEntry]:
    team, app, kind = i % teams, f"User:app{i % users}", i % 20
    prefix_team = (i // 20) % teams
    if i == 0:
        return ResourcePattern(acl.TOPIC, acl.WILDCARD), AclEntry("User:monitor", "*", acl.DESCRIBE, acl.ALLOW)
    if kind < 14:
        return (ResourcePattern(acl.TOPIC, f"team{team}.orders-{i}"),
                AclEntry(app, "*", acl.READ if i % 2 else acl.WRITE, acl.ALLOW))
    if kind < 17:
        return (ResourcePattern(acl.TOPIC, f"team{prefix_team}.", acl.PREFIXED),
                AclEntry(f"User:svc{i}", "*", acl.ALL, acl.ALLOW))
    if kind == 17:
        return (ResourcePattern(acl.TOPIC, f"team{team}.orders-{i}"),
                AclEntry(app, f"10.0.0.{i % 250}", acl.WRITE, acl.DENY))
    if kind == 18:
        return (ResourcePattern(acl.TOPIC, f"team{team}.orders-{i}", acl.PREFIXED),
                AclEntry("User:intern", "*", acl.READ, acl.DENY))
    return ResourcePattern(acl.GROUP, f"group-{i}"), AclEntry(app, "*", acl.READ, acl.ALLOW)


def acl_mix(n: int) -> Acls:
    """The mix of ``n`` entries described in the module docstring."""
    users, teams = max(1, n // 10), max(2, n // 100)
    by_pattern: dict[ResourcePattern, set[AclEntry]] = defaultdict(set)
    for i in range(n):
        pattern, entry = _entry(i, users, teams)
        by_pattern[pattern].add(entry)
    return {pattern: frozenset(entries) for pattern, entries in by_pattern.items()}


def count_entries(acls: Acls) -> int:
    return sum(len(entries) for entries in acls.values())


# case -> (principal, operation, resource type, resource name, expected answer with a mix of >= 100 ACLs)
CASES: dict[str, tuple[str, int, int, str, bool]] = {
    # app1 may Read team1.orders-1 (its literal ALLOW); the prefix team1. and the wildcard apply too
    "hit (literal allow)": ("User:app1", acl.READ, acl.TOPIC, "team1.orders-1", True),
    # svc34 may do anything under team1.'s prefix: no literal ACL for this name
    "hit (prefixed allow)": ("User:svc34", acl.WRITE, acl.TOPIC, "team1.payments", True),
    # nobody's ACLs: every applicable ACL is looked at and none matches
    "miss (no matching acl)": ("User:nobody", acl.WRITE, acl.TOPIC, "team1.orders-1", False),
    "super user": (SUPER_USER, acl.WRITE, acl.TOPIC, "team1.orders-1", True),
}


def decision(acls: Acls, case: str) -> Callable[[], bool]:
    """One ``AclAuthorizer.authorize`` as the broker runs it (matching with its prefix index, then decide)."""
    principal, operation, resource_type, name, _ = CASES[case]
    index, super_users = acl.prefix_index(acls), frozenset({SUPER_USER})

    def run() -> bool:
        applicable = acl.matching_acls(acls, resource_type, name, index)
        return acl.decide(applicable, principal, HOST, operation, super_users=super_users)
    return run


def any_decision(acls: Acls) -> Callable[[], bool]:
    """``authorize_any`` for Write on some topic, by a principal with no ACLs (the whole scan, a miss)."""
    return lambda: acl.decide_any(acls, acl.TOPIC, "User:nobody", HOST, acl.WRITE)


def rate(call: Callable[[], object], min_seconds: float = 0.2, rounds: int = 3) -> float:
    """Calls per second: the best of ``rounds`` rounds, each as many calls as fill ``min_seconds``
    (the best, since on a shared machine every disturbance only ever slows a round down)."""
    batch, best = 1, 0.0
    while True:  # grow the batch until one takes a tenth of the round
        start = time.perf_counter()
        for _ in range(batch):
            call()
        if time.perf_counter() - start >= min_seconds / 10 or batch >= 1 << 24:
            break
        batch *= 2
    for _ in range(rounds):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < min_seconds:
            for _ in range(batch):
                call()
            calls += batch
        best = max(best, calls / elapsed)
    return best


def run_decisions(sizes: tuple[int, ...] = SIZES, min_seconds: float = 0.2) -> list[dict]:
    """Per size: the mix's entry and pattern counts, decisions/s per case and its answer, and the
    ``decide_any`` rate."""
    rows = []
    for n in sizes:
        acls = acl_mix(n)
        row = {"acls": count_entries(acls), "patterns": len(acls), "cases": {}}
        for case in CASES:
            call = decision(acls, case)
            row["cases"][case] = {"per_s": rate(call, min_seconds), "answer": call()}
        row["decide_any_per_s"] = rate(any_decision(acls), min_seconds)
        rows.append(row)
    return rows


def format_decisions(rows: list[dict]) -> list[str]:
    cases = list(CASES)
    lines = ["| ACLs (patterns) | " + " | ".join(f"{c} /s" for c in cases) + " | decide_any (Write on some topic) /s |",
             "|---" * (len(cases) + 2) + "|"]
    for row in rows:
        cells = [f"{row['cases'][c]['per_s']:,.0f}" + ("" if row['cases'][c]['answer'] else " (deny)") for c in cases]
        lines.append(f"| {row['acls']:,} ({row['patterns']:,}) | " + " | ".join(cells)
                     + f" | {row['decide_any_per_s']:,.0f} |")
    return lines
