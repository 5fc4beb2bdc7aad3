"""BrokerServer: the composition root. The only module that wires every package together.

Start order (Kafka 2.8, reference §1.4): ZooKeeper session and persistent roots -> cluster id and
``meta.properties`` -> logs loaded (recovery off the loop) -> metadata cache and replica manager ->
HTTP (control plane) -> ``/brokers/ids/<id>`` registration (broker epoch) -> controller candidate.
Stop in reverse. A session that expires is answered by resigning, then re-registering and
re-electing once a new session is up.
"""
from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections import Counter
from typing import Any

from brokers.security.authorizer import AclAuthorizer
from brokers.admin.zk_admin import ZkAdmin
from brokers.security.acls import parse_super_users
from brokers.config import BrokerConfig, ConfigError
from brokers.dynamic_config.change_listener import ConfigChangeListener
from brokers.dynamic_config.broker_config import DynamicBrokerConfig
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
from brokers.security.credential_cache import CredentialCache
from brokers.http.auth import HttpSecurity
from brokers.http.client import post_control
from brokers.http.server import HttpServer
from brokers.model import BrokerInfo, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.fetcher import FetcherConfig
from brokers.replication.replica_manager import IsrConflictError, ReplicaManager
from brokers.protocol.scram import sanitize as sanitize_user
from brokers.server import sasl
from brokers.server.apis import KafkaApis
from brokers.server.context import ServerContext
from brokers.server.listener import KafkaListener
from brokers.server.tls import http_contexts, inter_broker_context, listener_contexts, listener_principal_mappers
from brokers.stats import BrokerStats
from brokers.storage.checkpoints import read_meta_properties, write_meta_properties
from brokers.storage.log_config import InvalidConfigError, LogConfig
from brokers.storage.log_manager import LogManager, LogManagerConfig
from brokers.storage.scheduler import Scheduler
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import BadVersionError, ZkError
from brokers.zk.gateway import SessionState, ZkGateway
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.handlers import HANDLERS as GROUP_HANDLERS
from consumer_group.coordinator.offset_store import ZkOffsetStore
from consumer_group.coordinator.placement import OFFSETS_TOPIC
from consumer_group.coordinator.views import group_view
from coordinator.controller import ControllerConfig, KafkaController

log = logging.getLogger(__name__)


class ZkIsrStore:
    """The replica manager's IsrStore over KafkaZkClient (BADVERSION becomes IsrConflictError)."""

    def __init__(self, kzc: KafkaZkClient):
        self.kzc = kzc

    async def update_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int:
        try:
            return await self.kzc.update_isr_by_leader(tp, state)
        except BadVersionError as exc:
            raise IsrConflictError(str(exc)) from None

    async def read_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        return await self.kzc.get_partition_state(tp)

    async def notify_isr_changes(self, partitions: list[TopicPartition]) -> None:
        await self.kzc.create_isr_change_notification(partitions)


class BrokerServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.dynamic_config = DynamicBrokerConfig(self.broker_id, config)  # /config/brokers, applied live
        try:
            self.default_log_config = self.dynamic_config.default_log_config()
        except InvalidConfigError as exc:
            raise ConfigError(f"{config.source}: {exc}") from None
        self.tls_contexts = listener_contexts(config)  # SSL / SASL_SSL listeners; bad files stop start-up here
        self.principal_mappers = listener_principal_mappers(config)  # SSL listeners; a bad rule stops start-up
        self.inter_broker_tls = inter_broker_context(config)  # the replica fetchers' TLS client side
        # http.ssl.enabled: the HTTP port's server context and the one this broker checks the others' with
        self.http_tls, self.http_peer_tls = http_contexts(config) or (None, None)
        self.cluster_id: str | None = None
        self.broker_epoch = -1
        self.zk = ZkGateway(config.zookeeper_connect, session_timeout_ms=config.zookeeper_session_timeout_ms,
                            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                            digest=config["zookeeper.digest.credentials"], secure_acls=config["zookeeper.set.acl"])
        self.kzc = KafkaZkClient(self.zk)
        self.credentials = CredentialCache(self.user_config)  # SCRAM users: cached for HTTP, fresh for SASL
        self.config_listener = ConfigChangeListener(self.kzc, {"users": self.credentials.invalidate,
                                                               "topics": self._on_topic_config_change,
                                                               "brokers": self._on_broker_config_change})
        self.admin: ZkAdmin | None = None
        self.authorizer = (AclAuthorizer(self.zk, parse_super_users(config["super.users"]),
                                         config["allow.everyone.if.no.acl.found"])
                           if config["authorizer.class.name"] else None)  # None: everything is allowed
        self.scheduler: Scheduler | None = None
        self.log_manager: LogManager | None = None
        self.metadata_cache = MetadataCache(self.broker_id)
        self.replica_manager: ReplicaManager | None = None
        self.control_secret: bytes | None = config.control_plane_secret  # else ZooKeeper's, at start-up
        self.http_security = HttpSecurity(basic_required=config["http.authentication.method"] == "BASIC",
                                          scram_credential=self.credentials.credential,
                                          authorizer=self.authorizer, peer_tls=self.http_peer_tls)
        self.http = HttpServer(self, _bind_host(config), config.http_port, security=self.http_security,
                               ssl_context=self.http_tls)
        self.controller: KafkaController | None = None
        self.kafka_listeners: list[KafkaListener] = []
        self.group_coordinator = GroupCoordinator(self.broker_id, GroupConfig.from_broker(config), ZkOffsetStore(self.kzc))
        self._session_lost = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stats = BrokerStats()  # what /metrics reports: request latencies, per-topic traffic, ISR changes
        self.shutting_down = False

    # -- start-up ------------------------------------------------------------------------------
    async def startup(self) -> None:
        await self.zk.start()
        self.zk.add_listener(self._on_session_state)
        await self.kzc.create_persistent_roots()
        self.cluster_id = await self.kzc.get_or_create_cluster_id()
        if self.control_secret is None:
            self.control_secret = await self.kzc.get_or_create_control_plane_secret()
        self.http_security.control_secret = self.control_secret
        if self.broker_id < 0:
            self.broker_id = await self._resolve_broker_id()
            self.metadata_cache.broker_id = self.broker_id
        self._check_meta_properties()
        config_baseline = await self.config_listener.latest_sequence()  # changes after it are applied later
        await self._load_dynamic_broker_configs()
        self.scheduler = Scheduler(f"broker-{self.broker_id}-scheduler")
        self.log_manager = LogManager(self.config.log_dirs, self.default_log_config, LogManagerConfig.from_broker(self.config),
                                      topic_configs=await self._all_topic_log_configs(), scheduler=self.scheduler)
        await asyncio.to_thread(self.log_manager.startup)
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, self._topic_log_config, lambda: self.broker_epoch,
            isr_store=ZkIsrStore(self.kzc), fetcher_config=self._fetcher_config(),
            listener=self.config["inter.broker.listener.name"],
            replica_lag_time_max_ms=self.config["replica.lag.time.max.ms"], stats=self.stats,
            leader_throttle_rate=lambda: self.dynamic_config.leader_replication_throttled_rate,
            follower_throttle_rate=lambda: self.dynamic_config.follower_replication_throttled_rate)
        self.replica_manager.start()
        self.group_coordinator.broker_id = self.broker_id
        await self.group_coordinator.startup()
        self.replica_manager.add_listener(self._on_leadership)
        admin = ZkAdmin(self.broker_id, self.kzc, self.config, self.default_log_config, self.metadata_cache,
                        self.dynamic_config)
        self.admin = admin
        if self.authorizer is not None:
            await self.authorizer.start()  # every ACL loaded before the first request is served
        for listener in self.config.listeners:  # one socket each; Metadata answers with that listener's endpoints
            context = ServerContext(self.broker_id, self.config, self.metadata_cache, self.replica_manager,
                                    lambda: self.cluster_id, admin, listener.listener,
                                    coordinator_partition=self.group_coordinator.partition_for,
                                    group_coordinator=self.group_coordinator, stats=self.stats,
                                    reassignments=self,
                                    elect_leaders=self._elect_leaders, authorizer=self.authorizer,
                                    sasl=self._sasl_listener_config(listener), user_configs=self)
            kafka_listener = KafkaListener(KafkaApis(context, GROUP_HANDLERS).handle, listener.host, listener.port,
                                           self.config["socket.request.max.bytes"], listener_name=listener.listener,
                                           security_protocol=listener.security_protocol,
                                           ssl_context=self.tls_contexts.get(listener.listener),
                                           principal_mapper=self.principal_mappers.get(listener.listener))
            await kafka_listener.start()
            self.kafka_listeners.append(kafka_listener)
        await self.http.start()
        self.broker_epoch = await self.kzc.register_broker(self.broker_info())
        log.info("broker %d registered with epoch %d (cluster %s)", self.broker_id, self.broker_epoch, self.cluster_id)
        self.controller = KafkaController(self.broker_id, self.kzc,
                                          ControllerConfig.from_broker(self.config, self.control_secret,
                                                                       self.http_peer_tls))
        await self.controller.startup()
        self.dynamic_config.add_listener(self._on_dynamic_broker_config)
        await self.config_listener.start(after=config_baseline)

    def _on_leadership(self, tp: TopicPartition, is_leader: bool) -> None:
        """Group ownership follows ``__consumer_offsets`` leadership (reference §5.1)."""
        if tp.topic != OFFSETS_TOPIC:
            return
        if is_leader:
            self.group_coordinator.on_elected(tp.partition)
        else:
            self.group_coordinator.on_resigned(tp.partition)

    def broker_info(self) -> BrokerInfo:
        return BrokerInfo(self.broker_id, tuple(self.config.advertised_listeners), self.config["broker.rack"],
                          self.broker_epoch, self.http.port, self.http.scheme)

    def _fetcher_config(self) -> FetcherConfig:
        return FetcherConfig.from_broker(self.config, self.broker_id, ssl_context=self.inter_broker_tls,
                                         sasl=self._sasl_client_config())

    def _sasl_client_config(self):
        try:
            return sasl.inter_broker_client_config(self.config)
        except ValueError as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None

    def _sasl_listener_config(self, listener):
        try:
            return sasl.listener_config(self.config, listener.listener, listener.security_protocol,
                                        self.credentials.fresh)  # each login reads ZooKeeper
        except ValueError as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None

    # -- /config/users for Describe/AlterUserScramCredentials (handlers.scram_credentials.UserConfigs) --
    async def user_config(self, user: str) -> dict[str, str]:
        return await self.kzc.get_entity_config("users", sanitize_user(user))

    async def set_user_config(self, user: str, config: dict[str, str]) -> None:
        await self.kzc.change_entity_config("users", sanitize_user(user), config)

    async def user_names(self) -> list[str]:
        return [urllib.parse.unquote(name) for name in await self.kzc.get_entity_names("users")]

    async def _resolve_broker_id(self) -> int:
        """``broker.id=-1``: the id in meta.properties if a log dir has one, else a generated one."""
        stored = {read_meta_properties(d).get("broker.id") for d in self.config.log_dirs} - {None}
        if len(stored) > 1:
            raise ConfigError(f"log.dirs disagree on broker.id in meta.properties: {sorted(stored)}")
        if stored:
            return int(stored.pop())
        if not self.config["broker.id.generation.enable"]:
            raise ConfigError(f"{self.config.source}: broker.id=-1 needs broker.id.generation.enable=true")
        return await self.kzc.generate_broker_id(self.config["reserved.broker.max.id"])

    def _check_meta_properties(self) -> None:
        """Every log dir belongs to this broker id and this cluster, or start-up stops (Kafka's rule)."""
        for log_dir in self.config.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            meta = read_meta_properties(log_dir)
            if meta.get("cluster.id") not in (None, self.cluster_id):
                raise ConfigError(f"{log_dir}/meta.properties belongs to cluster {meta['cluster.id']}, but "
                                  f"ZooKeeper's /cluster/id is {self.cluster_id}: wrong zookeeper.connect or log.dirs?")
            if meta.get("broker.id") not in (None, str(self.broker_id)):
                raise ConfigError(f"{log_dir}/meta.properties belongs to broker {meta['broker.id']}, "
                                  f"not broker.id={self.broker_id}")
            if not meta:
                write_meta_properties(log_dir, self.broker_id, self.cluster_id or "")

    async def _topic_log_config(self, topic: str) -> LogConfig:
        return self._log_config(topic, await self.kzc.get_topic_config(topic))

    async def _all_topic_log_configs(self) -> dict[str, LogConfig]:
        """Every topic's overrides, read before the logs are loaded: recovery, retention and compaction
        of a restarted broker must use them from the start, not the broker defaults."""
        return {topic: self._log_config(topic, overrides)
                for topic, overrides in (await self.kzc.get_all_topic_configs()).items()}

    def _log_config(self, topic: str, overrides: dict[str, str]) -> LogConfig:
        try:
            return LogConfig.from_properties(overrides, base=self.default_log_config)
        except (InvalidConfigError, ValueError) as exc:
            log.error("topic %s has a bad config override (%s); using the broker defaults", topic, exc)
            return self.default_log_config

    # -- configs changed live (/config/changes, Kafka's DynamicConfigManager) -------------------
    async def _load_dynamic_broker_configs(self) -> None:
        """Start-up: the cluster default and this broker's dynamic configs, before the logs are loaded."""
        self.dynamic_config.broker_id = self.broker_id
        for entity in ("<default>", str(self.broker_id)):
            self.dynamic_config.update(entity, await self.kzc.get_entity_config("brokers", entity))
        try:
            self.default_log_config = self.dynamic_config.default_log_config()
        except InvalidConfigError as exc:
            log.error("dynamic broker log defaults are invalid (%s); keeping the static ones", exc)

    async def _on_topic_config_change(self, topic: str) -> None:
        overrides = await self.kzc.get_topic_config(topic)
        config = self._log_config(topic, overrides)
        if self.log_manager is not None:
            count = await asyncio.to_thread(self.log_manager.update_topic_config, topic, config)
            log.info("topic %s config now %s (%d local logs)", topic, overrides, count)
        if self.controller is not None:
            self.controller.on_topic_config_changed(topic, overrides)

    async def _on_broker_config_change(self, entity: str) -> None:
        if entity in ("<default>", str(self.broker_id)):
            self.dynamic_config.update(entity, await self.kzc.get_entity_config("brokers", entity))

    def _on_dynamic_broker_config(self, dynamic: DynamicBrokerConfig) -> None:
        try:
            default = dynamic.default_log_config()
        except InvalidConfigError as exc:
            log.error("dynamic broker log defaults are invalid (%s); keeping the current ones", exc)
            return
        if default != self.default_log_config:
            self.default_log_config = default
            if self.admin is not None:
                self.admin.defaults = default
            self._spawn(self._reconfigure_logs(default))

    async def _reconfigure_logs(self, default: LogConfig) -> None:
        """New broker log defaults: every topic's config is rebuilt from its overrides over them."""
        configs = await self._all_topic_log_configs()
        if self.log_manager is not None and default == self.default_log_config:
            await asyncio.to_thread(self.log_manager.update_default_config, default, configs)

    # -- ZooKeeper session ---------------------------------------------------------------------
    def _on_session_state(self, state: SessionState) -> None:
        if state is SessionState.LOST:
            self._session_lost = True
            if self.controller is not None:
                self.controller.on_session_expired()  # queued now, ahead of anything a watch adds
        elif state is SessionState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._spawn(self._reregister())

    async def _reregister(self) -> None:
        """A new session: the old ephemerals are gone; register again (new epoch) and re-elect.
        Retried until it works: a broker that is not registered is invisible to the cluster."""
        delay = 0.1
        while not self._session_lost:
            try:
                self.broker_epoch = await self.kzc.register_broker(self.broker_info())
                break
            except ZkError as exc:
                log.error("broker %d: re-registration failed (%s); retrying in %.1f s", self.broker_id, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        else:
            return
        log.info("broker %d re-registered with epoch %d", self.broker_id, self.broker_epoch)
        self.credentials.clear()  # user changes may have been missed while the watch was gone
        self.config_listener.on_new_session()  # the /config/changes watch died with the old session
        if self.authorizer is not None:
            self.authorizer.on_new_session()  # so did the ACL change watches
        if self.controller is not None:
            self.controller.on_new_session()

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- control plane (brokers.control.ControlRequestHandler) ---------------------------------
    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        return await self.replica_manager.become_leader_or_follower(request)

    async def update_metadata(self, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
        error = self.replica_manager.fence("UpdateMetadata", request.controller_id, request.controller_epoch,
                                            request.broker_epoch)
        if error == ErrorCode.NONE:
            for tp in self.metadata_cache.update(request):
                if not self.metadata_cache.contains_topic(tp.topic):
                    self.stats.forget_topic(tp.topic)  # a deleted topic leaves /metrics
            self.replica_manager.update_live_brokers(list(request.live_brokers))
        return UpdateMetadataResponse(int(error))

    async def stop_replica(self, request: StopReplicaRequest) -> StopReplicaResponse:
        return await self.replica_manager.stop_replicas(request)

    async def controlled_shutdown(self, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
        if self.controller is None or not self.controller.is_active:
            return ControlledShutdownResponse(int(ErrorCode.NOT_CONTROLLER), ())
        return await self.controller.controlled_shutdown(request.broker_id, request.broker_epoch)

    async def alter_partition_reassignments(self, targets: dict) -> Any:
        if self.controller is None:
            return ErrorCode.NOT_CONTROLLER
        return await self.controller.alter_partition_reassignments(targets)

    async def list_partition_reassignments(self, partitions: list | None) -> Any:
        if self.controller is None:
            return ErrorCode.NOT_CONTROLLER
        return await self.controller.list_partition_reassignments(partitions)

    async def _elect_leaders(self, election_type: int,
                             partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int, str | None, int]]:
        """ElectLeaders: the controller's elections, NOT_CONTROLLER unless this broker is the controller."""
        if self.controller is None or not self.controller.is_active:
            return {tp: (int(ErrorCode.NOT_CONTROLLER), None, -1) for tp in partitions}
        return await self.controller.elect_leaders(election_type, partitions)

    def group_views(self) -> list[dict]:
        """The groups this broker coordinates, for the admin API and /metrics."""
        coordinator = self.group_coordinator
        return [group_view(g, self.broker_id) for _, g in sorted(coordinator.groups.items())
                if coordinator.owns(g.group_id)]

    def health(self) -> dict:
        controller = self.controller.describe() if self.controller else {}
        return {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch, "cluster_id": self.cluster_id,
                "zookeeper_connected": self.zk.connected, "controller": controller,
                "controller_epoch_seen": self.replica_manager.controller_epoch if self.replica_manager else 0,
                "rejected_requests": len(self.replica_manager.rejected) if self.replica_manager else 0,
                "metadata": self.metadata_cache.snapshot(),
                "partitions": self.replica_manager.describe() if self.replica_manager else {},
                "dynamic_config": self._dynamic_config_view(),
                "connections": {listener.listener_name: dict(Counter(c.principal for c in listener.connections))
                                for listener in self.kafka_listeners}}  # listener -> principal -> open connections

    def _dynamic_config_view(self) -> dict:
        """The dynamic broker config as applied (``/healthz``): overrides and the live throttle rates."""
        d = self.dynamic_config
        return {"cluster_default": d.overrides(per_broker=False), "broker": d.overrides(per_broker=True),
                "leader_replication_throttled_rate": d.leader_replication_throttled_rate,
                "follower_replication_throttled_rate": d.follower_replication_throttled_rate,
                "config_changes_processed": self.config_listener.processed}

    # -- shutdown ------------------------------------------------------------------------------
    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move our leaderships away before we leave (controlled.shutdown.enable),
        retrying ``controlled.shutdown.max.retries`` times ``controlled.shutdown.retry.backoff.ms`` apart."""
        if not self.config["controlled.shutdown.enable"]:
            return
        if self.replica_manager is not None:
            await self.replica_manager.begin_controlled_shutdown()
        retries = self.config["controlled.shutdown.max.retries"]
        for attempt in range(1, retries + 1):
            try:
                response = await self._send_controlled_shutdown()
                if response.error_code == ErrorCode.NONE and not response.remaining_partitions:
                    log.info("broker %d: controlled shutdown succeeded", self.broker_id)
                    return
                log.info("broker %d: controlled shutdown attempt %d: error %d, still leading %s", self.broker_id,
                         attempt, response.error_code, list(response.remaining_partitions))
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                log.warning("broker %d: controlled shutdown attempt %d failed: %s", self.broker_id, attempt, exc)
            if attempt < retries:
                await asyncio.sleep(self.config["controlled.shutdown.retry.backoff.ms"] / 1000)
        log.warning("broker %d: controlled shutdown incomplete after %d attempts; stopping anyway", self.broker_id, retries)

    async def _send_controlled_shutdown(self) -> ControlledShutdownResponse:
        request = ControlledShutdownRequest(self.broker_id, self.broker_epoch)
        timeout = self.config["controller.socket.timeout.ms"] / 1000
        if self.controller.is_active:
            return await asyncio.wait_for(self.controller.controlled_shutdown(request.broker_id, request.broker_epoch),
                                          timeout)
        controller_id = self.controller.active_controller_id
        info = self.metadata_cache.live_brokers.get(controller_id) or await self.kzc.get_broker(controller_id)
        if info is None:
            raise ConnectionError("no live controller is known")
        return await post_control(info, request, timeout, self.control_secret, self.http_peer_tls)

    async def shutdown(self) -> None:
        """Controlled shutdown first, then reverse order: controller, registration (session close),
        HTTP, logs (flush, checkpoints)."""
        self.shutting_down = True  # /readyz answers 503 from now on
        if self.controller is not None and self.broker_epoch > 0:
            await self._controlled_shutdown()
        for kafka_listener in self.kafka_listeners:
            await kafka_listener.stop()
        if self.controller is not None:
            await self.controller.shutdown()
        await self.group_coordinator.shutdown()
        await self.config_listener.close()
        if self.authorizer is not None:
            await self.authorizer.close()
        if self.replica_manager is not None:
            await self.replica_manager.shutdown()
        await self.zk.close()
        await self.http.stop()
        if self.log_manager is not None:
            await asyncio.to_thread(self.log_manager.shutdown)


def _bind_host(config: BrokerConfig) -> str:
    """The HTTP (control plane) address: the first listener's host, all interfaces when it has none."""
    host = config.listeners[0].host if config.listeners else ""
    return host or "0.0.0.0"
