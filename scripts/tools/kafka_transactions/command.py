"""``kafka-transactions --bootstrap-server HOST:PORT [--command-config FILE] COMMAND``: Kafka 3.x's
``TransactionsCommand`` (KIP-664), to find and end hanging transactions.

* ``list``: every transaction every coordinator knows (``tables.list_table``);
* ``describe --transactional-id ID``: its coordinator's view (``tables.describe_table``);
* ``describe-producers --topic T --partition P [--broker-id B]``: the partition's active producers on its
  leader or on replica B;
* ``find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MIN]``: open
  transactions older than the timeout that no coordinator will complete (``tables.hanging_transactions``);
* ``abort --topic T --partition P --start-offset N`` (or ``--producer-id --producer-epoch
  --coordinator-epoch``): an ABORT marker written by the partition's leader (needs ClusterAction).

Requests in ``admin``; ``--command-config`` is Kafka's client properties file (TLS, SASL). A failure is
Kafka's one line on stderr, ``<what failed>: <message>. Enable debug logging for additional detail.``, and
exit code 1; bad flags exit 2 (argparse) or 1 with Kafka's message (``syntax.problem``).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time

from scripts.tools.common import client_properties
from scripts.tools.common.cluster_admin import ClusterAdmin
from scripts.tools.kafka_transactions import tables
from scripts.tools.kafka_transactions.admin import TransactionsAdmin, TransactionsAdminError
from scripts.tools.kafka_transactions.syntax import build_parser, problem

TIMEOUT_S = 30.0
MAX_BATCH_SIZE = 500  # partitions per DescribeProducers, as Kafka's tool batches them


class CommandFailed(Exception):
    pass


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _fail_on(what: str, call):
    try:
        return await call
    except TransactionsAdminError as exc:
        raise CommandFailed(f"{what}: {exc}. Enable debug logging for additional detail.") from None


async def list_command(admin: TransactionsAdmin, args: argparse.Namespace) -> list[str]:
    return tables.list_table(await _fail_on("Failed to list transactions", admin.list_transactions()))


async def describe_command(admin: TransactionsAdmin, args: argparse.Namespace) -> list[str]:
    description = await _fail_on(f"Failed to describe transaction state of transactional-id "
                                 f"`{args.transactional_id}`", admin.describe_transaction(args.transactional_id))
    return tables.describe_table(description, _now_ms())


async def describe_producers_command(admin: TransactionsAdmin, args: argparse.Namespace) -> list[str]:
    tp = (args.topic, args.partition)
    where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
    producers = await _fail_on(f"Failed to describe producers for partition {tables.tp_name(tp)} on {where}",
                               admin.describe_producers([tp], args.broker_id))
    return tables.producers_table(producers.get(tp, []))


async def abort_command(admin: TransactionsAdmin, args: argparse.Namespace) -> list[str]:
    tp = (args.topic, args.partition)
    if args.start_offset is None:
        spec = tables.abort_spec_given(tp, args.producer_id, args.producer_epoch, args.coordinator_epoch)
    else:
        producers = await _fail_on(f"Failed to validate producer state for partition {tables.tp_name(tp)}",
                                   admin.describe_producers([tp]))
        spec = tables.abort_spec_at(tp, producers.get(tp, []), args.start_offset)
        if spec is None:
            raise CommandFailed(f"Could not find any open transactions starting at offset {args.start_offset} "
                                f"on partition {tables.tp_name(tp)}")
    await _fail_on(f"Failed to abort transaction {spec}", admin.abort_transaction(spec))
    return []


async def _partitions_to_search(admin: TransactionsAdmin, args: argparse.Namespace) -> list[tables.TP]:
    if args.topic is not None and args.partition is not None:
        return [(args.topic, args.partition)]
    what = "Failed to list topics" if args.topic is None else "Failed to describe 1 topics"
    leaders = await _fail_on(what, admin.leaders(None if args.topic is None else [args.topic]))
    return sorted(tp for tp, (_, replicas) in leaders.items() if args.broker_id is None or args.broker_id in replicas)


async def find_hanging_command(admin: TransactionsAdmin, args: argparse.Namespace) -> list[str]:
    partitions = await _partitions_to_search(admin, args)
    producers: dict[tables.TP, list[tables.ProducerState]] = {}
    for i in range(0, len(partitions), MAX_BATCH_SIZE):
        batch = partitions[i:i + MAX_BATCH_SIZE]
        producers.update(await _fail_on(f"Failed to describe producers for {len(batch)} partitions on broker "
                                        f"{args.broker_id}", admin.describe_producers(batch, args.broker_id)))
    now_ms = _now_ms()
    candidates = tables.candidate_open_transactions(producers, now_ms, args.max_transaction_timeout * 60_000)
    if not candidates:
        return tables.hanging_table([], now_ms)
    producer_ids = {c.producer.producer_id for c in candidates}
    listings = await _fail_on(f"Failed to list transactions for {len(producer_ids)} producers",
                              admin.list_transactions(producer_ids))
    transactional_ids = {t.producer_id: t.transactional_id for ts in listings.values() for t in ts
                         if t.producer_id in producer_ids}
    descriptions: dict[str, tables.TransactionDescription | None] = {}
    for transactional_id in sorted(set(transactional_ids.values())):
        try:
            descriptions[transactional_id] = await admin.describe_transaction(transactional_id)
        except TransactionsAdminError:
            descriptions[transactional_id] = None  # not found: nobody will complete it
    return tables.hanging_table(tables.hanging_transactions(candidates, transactional_ids, descriptions), now_ms)


COMMANDS = {"list": list_command, "describe": describe_command, "describe-producers": describe_producers_command,
            "abort": abort_command, "find-hanging": find_hanging_command}


async def run(args: argparse.Namespace, properties: dict[str, str]) -> int:
    try:
        async with ClusterAdmin(args.bootstrap_server, TIMEOUT_S, properties=properties) as cluster:
            lines = await COMMANDS[args.command](TransactionsAdmin(cluster), args)
    except CommandFailed as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    properties = client_properties.parse_flag(parser, "--command-config", args.command_config)
    if (message := problem(args)) is not None:
        print(message, file=sys.stderr)
        return 1
    return asyncio.run(run(args, properties))


if __name__ == "__main__":
    sys.exit(main())
