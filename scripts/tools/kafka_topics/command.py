"""``kafka-topics --zookeeper HOST:PORT | --bootstrap-server HOST:PORT``: create, alter, delete, list, describe.

``--zookeeper`` is Kafka ≤ 2.x's ZooKeeper mode, below. ``--bootstrap-server`` goes through the brokers
with confluent-kafka's AdminClient (``scripts.tools.kafka_topics.admin``), as Kafka ≥ 2.2 does; there
``--partitions`` / ``--replication-factor`` may be left out (the brokers' ``num.partitions`` /
``default.replication.factor``). Exactly one of the two is required.

In ZooKeeper mode, writes go through the same admin path as CreateTopics (``brokers.admin.topic_creation.create_topic``): the
config znode, then ``/brokers/topics/<t>``; the controller does the rest. ``--delete`` writes the
``/admin/delete_topics/<t>`` marker. ``--alter --topic T --partitions N [--replica-assignment ...]`` adds
partitions through CreatePartitions' admin path (``brokers.admin.partition_addition.add_partitions``: a
compare-and-set rewrite of ``/brokers/topics/<t>``) and waits, as ``--create`` does, until every partition
has a leader. ``--replica-assignment`` is Kafka's: comma-separated partitions, each colon-separated broker
ids, listing every partition of the altered topic; the entries of the existing partitions are skipped
(Kafka's TopicCommand), the rest are the new partitions' replica lists.
Exit codes: 0 ok, 1 a Kafka error (printed with its name), 2 bad flags.
"""
from __future__ import annotations

import argparse
import asyncio
import sys

from brokers.model import OFFSETS_TOPIC, TopicPartition
from brokers.protocol.errors import KafkaError
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.admin.partition_addition import add_partitions
from brokers.admin.topic_creation import create_topic
from scripts.tools.common import client_properties, zk_client
from scripts.tools.common.zk_security import ZkClientIdentity, ZkSecurityError
from scripts.tools.kafka_topics import admin as kafka_topics_admin
from scripts.tools.kafka_topics.admin import ADD_PARTITIONS_WARNING
from scripts.tools.kafka_topics.replica_assignment import new_replica_lists, parse_replica_assignment




def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-topics",
                                     description="Create, alter (add partitions), delete, list and describe topics.")
    action = parser.add_mutually_exclusive_group(required=True)
    for flag in ("--create", "--alter", "--delete", "--list", "--describe"):
        action.add_argument(flag, action="store_true")
    connect = parser.add_mutually_exclusive_group(required=True)
    connect.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]", help="ZooKeeper connect string")
    connect.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="Kafka brokers to talk to")
    parser.add_argument("--command-config", metavar="command config property file",
                        help="with --bootstrap-server: the admin client's properties (security.protocol, sasl.*, ssl.*)")
    parser.add_argument("--zk-tls-config-file", metavar="ZooKeeper TLS configuration",
                        help="with --zookeeper: ZooKeeper client TLS properties (zookeeper.ssl.*); ZooKeeper "
                             "credentials come from KAFKA_OPTS=-Djava.security.auth.login.config=jaas.conf")
    parser.add_argument("--topic")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--if-not-exists", action="store_true")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="with --zookeeper: place replicas without regard to broker.rack")
    parser.add_argument("--replica-assignment", metavar="B1:B2,B1:B2,...",
                        help="with --alter: the replica lists of all partitions, existing ones first")
    return parser


async def _run(args: argparse.Namespace, identity: ZkClientIdentity) -> int:
    zk = zk_client.gateway(args.zookeeper, identity, timeout_ms=10000)
    await zk.start()
    kzc = KafkaZkClient(zk)
    try:
        if args.create:
            config = dict(item.split("=", 1) for item in args.config)
            try:
                await create_topic(kzc, args.topic, args.partitions, args.replication_factor, config,
                                   rack_aware=not args.disable_rack_aware)
            except KafkaError as exc:
                if args.if_not_exists and exc.code.name == "TOPIC_ALREADY_EXISTS":
                    return 0
                raise
            if not await _wait_for_leaders(kzc, args.topic, args.partitions):
                print(f"Created topic {args.topic}, but its partitions have no leaders yet (is a controller running?)",
                      file=sys.stderr)
                return 1
            print(f"Created topic {args.topic}.")
        elif args.alter:
            return await _alter(kzc, args)
        elif args.delete:
            if args.topic not in await kzc.get_all_topics():
                print(f"Error: topic {args.topic!r} does not exist", file=sys.stderr)
                return 1
            await kzc.request_topic_deletion(args.topic)
            print(f"Topic {args.topic} is marked for deletion.")
        elif args.list:
            for topic in sorted(await kzc.get_all_topics()):
                print(topic)
        else:
            await _describe(kzc, args.topic)
        return 0
    finally:
        await zk.close()


async def _alter(kzc: KafkaZkClient, args: argparse.Namespace) -> int:
    existing = await kzc.get_topic_assignment(args.topic)
    if not existing:
        print(f"Error: topic {args.topic!r} does not exist", file=sys.stderr)
        return 1
    print(ADD_PARTITIONS_WARNING)
    await add_partitions(kzc, args.topic, args.partitions, new_replica_lists(args.replica_assignment, len(existing)))
    if not await _wait_for_leaders(kzc, args.topic, args.partitions):
        print(f"Added partitions to {args.topic}, but they have no leaders yet (is a controller running?)",
              file=sys.stderr)
        return 1
    print("Adding partitions succeeded!")
    return 0


async def _wait_for_leaders(kzc: KafkaZkClient, topic: str, partitions: int, timeout: float = 15.0) -> bool:
    """Like CreateTopics: return once the controller has written every partition's state."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        states = [await kzc.get_partition_state(TopicPartition(topic, p)) for p in range(partitions)]
        if all(state is not None for state in states):
            return True
        await asyncio.sleep(0.05)
    return False


async def _describe(kzc: KafkaZkClient, only: str | None) -> None:
    for topic in sorted(await kzc.get_all_topics()):
        if only and topic != only:
            continue
        assignment = await kzc.get_topic_assignment(topic) or {}
        config = await kzc.get_topic_config(topic)
        rf = len(next(iter(assignment.values()), []))
        configs = ",".join(f"{k}={v}" for k, v in sorted(config.items()))
        print(f"Topic: {topic}\tPartitionCount: {len(assignment)}\tReplicationFactor: {rf}\tConfigs: {configs}")
        for partition, replicas in sorted(assignment.items()):
            state = await kzc.get_partition_state(TopicPartition(topic, partition))
            leader = state.leader_and_isr.leader if state else "none"
            isr = ",".join(map(str, state.leader_and_isr.isr)) if state else ""
            print(f"\tTopic: {topic}\tPartition: {partition}\tLeader: {leader}\t"
                  f"Replicas: {','.join(map(str, replicas))}\tIsr: {isr}")


def _check_alter_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.alter and not args.topic:
        parser.error("--topic is required with --alter")
    if args.alter and args.partitions is None:
        parser.error("--partitions is required with --alter (only adding partitions is supported)")
    if args.alter and args.partitions <= 0:
        parser.error(f"--partitions must be positive, got {args.partitions}")
    if args.alter and (args.config or args.replication_factor is not None or args.if_not_exists):
        parser.error("--config, --replication-factor and --if-not-exists cannot be used with --alter")
    if args.replica_assignment is not None and not args.alter:
        parser.error("--replica-assignment is only supported with --alter")
    if args.replica_assignment is not None:
        try:
            parse_replica_assignment(args.replica_assignment)
        except ValueError as exc:
            parser.error(f"--replica-assignment: {exc}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.create or args.delete) and not args.topic:
        parser.error("--topic is required with --create and --delete")
    _check_alter_flags(parser, args)
    if args.create and args.zookeeper and (args.partitions is None or args.replication_factor is None):
        parser.error("--create needs --partitions and --replication-factor")
    if any("=" not in item for item in args.config):
        parser.error("--config takes KEY=VALUE")
    if args.alter and args.topic == OFFSETS_TOPIC:  # Kafka's TopicCommand refuses it in both modes
        print("Error: The number of partitions for the offsets topic cannot be changed.", file=sys.stderr)
        return 1
    if args.command_config and not args.bootstrap_server:
        parser.error("--command-config is only supported with --bootstrap-server")
    if args.zk_tls_config_file and not args.zookeeper:
        parser.error("--zk-tls-config-file is only supported with --zookeeper")
    if args.bootstrap_server:
        return kafka_topics_admin.run(args, client_properties.parse_flag(parser, "--command-config",
                                                                         args.command_config))
    try:
        identity = zk_client.identity(args.zk_tls_config_file)
        return asyncio.run(_run(args, identity))
    except ZkSecurityError as exc:  # KAFKA_OPTS' JAAS file or --zk-tls-config-file
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except KafkaError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except ZkError as exc:
        print(zk_client.error_line(args.zookeeper, exc, identity), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
