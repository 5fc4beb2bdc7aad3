"""``kafka-configs``: describe and change topic and broker configs while the cluster runs (Kafka's
ConfigCommand, 2.8 flags and output).

    kafka-configs --bootstrap-server H:P --entity-type topics --entity-name T --describe [--all]
    kafka-configs --bootstrap-server H:P --entity-type brokers (--entity-name ID | --entity-default) \\
        --alter [--add-config 'k1=v1,k2=[a,b]'] [--delete-config k1,k2]
    kafka-configs --zookeeper H:P[/chroot] --entity-type topics --entity-name T --alter --add-config ...
    kafka-configs (--zookeeper H:P | --bootstrap-server H:P [--command-config F]) --entity-type users \\
        --entity-name U (--describe | --alter --add-config 'SCRAM-SHA-512=[iterations=8192,password=P]')

Users (SCRAM credentials) are ``scripts.tools.kafka_configs.users`` (``--zookeeper``) and
``scripts.tools.kafka_configs.users_admin`` (``--bootstrap-server``, AlterUserScramCredentials).

``--bootstrap-server`` goes through the brokers (``scripts.tools.kafka_configs.admin``), as the client that
``--command-config`` describes (Kafka's client properties: ``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, PEM ``ssl.*``; ``scripts.tools.common.client_properties``) for every entity type: confluent-kafka's
AdminClient sends IncrementalAlterConfigs with SET for each ``--add-config`` pair and DELETE for each
``--delete-config`` key; DescribeConfigs goes over the broker's internal client (all synonyms kept). ``--add-config`` is Kafka's syntax: comma-separated ``key=value`` pairs, where
a value in square brackets may hold commas (``k=[a,b]`` sets ``a,b``). Deleting a key that has no
override is ``Invalid config(s): k`` (exit 1), as in Kafka. Output:

* ``Dynamic configs for topic T are:`` (``broker 1``; ``Default configs for brokers in the cluster
  are:`` with ``--entity-default``; ``All configs for ...`` with ``--all``), then per entry
  ``  k=v sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:k=v, DEFAULT_CONFIG:log.k=v}``.
* ``Completed updating config for topic T.`` / ``Completed updating default config for brokers in the
  cluster.``

``--zookeeper`` (Kafka 2.x's direct mode) writes ``/config/<type>/<name>`` and a ``/config/changes``
notification itself, validating as the brokers do; ``--describe`` prints ``Configs for topic 'T' are
k=v,...`` (the overrides only). Exit codes: 0 ok, 1 a Kafka error, 2 bad flags (named).
"""
from __future__ import annotations

import argparse
import asyncio
import sys

from brokers.dynamic_config.broker_config import validate_broker_overrides
from brokers.storage.log_config import InvalidConfigError, LogConfig
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.zk.paths import ConfigChangeNotificationZNode
from scripts.tools.common import zk_client
from scripts.tools.common.client_properties import LoginError
from scripts.tools.common.zk_security import ZkClientIdentity, ZkSecurityError
from scripts.tools.kafka_configs import users
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config, parse_delete_config

ENTITY_TYPES = ("topics", "brokers", "users")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-configs", description="Add/remove entity config for a topic or broker.")
    connect = parser.add_mutually_exclusive_group(required=True)
    connect.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="Kafka brokers to talk to")
    connect.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]", help="ZooKeeper connect string (direct mode)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the entity's configs")
    action.add_argument("--alter", action="store_true", help="change the entity's configs")
    parser.add_argument("--entity-type", required=True, choices=ENTITY_TYPES)
    entity = parser.add_mutually_exclusive_group()
    entity.add_argument("--entity-name", metavar="NAME", help="topic name or broker id")
    entity.add_argument("--entity-default", action="store_true", help="the cluster-wide default (brokers only)")
    parser.add_argument("--add-config", metavar="k1=v1,k2=[v1,v2]", help="configs to set")
    parser.add_argument("--delete-config", metavar="k1,k2", help="configs to remove")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, not only the dynamic ones")
    parser.add_argument("--command-config", metavar="FILE", help="client properties (security.protocol, sasl.*, ssl.*)")
    parser.add_argument("--zk-tls-config-file", metavar="ZooKeeper TLS configuration",
                        help="with --zookeeper: ZooKeeper client TLS properties (zookeeper.ssl.*); ZooKeeper "
                             "credentials come from KAFKA_OPTS=-Djava.security.auth.login.config=jaas.conf")
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ConfigCommandOptions.checkArgs: every problem names its flag (argparse exits 2)."""
    if args.entity_default and args.entity_type != "brokers":
        parser.error("--entity-default is only valid with --entity-type brokers")
    if args.alter and not (args.entity_name is not None or args.entity_default):
        parser.error("--alter needs --entity-name or --entity-default")
    if args.alter and not (args.add_config or args.delete_config):
        parser.error("--alter needs at least one of --add-config or --delete-config")
    if args.describe and (args.add_config or args.delete_config):
        parser.error("--add-config and --delete-config are only valid with --alter")
    if args.zookeeper and args.entity_name is None and not args.entity_default:
        parser.error("--zookeeper: --entity-name or --entity-default is required")
    if args.zk_tls_config_file and not args.zookeeper:
        parser.error("--bootstrap-server doesn't support --zk-tls-config-file option. If you intend the command to "
                     "communicate directly with ZooKeeper, use the --zookeeper option.")
    if args.all and not args.describe:
        parser.error("--all is only valid with --describe")
    if args.entity_type == "users" and args.all:
        parser.error("--all is not valid with --entity-type users")
    if args.entity_type == "brokers" and args.entity_name is not None and not args.entity_name.isdigit():
        parser.error(f"--entity-name: the entity name for brokers must be a broker id, got {args.entity_name!r}")
    for flag, parse in (("--add-config", parse_add_config), ("--delete-config", parse_delete_config)):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            try:
                parse(value)
            except ValueError as exc:
                parser.error(f"{flag}: {exc}")


# -- --zookeeper (direct) mode -------------------------------------------------------------------
async def _zookeeper(args: argparse.Namespace, identity: ZkClientIdentity) -> int:
    entity = ConfigChangeNotificationZNode.DEFAULT_ENTITY if args.entity_default else args.entity_name
    label = f"{args.entity_type[:-1]} '{entity}'"
    zk = zk_client.gateway(args.zookeeper, identity, timeout_ms=10000)
    await zk.start()
    kzc = KafkaZkClient(zk)
    try:
        if args.entity_type == "users":
            return await _zookeeper_user(kzc, args)
        if args.entity_type == "topics" and entity not in await kzc.get_all_topics():
            raise ConfigCommandError(f"Topic {entity!r} does not exist")
        current = await kzc.get_entity_config(args.entity_type, entity)
        if args.describe:
            print(f"Configs for {label} are {','.join(f'{k}={v}' for k, v in sorted(current.items()))}")
            return 0
        deleted = parse_delete_config(args.delete_config) if args.delete_config else []
        missing = [key for key in deleted if key not in current]
        if missing:
            raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
        config = {**current, **(parse_add_config(args.add_config) if args.add_config else {})}
        for key in deleted:
            config.pop(key)
        if args.entity_type == "topics":
            LogConfig.from_properties(config)
        else:
            validate_broker_overrides(config)
        await kzc.change_entity_config(args.entity_type, entity, config)
        print(f"Completed updating config for entity: {label}.")
        return 0
    finally:
        await zk.close()


async def _zookeeper_user(kzc: KafkaZkClient, args: argparse.Namespace) -> int:
    name = users.entity_name(args.entity_name)
    current = await kzc.get_entity_config("users", name)
    if args.describe:
        print("\n".join(users.describe_lines(args.entity_name, current)))
        return 0
    config = users.apply_changes(current, parse_add_config(args.add_config) if args.add_config else {},
                                 parse_delete_config(args.delete_config) if args.delete_config else [])
    await kzc.change_entity_config("users", name, config)
    print(f"Completed updating config for entity: user-principal '{args.entity_name}'.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    try:
        if args.bootstrap_server and args.entity_type == "users":
            from scripts.tools.kafka_configs import users_admin as kafka_configs_users_admin
            return kafka_configs_users_admin.run(args)
        if args.bootstrap_server:
            from scripts.tools.kafka_configs import admin as kafka_configs_admin
            return kafka_configs_admin.run(args)
        identity = zk_client.identity(args.zk_tls_config_file)
        return asyncio.run(_zookeeper(args, identity))
    except (ConfigCommandError, InvalidConfigError, users.UserConfigError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except ZkSecurityError as exc:  # KAFKA_OPTS' JAAS file or --zk-tls-config-file
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except ZkError as exc:
        print(zk_client.error_line(args.zookeeper, exc, identity), file=sys.stderr)
        return 1
    except LoginError as exc:  # --command-config's SASL credentials, refused
        print(f"Error while executing config command: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
