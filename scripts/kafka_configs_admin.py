"""``kafka-configs --bootstrap-server``: DescribeConfigs and IncrementalAlterConfigs through
confluent-kafka's AdminClient, printed as Kafka 2.8's ConfigCommand prints them (see
``scripts.kafka_configs``). Without ``--entity-name``, ``--describe`` covers every topic, or every
broker and then the cluster default.

A Kafka error exits 1 with ``Error while executing config command: NAME: message``.
"""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

from scripts.kafka_configs import ConfigCommandError, parse_add_config, parse_delete_config

TIMEOUT_S = 30.0
_RESOURCE = {"topics": ResourceType.TOPIC, "brokers": ResourceType.BROKER}


def run(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap_server})
    try:
        if args.alter:
            name = "" if args.entity_default else args.entity_name
            _alter(admin, args.entity_type, name, args.add_config, args.delete_config)
            return 0
        for name in _names(admin, args):
            _describe(admin, args.entity_type, name, args.all)
        return 0
    except KafkaException as exc:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        detail = f"{err.name()}: {err.str()}" if err else str(exc)
        print(f"Error while executing config command: {detail}", file=sys.stderr)
        return 1


def _names(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.entity_default:
        return [""]
    if args.entity_name is not None:
        return [args.entity_name]
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    if args.entity_type == "topics":
        return sorted(metadata.topics)
    return [str(b) for b in sorted(metadata.brokers)] + [""]


def _source_filter(entity_type: str, name: str) -> ConfigSource:
    if entity_type == "topics":
        return ConfigSource.DYNAMIC_TOPIC_CONFIG
    return ConfigSource.DYNAMIC_BROKER_CONFIG if name else ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def _entries(admin: AdminClient, entity_type: str, name: str, describe_all: bool) -> list[ConfigEntry]:
    resource = ConfigResource(_RESOURCE[entity_type], name)
    entries = admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
    wanted = _source_filter(entity_type, name).value
    return sorted((e for e in entries.values() if describe_all or _source(e) == wanted), key=lambda e: e.name)


def _source(entry: ConfigEntry) -> int:
    return entry.source.value if isinstance(entry.source, ConfigSource) else int(entry.source)


def _synonym(entry: ConfigEntry) -> str:
    return f"{ConfigSource(_source(entry)).name}:{entry.name}={entry.value}"


def _describe(admin: AdminClient, entity_type: str, name: str, describe_all: bool) -> None:
    if name == "":
        print(f"Default configs for {entity_type} in the cluster are:")
    else:
        print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:")
    for entry in _entries(admin, entity_type, name, describe_all):
        synonyms = ", ".join(_synonym(s) for s in entry.synonyms.values())
        print(f"  {entry.name}={entry.value} sensitive={str(bool(entry.is_sensitive)).lower()} synonyms={{{synonyms}}}")


def _alter(admin: AdminClient, entity_type: str, name: str, add: str | None, delete: str | None) -> None:
    added = parse_add_config(add) if add else {}
    deleted = parse_delete_config(delete) if delete else []
    if deleted:
        present = {e.name for e in _entries(admin, entity_type, name, describe_all=False)}
        missing = [key for key in deleted if key not in present]
        if missing:
            raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    ops = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in added.items()]
    ops += [ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE) for key in deleted]
    resource = ConfigResource(_RESOURCE[entity_type], name, incremental_configs=ops)
    admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
    if name:
        print(f"Completed updating config for {entity_type[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {entity_type} in the cluster.")
