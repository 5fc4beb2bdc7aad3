"""``kafka-configs``: describe and change topic and broker configs while the cluster runs (Kafka's
ConfigCommand, 2.8 flags and output).

    kafka-configs --bootstrap-server H:P --entity-type topics --entity-name T --describe [--all]
    kafka-configs --bootstrap-server H:P --entity-type brokers (--entity-name ID | --entity-default) \\
        --alter [--add-config 'k1=v1,k2=[a,b]'] [--delete-config k1,k2]
    kafka-configs --zookeeper H:P[/chroot] --entity-type topics --entity-name T --alter --add-config ...
    kafka-configs (--zookeeper H:P | --bootstrap-server H:P [--command-config F]) --entity-type users \\
        --entity-name U (--describe | --alter --add-config 'SCRAM-SHA-512=[iterations=8192,password=P]')
    kafka-configs (--zookeeper H:P | --bootstrap-server H:P) --entity-type users (--entity-name U | --entity-default) \\
        [--entity-type clients (--entity-name C | --entity-default)] --alter --add-config 'producer_byte_rate=1024'
    kafka-configs ... --user U --client C --describe   (Kafka's shorthands; --user-defaults, --client-defaults)

Client quotas (users, clients, a user's client id; ``--entity-type`` repeats) are ``scripts.tools.kafka_configs.quotas``
(flags and lines; ``--zookeeper`` below) and ``scripts.tools.kafka_configs.quotas_admin`` (``--bootstrap-server``,
DescribeClientQuotas / AlterClientQuotas). A user's SCRAM credentials are ``scripts.tools.kafka_configs.users`` (the
credential strings ``--zookeeper`` stores) and ``scripts.tools.kafka_configs.users_admin`` (``--bootstrap-server``,
AlterUserScramCredentials).

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
from brokers.quotas.admin import select_entities
from brokers.storage.log_config import InvalidConfigError, LogConfig
from brokers.quotas.entities import entities_from_znodes
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.zk.paths import ConfigChangeNotificationZNode
from scripts.tools.common import zk_client
from scripts.tools.common.client_properties import LoginError
from scripts.tools.common.zk_security import ZkClientIdentity, ZkSecurityError
from scripts.tools.kafka_configs import quotas, users
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config, parse_delete_config

ENTITY_TYPES = ("topics", "brokers", "users", "clients")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-configs", description="Add/remove entity config for a topic or broker.")
    connect = parser.add_mutually_exclusive_group(required=True)
    connect.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT]", help="Kafka brokers to talk to")
    connect.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]", help="ZooKeeper connect string (direct mode)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the entity's configs")
    action.add_argument("--alter", action="store_true", help="change the entity's configs")
    parser.add_argument("--entity-type", action="append", dest="entity_types", default=[], choices=ENTITY_TYPES,
                        help="users and clients may be given together (a user's client id)")
    parser.add_argument("--entity-name", action="append", dest="entity_names", default=[], metavar="NAME",
                        help="topic name, broker id, user principal or client id (one per --entity-type, in order)")
    parser.add_argument("--entity-default", action="append_const", dest="entity_names", const="",
                        help="the default broker, user or client id (in place of an --entity-name)")
    parser.add_argument("--user", metavar="USER", help="the user's principal name (--entity-type users --entity-name)")
    parser.add_argument("--client", metavar="CLIENT", help="the client's id (--entity-type clients --entity-name)")
    parser.add_argument("--user-defaults", action="store_true", help="the config defaults for all users")
    parser.add_argument("--client-defaults", action="store_true", help="the config defaults for all clients")
    parser.add_argument("--add-config", metavar="k1=v1,k2=[v1,v2]", help="configs to set")
    parser.add_argument("--delete-config", metavar="k1,k2", help="configs to remove")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, not only the dynamic ones")
    parser.add_argument("--command-config", metavar="FILE", help="client properties (security.protocol, sasl.*, ssl.*)")
    parser.add_argument("--zk-tls-config-file", metavar="ZooKeeper TLS configuration",
                        help="with --zookeeper: ZooKeeper client TLS properties (zookeeper.ssl.*); ZooKeeper "
                             "credentials come from KAFKA_OPTS=-Djava.security.auth.login.config=jaas.conf")
    return parser


def resolve_entities(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's entity types and names from the ``--entity-*`` flags and the shorthands (``args.entity_types``,
    ``args.entity_names``, ``""`` = a default), and the single entity of topics and brokers as ``entity_type``,
    ``entity_name`` (None for none or the default) and ``entity_default``."""
    try:
        args.entity_types, args.entity_names = quotas.entity_flags(
            args.entity_types, args.entity_names, args.user, args.client, args.user_defaults, args.client_defaults)
        if not args.entity_types:
            parser.error("--entity-type: at least one entity type must be specified")
        if set(args.entity_types) & set(quotas.QUOTA_ENTITY_TYPES):
            quotas.check_entity_flags(args.entity_types, args.entity_names, args.alter)
        elif len(args.entity_types) > 1 or len(args.entity_names) > 1:
            parser.error("--entity-type: only 'users' and 'clients' may be given more than once, with a name each")
    except quotas.EntityFlagsError as exc:
        parser.error(str(exc))
    args.entity_type = args.entity_types[0]
    args.entity_default = bool(args.entity_names) and args.entity_names[0] == ""
    args.entity_name = args.entity_names[0] if args.entity_names and args.entity_names[0] else None


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ConfigCommandOptions.checkArgs: every problem names its flag (argparse exits 2)."""
    resolve_entities(parser, args)
    if args.entity_default and args.entity_type == "topics":
        parser.error("--entity-default is only valid with --entity-type brokers, users or clients")
    if args.alter and not (args.entity_name is not None or args.entity_default):
        parser.error("--alter needs --entity-name or --entity-default")
    if args.alter and not (args.add_config or args.delete_config):
        parser.error("--alter needs at least one of --add-config or --delete-config")
    if args.describe and (args.add_config or args.delete_config):
        parser.error("--add-config and --delete-config are only valid with --alter")
    if args.zookeeper and args.entity_type in ("topics", "brokers") and args.entity_name is None \
            and not args.entity_default:
        parser.error("--zookeeper: --entity-name or --entity-default is required")
    if args.zk_tls_config_file and not args.zookeeper:
        parser.error("--bootstrap-server doesn't support --zk-tls-config-file option. If you intend the command to "
                     "communicate directly with ZooKeeper, use the --zookeeper option.")
    if args.all and not args.describe:
        parser.error("--all is only valid with --describe")
    if args.entity_type in quotas.QUOTA_ENTITY_TYPES and args.all:
        parser.error(f"--all is not valid with --entity-type {args.entity_type}")
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
        if args.entity_type in quotas.QUOTA_ENTITY_TYPES:
            return await _zookeeper_quotas(kzc, args)
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


async def _zookeeper_quotas(kzc: KafkaZkClient, args: argparse.Namespace) -> int:
    """Users, clients and a user's client ids: ``/config/users|clients/...`` read and written whole (Kafka's
    ``alterConfigWithZk`` / ``describeConfigWithZk``), SCRAM credentials kept."""
    types, names = args.entity_types, args.entity_names
    if args.describe and not quotas.fully_named(types, names):  # every entity of the unnamed types
        configs = entities_from_znodes(await kzc.get_quota_entity_configs())
        every_user = types == ["users"] and not names
        for entity in select_entities(quotas.describe_filter(types, names), True, configs):
            if configs[entity] or not every_user:  # Kafka skips the users that only hold client ids
                print("\n".join(quotas.zookeeper_lines(entity, configs[entity])))
        return 0
    entity = quotas.quota_entity(types, names)
    current = await kzc.get_entity_config(*entity.znode())
    if args.describe:
        print("\n".join(quotas.zookeeper_lines(entity, current)))
        return 0
    config = quotas.zookeeper_config(entity, current, parse_add_config(args.add_config) if args.add_config else {},
                                     parse_delete_config(args.delete_config) if args.delete_config else [])
    await kzc.change_entity_config(*entity.znode(), config)
    print(f"Completed updating config for entity: {quotas.zookeeper_label(entity)}.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    try:
        if args.bootstrap_server and args.entity_type in quotas.QUOTA_ENTITY_TYPES:
            from scripts.tools.kafka_configs import quotas_admin as kafka_configs_quotas_admin
            return kafka_configs_quotas_admin.run(args)
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
