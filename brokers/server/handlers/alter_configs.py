"""AlterConfigs (33, v0-2) and IncrementalAlterConfigs (44, v0-1): change topic and broker configs.

Resource type 2 is a topic (UNKNOWN_TOPIC_OR_PARTITION if it does not exist), 4 a broker: this
broker's id (``/config/brokers/<id>``) or the empty name, the cluster-wide default
(``/config/brokers/<default>``); another broker's id is INVALID_REQUEST, as in Kafka (clients send a
broker's resource to that broker). A resource named twice in one request is INVALID_REQUEST for each.

``context.admin`` does the rest (``AdminOps.alter_configs`` / ``incremental_alter_configs``): the new
override set (AlterConfigs replaces it, IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT),
validated (INVALID_CONFIG naming the key; INVALID_REQUEST for a bad operation or a broker key that is
not dynamic), then, unless ``validate_only``, written to ``/config/<type>/<name>`` with a
``/config/changes`` notification that every broker applies live.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import ALTER_CONFIGS
from brokers.server.context import ServerContext
from brokers.server.handlers import config_resource_denied

log = logging.getLogger(__name__)


def _result(resource: Any, code: int = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return dict(error_code=code, error_message=message, resource_type=resource.resource_type,
                resource_name=resource.resource_name)


async def _alter_each(context: ServerContext, header: RequestHeader, request: Any, alter: Any) -> Any:
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    results = []
    for resource in request.resources:
        if counts[(resource.resource_type, resource.resource_name)] > 1:
            results.append(_result(resource, ErrorCode.INVALID_REQUEST,
                                   f"Error due to duplicate resources: resource type {resource.resource_type}, "
                                   f"name {resource.resource_name!r} appears more than once"))
            continue
        if (denied := config_resource_denied(context, ALTER_CONFIGS, resource)) is not None:
            results.append(_result(resource, denied, None))
            continue
        try:
            await alter(resource)
        except KafkaError as exc:
            log.info("%s of %s %r from %s: %s", type(request).__name__, resource.resource_type, resource.resource_name,
                     header.client_id, exc)
            results.append(_result(resource, exc.code, str(exc.args[0]) if exc.args else exc.code.name))
            continue
        results.append(_result(resource))
    cls = codec.response_class(header.api_key, header.api_version)
    return codec.build(cls, throttle_time=0, responses=results)


async def handle_alter_configs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    async def alter(resource: Any) -> None:
        configs = [(c.name, c.value) for c in resource.configs]
        await context.admin.alter_configs(resource.resource_type, resource.resource_name, configs,
                                          request.validate_only)

    return await _alter_each(context, header, request, alter)


async def handle_incremental_alter_configs(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    async def alter(resource: Any) -> None:
        ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
        await context.admin.incremental_alter_configs(resource.resource_type, resource.resource_name, ops,
                                                      request.validate_only)

    return await _alter_each(context, header, request, alter)
