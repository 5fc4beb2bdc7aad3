"""``kafka-configs --bootstrap-server``: DescribeConfigs and IncrementalAlterConfigs through
confluent-kafka's AdminClient, printed as Kafka 2.8's ConfigCommand prints them (see
``scripts.kafka_configs``). Without ``--entity-name``, ``--describe`` covers every topic, or every
broker and then the cluster default.

The cluster-default broker entity (``--entity-default``, resource name ``""``) cannot be named through
librdkafka (it rejects an empty ConfigResource name), so for it the tool sends DescribeConfigs v1 and
IncrementalAlterConfigs v0 itself with the broker's internal client (``brokers.client``) to the
first bootstrap server.

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

from brokers.client.connection import KafkaConnection
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from scripts.kafka_configs import ConfigCommandError, parse_add_config, parse_delete_config

TIMEOUT_S = 30.0
_RESOURCE = {"topics": ResourceType.TOPIC, "brokers": ResourceType.BROKER}


def run(args: argparse.Namespace) -> int:
    admin = AdminClient({"bootstrap.servers": args.bootstrap_server})
    try:
        if args.alter:
            name = "" if args.entity_default else args.entity_name
            _alter(admin, args.bootstrap_server, args.entity_type, name, args.add_config, args.delete_config)
            return 0
        for name in _names(admin, args):
            _describe(admin, args.bootstrap_server, args.entity_type, name, args.all)
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


def _entries(admin: AdminClient, bootstrap: str, entity_type: str, name: str, describe_all: bool) -> list[Entry]:
    if name == "":
        entries = _default_entries(bootstrap)
    else:
        resource = ConfigResource(_RESOURCE[entity_type], name)
        described = admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
        entries = [Entry(e.name, e.value, _source(e), bool(e.is_sensitive),
                         [(s.name, s.value, _source(s)) for s in e.synonyms.values()]) for e in described.values()]
    wanted = _source_filter(entity_type, name).value
    return sorted((e for e in entries if describe_all or e.source == wanted), key=lambda e: e.name)


def _source(entry: ConfigEntry) -> int:
    return entry.source.value if isinstance(entry.source, ConfigSource) else int(entry.source)


def _describe(admin: AdminClient, bootstrap: str, entity_type: str, name: str, describe_all: bool) -> None:
    if name == "":
        print(f"Default configs for {entity_type} in the cluster are:")
    else:
        print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:")
    for entry in _entries(admin, bootstrap, entity_type, name, describe_all):
        synonyms = ", ".join(f"{ConfigSource(source).name}:{key}={value}" for key, value, source in entry.synonyms)
        print(f"  {entry.name}={entry.value} sensitive={str(entry.sensitive).lower()} synonyms={{{synonyms}}}")


# -- the cluster-default broker entity, over the wire ------------------------------------------------
def _call(bootstrap: str, api_key: int, version: int, **fields: Any) -> Any:
    host, port = bootstrap.split(",")[0].strip().rsplit(":", 1)

    async def call() -> Any:
        connection = KafkaConnection(host, int(port), "kafka-configs")
        await connection.connect(TIMEOUT_S)
        try:
            return await connection.request(api_key, version, codec.build(codec.request_class(api_key, version),
                                                                          **fields), TIMEOUT_S)
        finally:
            connection.close()

    try:
        return asyncio.run(call())
    except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
        raise ConfigCommandError(f"Error while executing config command: cannot reach {host}:{port}: {exc}") from None


def _check(result: Any) -> None:
    if result.error_code != ErrorCode.NONE:
        raise ConfigCommandError(f"Error while executing config command: {ErrorCode(result.error_code).name}: "
                                 f"{result.error_message}")


def _default_entries(bootstrap: str) -> list[Entry]:
    response = _call(bootstrap, 32, 1, include_synonyms=True, resources=[
        dict(resource_type=4, resource_name="", configuration_keys=None)])
    (result,) = response.results
    _check(result)
    return [Entry(c.name, c.value, c.config_source, c.is_sensitive, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in result.configs]


def _alter_default(bootstrap: str, added: dict[str, str], deleted: list[str]) -> None:
    configs = [dict(name=k, config_operation=AlterConfigOpType.SET.value, value=v) for k, v in added.items()]
    configs += [dict(name=k, config_operation=AlterConfigOpType.DELETE.value, value=None) for k in deleted]
    response = _call(bootstrap, 44, 0, validate_only=False, resources=[
        dict(resource_type=4, resource_name="", configs=configs)])
    (result,) = response.responses
    _check(result)


def _alter(admin: AdminClient, bootstrap: str, entity_type: str, name: str, add: str | None,
           delete: str | None) -> None:
    added = parse_add_config(add) if add else {}
    deleted = parse_delete_config(delete) if delete else []
    if deleted:
        present = {e.name for e in _entries(admin, bootstrap, entity_type, name, describe_all=False)}
        missing = [key for key in deleted if key not in present]
        if missing:
            raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    if name == "":
        _alter_default(bootstrap, added, deleted)
        print(f"Completed updating default config for {entity_type} in the cluster.")
        return
    ops = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in added.items()]
    ops += [ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE) for key in deleted]
    resource = ConfigResource(_RESOURCE[entity_type], name, incremental_configs=ops)
    admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)[resource].result(TIMEOUT_S)
    print(f"Completed updating config for {entity_type[:-1]} {name}.")
