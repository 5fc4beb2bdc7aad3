"""InitProducerId (22, v0-v4): a producer id for an idempotent producer, as Kafka 2.8's
``KafkaApis.handleInitProducerIdRequest`` in front of a broker that coordinates no transactions.

In Kafka's order:

1. authorization: a ``transactional_id`` needs Write on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one,
   IdempotentWrite on the cluster or Write on some topic (CLUSTER_AUTHORIZATION_FAILED);
2. v3+ ``producer_id`` / ``producer_epoch`` (KIP-360: a producer asking to bump its epoch) must both be -1 or
   both be set, else INVALID_REQUEST (42);
3. a null ``transactional_id``: a new producer id from ``AdminOps.allocate_producer_id`` and epoch 0 — Kafka
   2.8's coordinator blindly allocates a fresh id for a non-transactional producer, also when it names its
   current id and epoch;
4. there is no transaction coordinator: an empty transactional id is INVALID_REQUEST and any other is
   NOT_COORDINATOR (16), which is what a Kafka broker answers when it coordinates no ``__transaction_state``
   partition.

Every error answers producer id and epoch -1. v2+ is flexible; v4 only lets the coordinator answer
PRODUCER_FENCED, which this broker never does.
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
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def _may_write_idempotently(context: ServerContext) -> bool:
    """Kafka 2.8: IdempotentWrite on the cluster, or Write on some topic (authorizeByResourceType)."""
    return context.authorized_on_cluster(IDEMPOTENT_WRITE) or context.authorized_by_resource_type(WRITE, TOPIC)


def producer_id_and_epoch_valid(producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: a v3+ request names no producer (-1, -1) or both its id and epoch."""
    return (producer_id == NO_PRODUCER_ID) == (producer_epoch == NO_PRODUCER_EPOCH)


def _failed(header: RequestHeader, error: int) -> Any:
    return response(header, error_code=error, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)


async def handle_init_producer_id(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    transactional_id = request.transactional_id
    if transactional_id is not None:
        if not context.authorized(WRITE, TRANSACTIONAL_ID, transactional_id):
            return _failed(header, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not _may_write_idempotently(context):
        return _failed(header, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if not producer_id_and_epoch_valid(getattr(request, "producer_id", NO_PRODUCER_ID),
                                       getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)):
        return _failed(header, ErrorCode.INVALID_REQUEST)
    if transactional_id is not None:
        return _failed(header, ErrorCode.INVALID_REQUEST if transactional_id == "" else ErrorCode.NOT_COORDINATOR)
    try:
        producer_id = await context.admin.allocate_producer_id()
    except KafkaError as exc:
        log.warning("cannot allocate a producer id: %s", exc)
        return _failed(header, exc.code)
    return response(header, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
