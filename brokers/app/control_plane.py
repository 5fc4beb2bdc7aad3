"""The broker's side of the control plane: the controller's requests applied here (Kafka's
``KafkaApis.handleLeaderAndIsrRequest``, ``handleUpdateMetadataRequest``, ``handleStopReplicaRequest``,
``handleControlledShutdownRequest``), the calls handlers pass on to the controller (reassignments,
leader elections), the client side of a controlled shutdown (``KafkaServer.controlledShutdown``), and
what ``/healthz`` reports of the broker.

Fencing (controller epoch, broker epoch) is the replica manager's; requests that need the active
controller answer NOT_CONTROLLER on any other broker.
"""
from __future__ import annotations

import asyncio
import time
import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from brokers.control import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from brokers.app.long_lived_heap import HEAP
from brokers.http.client import post_control
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from brokers.app.broker_server import BrokerServer

log = logging.getLogger(__name__)


class ControlPlane:
    """brokers.control.ControlRequestHandler's work, plus the server context's ReassignmentOps and ElectLeaders."""

    def __init__(self, broker: BrokerServer):
        self.broker = broker

    # -- requests from the controller ----------------------------------------------------------
    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        return await self.broker.replica_manager.become_leader_or_follower(request)

    async def update_metadata(self, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
        b = self.broker
        error = b.replica_manager.fence("UpdateMetadata", request.controller_id, request.controller_epoch,
                                         request.broker_epoch)
        if error == ErrorCode.NONE:
            for tp in b.metadata_cache.update(request):
                if not b.metadata_cache.contains_topic(tp.topic):
                    b.stats.forget_topic(tp.topic)  # a deleted topic leaves /metrics
            b.replica_manager.update_live_brokers(list(request.live_brokers))
        return UpdateMetadataResponse(int(error))

    async def stop_replica(self, request: StopReplicaRequest) -> StopReplicaResponse:
        response = await self.broker.replica_manager.stop_replicas(request)
        deleted = sum(1 for p in request.partitions if p.delete)
        if deleted:
            HEAP.release(f"StopReplica deleted {deleted} partitions")
        return response

    async def controlled_shutdown(self, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
        controller = self.broker.controller
        if controller is None or not controller.is_active:
            return ControlledShutdownResponse(int(ErrorCode.NOT_CONTROLLER), ())
        return await controller.controlled_shutdown(request.broker_id, request.broker_epoch)

    # -- requests passed on to the controller --------------------------------------------------
    async def alter_partition_reassignments(self, targets: dict) -> Any:
        if self.broker.controller is None:
            return ErrorCode.NOT_CONTROLLER
        return await self.broker.controller.alter_partition_reassignments(targets)

    async def list_partition_reassignments(self, partitions: list | None) -> Any:
        if self.broker.controller is None:
            return ErrorCode.NOT_CONTROLLER
        return await self.broker.controller.list_partition_reassignments(partitions)

    async def elect_leaders(self, election_type: int,
                            partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, str | None, int]]:
        """ElectLeaders: the controller's elections, NOT_CONTROLLER unless this broker is the controller."""
        controller = self.broker.controller
        if controller is None or not controller.is_active:
            return {tp: (int(ErrorCode.NOT_CONTROLLER), None, -1) for tp in partitions}
        return await controller.elect_leaders(election_type, partitions)

    # -- leaving: controlled shutdown, client side ---------------------------------------------
    async def request_controlled_shutdown(self) -> None:
        """Ask the controller to move our leaderships away before we leave (controlled.shutdown.enable),
        retrying ``controlled.shutdown.max.retries`` times ``controlled.shutdown.retry.backoff.ms`` apart."""
        b = self.broker
        if not b.config["controlled.shutdown.enable"]:
            return
        if b.replica_manager is not None:
            started = time.monotonic()
            await b.replica_manager.begin_controlled_shutdown()
            log.info("broker %d: replica fetchers stopped in %.3f s; asking the controller to move its leaderships",
                     b.broker_id, time.monotonic() - started)
        retries = b.config["controlled.shutdown.max.retries"]
        for attempt in range(1, retries + 1):
            try:
                response = await self._send_controlled_shutdown()
                if response.error_code == ErrorCode.NONE and not response.remaining_partitions:
                    log.info("broker %d: controlled shutdown succeeded", b.broker_id)
                    return
                log.info("broker %d: controlled shutdown attempt %d: error %d, still leading %s", b.broker_id,
                         attempt, response.error_code, list(response.remaining_partitions))
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                log.warning("broker %d: controlled shutdown attempt %d failed: %s", b.broker_id, attempt, exc)
            if attempt < retries:
                await asyncio.sleep(b.config["controlled.shutdown.retry.backoff.ms"] / 1000)
        log.warning("broker %d: controlled shutdown incomplete after %d attempts; stopping anyway", b.broker_id, retries)

    async def _send_controlled_shutdown(self) -> ControlledShutdownResponse:
        b = self.broker
        request = ControlledShutdownRequest(b.broker_id, b.broker_epoch)
        timeout = b.config["controller.socket.timeout.ms"] / 1000
        if b.controller.is_active:
            return await asyncio.wait_for(b.controller.controlled_shutdown(request.broker_id, request.broker_epoch),
                                          timeout)
        controller_id = b.controller.active_controller_id
        info = b.metadata_cache.live_brokers.get(controller_id) or await b.kzc.get_broker(controller_id)
        if info is None:
            raise ConnectionError("no live controller is known")
        return await post_control(info, request, timeout, b.control_secret, b.http_peer_tls)


def health(broker: BrokerServer) -> dict:
    """``/healthz``: the broker's registration, controller, metadata, partitions, configs, connections."""
    b = broker
    rm = b.replica_manager
    return {"broker_id": b.broker_id, "broker_epoch": b.broker_epoch, "cluster_id": b.cluster_id,
            "zookeeper_connected": b.zk.connected, "controller": b.controller.describe() if b.controller else {},
            "controller_epoch_seen": rm.controller_epoch if rm else 0,
            "rejected_requests": len(rm.rejected) if rm else 0,
            "metadata": b.metadata_cache.snapshot(),
            "partitions": rm.describe() if rm else {},
            "offline_log_dirs": [str(d) for d in b.log_manager.offline_log_dirs()] if b.log_manager else [],
            "offline_partitions": sorted(map(str, rm.offline_partitions)) if rm else [],
            "dynamic_config": dynamic_config_view(b),
            "connections": {listener.listener_name: dict(Counter(c.principal for c in listener.connections))
                            for listener in b.kafka_listeners}}  # listener -> principal -> open connections


def dynamic_config_view(broker: BrokerServer) -> dict:
    """The dynamic broker config as applied (``/healthz``): overrides and the live throttle rates."""
    d = broker.dynamic_config
    return {"cluster_default": d.overrides(per_broker=False), "broker": d.overrides(per_broker=True),
            "leader_replication_throttled_rate": d.leader_replication_throttled_rate,
            "follower_replication_throttled_rate": d.follower_replication_throttled_rate,
            "config_changes_processed": broker.config_listener.processed}
