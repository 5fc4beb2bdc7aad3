"""The transaction coordinator inside the broker (Kafka's ``KafkaServer`` building ``TransactionCoordinator`` and
``KafkaApis.onLeadershipChange`` electing it), and KIP-890 part 1's verification of a transactional produce.

``BrokerTransactions`` owns the coordinator and what it is handed: ``ReplicaTransactionLog`` (its log),
``TransactionMarkerChannelManager`` (its markers, to the leaders on the inter-broker listener, TLS and SASL as
the replica fetchers) and the broker's producer-id blocks. It follows ``__transaction_state`` leadership: a
partition this broker becomes leader of is ``on_elected`` with the partition's leader epoch (the coordinator
epoch), one it stops leading ``on_resigned``.

Verification (``verify``, the ServerContext's ``verify_transaction``, only with
``transaction.partition.verification.enable``): the transactional id's coordinator is the leader of its
``__transaction_state`` partition; on this broker it is asked directly, on another over the control plane
(``POST /control/v1/verify-txn``, signed like the controller's requests; ``serve_verify`` answers it there).
The answer becomes the Produce error by ``produce_error`` (pure): a coordinator that cannot be reached, is
moving or loading, or is still ending the producer's previous transaction is NOT_ENOUGH_REPLICAS, which
producers retry (as Kafka's ReplicaManager answers verification errors), and a fenced producer
INVALID_PRODUCER_EPOCH, the code every Produce version knows.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any, Awaitable, Callable

from brokers.app.transaction_log import ReplicaTransactionLog
from brokers.control import VerifyTransactionRequest, VerifyTransactionResponse
from brokers.http.client import post_control
from brokers.model import TRANSACTION_STATE_TOPIC, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.sasl import SaslClientConfig
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.coordinator import TransactionCoordinator
from transactions.coordinator.marker_channel import TransactionMarkerChannelManager
from transactions.coordinator.ports import ProducerIdAllocator

log = logging.getLogger(__name__)

VERIFY_TIMEOUT_S = 10.0
# a coordinator that is moving, loading, unreachable or finishing the previous transaction: retry the produce
_RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS,
                        ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT})


def produce_error(code: int) -> ErrorCode:
    """The Produce error for a partition whose verification answered ``code``."""
    code = ErrorCode(code)
    if code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


class BrokerTransactions:
    """One broker's transaction coordinator and its wiring. ``control_secret`` and ``http_tls`` are read at each
    remote verification (the secret is known only once ZooKeeper is)."""

    def __init__(self, broker_id: int, config: Any, replica_manager: ReplicaManager, metadata_cache: MetadataCache,
                 producer_ids: ProducerIdAllocator, *, listener: str | None, ssl_context: ssl.SSLContext | None,
                 sasl: SaslClientConfig | None, control_secret: Callable[[], bytes | None],
                 http_tls: ssl.SSLContext | None, spawn: Callable[[Awaitable[Any]], None]):
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self.config = TransactionConfig.from_broker(config)
        self.log = ReplicaTransactionLog(replica_manager, config)
        self.markers = TransactionMarkerChannelManager(broker_id, metadata_cache, listener,
                                                       request_timeout_ms=config["request.timeout.ms"],
                                                       ssl_context=ssl_context, sasl=sasl)
        self.coordinator = TransactionCoordinator(broker_id, self.config, self.log, self.markers,
                                                  producer_ids=producer_ids)
        self._control_secret = control_secret
        self._http_tls = http_tls
        self._spawn = spawn

    async def startup(self) -> None:
        await self.coordinator.startup()
        self.replica_manager.add_listener(self.on_leadership)

    async def shutdown(self) -> None:
        await self.coordinator.shutdown()
        await self.markers.shutdown()

    def on_leadership(self, tp: TopicPartition, is_leader: bool) -> None:
        """Coordinator ownership follows ``__transaction_state`` leadership (the leader epoch is the coordinator
        epoch)."""
        if tp.topic != TRANSACTION_STATE_TOPIC:
            return
        partition = self.replica_manager.partitions.get(tp)
        if is_leader and partition is not None and partition.is_leader:
            self._spawn(self._elect(tp.partition, partition.leader_epoch))
        else:
            self.coordinator.on_resigned(tp.partition)

    async def _elect(self, partition: int, leader_epoch: int) -> None:
        """``on_elected`` unless the partition moved on before this task ran (a resignation or a newer epoch
        already handled): the check and the election's start happen without an await between them."""
        if self.log.leader_epoch(partition) == leader_epoch:
            await self.coordinator.on_elected(partition, leader_epoch)

    # -- KIP-890 part 1 ---------------------------------------------------------------------------
    @property
    def verify_transaction(self) -> Callable[[str, int, int, TopicPartition], Awaitable[int]] | None:
        """The ServerContext's ``verify_transaction``: None when ``transaction.partition.verification.enable``
        is off."""
        return self.verify if self.config.partition_verification_enable else None

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     tp: TopicPartition) -> ErrorCode:
        coordinator_tp = TopicPartition(TRANSACTION_STATE_TOPIC, self.coordinator.partition_for(transactional_id))
        leader = self.metadata_cache.leader_of(coordinator_tp)
        if leader is None:
            return produce_error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader.id == self.broker_id:
            code = await self.coordinator.verify_partition(transactional_id, producer_id, producer_epoch, tp)
            return produce_error(code)
        request = VerifyTransactionRequest(transactional_id, producer_id, producer_epoch, tp.topic, tp.partition)
        try:
            response = await post_control(leader, request, VERIFY_TIMEOUT_S, self._control_secret(), self._http_tls)
        except (ConnectionError, ValueError, asyncio.TimeoutError) as exc:
            log.warning("verifying %s of %s with broker %d failed: %s", tp, transactional_id, leader.id, exc)
            return produce_error(ErrorCode.NETWORK_EXCEPTION)
        return produce_error(response.error_code)

    async def serve_verify(self, request: VerifyTransactionRequest) -> VerifyTransactionResponse:
        """Another broker's verification, answered by this broker's coordinator (NOT_COORDINATOR if it is not the
        id's coordinator)."""
        code = await self.coordinator.verify_partition(request.transactional_id, request.producer_id,
                                                       request.producer_epoch,
                                                       TopicPartition(request.topic, request.partition))
        return VerifyTransactionResponse(int(code))
