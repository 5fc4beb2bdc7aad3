"""``kafka-configs --bootstrap-server``: DescribeConfigs and IncrementalAlterConfigs through
confluent-kafka's AdminClient, printed as Kafka 2.8's ConfigCommand prints them (see
``scripts.tools.kafka_configs.command``). Without ``--entity-name``, ``--describe`` covers every topic, or every
broker and then the cluster default.

Two requests go over the broker's internal client (``brokers.client``) instead: DescribeConfigs v1,
because confluent-kafka returns synonyms as a dict keyed by name, which keeps one of
``DYNAMIC_BROKER_CONFIG:log.retention.ms`` and ``DEFAULT_CONFIG:log.retention.ms`` (it goes to the first
bootstrap server, or to the broker being described); and IncrementalAlterConfigs v0 for the
cluster-default broker entity (``--entity-default``, resource name ``""``), which librdkafka refuses to
name (an empty ConfigResource name).

``--command-config`` (Kafka's client properties: ``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``ssl.*``, see ``scripts.tools.common.client_properties``) applies to both the AdminClient and
the internal client, so a SSL / SASL-only cluster is reachable.

A Kafka error exits 1 with ``Error while executing config command: NAME: message``.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from scripts.tools.common import client_properties
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config, parse_delete_config

TIMEOUT_S = 30.0
_RESOURCE = {"topics": ResourceType.TOPIC, "brokers": ResourceType.BROKER}


@dataclass(frozen=True)
class Target:
    """Where the command goes: the bootstrap servers and the client properties of ``--command-config``."""
    bootstrap: str
    properties: dict


def command_properties(path: str | None) -> dict[str, str]:
    """``--command-config``'s properties ({} without it); ConfigCommandError naming the flag."""
    try:
        return client_properties.from_flag("--command-config", path)
    except client_properties.ClientPropertiesError as exc:
        raise ConfigCommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    target = Target(args.bootstrap_server, command_properties(args.command_config))
    try:
        admin = AdminClient(client_properties.tool_config(target.bootstrap, target.properties))
        if args.alter:
            name = "" if args.entity_default else args.entity_name
            _alter(admin, target, args.entity_type, name, args.add_config, args.delete_config)
            return 0
        for name in _names(admin, args):
            _describe(admin, target, args.entity_type, name, args.all)
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


@dataclass(frozen=True)
class Entry:
    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: list[tuple[str, str | None, int]]


def _entries(admin: AdminClient, target: Target, entity_type: str, name: str, describe_all: bool) -> list[Entry]:
    address = target.bootstrap.split(",")[0].strip()
    if entity_type == "brokers" and name:  # a broker describes its own dynamic configs
        broker = admin.list_topics(timeout=TIMEOUT_S).brokers.get(int(name))
        if broker is None:
            raise ConfigCommandError(f"Error while executing config command: broker {name} is not in the cluster")
        address = f"{broker.host}:{broker.port}"
    response = _call(Target(address, target.properties), 32, 1, include_synonyms=True, resources=[
        dict(resource_type=_RESOURCE[entity_type].value, resource_name=name, configuration_keys=None)])
    (result,) = response.results
    _check(result)
    entries = [Entry(c.name, c.value, c.config_source, c.is_sensitive, [(s.name, s.value, s.source) for s in c.synonyms])
               for c in result.configs]
    wanted = _source_filter(entity_type, name).value
    return sorted((e for e in entries if describe_all or e.source == wanted), key=lambda e: e.name)


def _describe(admin: AdminClient, target: Target, entity_type: str, name: str, describe_all: bool) -> None:
    if name == "":
        print(f"Default configs for {entity_type} in the cluster are:")
    else:
        print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:")
    for entry in _entries(admin, target, entity_type, name, describe_all):
        synonyms = ", ".join(f"{ConfigSource(source).name}:{key}={value}" for key, value, source in entry.synonyms)
        print(f"  {entry.name}={entry.value} sensitive={str(entry.sensitive).lower()} synonyms={{{synonyms}}}")


# -- the cluster-default broker entity, over the wire ------------------------------------------------
def _call(target: Target, api_key: int, version: int, **fields: Any) -> Any:
    async def call() -> Any:
        async with ClusterAdmin(target.bootstrap, TIMEOUT_S, "kafka-configs", target.properties) as admin:
            return await admin.request_any(api_key, version, codec.build(codec.request_class(api_key, version),
                                                                         **fields))

    try:
        return asyncio.run(call())
    except ClusterAdminError as exc:
        raise ConfigCommandError(f"Error while executing config command: {exc}") from None


def _check(result: Any) -> None:
    if result.error_code != ErrorCode.NONE:
        raise ConfigCommandError(f"Error while executing config command: {ErrorCode(result.error_code).name}: "
                                 f"{result.error_message}")


def _alter_default(target: Target, added: dict[str, str], deleted: list[str]) -> None:
    configs = [dict(name=k, config_operation=AlterConfigOpType.SET.value, value=v) for k, v in added.items()]
    configs += [dict(name=k, config_operation=AlterConfigOpType.DELETE.value, value=None) for k in deleted]
    response = _call(target, 44, 0, validate_only=False, resources=[
        dict(resource_type=4, resource_name="", configs=configs)])
    (result,) = response.responses
    _check(result)


def _alter(admin: AdminClient, target: Target, entity_type: str, name: str, add: str | None,
           delete: str | None) -> None:
    added = parse_add_config(add) if add else {}
    deleted = parse_delete_config(delete) if delete else []
    if deleted:
        present = {e.name for e in _entries(admin, target, entity_type, name, describe_all=False)}
        missing = [key for key in deleted if key not in present]
        if missing:
            raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    if name == "":
        _alter_default(target, added, deleted)
        print(f"Completed updating default config for {entity_type} in the cluster.")
        return
    ops = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in added.items()]
    ops += [ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE) for key in deleted]
    resource = ConfigResource(_RESOURCE[entity_type], name, incremental_configs=ops)
    admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
    print(f"Completed updating config for {entity_type[:-1]} {name}.")
