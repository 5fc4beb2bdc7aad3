"""BrokerServer: one broker's lifecycle (Kafka 2.8's ``KafkaServer``): start-up and shutdown as
sequences of named steps over the components the composition root builds.

Start order (Kafka 2.8, reference §1.4): ZooKeeper session and persistent roots -> cluster id and
``meta.properties`` -> a registration in the way judged (our previous incarnation's is waited out, while
the logs load: ``registration.prepare``) -> logs loaded (recovery off the loop) -> metadata cache and replica manager -> admin ->
group coordinator -> transaction coordinator -> listeners -> HTTP (control plane) -> ``/brokers/ids/<id>``
registration (broker epoch) -> controller candidate.
Stop in reverse. A session that expires is answered by resigning, then re-registering and
re-electing once a new session is up (``registration``).
"""
from __future__ import annotations

import asyncio
import logging
import urllib.parse
from pathlib import Path
from typing import Any

from brokers.admin.zk_admin import ZkAdmin
from brokers.app import data_plane
from brokers.app.config_handlers import DynamicConfigHandlers
from brokers.app.control_plane import ControlPlane, health
from brokers.app.registration import BrokerRegistration, check_meta_properties, resolve_broker_id
from brokers.app.transaction_wiring import BrokerTransactions
from brokers.config import BrokerConfig, ConfigError
from brokers.control import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    VerifyTransactionRequest,
    VerifyTransactionResponse,
)
from brokers.dynamic_config.broker_config import DynamicBrokerConfig
from brokers.dynamic_config.change_listener import ConfigChangeListener
from brokers.quotas.entities import QuotaEntity, entities_from_znodes
from brokers.quotas.manager import QuotaConfig, QuotaManagers
from brokers.http.auth import HttpSecurity
from brokers.http.server import HttpServer
from brokers.model import LeaderIsrAndControllerEpoch, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.scram import sanitize as sanitize_user
from brokers.replication.fetch_session import FetchSessionCache
from brokers.replication.fetcher import FetcherConfig
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import IsrConflictError, ReplicaManager
from brokers.security.acls import parse_super_users
from brokers.security.authorizer import AclAuthorizer
from brokers.security.credential_cache import CredentialCache
from brokers.server import sasl
from brokers.server.listener import KafkaListener
from brokers.server.tls import http_contexts, inter_broker_context, listener_contexts, listener_principal_mappers
from brokers.stats import BrokerStats
from brokers.storage import file_limits
from brokers.storage.log_manager import LogManager, LogManagerConfig
from brokers.storage.scheduler import Scheduler
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import BadVersionError
from brokers.zk.gateway import ZkGateway
from consumer_group.coordinator.coordinator import GroupCoordinator
from consumer_group.coordinator.group_config import GroupConfig
from consumer_group.coordinator.offset_store import ZkOffsetStore
from consumer_group.coordinator.placement import OFFSETS_TOPIC
from consumer_group.coordinator.views import group_view
from coordinator.controller import ControllerConfig, KafkaController

log = logging.getLogger(__name__)


class ZkIsrStore:
    """The replica manager's IsrStore over KafkaZkClient (BADVERSION becomes IsrConflictError).

    ISR writes asked for in the same turn of the event loop (a leader admitting thousands of followers back
    after a restart, from one Fetch) go out as one pipelined batch, each still its own compare-and-set on
    the state znode's version, instead of one thread hop per partition."""

    def __init__(self, kzc: KafkaZkClient):
        self.kzc = kzc
        self._pending: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, asyncio.Future]] = []
        self._flushes: set[asyncio.Task] = set()

    async def update_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((tp, state, future))
        if len(self._pending) == 1:  # the first of this turn: the batch goes once the others joined it
            task = loop.create_task(self._flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        return await future

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            outcomes = await self.kzc.update_isrs_by_leader([(tp, state) for tp, state, _ in batch])
        except Exception as exc:  # noqa: BLE001 - every write of the batch meets it
            outcomes = [exc] * len(batch)
        for (_, _, future), outcome in zip(batch, outcomes):
            if future.done():
                continue
            if isinstance(outcome, BadVersionError):
                future.set_exception(IsrConflictError(str(outcome)))
            elif isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def read_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        return await self.kzc.get_partition_state(tp)

    async def notify_isr_changes(self, partitions: list[TopicPartition]) -> None:
        await self.kzc.create_isr_change_notification(partitions)


class BrokerServer:
    """One broker. Also what its HTTP server serves: the control requests (ControlRequestHandler) and
    the broker state the HTTP layer reads (brokers.http.cluster_reader.BrokerState)."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.cluster_id: str | None = None
        self.broker_epoch = -1
        self.dynamic_config = DynamicBrokerConfig(self.broker_id, config)  # /config/brokers, applied live
        self.config_handlers = DynamicConfigHandlers(self)  # the broker's log defaults; bad ones stop start-up
        self._build_tls(config)
        self.zk = ZkGateway(config.zookeeper_connect, session_timeout_ms=config.zookeeper_session_timeout_ms,
                            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                            max_in_flight_requests=config["zookeeper.max.in.flight.requests"],
                            digest=config["zookeeper.digest.credentials"], secure_acls=config["zookeeper.set.acl"])
        self.kzc = KafkaZkClient(self.zk)
        self.registration = BrokerRegistration(self)
        self.credentials = CredentialCache(self.user_config)  # SCRAM users: cached for HTTP, fresh for SASL
        self.quotas = QuotaManagers(QuotaConfig.from_broker(config))  # client quotas, fed from /config/users|clients
        self.config_listener = ConfigChangeListener(self.kzc, self.config_handlers.handlers())
        self.admin: ZkAdmin | None = None
        self.authorizer = (AclAuthorizer(self.zk, parse_super_users(config["super.users"]),
                                         config["allow.everyone.if.no.acl.found"])
                           if config["authorizer.class.name"] else None)  # None: everything is allowed
        self.scheduler: Scheduler | None = None
        self.log_manager: LogManager | None = None
        self.metadata_cache = MetadataCache(self.broker_id)
        self.replica_manager: ReplicaManager | None = None
        self.control_plane = ControlPlane(self)
        self._build_http(config)
        self.controller: KafkaController | None = None
        self.kafka_listeners: list[KafkaListener] = []
        self.group_coordinator = GroupCoordinator(self.broker_id, GroupConfig.from_broker(config), ZkOffsetStore(self.kzc))
        self.transactions: BrokerTransactions | None = None  # the transaction coordinator, built at start-up
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stats = BrokerStats()  # what /metrics reports: request latencies, per-topic traffic, ISR changes
        self.shutting_down = False

    def _build_tls(self, config: BrokerConfig) -> None:
        """Every TLS context the broker needs; bad files or rules stop start-up here."""
        self.tls_contexts = listener_contexts(config)  # SSL / SASL_SSL listeners
        self.principal_mappers = listener_principal_mappers(config)  # SSL listeners' principal mapping rules
        self.inter_broker_tls = inter_broker_context(config)  # the replica fetchers' TLS client side
        # http.ssl.enabled: the HTTP port's server context and the one this broker checks the others' with
        self.http_tls, self.http_peer_tls = http_contexts(config) or (None, None)

    def _build_http(self, config: BrokerConfig) -> None:
        self.control_secret: bytes | None = config.control_plane_secret  # else ZooKeeper's, at start-up
        self.http_security = HttpSecurity(basic_required=config["http.authentication.method"] == "BASIC",
                                          scram_credential=self.credentials.credential,
                                          authorizer=self.authorizer, peer_tls=self.http_peer_tls)
        self.http = HttpServer(self, _bind_host(config), config.http_port, security=self.http_security,
                               ssl_context=self.http_tls)

    # -- start-up ------------------------------------------------------------------------------
    async def startup(self) -> None:
        await self._connect_zookeeper()
        await self._resolve_identity()
        await self.registration.prepare()  # before any socket of ours is bound (previous_incarnation)
        config_baseline = await self.config_listener.latest_sequence()  # changes after it are applied later
        await self.config_handlers.load_dynamic_broker_configs()
        await self.config_handlers.load_client_quotas()
        await self._start_log_manager()
        self._start_replica_manager()
        self._start_admin()
        await self._start_group_coordinator()
        await self._start_transaction_coordinator()
        await self._start_request_handling()
        await self.http.start()
        await self.registration.register()
        await self._start_controller()
        self.dynamic_config.add_listener(self.config_handlers.on_dynamic_broker_config)
        await self.config_listener.start(after=config_baseline)

    async def _connect_zookeeper(self) -> None:
        """The session, the persistent roots, the cluster id and the control-plane secret."""
        await self.zk.start()
        self.zk.add_listener(self.registration.on_session_state)
        await self.kzc.create_persistent_roots()
        self.cluster_id = await self.kzc.get_or_create_cluster_id()
        if self.control_secret is None:
            self.control_secret = await self.kzc.get_or_create_control_plane_secret()
        self.http_security.control_secret = self.control_secret

    async def _resolve_identity(self) -> None:
        """The broker id (``broker.id=-1``: stored or generated) and every log dir's ``meta.properties``."""
        if self.broker_id < 0:
            self.broker_id = await resolve_broker_id(self.config, self.kzc)
            self.metadata_cache.broker_id = self.broker_id
        check_meta_properties(self.config, self.broker_id, self.cluster_id)

    async def _start_log_manager(self) -> None:
        """Every topic's config read first: the logs are recovered with their own configs."""
        self.scheduler = Scheduler(f"broker-{self.broker_id}-scheduler")
        self.log_manager = LogManager(self.config.log_dirs, self.config_handlers.default_log_config,
                                      LogManagerConfig.from_broker(self.config),
                                      topic_configs=await self.config_handlers.all_topic_log_configs(),
                                      scheduler=self.scheduler)
        await asyncio.to_thread(self.log_manager.startup)
        file_limits.report(sum(len(log.segments) for log in self.log_manager.all_logs()))

    def _watch_log_dir_failures(self) -> None:
        """KIP-112: a dir that goes offline (on any thread) is handled on the event loop by the replica
        manager; dirs already offline at start-up too (their partitions answer LeaderAndIsr with
        KAFKA_STORAGE_ERROR). The log manager's log-start moves hop onto the loop the same way."""
        loop = asyncio.get_running_loop()
        channel = self.log_manager.failure_channel

        def on_failure(log_dir: Path) -> None:
            loop.call_soon_threadsafe(self.spawn, self.replica_manager.handle_log_dir_failure(log_dir))

        channel.add_listener(on_failure)
        for log_dir in channel.offline_dirs():
            self.spawn(self.replica_manager.handle_log_dir_failure(log_dir, notify=False))
        # retention (the scheduler's thread) moving a log start: quiet fetch sessions answer it again
        moved = self.replica_manager.log_start_moved
        self.log_manager.log_start_listener = lambda tp: loop.call_soon_threadsafe(moved, tp)

    def _start_replica_manager(self) -> None:
        self.fetcher_config = self._fetcher_config()
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, self.config_handlers.topic_log_config, lambda: self.broker_epoch,
            isr_store=ZkIsrStore(self.kzc), fetcher_config=self.fetcher_config,
            listener=self.config["inter.broker.listener.name"],
            replica_lag_time_max_ms=self.config["replica.lag.time.max.ms"], stats=self.stats,
            leader_throttle_rate=lambda: self.dynamic_config.leader_replication_throttled_rate,
            follower_throttle_rate=lambda: self.dynamic_config.follower_replication_throttled_rate,
            log_dir_event_notifier=lambda: self.kzc.propagate_log_dir_event(self.broker_id))
        self.replica_manager.start()
        self.fetch_sessions = FetchSessionCache(self.config["max.incremental.fetch.session.cache.slots"])
        self._watch_log_dir_failures()

    def _fetcher_config(self) -> FetcherConfig:
        try:
            sasl_config = sasl.inter_broker_client_config(self.config)
        except ValueError as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None
        return FetcherConfig.from_broker(self.config, self.broker_id, ssl_context=self.inter_broker_tls,
                                         sasl=sasl_config)

    def _start_admin(self) -> None:
        """The admin operations (topic creation, configs, producer-id blocks) the coordinators and handlers use."""
        self.admin = ZkAdmin(self.broker_id, self.kzc, self.config, self.config_handlers.default_log_config,
                             self.metadata_cache, self.dynamic_config)

    async def _start_group_coordinator(self) -> None:
        self.group_coordinator.broker_id = self.broker_id
        await self.group_coordinator.startup()
        self.replica_manager.add_listener(self._on_leadership)

    def _on_leadership(self, tp: TopicPartition, is_leader: bool) -> None:
        """Group ownership follows ``__consumer_offsets`` leadership (reference §5.1)."""
        if tp.topic != OFFSETS_TOPIC:
            return
        if is_leader:
            self.group_coordinator.on_elected(tp.partition)
        else:
            self.group_coordinator.on_resigned(tp.partition)

    async def _start_transaction_coordinator(self) -> None:
        """Its markers leave on the inter-broker listener with the replica fetchers' TLS and SASL settings."""
        self.transactions = BrokerTransactions(
            self.broker_id, self.config, self.replica_manager, self.metadata_cache, self.admin,
            listener=self.config["inter.broker.listener.name"], ssl_context=self.fetcher_config.ssl_context,
            sasl=self.fetcher_config.sasl, control_secret=lambda: self.control_secret, http_tls=self.http_peer_tls,
            spawn=self.spawn)
        await self.transactions.startup()

    async def _start_request_handling(self) -> None:
        """The authorizer (every ACL loaded before the first request), then each listener."""
        if self.authorizer is not None:
            await self.authorizer.start()
        for endpoint in self.config.listeners:  # one socket each; Metadata answers with that listener's endpoints
            kafka_listener = data_plane.kafka_listener(self, endpoint)
            await kafka_listener.start()
            self.kafka_listeners.append(kafka_listener)

    async def _start_controller(self) -> None:
        self.controller = KafkaController(self.broker_id, self.kzc,
                                          ControllerConfig.from_broker(self.config, self.control_secret,
                                                                       self.http_peer_tls))
        await self.controller.startup()

    def spawn(self, coro) -> None:
        """Run ``coro`` as a task the broker keeps a reference to until it is done."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- /config/users for Describe/AlterUserScramCredentials (brokers.server.context.UserConfigs) --
    async def user_config(self, user: str) -> dict[str, str]:
        return await self.kzc.get_entity_config("users", sanitize_user(user))

    async def set_user_config(self, user: str, config: dict[str, str]) -> None:
        await self.kzc.change_entity_config("users", sanitize_user(user), config)

    async def user_names(self) -> list[str]:
        return [urllib.parse.unquote(name) for name in await self.kzc.get_entity_names("users")]

    # -- client quota entities (ClientQuotaConfigs, for DescribeClientQuotas / AlterClientQuotas) ---
    async def quota_entity_configs(self) -> dict[QuotaEntity, dict[str, str]]:
        return entities_from_znodes(await self.kzc.get_quota_entity_configs())  # type: ignore[return-value]

    async def set_quota_entity_config(self, entity: QuotaEntity, config: dict[str, str]) -> None:
        await self.kzc.change_entity_config(*entity.znode(), config)

    # -- what the HTTP server serves (ControlRequestHandler, BrokerState) ------------------------
    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        return await self.control_plane.leader_and_isr(request)

    async def update_metadata(self, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
        return await self.control_plane.update_metadata(request)

    async def stop_replica(self, request: StopReplicaRequest) -> StopReplicaResponse:
        return await self.control_plane.stop_replica(request)

    async def controlled_shutdown(self, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
        return await self.control_plane.controlled_shutdown(request)

    async def verify_transaction(self, request: VerifyTransactionRequest) -> VerifyTransactionResponse:
        if self.transactions is None:
            return VerifyTransactionResponse(int(ErrorCode.NOT_COORDINATOR))
        return await self.transactions.serve_verify(request)

    def health(self) -> dict:
        return health(self)

    def group_views(self) -> list[dict]:
        """The groups this broker coordinates, for the admin API and /metrics."""
        coordinator = self.group_coordinator
        return [group_view(g, self.broker_id) for _, g in sorted(coordinator.groups.items())
                if coordinator.owns(g.group_id)]

    def transaction_view(self) -> dict:
        """The transaction coordinator's ``describe()``, for the admin API and /metrics."""
        return self.transactions.coordinator.describe() if self.transactions is not None else {}

    # -- shutdown ------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Controlled shutdown first, then reverse order: listeners, controller, transactions, groups, watches,
        replication, registration (session close), HTTP, logs (flush, checkpoints)."""
        self.shutting_down = True  # /readyz answers 503 from now on
        self.registration.cancel()
        if self.controller is not None and self.broker_epoch > 0:
            await self.control_plane.request_controlled_shutdown()
        for kafka_listener in self.kafka_listeners:
            await kafka_listener.stop()
        if self.controller is not None:
            await self.controller.shutdown()
        if self.transactions is not None:
            await self.transactions.shutdown()
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
