"""The transaction APIs on the wire: kio requests in, ``TransactionCoordinator`` calls, kio responses out
(Kafka 2.8's ``KafkaApis.handle{InitProducerId,AddPartitionToTxn,AddOffsetsToTxn,EndTxn}Request``, and Kafka
3.0's ListTransactions / DescribeTransactions of KIP-664).

``HANDLERS`` is handed to ``KafkaApis`` by the composition root; each handler reaches the coordinator as
``context.transaction_coordinator`` and a group's offsets partition as ``context.coordinator_partition(group)``
(``TransactionApiContext``). One handler serves every version (``codec.build`` drops what a version lacks).

* Authorization (everything is allowed without an authorizer): InitProducerId with a transactional id, and
  AddPartitionsToTxn, AddOffsetsToTxn and EndTxn need Write on the TransactionalId
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); InitProducerId without one needs IdempotentWrite on the cluster or
  Write on some topic (CLUSTER_AUTHORIZATION_FAILED); AddPartitionsToTxn needs Write on each topic (internal
  topics are never authorized there: TOPIC_AUTHORIZATION_FAILED); AddOffsetsToTxn needs Read on the group
  (GROUP_AUTHORIZATION_FAILED); ListTransactions lists and DescribeTransactions describes only the ids the
  principal may Describe.
* AddPartitionsToTxn adds all of its partitions or none: a partition refused (not authorized, unknown topic or
  partition) fails the request, the others answering OPERATION_NOT_ATTEMPTED.
* InitProducerId v3+ ``producer_id`` / ``producer_epoch`` (KIP-360) must both be -1 or both be set
  (INVALID_REQUEST). PRODUCER_FENCED is answered only by the versions that know it (InitProducerId v4,
  AddPartitionsToTxn / AddOffsetsToTxn / EndTxn v2+); older ones get INVALID_PRODUCER_EPOCH.
"""
from __future__ import annotations

import datetime
from typing import Any, Callable, Iterable, Protocol

from brokers.model import INTERNAL_TOPICS, OFFSETS_TOPIC, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.security.acls import DESCRIBE, GROUP, IDEMPOTENT_WRITE, READ, TOPIC, TRANSACTIONAL_ID, WRITE
from transactions.coordinator.coordinator import TransactionCoordinator
from transactions.coordinator.views import error_answer

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# the first version of each API that understands PRODUCER_FENCED (Kafka 2.8's KafkaApis)
PRODUCER_FENCED_FROM = {ApiKey.INIT_PRODUCER_ID: 4, ApiKey.ADD_PARTITIONS_TO_TXN: 2, ApiKey.ADD_OFFSETS_TO_TXN: 2,
                        ApiKey.END_TXN: 2}


class PartitionMetadata(Protocol):
    def partitions_of(self, topic: str) -> dict[int, Any]: ...


class TransactionApiContext(Protocol):
    """What the transaction handlers use of the request's context (``brokers.server.context.ServerContext``
    provides it): the coordinator, the offsets partition of a group, the metadata and the authorization."""

    transaction_coordinator: TransactionCoordinator
    metadata_cache: PartitionMetadata
    coordinator_partition: Callable[[str], int] | None

    def authorized(self, operation: int, resource_type: int, name: str) -> bool: ...

    def authorized_on_cluster(self, operation: int) -> bool: ...

    def authorized_by_resource_type(self, operation: int, resource_type: int) -> bool: ...

    def filter_authorized(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]: ...


def versioned_error(api_key: ApiKey, api_version: int, error: ErrorCode) -> ErrorCode:
    """PRODUCER_FENCED as a version of the API may answer it (older clients know only INVALID_PRODUCER_EPOCH)."""
    if error == ErrorCode.PRODUCER_FENCED and api_version < PRODUCER_FENCED_FROM[api_key]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def producer_id_and_epoch_valid(producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: a v3+ request names no producer (-1, -1) or both its id and epoch."""
    return (producer_id == NO_PRODUCER_ID) == (producer_epoch == NO_PRODUCER_EPOCH)


# -- InitProducerId ----------------------------------------------------------------------------------------
def _init_denied(context: TransactionApiContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        allowed = context.authorized(WRITE, TRANSACTIONAL_ID, transactional_id)
        return None if allowed else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if context.authorized_on_cluster(IDEMPOTENT_WRITE) or context.authorized_by_resource_type(WRITE, TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def handle_init_producer_id(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    transactional_id = request.transactional_id
    producer_id = getattr(request, "producer_id", NO_PRODUCER_ID)
    producer_epoch = getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)
    error = _init_denied(context, transactional_id)
    if error is None and not producer_id_and_epoch_valid(producer_id, producer_epoch):
        error = ErrorCode.INVALID_REQUEST
    if error is not None:
        return codec.build_response(header, throttle_time=0, error_code=error, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)
    expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
    result = await context.transaction_coordinator.handle_init_producer_id(
        transactional_id, codec.duration_ms(request.transaction_timeout), expected)
    return codec.build_response(header, throttle_time=0, error_code=versioned_error(ApiKey.INIT_PRODUCER_ID, header.api_version, result.error),
                     producer_id=result.producer_id, producer_epoch=result.producer_epoch)


# -- AddPartitionsToTxn ------------------------------------------------------------------------------------------
def _v3_field(request: Any, name: str) -> Any:
    """AddPartitionsToTxn's fields as kio names them (``v3_and_below_*``: v4 batches several transactions)."""
    value = getattr(request, f"v3_and_below_{name}", None)
    return getattr(request, name) if value is None else value


def partitions_refused(context: TransactionApiContext, partitions: list[TopicPartition]
                       ) -> dict[TopicPartition, ErrorCode]:
    """Kafka 2.8: Write on each (non-internal) topic, then the partition must exist; when any is refused every
    other partition is OPERATION_NOT_ATTEMPTED. Empty when all may be added."""
    writable = context.filter_authorized(WRITE, TOPIC, {tp.topic for tp in partitions} - INTERNAL_TOPICS)
    existing = {topic: context.metadata_cache.partitions_of(topic) for topic in writable}
    refused = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp.topic not in writable
               else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in partitions
               if tp.topic not in writable or tp.partition not in existing[tp.topic]}
    if not refused:
        return {}
    return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}


def _add_partitions_response(header: RequestHeader, errors: dict[TopicPartition, ErrorCode]) -> Any:
    topics: dict[str, list[dict]] = {}
    for tp, error in errors.items():
        topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "partition_error_code": error})
    return codec.build_response(header, throttle_time=0, results_by_topic_v3_and_below=[
        {"name": name, "results_by_partition": results} for name, results in topics.items()])


async def handle_add_partitions_to_txn(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    transactional_id = _v3_field(request, "transactional_id")
    partitions = list(dict.fromkeys(TopicPartition(t.name, p) for t in _v3_field(request, "topics")
                                    for p in t.partitions))
    if not context.authorized(WRITE, TRANSACTIONAL_ID, transactional_id):
        return _add_partitions_response(header, dict.fromkeys(partitions,
                                                              ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    refused = partitions_refused(context, partitions)
    if refused:
        return _add_partitions_response(header, refused)
    error = await context.transaction_coordinator.handle_add_partitions_to_transaction(
        transactional_id, _v3_field(request, "producer_id"), _v3_field(request, "producer_epoch"), set(partitions))
    error = versioned_error(ApiKey.ADD_PARTITIONS_TO_TXN, header.api_version, error)
    return _add_partitions_response(header, dict.fromkeys(partitions, error))


# -- AddOffsetsToTxn / EndTxn ------------------------------------------------------------------------------------
async def handle_add_offsets_to_txn(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not context.authorized(READ, GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        offsets = TopicPartition(OFFSETS_TOPIC, context.coordinator_partition(request.group_id))
        error = await context.transaction_coordinator.handle_add_partitions_to_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, {offsets})
        error = versioned_error(ApiKey.ADD_OFFSETS_TO_TXN, header.api_version, error)
    return codec.build_response(header, throttle_time=0, error_code=error)


async def handle_end_txn(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    if not context.authorized(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        return codec.build_response(header, throttle_time=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error = await context.transaction_coordinator.handle_end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed))
    return codec.build_response(header, throttle_time=0, error_code=versioned_error(ApiKey.END_TXN, header.api_version, error))


# -- ListTransactions / DescribeTransactions (KIP-664) -----------------------------------------------------------
async def handle_list_transactions(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    error, unknown, listed = context.transaction_coordinator.list_transactions(
        list(request.state_filters), list(request.producer_id_filters))
    visible = context.filter_authorized(DESCRIBE, TRANSACTIONAL_ID, {txn_id for txn_id, _, _ in listed})
    states = [{"transactional_id": txn_id, "producer_id": pid, "transaction_state": state}
              for txn_id, pid, state in listed if txn_id in visible]
    return codec.build_response(header, throttle_time=0, error_code=error, unknown_state_filters=unknown, transaction_states=states)


def _timestamp(ms: int) -> datetime.datetime:
    """A timestamp field as kio writes it; -1 (a transaction not started) stays -1 on the wire."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def _described(answer: dict) -> dict:
    return {"error_code": answer["error_code"], "transactional_id": answer["transactional_id"],
            "transaction_state": answer["transaction_state"],
            "transaction_timeout": answer["transaction_timeout_ms"],
            "transaction_start_time": _timestamp(answer["transaction_start_time_ms"]),
            "producer_id": answer["producer_id"], "producer_epoch": answer["producer_epoch"],
            "topics": [{"topic": topic, "partitions": partitions} for topic, partitions in answer["topics"].items()]}


async def handle_describe_transactions(context: TransactionApiContext, header: RequestHeader, request: Any) -> Any:
    coordinator = context.transaction_coordinator
    states = []
    for txn_id in request.transactional_ids:
        if context.authorized(DESCRIBE, TRANSACTIONAL_ID, txn_id):
            states.append(_described(coordinator.describe_transactions([txn_id])[0]))
        else:
            states.append(_described(error_answer(txn_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
    return codec.build_response(header, throttle_time=0, transaction_states=states)


HANDLERS = {
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: handle_add_offsets_to_txn,
    ApiKey.END_TXN: handle_end_txn,
    ApiKey.LIST_TRANSACTIONS: handle_list_transactions,
    ApiKey.DESCRIBE_TRANSACTIONS: handle_describe_transactions,
}
