"""InitProducerId (22, v0): a producer id for an idempotent producer. With an authorizer: IdempotentWrite on
the cluster, or Write on some topic, else CLUSTER_AUTHORIZATION_FAILED.

**InitProducerId** (idempotent producers): with a null ``transactional_id`` a new producer id from
``AdminOps.allocate_producer_id`` and epoch 0. There is no transaction coordinator: an empty
transactional id is INVALID_REQUEST (42) and any other is NOT_COORDINATOR (16), which is what a Kafka
broker answers when it coordinates no ``__transaction_state`` partition (producer id and epoch -1).
"""
from __future__ import annotations

import logging
from typing import Any

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import IDEMPOTENT_WRITE, TOPIC, TRANSACTIONAL_ID, WRITE
from brokers.server.context import ServerContext
from brokers.server.handlers import response

log = logging.getLogger(__name__)


def _may_write_idempotently(context: ServerContext) -> bool:
    """Kafka 2.8: IdempotentWrite on the cluster, or Write on some topic (authorizeByResourceType)."""
    return context.authorized_on_cluster(IDEMPOTENT_WRITE) or context.authorized_by_resource_type(WRITE, TOPIC)


async def handle_init_producer_id(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    if request.transactional_id is not None:
        error = ErrorCode.INVALID_REQUEST if request.transactional_id == "" else ErrorCode.NOT_COORDINATOR
        if error == ErrorCode.NOT_COORDINATOR and not context.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
            error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # Kafka: Write on the transactional id first
        return response(header, error_code=error, producer_id=-1, producer_epoch=-1)
    if not _may_write_idempotently(context):
        return response(header, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1, producer_epoch=-1)
    try:
        producer_id = await context.admin.allocate_producer_id()
    except KafkaError as exc:
        log.warning("cannot allocate a producer id: %s", exc)
        return response(header, error_code=exc.code, producer_id=-1, producer_epoch=-1)
    return response(header, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
