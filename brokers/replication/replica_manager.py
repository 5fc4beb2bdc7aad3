"""ReplicaManager: applies the controller's LeaderAndIsr and StopReplica to local replicas.

Fencing (reference §2.2), checked in this order:
1. a request from an older controller epoch than the highest seen is rejected whole
   (STALE_CONTROLLER_EPOCH), an equal or newer one raises the remembered epoch;
2. a request addressed to an older registration of this broker is rejected (STALE_BROKER_EPOCH);
3. per partition, a LeaderAndIsr state is applied only if its leader epoch is newer than the one held
   (else STALE_CONTROLLER_EPOCH for that partition), and only if this broker is among its replicas
   (else UNKNOWN_TOPIC_OR_PARTITION).
Every decision is logged so that tests can see what a zombie controller tried.

Replication (reference §3): become-leader stops fetching the partition and starts tracking its
followers; become-follower hands it to the replica fetcher of the new leader. As leader, this broker
owns the ISR: a follower that caught up is added, one that fell behind for ``replica.lag.time.max.ms``
is removed (checked every half of that), each change a conditional write of the partition state znode
(``IsrStore``) followed by a batched ``/isr_change_notification`` so that the controller tells
everyone (§7 pitfall 6). A write that loses the race (BADVERSION) re-reads the znode and adopts it
when it still names this leader and epoch (§7 pitfall 5); otherwise the controller's LeaderAndIsr
will come.

Log dir failure (KIP-112, Kafka's ``handleLogDirFailure``): when a dir of ``log.dirs`` goes offline,
every partition with its log there becomes offline here: its fetcher stops, parked acks=all produces
and fetches fail with KAFKA_STORAGE_ERROR, leadership is dropped locally, and every later request for
it (client or LeaderAndIsr) answers KAFKA_STORAGE_ERROR. Then ``/log_dir_event_notification`` tells
the controller, which takes the replica offline. With no dir left online the broker halts.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Awaitable, Callable, Protocol

from brokers.control import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionState,
    StopReplicaRequest,
    StopReplicaResponse,
    check_broker_epoch,
    check_controller_epoch,
)
from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.fetcher import FetcherConfig, ReplicaFetcherManager
from brokers.replication.log_dir_mover import LogDirMover
from brokers.replication.partition import Partition
from brokers.replication.quota import LONG_MAX, ReplicationQuota
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.log_dir_failure import KafkaStorageError
from brokers.storage.log_manager import LogManager
from brokers.stats import BrokerStats

log = logging.getLogger(__name__)

TopicConfigProvider = Callable[[str], Awaitable[LogConfig]]

ISR_CHANGE_CHECK_MS = 2500  # Kafka's ReplicaManager.IsrChangePropagationInterval
ISR_CHANGE_QUIET_MS = 5000  # ... IsrChangePropagationBlackOut
ISR_CHANGE_MAX_DELAY_MS = 60000  # ... IsrChangeMaxDelay


class IsrConflictError(Exception):
    """The partition state znode changed since this leader read it (ZooKeeper BADVERSION)."""


class IsrStore(Protocol):
    """Where a leader writes its ISR changes (ZooKeeper in production)."""

    async def update_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int:
        """CAS on ``state.leader_and_isr.zk_version``: the new version, or IsrConflictError."""

    async def read_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None: ...

    async def notify_isr_changes(self, partitions: list[TopicPartition]) -> None: ...


SUMMARY_LINE_PARTITIONS = 100  # a LeaderAndIsr this big gets a timing line


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, topic_config: TopicConfigProvider,
                 broker_epoch: Callable[[], int], *, isr_store: IsrStore | None = None,
                 fetcher_config: FetcherConfig | None = None, listener: str | None = None,
                 replica_lag_time_max_ms: int = 30000, clock: Callable[[], int] = _now_ms,
                 stats: BrokerStats | None = None, leader_throttle_rate: Callable[[], int] = lambda: LONG_MAX,
                 follower_throttle_rate: Callable[[], int] = lambda: LONG_MAX,
                 log_dir_event_notifier: Callable[[], Awaitable[None]] | None = None,
                 halt: Callable[[int], None] = os._exit):
        self.broker_id = broker_id
        self.isr_store = isr_store
        # KIP-73 replication throttles: the bounds are the live leader/follower.replication.throttled.rate
        self.leader_quota = ReplicationQuota(leader_throttle_rate)
        self.follower_quota = ReplicationQuota(follower_throttle_rate)
        self.fetchers = ReplicaFetcherManager(fetcher_config or FetcherConfig(broker_id), listener, self.follower_quota)
        self.listener = listener
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.clock = clock
        self.endpoints: dict[int, EndPoint] = {}
        self._isr_changes: set[TopicPartition] = set()
        self._last_isr_change_ms = 0
        self._last_isr_propagation_ms = 0
        self._tasks: set[asyncio.Task] = set()
        self._leadership_listeners: list[Callable[[TopicPartition, bool], None]] = []
        self.leaving = False  # controlled shutdown under way: no more fetching
        self.log_manager = log_manager
        self._topic_config = topic_config
        self._broker_epoch = broker_epoch
        self.controller_epoch = 0
        self.partitions: dict[TopicPartition, Partition] = {}
        self.log_dir_mover = LogDirMover(log_manager, lambda: self.partitions)  # AlterReplicaLogDirs
        self.offline_partitions: set[TopicPartition] = set()  # logs in an offline dir (HostedPartition.Offline)
        self._log_dir_event_notifier = log_dir_event_notifier  # writes /log_dir_event_notification
        self._halt = halt
        self.rejected: list[tuple[str, int, int]] = []  # (request, controller id, controller epoch)
        self.state_change_lock = asyncio.Lock()  # control requests apply one at a time (replicaStateChangeLock)
        self.stats = stats if stats is not None else BrokerStats()

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
        for broker in request.live_leaders:
            self._remember_endpoint(broker)
        errors = []
        started = time.monotonic()
        created = await self._create_logs(request.partition_states)
        logs_created = time.monotonic()
        for state in request.partition_states:
            error = await self._apply_state(state, created)
            errors.append((state.topic, state.partition, int(error)))
            if error == ErrorCode.NONE:
                self._tell_listeners(TopicPartition(state.topic, state.partition), state.leader == self.broker_id)
        if len(request.partition_states) >= SUMMARY_LINE_PARTITIONS:  # one line per big event, none per partition
            led = sum(1 for state in request.partition_states if state.leader == self.broker_id)
            log.info("LeaderAndIsr from controller %d: %d partitions (%d to lead) applied in %.3f s (logs in %.3f s)",
                     request.controller_id, len(errors), led, time.monotonic() - started, logs_created - started)
        return LeaderAndIsrResponse(int(ErrorCode.NONE), tuple(errors))

    def add_listener(self, callback: Callable[[TopicPartition, bool], None]) -> None:
        """``callback(tp, is_leader)`` after every partition this broker became leader or follower of, or
        stopped replicating (is_leader False): the group coordinator follows ``__consumer_offsets``."""
        self._leadership_listeners.append(callback)

    def _tell_listeners(self, tp: TopicPartition, is_leader: bool) -> None:
        """Who else cares about leadership; a listener that raises is logged, the others still run."""
        for listener in self._leadership_listeners:
            try:
                listener(tp, is_leader)
            except Exception:  # noqa: BLE001 - a listener's bug must not fail the LeaderAndIsr
                log.exception("leadership listener failed for %s", tp)

    def _remember_endpoint(self, broker: BrokerInfo) -> None:
        try:
            self.endpoints[broker.id] = broker.endpoint(self.listener)
        except KeyError:
            self.endpoints[broker.id] = broker.endpoint()

    def update_live_brokers(self, brokers: list[BrokerInfo]) -> None:
        """UpdateMetadata's live brokers: where followers find their leaders."""
        for broker in brokers:
            self._remember_endpoint(broker)

    async def _create_logs(self, states: tuple[PartitionState, ...]) -> dict[TopicPartition, Log | Exception]:
        """The logs of the partitions ``states`` make new here, created in one thread hop (one fsync of the
        log dir after them), with each topic's config read once: per partition the log or the error that
        refused it."""
        new = {TopicPartition(s.topic, s.partition): s.is_new for s in states if self.broker_id in s.replicas}
        new = {tp: is_new for tp, is_new in new.items() if tp not in self.partitions and tp not in self.offline_partitions}
        configs = {topic: await self._topic_config(topic) for topic in sorted({tp.topic for tp in new})}

        wanted = {tp: (configs[tp.topic], is_new) for tp, is_new in new.items()}
        return await asyncio.to_thread(self.log_manager.get_or_create_logs, wanted) if new else {}

    async def _apply_state(self, state: PartitionState, created: dict[TopicPartition, Log | Exception]) -> ErrorCode:
        tp = TopicPartition(state.topic, state.partition)
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if tp in self.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self.partitions.get(tp)
        if partition is not None and state.leader_epoch <= partition.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if partition is None:
            log_ = created.get(tp)
            if log_ is None:  # not created ahead (the partition went away and came back within the request)
                try:
                    log_ = await asyncio.to_thread(self.log_manager.get_or_create_log, tp,  # mkdir + fsync
                                                   await self._topic_config(tp.topic), state.is_new)
                except (OSError, KafkaStorageError) as exc:
                    log_ = exc
            if isinstance(log_, Exception):
                log.error("cannot create the log of %s: %s", tp, log_)
                return ErrorCode.KAFKA_STORAGE_ERROR
        # a partition re-created after this broker restarted must still accept the stored epoch
            partition = Partition(tp, self.broker_id, log_, self.replica_lag_time_max_ms)
            self.partitions[tp] = partition
        args = (state.leader_epoch, tuple(state.isr), tuple(state.replicas), state.zk_version, state.controller_epoch)
        self.fetchers.remove_partition(tp)
        if state.leader == self.broker_id:
            partition.make_leader(*args, self.clock())
        else:
            partition.make_follower(state.leader, *args)
            endpoint = self.endpoints.get(state.leader)
            if self.leaving:
                pass  # a broker in controlled shutdown no longer replicates (it would rejoin the ISRs it left)
            elif endpoint is not None:
                self.fetchers.add_partition(partition, endpoint)
            elif state.leader >= 0:
                log.error("%s: leader %d has no known endpoint; not fetching", tp, state.leader)
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
            if tp in self.offline_partitions:
                errors.append((item.topic, item.partition, int(ErrorCode.KAFKA_STORAGE_ERROR)))
                continue
            partition = self.partitions.get(tp)
            if partition is not None and item.leader_epoch >= 0 and item.leader_epoch <= partition.leader_epoch:
                errors.append((item.topic, item.partition, int(ErrorCode.FENCED_LEADER_EPOCH)))
                continue
            self.fetchers.remove_partition(tp)
            if partition is not None:
                partition.stop_leading()
                self._tell_listeners(tp, False)
            if item.delete:
                self.partitions.pop(tp, None)
                await asyncio.to_thread(self.log_manager.delete_log, tp)
            errors.append((item.topic, item.partition, int(ErrorCode.NONE)))
        return StopReplicaResponse(int(ErrorCode.NONE), tuple(errors))

    # -- log dir failure (KIP-112) -----------------------------------------------------------------
    async def handle_log_dir_failure(self, log_dir: Path, notify: bool = True) -> list[TopicPartition]:
        """Kafka's ``ReplicaManager.handleLogDirFailure``: the partitions with a log in ``log_dir`` go
        offline on this broker, then the controller hears it (``/log_dir_event_notification``).
        Returns those partitions. With no dir left online the broker halts, as Kafka does."""
        async with self.state_change_lock:
            gone = self._take_partitions_offline(Path(log_dir))
        if not self.log_manager.online_log_dirs:
            log.critical("halting broker %d: every log dir %s has failed", self.broker_id,
                         [str(d) for d in self.log_manager.log_dirs])
            self._halt(1)
            return gone
        if notify and self._log_dir_event_notifier is not None:
            await self._notify_log_dir_event()
        return gone

    def _take_partitions_offline(self, log_dir: Path) -> list[TopicPartition]:
        """No await: the partitions, the fetchers and the log manager change together."""
        dropped = set(self.log_manager.handle_log_dir_failure(log_dir))
        here = {tp for tp, p in self.partitions.items() if p.log.log_dir == log_dir} | dropped
        for tp in sorted(here):
            self.fetchers.remove_partition(tp)
            partition = self.partitions.pop(tp, None)
            self.offline_partitions.add(tp)
            if partition is not None:
                partition.purgatory.fail_all(ErrorCode.KAFKA_STORAGE_ERROR)
                partition.stop_leading()
                self._tell_listeners(tp, False)
        log.error("broker %d stopped serving %s: log dir %s is offline", self.broker_id, sorted(map(str, here)),
                  log_dir)
        return sorted(here)

    async def _notify_log_dir_event(self) -> None:
        """Write the notification, retrying while ZooKeeper is unreachable (the controller must hear it)."""
        delay = 0.1
        while True:
            try:
                await self._log_dir_event_notifier()
                log.info("broker %d: log dir event notification written", self.broker_id)
                return
            except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: keep trying
                log.warning("log dir event notification failed (%s); retrying", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    # -- leader side: followers and the ISR -----------------------------------------------------
    def record_follower_fetch(self, partition: Partition, replica_id: int, fetch_offset: int,
                              log_start_offset: int = -1) -> None:
        """A follower fetched at ``fetch_offset`` (its LEO; ``log_start_offset`` its log start, Fetch v5+):
        track it, maybe advance the HW, maybe add it to the ISR."""
        expanded = partition.update_follower_fetch(replica_id, fetch_offset, self.clock(), log_start_offset)
        if expanded is not None:
            self._spawn(self._write_isr(partition, expanded, f"follower {replica_id} caught up"))

    def maybe_shrink_isr(self) -> None:
        now = self.clock()
        for partition in list(self.partitions.values()):
            shrunk = partition.isr_to_shrink(now)
            if shrunk is not None:
                lagging = sorted(set(partition.isr) - set(shrunk))
                self._spawn(self._write_isr(partition, shrunk, f"followers {lagging} fell out of sync"))

    async def _write_isr(self, partition: Partition, new_isr: tuple[int, ...], reason: str) -> None:
        """Conditionally write ``new_isr`` for the partition's current epoch (at most one in flight)."""
        tp, epoch = partition.topic_partition, partition.leader_epoch
        if self.isr_store is None or partition.pending_isr is not None:
            return
        partition.isr_write_started(new_isr)
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(self.broker_id, epoch, new_isr, partition.zk_version),
                                            partition.controller_epoch)
        written: tuple[int, ...] | None = None
        version = partition.zk_version
        try:
            old_size = len(partition.isr)
            version = await self.isr_store.update_isr(tp, state)
            written = new_isr
            if len(new_isr) < old_size:
                self.stats.isr_shrinks += 1
            elif len(new_isr) > old_size:
                self.stats.isr_expands += 1
            log.info("%s: ISR %s -> %s (%s)", tp, list(partition.isr), list(new_isr), reason)
        except IsrConflictError:
            written, version = await self._reread_isr(tp, epoch)
        except Exception as exc:  # noqa: BLE001 - ZooKeeper trouble: keep the old ISR, retry later
            log.warning("%s: ISR write failed (%s); keeping %s", tp, exc, list(partition.isr))
        partition.isr_write_done(epoch, written, version, self.clock())
        if written is not None and written == new_isr:
            now = self.clock()
            self._isr_changes.add(tp)
            self._last_isr_change_ms = now

    async def _reread_isr(self, tp: TopicPartition, epoch: int) -> tuple[tuple[int, ...] | None, int]:
        """After BADVERSION (§7 pitfall 5): adopt ZooKeeper's ISR if it is still our leadership."""
        try:
            current = await self.isr_store.read_state(tp)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: cannot re-read the partition state: %s", tp, exc)
            return None, -1
        if current is None:
            return None, -1
        lai = current.leader_and_isr
        if lai.leader != self.broker_id or lai.leader_epoch != epoch:
            log.info("%s: ISR write lost to the controller (now leader %d epoch %d); awaiting LeaderAndIsr",
                     tp, lai.leader, lai.leader_epoch)
            return None, -1
        log.info("%s: ISR write conflicted; adopting ZooKeeper's ISR %s (version %d)", tp, list(lai.isr),
                 lai.zk_version)
        return tuple(lai.isr), lai.zk_version

    async def maybe_propagate_isr_changes(self) -> None:
        """Kafka's maybePropagateIsrChanges: one notification for all changed partitions, once the ISR
        has been quiet for 5 s or 60 s passed since the last one (§7 pitfall 6)."""
        now = self.clock()
        if not self._isr_changes or self.isr_store is None:
            return
        if (now - self._last_isr_change_ms < ISR_CHANGE_QUIET_MS
                and now - self._last_isr_propagation_ms < ISR_CHANGE_MAX_DELAY_MS):
            return
        changed, self._isr_changes = sorted(self._isr_changes), set()
        try:
            await self.isr_store.notify_isr_changes(changed)
            self._last_isr_propagation_ms = now
        except Exception as exc:  # noqa: BLE001 - keep them for the next round
            log.warning("ISR change notification failed (%s); retrying later", exc)
            self._isr_changes.update(changed)

    # -- background work -------------------------------------------------------------------------
    def start(self) -> None:
        self._spawn(self._every(self.replica_lag_time_max_ms / 2, self.maybe_shrink_isr))
        self._spawn(self._every(ISR_CHANGE_CHECK_MS, self.maybe_propagate_isr_changes))

    def log_start_moved(self, tp: TopicPartition) -> None:
        """Retention moved ``tp``'s log start (on the loop): sessions skipping it as leader answer it again,
        a follower's next Fetch names the new one."""
        partition = self.partitions.get(tp)
        if partition is not None and partition.is_leader:
            partition.notify_log_start_moved()
        elif partition is not None:
            self.fetchers.log_start_moved(tp)

    async def _every(self, interval_ms: float, fn: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # noqa: BLE001 - a background task must survive a bug in one round
                log.exception("replica manager task %s failed", getattr(fn, "__name__", fn))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def begin_controlled_shutdown(self) -> None:
        """Stop replicating before asking the controller to move leaderships away: otherwise a follower that
        catches up with a new leader is added back to the ISR the controller just removed it from."""
        self.leaving = True
        await self.fetchers.shutdown()

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.fetchers.shutdown()
        await self.log_dir_mover.shutdown()
        for partition in self.partitions.values():
            partition.purgatory.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)

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
        if tp in manager.offline_partitions:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR)
        raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not partition.is_leader:
        raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return partition
