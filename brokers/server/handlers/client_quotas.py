"""DescribeClientQuotas (48) and AlterClientQuotas (49), v0-1 (v1 flexible), KIP-546, as Kafka 2.8's
ZooKeeper mode serves them (``KafkaApis`` over ``ZkAdminManager``): over the client quota entities of
``/config/users`` and ``/config/clients`` (``ServerContext.quota_configs``), decided by ``brokers.quotas.admin``.

Describe needs DESCRIBE_CONFIGS on the cluster, else the whole answer is CLUSTER_AUTHORIZATION_FAILED; a filter
Kafka refuses is a top-level INVALID_REQUEST (UNSUPPORTED_VERSION for a custom entity type), with no entries.
Alter needs ALTER_CONFIGS on the cluster, else every entry is CLUSTER_AUTHORIZATION_FAILED and nothing is written.
Each entry is answered on its own (INVALID_REQUEST and Kafka's message for a bad entity, key or value; nothing is
written for it); each good one is one znode write plus a ``/config/changes`` notification, which is what makes
every broker's quota managers pick it up. ``validate_only`` answers the same and writes nothing.
"""
from __future__ import annotations

from typing import Any

from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.quotas.admin import (
    FilterComponent,
    QuotaOp,
    UnsupportedQuotaEntityType,
    describe_client_quotas,
    entity_parts,
    plan_alterations,
)
from brokers.quotas.entities import QuotaConfigError
from brokers.security.acls import ALTER_CONFIGS, DESCRIBE_CONFIGS
from brokers.server.context import ClientQuotaConfigs, ServerContext
from brokers.server.handlers import response

CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."  # Kafka's Errors default message


async def handle_describe_client_quotas(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized_on_cluster(DESCRIBE_CONFIGS):
        return response(header, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, entries=None)
    components = [FilterComponent(c.entity_type, int(c.match_type), c.match) for c in request.components]
    store: ClientQuotaConfigs = context.quota_configs
    try:
        selected = describe_client_quotas(components, bool(request.strict), await store.quota_entity_configs())
    except UnsupportedQuotaEntityType as exc:
        return response(header, error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=str(exc), entries=None)
    except QuotaConfigError as exc:
        return response(header, error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc), entries=None)
    entries = [dict(entity=[dict(entity_type=kind, entity_name=name) for kind, name in entity_parts(entity)],
                    values=[dict(key=key, value=value) for key, value in values.items()])
               for entity, values in selected.items()]
    return response(header, error_code=ErrorCode.NONE, error_message=None, entries=entries)


async def handle_alter_client_quotas(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    requested = [[(e.entity_type, e.entity_name) for e in entry.entity] for entry in request.entries]
    if not context.authorized_on_cluster(ALTER_CONFIGS):
        return response(header, entries=[_result(parts, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                 CLUSTER_AUTHORIZATION_FAILED_MESSAGE) for parts in requested])
    ops = [[QuotaOp(op.key, float(op.value), bool(op.remove)) for op in entry.ops] for entry in request.entries]
    store: ClientQuotaConfigs = context.quota_configs
    plan = plan_alterations(zip(requested, ops), await store.quota_entity_configs())
    if not request.validate_only:
        for entity, config in plan.writes.items():
            await store.set_quota_entity_config(entity, config)
    return response(header, entries=[
        _result(parts, ErrorCode.NONE, None) if error is None else _result(parts, ErrorCode.INVALID_REQUEST, str(error))
        for parts, error in zip(requested, plan.results)])


def _result(parts: list[tuple[str, str | None]], code: ErrorCode, message: str | None) -> dict[str, Any]:
    return dict(error_code=code, error_message=message,
                entity=[dict(entity_type=kind, entity_name=name) for kind, name in parts])
