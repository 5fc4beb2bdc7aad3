"""``kafka-reassign-partitions``: move partitions between brokers (Kafka's ReassignPartitionsCommand, KIP-455).

```
kafka-reassign-partitions --bootstrap-server H:P --generate --topics-to-move-json-file F --broker-list 1,2,3
kafka-reassign-partitions --bootstrap-server H:P --execute --reassignment-json-file F [--throttle B/s] [--additional]
kafka-reassign-partitions --bootstrap-server H:P --verify --reassignment-json-file F [--preserve-throttles]
kafka-reassign-partitions --bootstrap-server H:P --cancel --reassignment-json-file F [--preserve-throttles]
kafka-reassign-partitions --bootstrap-server H:P --list
```

The cluster is read with Metadata and moved with AlterPartitionReassignments / ListPartitionReassignments
sent to the controller, over the broker's own protocol client (``brokers.client``: confluent-kafka has no
reassignment API). ``--throttle`` sets Kafka's throttle configs with confluent-kafka's
IncrementalAlterConfigs: ``leader/follower.replication.throttled.rate`` on every broker involved and
``leader/follower.replication.throttled.replicas`` on the topics; ``--verify`` (and ``--cancel``) clear
them once nothing is moving, unless ``--preserve-throttles``. A ``log_dirs`` entry other than ``any`` moves that
replica into that log dir of its broker (AlterReplicaLogDirs, KIP-113), retried until the replica exists on
the broker (a replica being added) or ``--timeout``; ``--verify`` then reports each such replica's move. ``--command-config``: Kafka's client properties (``scripts.tools.common.client_properties``) for both clients.
Exit codes: 0 ok, 1 an error (a Kafka error
or a bad file, printed), 2 bad flags.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from scripts.tools.common import client_properties
from scripts.tools.kafka_reassign_partitions import plan as plan_
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError





def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-reassign-partitions", description="Move partitions between brokers.")
    action = parser.add_mutually_exclusive_group(required=True)
    for flag in ("--generate", "--execute", "--verify", "--cancel", "--list"):
        action.add_argument(flag, action="store_true")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    parser.add_argument("--command-config", metavar="FILE",
                        help="the admin client's properties (security.protocol, sasl.*, ssl.*)")
    parser.add_argument("--topics-to-move-json-file", type=Path)
    parser.add_argument("--broker-list", metavar="1,2,3")
    parser.add_argument("--reassignment-json-file", type=Path)
    parser.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_S")
    parser.add_argument("--additional", action="store_true")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="with --generate: place replicas without regard to broker.rack")
    parser.add_argument("--preserve-throttles", action="store_true")
    parser.add_argument("--timeout", type=int, default=30000, metavar="MS")
    return parser


def check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.generate and (args.topics_to_move_json_file is None or args.broker_list is None):
        parser.error("--generate needs --topics-to-move-json-file and --broker-list")
    if (args.execute or args.verify or args.cancel) and args.reassignment_json_file is None:
        parser.error("--execute, --verify and --cancel need --reassignment-json-file")
    if args.throttle != -1 and (not args.execute or args.throttle <= 0):
        parser.error("--throttle is a positive rate in bytes/s, with --execute only")
    if args.broker_list is not None:
        try:
            args.brokers = [int(b) for b in args.broker_list.split(",")]
        except ValueError:
            parser.error(f"--broker-list must be comma-separated broker ids, got {args.broker_list!r}")


def _names(tps) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps))


async def _generate(admin: ClusterAdmin, args: argparse.Namespace) -> int:
    topics = plan_.parse_topics_to_move(args.topics_to_move_json_file.read_text())
    current = await admin.assignment(topics)
    missing = sorted(set(topics) - {tp.topic for tp in current})
    if missing:
        raise ClusterAdminError(f"UNKNOWN_TOPIC_OR_PARTITION: topics {missing} do not exist")
    racks = await admin.broker_racks()
    unknown = sorted(set(args.brokers) - set(racks))
    if unknown:
        raise ClusterAdminError(f"--broker-list names brokers that are not registered: {unknown}")
    brokers = list(args.brokers) if args.disable_rack_aware else {b: racks[b] for b in args.brokers}
    print("Current partition replica assignment")
    print(plan_.format_assignment(current))
    print()
    print("Proposed partition reassignment configuration")
    print(plan_.format_assignment(plan_.generate(current, brokers)))
    return 0


async def _execute(admin: ClusterAdmin, args: argparse.Namespace, plan: plan_.Assignment) -> int:
    current = await admin.assignment(sorted({tp.topic for tp in plan}))
    moving = await admin.list_reassignments()
    if moving and not args.additional:
        raise ClusterAdminError("Cannot execute because there is an existing partition assignment.  Use "
                                "--additional to override this and create a new partition assignment in addition "
                                "to the existing one.")
    print("Current partition replica assignment\n")
    print(plan_.format_assignment({tp: current[tp] for tp in plan if tp in current}))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    if args.throttle > 0:
        admin.set_throttles(plan_.brokers_involved(plan, current), args.throttle,
                            plan_.throttled_replicas(plan, current))
        print("Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
              "throttle is removed.")
        print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    errors = await admin.alter_reassignments(dict(plan))
    failed = {tp: e for tp, e in errors.items() if e[0] != ErrorCode.NONE}
    if failed:
        for tp, (code, message) in sorted(failed.items()):
            print(f"Error reassigning partition(s):\n{tp.topic}-{tp.partition}: {code.name}: {message}", file=sys.stderr)
        return 1
    print(f"Successfully started partition reassignment{'s' if len(plan) > 1 else ''} for {_names(plan)}")
    moves = plan_.parse_replica_log_dirs(args.reassignment_json_file.read_text())
    if moves:
        await _execute_moves(admin, moves, args.timeout / 1000)
    return 0


async def _execute_moves(admin: ClusterAdmin, moves: dict[plan_.Replica, str], timeout: float) -> None:
    """Kafka's ``executeMoves``: AlterReplicaLogDirs per broker until every replica has started its move
    (a replica still being added answers REPLICA_NOT_AVAILABLE: asked again 100 ms later)."""
    deadline = asyncio.get_running_loop().time() + timeout
    pending = dict(moves)
    while pending:
        started = []
        for broker in sorted({b for _, b in pending}):
            answers = await admin.alter_replica_log_dirs(broker, {tp: d for (tp, b), d in pending.items() if b == broker})
            for tp, code in answers.items():
                if code == ErrorCode.NONE:
                    started.append((tp, broker))
                elif code != ErrorCode.REPLICA_NOT_AVAILABLE:
                    raise ClusterAdminError(f"cannot move {plan_.replica_name((tp, broker))} to "
                                            f"{pending[(tp, broker)]}: {code.name}")
        if started:
            print(f"Successfully started log directory move{'s' if len(started) > 1 else ''} for: "
                  f"{','.join(plan_.replica_name(r) for r in sorted(started))}")
        for replica in started:
            del pending[replica]
        if pending and asyncio.get_running_loop().time() >= deadline:
            raise ClusterAdminError(f"Timed out before log directory move{'s' if len(pending) > 1 else ''} could be "
                                    f"started for: {','.join(plan_.replica_name(r) for r in sorted(pending))}")
        if pending:
            await asyncio.sleep(0.1)  # Kafka's retry interval: the replica is not on its new broker yet


async def _replica_dirs(admin: ClusterAdmin, moves: dict[plan_.Replica, str]) -> dict:
    """Each moving replica's (current dir, future dir), from its broker's DescribeLogDirs."""
    found: dict[plan_.Replica, tuple] = {}
    for broker in sorted({b for _, b in moves}):
        dirs = await admin.replica_log_dirs(broker, {tp for tp, b in moves if b == broker})
        found.update(((tp, broker), entry) for tp, entry in dirs.items())
    return found


async def _verify(admin: ClusterAdmin, args: argparse.Namespace, plan: plan_.Assignment) -> int:
    topics = sorted({tp.topic for tp in plan})
    current = await admin.assignment(topics)
    moving = set(await admin.list_reassignments())
    lines, done = plan_.verify_lines(plan, current, moving)
    print("Status of partition reassignment:")
    print("\n".join(lines))
    moves = plan_.parse_replica_log_dirs(args.reassignment_json_file.read_text())
    if moves:
        move_lines, moves_done = plan_.move_state_lines(moves, await _replica_dirs(admin, moves))
        print("\n".join(move_lines))
        if not moves_done and done:
            return 0  # the partitions are in place, their replicas still moving between dirs
    if not moving and not args.preserve_throttles:
        _clear_throttles(admin, await admin.broker_ids(), topics)
    return 0 if done or moving & set(plan) else 1


async def _cancel(admin: ClusterAdmin, args: argparse.Namespace, plan: plan_.Assignment) -> int:
    errors = await admin.alter_reassignments({tp: None for tp in plan})
    cancelled = sorted(tp for tp, (code, _) in errors.items() if code == ErrorCode.NONE)
    if cancelled:
        print(f"Successfully cancelled partition reassignment{'s' if len(cancelled) > 1 else ''} for: "
              f"{_names(cancelled)}")
    else:
        print("None of the specified partition reassignments are active.")
    if not await admin.list_reassignments() and not args.preserve_throttles:
        _clear_throttles(admin, await admin.broker_ids(), sorted({tp.topic for tp in plan}))
    return 0


def _clear_throttles(admin: ClusterAdmin, brokers: list[int], topics: list[str]) -> None:
    admin.clear_throttles(brokers, topics)
    print(f"Clearing broker-level throttles on brokers {','.join(str(b) for b in brokers)}")
    for topic in topics:
        print(f"Clearing topic-level throttles on topic {topic}")


async def _list(admin: ClusterAdmin) -> int:
    moving = await admin.list_reassignments()
    if not moving:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp, move in sorted(moving.items()):
        print(f"{tp.topic}-{tp.partition}: replicas: {','.join(map(str, move.replicas))}. "
              f"adding: {','.join(map(str, move.adding))}. removing: {','.join(map(str, move.removing))}.")
    return 0


async def _run(args: argparse.Namespace, properties: dict[str, str]) -> int:
    async with ClusterAdmin(args.bootstrap_server, args.timeout / 1000, "kafka-reassign-partitions",
                            properties) as admin:
        if args.generate:
            return await _generate(admin, args)
        if args.list:
            return await _list(admin)
        plan = plan_.parse_reassignment(args.reassignment_json_file.read_text())
        if args.execute:
            return await _execute(admin, args, plan)
        if args.verify:
            return await _verify(admin, args, plan)
        return await _cancel(admin, args, plan)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_flags(parser, args)
    properties = client_properties.parse_flag(parser, "--command-config", args.command_config)
    try:
        client_properties.check_login(args.bootstrap_server, properties)
        return asyncio.run(_run(args, properties))
    except (plan_.PlanError, ClusterAdminError, client_properties.LoginError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


__all__ = ["main", "TopicPartition"]

if __name__ == "__main__":
    sys.exit(main())
