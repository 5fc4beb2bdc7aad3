"""``--delete``: DeleteGroups, and Kafka's report of it.

``Deletion of requested consumer groups ('G1', 'G2') was successful.``, else ``Error: Deletion of some
consumer groups failed:`` and ``* Group 'G' could not be deleted due to: NON_EMPTY_GROUP: ...`` on stderr,
then the groups that were deleted on stdout.
"""
from __future__ import annotations

import sys

from scripts.tools.kafka_consumer_groups import admin as group_admin
from scripts.tools.kafka_consumer_groups.admin import AdminClient


def delete_groups(admin: AdminClient, groups: list[str]) -> int:
    deleted, failed = group_admin.delete_groups(admin, groups)
    if not failed:
        print(f"Deletion of requested consumer groups ({_quoted(deleted)}) was successful.")
        return 0
    print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
    for group, error in failed.items():
        print(f"* Group '{group}' could not be deleted due to: {error}", file=sys.stderr)
    if deleted:
        print(f"These consumer groups were deleted successfully: {_quoted(deleted)}")
    return 1


def _quoted(groups: list[str]) -> str:
    return ", ".join(f"'{g}'" for g in groups)
