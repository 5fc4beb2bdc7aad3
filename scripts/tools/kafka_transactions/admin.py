"""``kafka-transactions``' requests, as Kafka's admin client sends them, over ``ClusterAdmin`` (confluent-kafka
has none of them):

* ListTransactions v0 to every broker (each lists the transactional ids it coordinates), optionally
  filtered by producer ids;
* DescribeTransactions v0 to each id's coordinator (FindCoordinator key type 1), retried while the
  coordinator moves or loads (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS);
* DescribeProducers v0 to each partition's leader (Metadata), or to ``--broker-id``'s replica;
* WriteTxnMarkers v1 (ABORT) to the partition's leader: what Kafka's ``abortTransaction`` sends, so it needs
  ClusterAction on the cluster.

A refused request raises ``TransactionsAdminError`` carrying Kafka's exception message.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from scripts.tools.common.cluster_admin import ClusterAdmin, ClusterAdminError
from scripts.tools.kafka_transactions.tables import (TP, AbortSpec, ProducerState, TransactionDescription,
                                                     TransactionListing)

TXN_KEY_TYPE = 1
RETRIABLE = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
MESSAGES = {  # Kafka's Errors default messages, what its exceptions' getMessage() print
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: "The transactionalId could not be found",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates that the "
                                      "broker is not the current leader. For requests intended for any replica, "
                                      "this error indicates that the broker is not a replica of the topic partition.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: "Indicates that the transaction coordinator sending a WriteTxnMarker "
                                              "is no longer the current coordinator for a given producer",
    ErrorCode.INVALID_PRODUCER_EPOCH: "Producer attempted to produce with an old epoch.",
}


class TransactionsAdminError(RuntimeError):
    pass


def error_message(code: ErrorCode, message: str | None = None) -> str:
    return message or MESSAGES.get(code) or code.name


def _check(code: int, message: str | None = None) -> None:
    if code != ErrorCode.NONE:
        raise TransactionsAdminError(error_message(ErrorCode(int(code)), message))


def _ms(value: Any) -> int:
    """kio's int64 timestamps are datetimes and its int32 durations timedeltas; Kafka speaks milliseconds."""
    if hasattr(value, "timestamp"):
        return round(value.timestamp() * 1000)
    if hasattr(value, "total_seconds"):
        return round(value.total_seconds() * 1000)
    return int(value)


class TransactionsAdmin:
    def __init__(self, admin: ClusterAdmin, retry_deadline_s: float = 30.0):
        self.admin, self.retry_deadline_s = admin, retry_deadline_s

    @staticmethod
    async def _call(call: Awaitable) -> Any:
        """``call`` to the cluster; unreachable brokers and timeouts as TransactionsAdminError."""
        try:
            return await call
        except (ClusterAdminError, ConnectionError, OSError, asyncio.TimeoutError) as exc:
            raise TransactionsAdminError(str(exc) or type(exc).__name__) from None

    async def _request_broker(self, broker_id: int, api_key: ApiKey, version: int, **fields: Any) -> Any:
        body = codec.build(codec.request_class(api_key, version), **fields)
        return await self._call(self.admin.request_broker(broker_id, api_key, version, body))

    async def _metadata(self, topics: list[str] | None) -> Any:
        return await self._call(self.admin.metadata(topics))

    async def broker_ids(self) -> list[int]:
        return await self._call(self.admin.broker_ids())

    async def list_transactions(self, producer_ids: set[int] | None = None) -> dict[int, list[TransactionListing]]:
        """Every broker's listing; a broker still loading its coordinator state is asked again (Kafka's
        ``ListTransactionsHandler``), one whose coordinator is shutting down fails the listing."""
        out = {}
        deadline = asyncio.get_running_loop().time() + self.retry_deadline_s
        for broker_id in await self.broker_ids():
            while True:
                response = await self._request_broker(broker_id, ApiKey.LIST_TRANSACTIONS, 0, state_filters=[],
                                                      producer_id_filters=sorted(producer_ids or ()))
                code = ErrorCode(int(response.error_code))
                if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.2)
            if code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                raise TransactionsAdminError(f"ListTransactions request sent to broker {broker_id} failed because "
                                             "the coordinator is shutting down")
            _check(code)
            out[broker_id] = [TransactionListing(t.transactional_id, int(t.producer_id), t.transaction_state)
                              for t in response.transaction_states]
        return out

    async def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """TransactionsAdminError (TRANSACTIONAL_ID_NOT_FOUND's message among others) if it cannot."""
        deadline = asyncio.get_running_loop().time() + self.retry_deadline_s
        while True:
            code, coordinator = await self._call(self.admin.find_coordinator(transactional_id, TXN_KEY_TYPE))
            if code == ErrorCode.NONE:
                response = await self._request_broker(coordinator, ApiKey.DESCRIBE_TRANSACTIONS, 0,
                                                      transactional_ids=[transactional_id])
                state = response.transaction_states[0]
                code = ErrorCode(int(state.error_code))
                if code == ErrorCode.NONE:
                    return _description(coordinator, state)
            if code not in RETRIABLE or asyncio.get_running_loop().time() > deadline:
                raise TransactionsAdminError(error_message(code))
            await asyncio.sleep(0.2)

    async def leaders(self, topics: list[str] | None) -> dict[TP, tuple[int, tuple[int, ...]]]:
        """Each partition's leader and replicas (``topics`` None: every topic, internal ones too)."""
        metadata = await self._metadata(topics)
        for t in metadata.topics:
            if t.error_code != ErrorCode.NONE:
                raise TransactionsAdminError(f"{t.name}: {error_message(ErrorCode(int(t.error_code)))}")
        return {(t.name, int(p.partition_index)): (int(p.leader_id), tuple(int(r) for r in p.replica_nodes))
                for t in metadata.topics for p in t.partitions}

    async def describe_producers(self, partitions: list[TP], broker_id: int | None = None
                                 ) -> dict[TP, list[ProducerState]]:
        """Each partition's active producers, from its leader (or from ``broker_id``'s replica)."""
        if broker_id is None:
            leaders = await self.leaders(sorted({t for t, _ in partitions}))
            targets: dict[int, list[TP]] = {}
            for tp in partitions:
                if tp not in leaders:
                    raise TransactionsAdminError(error_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                targets.setdefault(leaders[tp][0], []).append(tp)
        else:
            targets = {broker_id: list(partitions)}
        out: dict[TP, list[ProducerState]] = {}
        for target, tps in targets.items():
            by_topic: dict[str, list[int]] = {}
            for topic, partition in tps:
                by_topic.setdefault(topic, []).append(partition)
            response = await self._request_broker(target, ApiKey.DESCRIBE_PRODUCERS, 0, topics=[
                {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()])
            for topic in response.topics:
                for p in topic.partitions:
                    _check(p.error_code, p.error_message)
                    out[(topic.name, int(p.partition_index))] = [ProducerState(
                        int(s.producer_id), int(s.producer_epoch), int(s.last_sequence), int(s.last_timestamp),
                        int(s.coordinator_epoch), int(s.current_txn_start_offset)) for s in p.active_producers]
        return out

    async def abort_transaction(self, spec: AbortSpec) -> None:
        leader = (await self.leaders([spec.partition[0]])).get(spec.partition)
        if leader is None:
            raise TransactionsAdminError(error_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        response = await self._request_broker(leader[0], ApiKey.WRITE_TXN_MARKERS, 1, markers=[{
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch, "transaction_result": False,
            "coordinator_epoch": spec.coordinator_epoch,
            "topics": [{"name": spec.partition[0], "partition_indexes": [spec.partition[1]]}]}])
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    _check(p.error_code)


def _description(coordinator: int, state: Any) -> TransactionDescription:
    start = -1 if state.transaction_start_time is None else _ms(state.transaction_start_time)  # None: Kafka's -1
    partitions = tuple(sorted((t.topic, int(p)) for t in state.topics for p in t.partitions))
    return TransactionDescription(coordinator, state.transactional_id, int(state.producer_id),
                                  int(state.producer_epoch), state.transaction_state,
                                  _ms(state.transaction_timeout), start if start >= 0 else None, partitions)
