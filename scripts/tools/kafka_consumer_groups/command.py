"""``kafka-consumer-groups --bootstrap-server HOST:PORT``: Kafka 2.8's ``ConsumerGroupCommand``.

confluent-kafka's AdminClient sends ListGroups, DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit and
DeleteGroups, as Kafka's tool does (``admin``). Exactly one action:

* ``--list``: every group id, sorted, one per line.
* ``--describe (--group G ... | --all-groups)``: per group (sorted), after a blank line, Kafka's offsets
  table, or with ``--members`` / ``--state`` those tables (``describe``, ``tables``).
* ``--reset-offsets (--group G ... | --all-groups) (--topic T[:P1,P2] ... | --all-topics)`` and one of
  ``--to-earliest``, ``--to-latest``, ``--to-offset N``, ``--shift-by N``, ``--to-datetime
  YYYY-MM-DDTHH:mm:SS.sss[Z|±HH:MM]`` (no zone: UTC, as Kafka's ``Utils.getDateTime``), then ``--execute``
  or ``--dry-run`` (the default, with Kafka's WARN on stderr): the table GROUP TOPIC PARTITION NEW-OFFSET
  (``reset``; the arithmetic in ``reset_plan``). Only Empty or Dead groups may be reset, otherwise ``Error:
  Assignments can only be reset if the group 'G' is inactive, but the current state is S.`` ``--execute``
  commits.
* ``--delete (--group G ... | --all-groups)`` (``delete``).

``--command-config`` is Kafka's client properties file (``scripts.tools.common.client_properties``: security.protocol,
sasl.*, PEM ssl.*); SASL credentials the brokers refuse are one ``Error: ...`` line.
No ``--delete-offsets``: confluent-kafka's AdminClient has no OffsetDelete call.
Exit codes: 0 ok, 1 a Kafka error (``Error: NAME: message`` on stderr), 2 bad flags (``syntax``).
"""
from __future__ import annotations

import argparse
import sys

from scripts.tools.common import client_properties
from scripts.tools.kafka_consumer_groups.admin import AdminClient, KafkaException, error_text, group_ids
from scripts.tools.kafka_consumer_groups.delete import delete_groups
from scripts.tools.kafka_consumer_groups.describe import describe_groups, list_groups
from scripts.tools.kafka_consumer_groups.reset import reset_offsets
from scripts.tools.kafka_consumer_groups.reset_plan import CommandError
from scripts.tools.kafka_consumer_groups.syntax import DRY_RUN_WARNING, build_parser, problem


def run(args: argparse.Namespace, properties: dict[str, str] | None = None) -> int:
    """``properties``: Kafka's client properties of ``--command-config`` (``scripts.tools.common.client_properties``)."""
    admin = client_properties.admin_client(AdminClient, args.bootstrap_server, properties or {})
    if admin is None:
        return 1
    try:
        if args.list:
            return list_groups(admin)
        groups = list(dict.fromkeys(args.group)) if args.group else group_ids(admin)
        if args.describe:
            return describe_groups(admin, groups, args)
        if args.delete:
            return delete_groups(admin, groups)
        return reset_offsets(admin, groups, args)
    except CommandError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except KafkaException as exc:
        print(f"Error: {error_text(exc)}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if problem(args):
        parser.error(problem(args))
    properties = client_properties.parse_flag(parser, "--command-config", args.command_config)
    if args.reset_offsets and not (args.execute or args.dry_run):
        print(DRY_RUN_WARNING, file=sys.stderr)
    return run(args, properties)


if __name__ == "__main__":
    sys.exit(main())
