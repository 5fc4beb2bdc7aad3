"""ReplicaManager: applies the controller's LeaderAndIsr and StopReplica to local replicas.

Fencing (reference §2.2), checked in this order:
1. a request from an older controller epoch than the highest seen is rejected whole
   (STALE_CONTROLLER_EPOCH), an equal or newer one raises the remembered epoch;
2. a request addressed to an older registration of this broker is rejected (STALE_BROKER_EPOCH);
3. per partition, a LeaderAndIsr state is applied only if its leader epoch is newer than the one held
   (else STALE_CONTROLLER_EPOCH for that partition), and only if this broker is among its replicas
   (else UNKNOWN_TOPIC_OR_PARTITION).
Every decision is logged so that tests can see what a zombie controller tried.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from brokers.control import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionState,
    StopReplicaRequest,
    StopReplicaResponse,
    check_broker_epoch,
    check_controller_epoch,
)
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.partition import Partition
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager

log = logging.getLogger(__name__)

TopicConfigProvider = Callable[[str], Awaitable[LogConfig]]


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, topic_config: TopicConfigProvider,
                 broker_epoch: Callable[[], int]):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self._topic_config = topic_config
        self._broker_epoch = broker_epoch
        self.controller_epoch = 0
        self.partitions: dict[TopicPartition, Partition] = {}
        self.rejected: list[tuple[str, int, int]] = []  # (request, controller id, controller epoch)
        self.state_change_lock = asyncio.Lock()  # control requests apply one at a time (replicaStateChangeLock)

    def fence(self, name: str, controller_id: int, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        if not check_controller_epoch(self.controller_epoch, controller_epoch):
            log.warning("rejecting %s from controller %d: epoch %d < %d", name, controller_id, controller_epoch,
                        self.controller_epoch)
            self.rejected.append((name, controller_id, controller_epoch))
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if not check_broker_epoch(self._broker_epoch(), broker_epoch):
            log.warning("rejecting %s for broker epoch %d (ours is %d)", name, broker_epoch, self._broker_epoch())
            self.rejected.append((name, controller_id, controller_epoch))
            return ErrorCode.STALE_BROKER_EPOCH
        self.controller_epoch = controller_epoch
        return ErrorCode.NONE

    async def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        async with self.state_change_lock:
            return await self._become_leader_or_follower(request)

    async def _become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        error = self.fence("LeaderAndIsr", request.controller_id, request.controller_epoch, request.broker_epoch)
        if error != ErrorCode.NONE:
            return LeaderAndIsrResponse(int(error), ())
        errors = []
        for state in request.partition_states:
            errors.append((state.topic, state.partition, int(await self._apply_state(state))))
        return LeaderAndIsrResponse(int(ErrorCode.NONE), tuple(errors))

    async def _apply_state(self, state: PartitionState) -> ErrorCode:
        tp = TopicPartition(state.topic, state.partition)
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = self.partitions.get(tp)
        if partition is not None and state.leader_epoch <= partition.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if partition is None:
            try:
                config = await self._topic_config(tp.topic)
                log_ = await asyncio.to_thread(self.log_manager.get_or_create_log, tp, config)  # mkdir + fsync
            except OSError as exc:
                log.error("cannot create the log of %s: %s", tp, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
            # a partition re-created after this broker restarted must still accept the stored epoch
            partition = Partition(tp, self.broker_id, log_)
            self.partitions[tp] = partition
        args = (state.leader_epoch, tuple(state.isr), tuple(state.replicas), state.zk_version, state.controller_epoch)
        if state.leader == self.broker_id:
            partition.make_leader(*args)
        else:
            partition.make_follower(state.leader, *args)
        return ErrorCode.NONE

    async def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        async with self.state_change_lock:
            return await self._stop_replicas(request)

    async def _stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        error = self.fence("StopReplica", request.controller_id, request.controller_epoch, request.broker_epoch)
        if error != ErrorCode.NONE:
            return StopReplicaResponse(int(error), ())
        errors = []
        for item in request.partitions:
            tp = TopicPartition(item.topic, item.partition)
            partition = self.partitions.get(tp)
            if partition is not None and item.leader_epoch >= 0 and item.leader_epoch <= partition.leader_epoch:
                errors.append((item.topic, item.partition, int(ErrorCode.FENCED_LEADER_EPOCH)))
                continue
            if item.delete:
                self.partitions.pop(tp, None)
                await asyncio.to_thread(self.log_manager.delete_log, tp)
            elif partition is not None:
                partition.leader = -1
            errors.append((item.topic, item.partition, int(ErrorCode.NONE)))
        return StopReplicaResponse(int(ErrorCode.NONE), tuple(errors))

    def describe(self) -> dict:
        return {str(tp): p.describe() for tp, p in sorted(self.partitions.items())}


class PartitionError(Exception):
    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


def leader_partition(manager: ReplicaManager, tp: TopicPartition) -> Partition:
    """The partition if this broker leads it; else the error a client must see to refresh metadata."""
    partition = manager.partitions.get(tp)
    if partition is None:
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not partition.is_leader:
        raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return partition
