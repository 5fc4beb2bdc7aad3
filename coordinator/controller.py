"""KafkaController: election with epoch fencing, failover, and the reactions of reference §2.5.

Every broker runs one. All work goes through one event queue (``ControllerEventManager``); ZooKeeper
watches only enqueue events (``ControllerEventManager.watch``). Every controller write is fenced by the
``/controller_epoch`` version won at election: when one fails with ControllerMovedError the controller
resigns and re-elects.

As in Kafka, events are handled by ``process_*`` methods, picked by event type from a table built once;
reactions are ``on_*`` (``on_controller_failover``, ``on_broker_failure``, ``on_broker_startup``). This
module keeps election, failover, broker changes and controlled shutdown; each term's managers get the
pieces they use at construction: topic and partition changes (``topic_changes``), topic deletion
(``topic_deletion``), reassignments (``reassignment``) and replica leader elections (``preferred_election``).
"""
from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from brokers.config import BrokerConfig
from brokers.control import ControlledShutdownResponse, LeaderAndIsrResponse, StopReplicaResponse
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ControllerMovedError, SessionExpiredError
from coordinator import events as ev
from coordinator.channel import ControllerChannelManager
from coordinator.context import ControllerContext
from coordinator.event_manager import ControllerEventManager
from coordinator.leadership import PartitionLeadership
from coordinator.log_dir_failure import LogDirFailures, wants_response
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.reassignment import PartitionReassignments
from coordinator.preferred_election import ReplicaLeaderElections
from coordinator.request_batch import ControllerBrokerRequestBatch
from coordinator.topic_changes import TopicChangeProcessor
from coordinator.topic_deletion import TopicDeletionManager

log = logging.getLogger(__name__)

Process = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True)
class ControllerConfig:
    unclean_leader_election: bool = False
    delete_topic_enable: bool = True
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: float = 300
    leader_imbalance_per_broker_percentage: int = 10
    control_secret: bytes | None = None  # what control requests are signed with (brokers.security.control_auth)
    http_ssl_context: ssl.SSLContext | None = None  # verifies the brokers' https ports (http.ssl.enabled)

    @classmethod
    def from_broker(cls, config: BrokerConfig, control_secret: bytes | None = None,
                    http_ssl_context: ssl.SSLContext | None = None) -> "ControllerConfig":
        return cls(config["unclean.leader.election.enable"], config["delete.topic.enable"],
                   auto_leader_rebalance_enable=config["auto.leader.rebalance.enable"],
                   leader_imbalance_check_interval_seconds=config["leader.imbalance.check.interval.seconds"],
                   leader_imbalance_per_broker_percentage=config["leader.imbalance.per.broker.percentage"],
                   control_secret=control_secret, http_ssl_context=http_ssl_context)


class KafkaController:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, config: ControllerConfig):
        self.broker_id = broker_id
        self.kzc = kzc
        self.config = config
        self.events = ControllerEventManager(self.process)
        self.active_controller_id = -1
        self.channel: ControllerChannelManager | None = None
        self.elections_won = 0
        self.resignations = 0
        self._any_role, self._active_only = self._processors()
        self._reset_state()

    def _reset_state(self) -> None:
        """A new term's context, state machines and managers (each given the pieces it uses)."""
        watch, ctx = self.events.watch, ControllerContext()
        self.context = ctx
        self.states = PartitionStates()
        self.batch = ControllerBrokerRequestBatch(self.broker_id, ctx)
        self.leadership = PartitionLeadership(self.kzc, ctx, self.batch, self.states, self.unclean_allowed)
        self.deletion = TopicDeletionManager(self.broker_id, self.kzc, ctx, self.batch, self.states, watch,
                                             self.config.delete_topic_enable)
        self.reassignments = PartitionReassignments(self.kzc, ctx, self.batch, self.leadership, self.deletion, watch)
        self.elections = ReplicaLeaderElections(self.broker_id, self.kzc, ctx, self.leadership, self.config,
                                                lambda: self.is_active, self.events.put, watch)
        self.log_dirs = LogDirFailures(self.kzc, ctx, self.batch, self.states, self.leadership, watch)
        self.topics = TopicChangeProcessor(self.broker_id, self.kzc, ctx, self.batch, self.states, self.leadership,
                                           self.reassignments, watch, lambda: self.elections_won)

    def _processors(self) -> tuple[dict[type, Process], dict[type, Process]]:
        """Event type -> its process method (Kafka's ``KafkaController.process``): those run whatever
        this broker's role (they answer NOT_CONTROLLER themselves), and those run only by the active
        controller (for anyone else they are watches that fired for a term that ended). The managers
        are rebuilt every term, so their entries look the current one up when the event runs."""
        any_role: dict[type, Process] = {
            ev.Startup: self.process_reelect,
            ev.Reelect: self.process_reelect,
            ev.RegisterBrokerAndReelect: self.process_reelect,
            ev.Expire: self.process_expire,
            ev.ControlledShutdown: self.process_controlled_shutdown,
            ev.ApiPartitionReassignment:
                lambda e: self.reassignments.process_api_partition_reassignment(e, self.is_active),
            ev.ListPartitionReassignments:
                lambda e: self.reassignments.process_list_partition_reassignments(e, self.is_active),
            ev.ReplicaLeaderElection: lambda e: self.elections.process_replica_leader_election(e),
        }
        active_only: dict[type, Process] = {
            ev.BrokerChange: self.process_broker_change,
            ev.TopicChange: lambda e: self.topics.process_topic_change(),
            ev.TopicDeletion: lambda e: self.deletion.process_topic_deletion(),
            ev.StopReplicaResponseReceived: lambda e: self.deletion.process_stop_replica_response(e),
            ev.IsrChangeNotification: lambda e: self.topics.process_isr_change_notification(),
            ev.LogDirEventNotification: lambda e: self.log_dirs.process_log_dir_event_notification(),
            ev.LeaderAndIsrResponseReceived: lambda e: self.log_dirs.process_leader_and_isr_response(e),
            ev.PartitionModifications: lambda e: self.topics.process_partition_modifications(e.topic),
            ev.ZkPartitionReassignment: lambda e: self.reassignments.process_zk_partition_reassignment(e),
            ev.PartitionReassignmentIsrChange: lambda e: self.reassignments.process_partition_reassignment_isr_change(
                TopicPartition(e.topic, e.partition)),
            ev.TopicConfigChange: self.process_topic_config_change,
            ev.AutoPreferredReplicaLeaderElection:
                lambda e: self.elections.process_auto_preferred_replica_leader_election(e),
        }
        return any_role, active_only

    def unclean_allowed(self, topic: str) -> bool:
        """``unclean.leader.election.enable``: the topic's override, else the broker's setting."""
        override = self.context.topic_configs.get(topic, {}).get("unclean.leader.election.enable")
        if override is None:
            return self.config.unclean_leader_election
        return override.strip().lower() == "true"

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id and self.context.epoch_zk_version >= 0

    # -- lifecycle -----------------------------------------------------------------------------
    async def startup(self) -> None:
        self.events.start()
        self.events.put(ev.Startup())

    async def shutdown(self) -> None:
        await self.events.close()
        if self.is_active:
            await self._resign(delete_znode=True)

    def on_session_expired(self) -> None:
        self.events.put(ev.Expire())

    def on_new_session(self) -> None:
        self.events.put(ev.RegisterBrokerAndReelect())

    def on_topic_config_changed(self, topic: str, config: dict[str, str]) -> None:
        """The topic's overrides changed: ``topic_configs`` (unclean.leader.election.enable) follows."""
        self.events.put(ev.TopicConfigChange(topic, dict(config)))

    # -- the event thread ----------------------------------------------------------------------
    async def process(self, event: ev.ControllerEvent) -> None:
        try:
            await self._dispatch(event)
        except (ControllerMovedError, SessionExpiredError) as exc:
            log.warning("controller %d lost its fencing (%s): resigning", self.broker_id, exc)
            await self._resign(delete_znode=False)
            if not isinstance(exc, SessionExpiredError):
                self.events.put(ev.Reelect())
        except Exception:
            if not self.is_active:
                raise
            # A half-done event leaves the context unreliable: give up control so that a controller
            # (maybe us again) rebuilds it from ZooKeeper (Kafka's triggerControllerMove).
            log.exception("controller %d failed on %s: moving control", self.broker_id, type(event).__name__)
            await self._resign(delete_znode=True)
            self.events.put(ev.Reelect())
        finally:
            if self.is_active:
                self._send_batch()  # ZooKeeper already holds what was decided; brokers must hear it
            else:
                self.batch.clear()
            if isinstance(event, ev.ControlledShutdown) and not event.result.done():
                event.result.set_result(ControlledShutdownResponse(int(ErrorCode.NOT_CONTROLLER), ()))
            if isinstance(event, (ev.ApiPartitionReassignment, ev.ListPartitionReassignments)) and not event.result.done():
                event.result.set_result(ErrorCode.NOT_CONTROLLER)

    async def _dispatch(self, event: ev.ControllerEvent) -> None:
        process = self._any_role.get(type(event))
        if process is None and self.is_active:
            process = self._active_only.get(type(event))
        if process is not None:
            await process(event)

    async def process_reelect(self, event: ev.Startup | ev.Reelect | ev.RegisterBrokerAndReelect) -> None:
        """Kafka's processStartup, processReelect and processRegisterBrokerAndReelect: all end in elect."""
        await self._elect()

    async def process_expire(self, event: ev.Expire) -> None:
        await self._resign(delete_znode=False)

    async def process_topic_config_change(self, event: ev.TopicConfigChange) -> None:
        if event.topic in self.context.all_topics:
            self.context.topic_configs[event.topic] = event.config

    # -- election ------------------------------------------------------------------------------
    async def _elect(self) -> None:
        was_active = self.is_active
        current = await self.kzc.get_controller_id(watch=self.events.watch(ev.Reelect()))
        if was_active and current == self.broker_id:
            return  # a spurious Reelect: still us
        if was_active:
            await self._resign(delete_znode=False)  # deleted or taken over: start from scratch
        if current == self.broker_id:
            # Named controller without being one (a failover that died half-way): free the znode.
            await self.kzc.delete_controller_if_owned()
            current = await self.kzc.get_controller_id(watch=self.events.watch(ev.Reelect()))
        if current is not None:
            self.active_controller_id = current
            return
        result = await self.kzc.try_elect_controller(self.broker_id)
        self.active_controller_id = result.controller_id
        if result.won:
            self.context.epoch, self.context.epoch_zk_version = result.epoch, result.epoch_zk_version
            self.elections_won += 1
            log.info("broker %d is controller with epoch %d", self.broker_id, result.epoch)
            await self.on_controller_failover()

    async def on_controller_failover(self) -> None:
        """Become controller (§2.3): watches, context from ZooKeeper, metadata first, then leaders."""
        ctx, started = self.context, time.monotonic()
        self.channel = ControllerChannelManager(self.broker_id, secret=self.config.control_secret,
                                                ssl_context=self.config.http_ssl_context)
        broker_ids = await self.kzc.get_broker_ids(watch=self.events.watch(ev.BrokerChange()))
        for broker_id in broker_ids:
            info = await self.kzc.get_broker(broker_id)
            if info is not None:
                ctx.live_brokers[broker_id] = info
                self.channel.add_broker(info)
        await self.topics.load_topics(await self.kzc.get_all_topics(watch=self.events.watch(ev.TopicChange())))
        loaded = time.monotonic()
        await self.kzc.get_isr_change_notifications(watch=self.events.watch(ev.IsrChangeNotification()))
        self.batch.add_update_metadata(ctx.live_brokers, ctx.leadership)
        self._send_batch()  # brokers learn the live brokers before any LeaderAndIsr (pitfall 10)
        for tp in sorted(ctx.leadership):
            self.batch.add_leader_and_isr(ctx.assignments[tp], tp)
        await self.log_dirs.process_log_dir_event_notification()  # the watch; notifications of no one's term
        await self._elect_offline_and_new()
        dead = {b for replicas in ctx.assignments.values() for b in replicas} - ctx.live_broker_ids
        await self.leadership.take_replicas_offline(dead)  # replica state machine start-up: OfflineReplica
        reassignments = self.reassignments
        zk_moves = await reassignments.process_zk_partition_reassignment(ev.ZkPartitionReassignment(created=True))
        for tp in sorted(set(ctx.reassignments) - zk_moves):
            await reassignments.resume_one(tp)
        await self.deletion.process_topic_deletion()
        await self.elections.on_failover()  # pending /admin/preferred_replica_election, auto-rebalance timer
        log.info("controller %d: failover with %d partitions done in %.3f s (context loaded in %.3f s)", self.broker_id,
                 len(ctx.assignments), time.monotonic() - started, loaded - started)

    async def _elect_offline_and_new(self) -> None:
        new = sorted(tp for tp in self.context.assignments if self.states.get(tp) is PartitionState.New)
        await self.leadership.on_new_partition_creation(new)
        offline = sorted(tp for tp in self.context.leadership if self.states.get(tp) is PartitionState.Offline
                         and tp.topic not in self.context.topics_to_delete)
        await self.leadership.elect(offline, self.leadership.offline_strategy())

    async def _resign(self, delete_znode: bool) -> None:
        if self.context.epoch_zk_version < 0 and self.channel is None:
            return
        log.info("broker %d resigns as controller (epoch %d)", self.broker_id, self.context.epoch)
        if delete_znode:
            await self.kzc.resign_controller(self.context.epoch_zk_version)
        if self.channel is not None:
            await self.channel.close()
            self.channel = None
        self.resignations += 1
        self.active_controller_id = -1
        self.elections.stop()  # the auto-rebalance timer
        self._reset_state()

    def _send_batch(self) -> None:
        if self.channel is None:
            return
        self.batch.send(self.channel.send, self._enqueue_stop_replica_response, self._enqueue_leader_and_isr_response)

    def _enqueue_stop_replica_response(self, broker_id: int, response: StopReplicaResponse) -> None:
        self.events.put(ev.StopReplicaResponseReceived(broker_id, response.partition_errors, response.error_code))

    def _enqueue_leader_and_isr_response(self, broker_id: int, response: LeaderAndIsrResponse) -> None:
        """Only answers that can change the replicas on offline log dirs become events (KIP-112)."""
        if wants_response(self.context, broker_id, response.partition_errors):
            self.events.put(ev.LeaderAndIsrResponseReceived(broker_id, response.partition_errors, response.error_code))

    # -- broker changes ------------------------------------------------------------------------
    async def process_broker_change(self, event: ev.BrokerChange) -> None:
        ctx = self.context
        current = set(await self.kzc.get_broker_ids(watch=self.events.watch(ev.BrokerChange())))
        infos = {b: await self.kzc.get_broker(b) for b in current}
        infos = {b: info for b, info in infos.items() if info is not None}
        dead = {b for b in ctx.live_brokers if b not in infos}
        bounced = {b for b, info in infos.items() if b in ctx.live_brokers and info.epoch != ctx.live_brokers[b].epoch}
        new = {b for b in infos if b not in ctx.live_brokers}
        if dead | bounced:
            await self.on_broker_failure(dead | bounced)
        if new | bounced:
            for b in new | bounced:
                ctx.replicas_on_offline_dirs.pop(b, None)  # its dirs are checked again at start-up
                ctx.live_brokers[b] = infos[b]
                self.channel.add_broker(infos[b])
            await self.on_broker_startup(new | bounced)

    async def on_broker_failure(self, brokers: set[int]) -> None:
        ctx = self.context
        log.info("controller %d: brokers %s failed", self.broker_id, sorted(brokers))
        for b in brokers:
            ctx.live_brokers.pop(b, None)
            ctx.shutting_down.discard(b)
            ctx.replicas_on_offline_dirs.pop(b, None)
            self.channel.remove_broker(b)
        self.deletion.on_brokers_failed(brokers)
        led = sorted(tp for b in brokers for tp in ctx.partitions_led_by(b) if tp.topic not in ctx.topics_to_delete)
        for tp in led:
            self.states.transition([tp], PartitionState.Offline)
        await self.leadership.elect(led, self.leadership.offline_strategy())
        await self.leadership.take_replicas_offline(brokers)
        self.batch.add_update_metadata(ctx.live_brokers, [])

    async def on_broker_startup(self, brokers: set[int]) -> None:
        ctx = self.context
        log.info("controller %d: brokers %s started", self.broker_id, sorted(brokers))
        self.batch.add_update_metadata(ctx.live_brokers, [])
        self.batch.add_update_metadata(brokers, ctx.leadership)
        self._send_batch()  # UpdateMetadata before LeaderAndIsr (pitfall 10)
        for b in brokers:
            for tp in ctx.partitions_on(b):
                if tp in ctx.leadership:
                    self.batch.add_leader_and_isr([b], tp)
        await self._elect_offline_and_new()
        await self.reassignments.resume(brokers)
        await self.deletion.resume_deletions()

    # -- controlled shutdown -------------------------------------------------------------------
    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        future = asyncio.get_running_loop().create_future()
        self.events.put(ev.ControlledShutdown(broker_id, broker_epoch, future))
        return await future

    async def process_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        ctx = self.context
        if not self.is_active:
            event.result.set_result(ControlledShutdownResponse(int(ErrorCode.NOT_CONTROLLER), ()))
            return
        info = ctx.live_brokers.get(event.broker_id)
        if info is None or (event.broker_epoch >= 0 and event.broker_epoch < info.epoch):
            code = ErrorCode.STALE_BROKER_EPOCH if info else ErrorCode.UNKNOWN_SERVER_ERROR
            event.result.set_result(ControlledShutdownResponse(int(code), ()))
            return
        ctx.shutting_down.add(event.broker_id)
        started = time.monotonic()
        led = [tp for tp in ctx.partitions_led_by(event.broker_id) if len(ctx.assignments.get(tp, ())) > 1]
        await self.leadership.elect(led, self.leadership.controlled_shutdown_strategy(), mark_offline_if_none=False)
        elected = time.monotonic()
        for tp in ctx.partitions_on(event.broker_id):
            if tp in ctx.leadership and ctx.leadership[tp].leader_and_isr.leader != event.broker_id:
                self.batch.add_stop_replica(event.broker_id, tp, delete=False)
        followed = [tp for tp in ctx.partitions_on(event.broker_id) if tp in ctx.leadership
                    and ctx.leadership[tp].leader_and_isr.leader != event.broker_id and len(ctx.assignments[tp]) > 1]
        await self.leadership.take_replicas_offline({event.broker_id}, followed)  # leave the ISRs it only follows
        remaining = tuple((tp.topic, tp.partition) for tp in ctx.partitions_led_by(event.broker_id)
                          if len(ctx.assignments.get(tp, ())) > 1)  # single-replica partitions cannot move
        log.info("controlled shutdown of broker %d: %d leaderships moved in %.3f s, %d followed ISRs left in %.3f s, "
                 "%d still led", event.broker_id, len(led), elected - started, len(followed),
                 time.monotonic() - elected, len(remaining))
        event.result.set_result(ControlledShutdownResponse(int(ErrorCode.NONE), remaining))

    # -- reassignment API ----------------------------------------------------------------------
    async def alter_partition_reassignments(self, targets: dict) -> dict | ErrorCode:
        """AlterPartitionReassignments: ``{tp: (code, message)}``, or NOT_CONTROLLER for the whole request."""
        future = asyncio.get_running_loop().create_future()
        self.events.put(ev.ApiPartitionReassignment(targets, future))
        return await future

    async def list_partition_reassignments(self, partitions: list | None) -> dict | ErrorCode:
        """ListPartitionReassignments: ``{tp: ReplicaAssignment}`` of the moving ones, or NOT_CONTROLLER."""
        future = asyncio.get_running_loop().create_future()
        self.events.put(ev.ListPartitionReassignments(partitions, future))
        return await future

    # -- replica leader elections (ElectLeaders) ------------------------------------------------
    async def elect_leaders(self, election_type: int, partitions) -> dict:
        """ElectLeaders: ``{TopicPartition: (error code, message, leader or -1)}`` once the event ran."""
        future = asyncio.get_running_loop().create_future()
        self.events.put(ev.ReplicaLeaderElection(election_type, frozenset(partitions), future))
        return await future

    # -- introspection -------------------------------------------------------------------------
    def describe(self) -> dict:
        return {"active_controller_id": self.active_controller_id, "is_controller": self.is_active,
                "epoch": self.context.epoch if self.is_active else None,
                "epoch_zk_version": self.context.epoch_zk_version if self.is_active else None,
                "elections_won": self.elections_won, "resignations": self.resignations,
                "live_brokers": sorted(self.context.live_brokers) if self.is_active else [],
                "events_processed": self.events.processed}

