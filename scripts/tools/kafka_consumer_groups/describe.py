"""``--list`` and ``--describe``: group ids, and per group Kafka's offsets, ``--members`` or ``--state`` table.

First, on stderr as in Kafka: ``Consumer group 'G' has no active members.`` (state Empty) or ``Warning:
Consumer group 'G' is rebalancing.``. State Dead (or GROUP_ID_NOT_FOUND) without committed offsets:
``Error: Consumer group 'G' does not exist.``; with committed offsets (they live in ZooKeeper, the
coordinator may not have loaded the group) it is shown as Empty. No committed offset: CURRENT-OFFSET and
LAG ``-``; LOG-END-OFFSET is the high watermark.
"""
from __future__ import annotations

import argparse
import sys

from scripts.tools.kafka_consumer_groups import admin as group_admin
from scripts.tools.kafka_consumer_groups.admin import AdminClient
from scripts.tools.kafka_consumer_groups.tables import (
    MISSING, format_members, format_offsets, format_state, offset_rows)


def list_groups(admin: AdminClient) -> int:
    for group in group_admin.group_ids(admin):
        print(group)
    return 0


def describe_groups(admin: AdminClient, groups: list[str], args: argparse.Namespace) -> int:
    """Each group in name order; 1 if any does not exist."""
    return max([describe(admin, group, description, args)
                for group, description in sorted(group_admin.descriptions(admin, groups).items())], default=0)


def describe(admin: AdminClient, group: str, description: object | None, args: argparse.Namespace) -> int:
    state = group_admin.state(description)
    if state == "Dead" and group_admin.committed(admin, group):
        state = "Empty"  # offsets in ZooKeeper, a group the coordinator has not loaded: Kafka would say Empty
    if state == "Dead":
        print(f"Error: Consumer group '{group}' does not exist.", file=sys.stderr)
        return 1
    if state == "Empty":
        print(f"Consumer group '{group}' has no active members.", file=sys.stderr)
    elif state in ("PreparingRebalance", "CompletingRebalance"):
        print(f"Warning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
    for line in _describe_lines(admin, group, description, state, args):
        print(line)
    return 0


def _describe_lines(admin: AdminClient, group: str, description: object | None, state: str,
                    args: argparse.Namespace) -> list[str]:
    members = group_admin.members(description)
    if args.state:
        node = description.coordinator if description is not None else None
        coordinator = f"{node.host}:{node.port} ({node.id})" if node is not None else MISSING
        strategy = (description.partition_assignor if description is not None else "") or ""
        return format_state(group, coordinator, strategy, state, len(members))
    if args.members:
        return format_members(group, members) if members else []
    committed = group_admin.committed(admin, group)
    owned = {tp for m in members for tp in m.partitions}
    rows = offset_rows(group, members, committed, group_admin.log_end_offsets(admin, sorted(owned | set(committed))))
    return format_offsets(rows) if rows else []
