"""``--reset-offsets``: refuse groups that are not Empty or Dead, plan each group's new offsets from what the
brokers answer (``reset_plan``), print the plan, and with ``--execute`` commit it.

``--all-topics`` means the partitions with committed offsets; ``--topic T`` every partition of T.
"""
from __future__ import annotations

import argparse
import sys

from scripts.tools.kafka_consumer_groups import admin as group_admin
from scripts.tools.kafka_consumer_groups.admin import AdminClient
from scripts.tools.kafka_consumer_groups.reset_plan import ResetSpec, new_offsets, reset_spec
from scripts.tools.kafka_consumer_groups.syntax import TP, parse_topics
from scripts.tools.kafka_consumer_groups.tables import format_reset


def reset_offsets(admin: AdminClient, groups: list[str], args: argparse.Namespace) -> int:
    spec = reset_spec(args)
    plans: dict[str, dict[TP, int]] = {}
    status = 0
    for group, description in group_admin.descriptions(admin, groups).items():
        state = group_admin.state(description)
        if state not in ("Empty", "Dead"):
            print(f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                  f"but the current state is {state}.", file=sys.stderr)
            status = 1
            continue
        plans[group] = _plan(admin, group, spec, args)
        if args.execute and plans[group]:
            group_admin.commit(admin, group, plans[group])
    if plans:
        print("\n".join(format_reset(plans)))
    return status


def _plan(admin: AdminClient, group: str, spec: ResetSpec, args: argparse.Namespace) -> dict[TP, int]:
    """Asks only for the log offsets the scenario needs."""
    committed = group_admin.committed(admin, group) if args.all_topics or spec.mode == "shift" else {}
    partitions = sorted(committed) if args.all_topics else _partitions(admin, args.topic)
    earliest = group_admin.log_start_offsets(admin, partitions) if spec.mode not in ("latest", "datetime") else {}
    latest = group_admin.log_end_offsets(admin, partitions) if spec.mode != "earliest" else {}
    by_time = group_admin.offsets_for_time(admin, partitions, spec.value) if spec.mode == "datetime" else {}
    return new_offsets(spec, partitions, earliest, latest, committed, by_time)


def _partitions(admin: AdminClient, topic_args: list[str]) -> list[TP]:
    """The ``--topic`` partitions: the ones named, and every partition of the topics named whole."""
    named, whole = parse_topics(topic_args)
    if whole:
        named += group_admin.all_partitions(admin, whole)
    return sorted(set(named))
