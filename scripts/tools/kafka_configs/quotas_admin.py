"""``kafka-configs --bootstrap-server ... --entity-type users|clients``: client quotas through the brokers (Kafka
2.8's way, KIP-546): DescribeClientQuotas and AlterClientQuotas v1 over the broker's internal client
(``scripts.tools.common.cluster_admin``; confluent-kafka has no client quota API), as the client ``--command-config``
describes (checked first as every admin tool checks it: ``client_properties.admin_client``).

    kafka-configs --bootstrap-server H:P --alter --entity-type users --entity-name alice \\
        --entity-type clients --entity-name app --add-config 'producer_byte_rate=1024,request_percentage=200'
    kafka-configs --bootstrap-server H:P --describe --entity-type users

An ``--alter`` of a user's SCRAM credentials goes to ``scripts.tools.kafka_configs.users_admin`` instead (one kind
per command, ``quotas.bootstrap_alteration``); a quota ``--alter`` first describes the entity, so that deleting a
key it lacks is Kafka's ``Invalid config(s): k`` with nothing sent. ``--describe`` prints one line per entity the
strict filter selects (``quotas.quota_line``), then, for users with no client id and no default, the SCRAM
credentials (``users_admin``), as Kafka 2.8 does. A broker's refusal exits 1 with ``Error while executing config
command: INVALID_REQUEST: <the broker's message>``.
"""
from __future__ import annotations

import argparse
import asyncio
from typing import Any

from confluent_kafka.admin import AdminClient

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.quotas.admin import FilterComponent, entity_parts
from brokers.quotas.entities import DEFAULT, QuotaEntity
from scripts.tools.common import client_properties
from scripts.tools.common.client_properties import ClientPropertiesError
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError
from scripts.tools.kafka_configs import quotas
from scripts.tools.kafka_configs.admin import command_properties
from scripts.tools.kafka_configs.syntax import ConfigCommandError, parse_add_config, parse_delete_config

TIMEOUT_S = 30.0
VERSION = 1  # both APIs' flexible version, as a Kafka 2.8 admin client sends them
ERROR_PREFIX = "Error while executing config command: "


def run(args: argparse.Namespace) -> int:
    types, names = args.entity_types, args.entity_names
    added = parse_add_config(args.add_config) if args.add_config else {}
    deleted = parse_delete_config(args.delete_config) if args.delete_config else []
    if args.alter and quotas.bootstrap_alteration(types, names, added, deleted) == quotas.SCRAM:
        from scripts.tools.kafka_configs import users_admin
        return users_admin.run(args)
    properties = command_properties(args.command_config)
    if client_properties.admin_client(AdminClient, args.bootstrap_server, properties, error=ERROR_PREFIX) is None:
        return 1  # --command-config names a key librdkafka does not know, or its credentials are refused
    if args.alter:
        _run(_alter(args.bootstrap_server, properties, quotas.quota_entity(types, names), added, deleted))
        print(quotas.completed_line(types, names))
        return 0
    for entity, values in _run(_describe(args.bootstrap_server, properties, quotas.describe_filter(types, names))):
        print(quotas.quota_line(entity, values))
    if "clients" not in types and "" not in names:  # a user's SCRAM credentials, as Kafka 2.8 shows them too
        from scripts.tools.kafka_configs import users_admin
        return users_admin.run(args)
    return 0


def _run(call: Any) -> Any:
    try:
        return asyncio.run(call)
    except (ClusterAdminError, ClientPropertiesError) as exc:
        raise ConfigCommandError(f"{ERROR_PREFIX}{exc}") from None


async def _describe(bootstrap: str, properties: dict[str, str],
                    components: list[FilterComponent]) -> list[tuple[QuotaEntity, dict[str, float]]]:
    async with ClusterAdmin(bootstrap, TIMEOUT_S, "kafka-configs", properties) as admin:
        return await describe_client_quotas(admin, components)


async def describe_client_quotas(admin: ClusterAdmin,
                                 components: list[FilterComponent]) -> list[tuple[QuotaEntity, dict[str, float]]]:
    """DescribeClientQuotas with a strict filter: (entity, {key: value}) as the broker answers them."""
    key = ApiKey.DESCRIBE_CLIENT_QUOTAS
    body = codec.build(codec.request_class(key, VERSION), strict=True, components=[
        dict(entity_type=c.entity_type, match_type=c.match_type, match=c.match) for c in components])
    response = await admin.request_any(key, VERSION, body)
    _check(response.error_code, response.error_message)
    return [(_entity(entry.entity), {value.key: float(value.value) for value in entry.values})
            for entry in response.entries or ()]


async def _alter(bootstrap: str, properties: dict[str, str], entity: QuotaEntity, added: dict[str, str],
                 deleted: list[str]) -> None:
    async with ClusterAdmin(bootstrap, TIMEOUT_S, "kafka-configs", properties) as admin:
        exact = quotas.describe_filter(*_flags(entity))
        current = dict(await describe_client_quotas(admin, exact)).get(entity, {})
        ops = quotas.quota_ops(added, deleted, current)
        key = ApiKey.ALTER_CLIENT_QUOTAS
        body = codec.build(codec.request_class(key, VERSION), validate_only=False, entries=[dict(
            entity=[dict(entity_type=kind, entity_name=name) for kind, name in entity_parts(entity)], ops=ops)])
        response = await admin.request_any(key, VERSION, body)
        for result in response.entries:
            _check(result.error_code, result.error_message)


def _flags(entity: QuotaEntity) -> tuple[list[str], list[str]]:
    """The entity back as (entity types, entity names) flags."""
    pairs = [(kind, "" if name == DEFAULT else name)
             for kind, name in (("users", entity.user), ("clients", entity.client_id)) if name is not None]
    return [kind for kind, _ in pairs], [name for _, name in pairs]


def _entity(parts: Any) -> QuotaEntity:
    names = {part.entity_type: DEFAULT if part.entity_name is None else part.entity_name for part in parts}
    return QuotaEntity(names.get("user"), names.get("client-id"))


def _check(code: int, message: str | None) -> None:
    if code != ErrorCode.NONE:
        error = ErrorCode(int(code)).name
        raise ConfigCommandError(f"{ERROR_PREFIX}{error}: {message}" if message else f"{ERROR_PREFIX}{error}")
