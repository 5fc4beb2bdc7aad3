"""Partition: this broker's replica of one partition, its role, and (as leader) the replication state.

State, all from the latest accepted LeaderAndIsr plus what this replica learned since:

- role: leader when ``leader == broker_id``, else follower of ``leader``; ``leader_epoch``, ``isr``,
  ``replicas``, ``zk_version`` (of the partition state znode) and the controller epoch that decided it;
- as leader: one ``FollowerState`` per other assigned replica, ``leader_epoch_start_offset`` (the log
  end when this epoch began, KAFKA-7128), the ISR write in flight (``pending_isr``) and the acks=all
  purgatory;
- the high watermark lives in the Log (``log.high_watermark``): consumers read below it, READ_COMMITTED
  consumers below the last stable offset (``log.last_stable_offset``, which moves only with the HW or a
  marker append, so the HW watchers also serve them).

Every decision is a call into ``isr.py``; this class only applies them. Nothing here awaits: the
replica manager does the ZooKeeper writes and calls back. While an ISR write is in flight the
*maximal* ISR (current plus proposed) is what counts for the HW and for acks=all (AlterIsr's rule,
reference §3.3), so a shrink can never complete a produce early and an expansion never stalls one.

Invariants: the leader is in its own ISR; the HW only moves forward on the leader and never passes
the log end; every parked produce is resolved exactly once (HW reached, or leadership lost).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.replication import delete_records as deletion
from brokers.replication import isr as decide
from brokers.replication.purgatory import FetchWatchers, ProducePurgatory
from brokers.storage.log import Log, LogAppendInfo


class NotEnoughReplicasError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS


@dataclass
class Partition:
    topic_partition: TopicPartition
    broker_id: int
    log: Log
    replica_lag_time_max_ms: int = 30000
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    zk_version: int = -1
    controller_epoch: int = -1
    history: list[str] = field(default_factory=list)
    followers: dict[int, decide.FollowerState] = field(default_factory=dict)
    leader_epoch_start_offset: int = -1
    pending_isr: tuple[int, ...] | None = None
    purgatory: ProducePurgatory = field(default_factory=ProducePurgatory)
    _appended: FetchWatchers = field(default_factory=FetchWatchers)
    _hw_advanced: FetchWatchers = field(default_factory=FetchWatchers)
    _quiet_followers: set = field(default_factory=set)  # fetch sessions skipping this partition until it changes
    _quiet_consumers: set = field(default_factory=set)
    follower_log_starts: dict[int, int] = field(default_factory=dict)  # as leader: from followers' Fetch requests
    _delete_waiters: deletion.LowWatermarkWaiters = field(default_factory=deletion.LowWatermarkWaiters)
    _live_brokers: frozenset = frozenset()  # as the latest DeleteRecords saw them

    # -- waking parked fetches -----------------------------------------------------------------
    def watch_appends(self, future: asyncio.Future) -> None:
        """Resolve ``future`` at the next append, HW advance or role change: what a follower's parked
        Fetch waits for (followers read up to the log end)."""
        self._appended.watch(future)

    def watch_high_watermark(self, future: asyncio.Future) -> None:
        """Resolve ``future`` at the next HW advance or role change, *not* at appends: what a consumer's
        parked Fetch waits for. Consumers read only below the HW, so an append that has not reached the
        ISR yet would wake them for nothing (with RF 3 that doubled their wake-ups)."""
        self._hw_advanced.watch(future)

    def notify_appended(self) -> None:
        self._appended.wake()
        if self._quiet_followers:
            self._wake_quiet(consumers=False)

    def notify_high_watermark(self) -> None:
        """The HW moved (or the role changed): wake followers' and consumers' parked fetches."""
        self._appended.wake()
        self._hw_advanced.wake()
        if self._quiet_followers or self._quiet_consumers:
            self._wake_quiet(consumers=True)

    def notify_log_start_moved(self) -> None:
        """Retention moved the log start: fetch sessions that skip this partition answer it again."""
        if self._quiet_followers or self._quiet_consumers:
            self._wake_quiet(consumers=True)

    # -- fetch sessions' quiet partitions (brokers.replication.fetch_session) ---------------------
    def watch_quietly(self, session, follower: bool) -> None:
        """``session`` skips this partition (its fetcher is at the end, nothing to answer) until the next
        append (a follower's session), HW advance, role change or log start move: then
        ``session.touch(key)`` puts it back among the partitions it reads, once."""
        (self._quiet_followers if follower else self._quiet_consumers).add(session)

    def fetcher_at_end(self, replica_id: int, fetch_offset: int) -> bool:
        """Whether a fetch session may skip this partition for this fetcher until it changes (its quiet
        candidates): a consumer (``replica_id`` < 0) at or past the high watermark; a follower in the ISR at
        the log end, no ISR write in flight, and the HW at the log end too. Below it the HW can still move
        without an append (a replica out of the ISR stops counting once replica.lag.time.max.ms passed),
        and only a follower's recorded fetch looks again."""
        log = self.log
        if replica_id < 0:
            return fetch_offset >= log.high_watermark
        end = log.log_end_offset
        return (fetch_offset == end and log.high_watermark == end and replica_id in self.isr
                and self.pending_isr is None)

    def quiet_sessions(self) -> int:
        """How many fetch sessions skip this partition now."""
        return len(self._quiet_followers) + len(self._quiet_consumers)

    def unwatch_quietly(self, session) -> None:
        self._quiet_followers.discard(session)
        self._quiet_consumers.discard(session)

    def _wake_quiet(self, consumers: bool) -> None:
        """Tell the sessions skipping this partition that it changed. A follower's skipped fetches are
        recorded first (``isr.caught_up_while_quiet`` at the session's last read): it was at our log end
        then, and must not look out of sync before its next fetch is read."""
        key = (self.topic_partition.topic, self.topic_partition.partition)
        sessions, self._quiet_followers = self._quiet_followers, set()
        if consumers:
            sessions |= self._quiet_consumers
            self._quiet_consumers = set()
        for session in sessions:
            if session.touch(key):
                state = self.followers.get(session.replica_id)
                if state is not None:
                    self.followers[session.replica_id] = decide.caught_up_while_quiet(state, session.last_read_ms)

    # -- role ----------------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    @property
    def min_insync_replicas(self) -> int:
        return self.log.config.min_insync_replicas

    def make_leader(self, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...], zk_version: int,
                    controller_epoch: int, now_ms: int) -> None:
        """Become leader (§3.7), or stay leader with a bumped epoch (a reassignment changing the replica set,
        Kafka's ``isNewLeader == false``): a new epoch starts at the log end offset (KIP-101).

        A new leader treats followers in the ISR as caught up now and the others must prove it; parked
        fetches and produces of an earlier role are failed. A leader that stays keeps its parked acks=all
        produces (they still complete when the HW passes them) and what it knows of the followers that
        remain assigned; followers new to the replica set start unknown and out of sync."""
        staying = self.is_leader
        known = self.followers if staying else {}
        if staying:
            self.leader_epoch, self.isr, self.replicas = leader_epoch, tuple(isr), tuple(replicas)
            self.zk_version, self.controller_epoch, self.pending_isr = zk_version, controller_epoch, None
        else:
            self._apply(self.broker_id, leader_epoch, isr, replicas, zk_version, controller_epoch)
        end = self.log.log_end_offset
        self.log.leader_epoch_cache.assign(leader_epoch, end)
        self.leader_epoch_start_offset = end
        self.followers = {r: known.get(r) or decide.follower_state_on_become_leader(r, r in self.isr, end, now_ms)
                          for r in self.replicas if r != self.broker_id}
        self.history.append(f"leader@{leader_epoch}")
        if staying:
            self.notify_high_watermark()  # parked fetches re-check the epoch
        self.maybe_increment_high_watermark(now_ms)

    def make_follower(self, leader: int, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
                      zk_version: int, controller_epoch: int) -> None:
        self._apply(leader, leader_epoch, isr, replicas, zk_version, controller_epoch)
        self.history.append(f"follower-of-{leader}@{leader_epoch}")

    def stop_leading(self) -> None:
        """StopReplica: neither leading nor following any more; nothing parked may wait for it."""
        self.leader = -1
        self._drop_leader_state()

    def _apply(self, leader: int, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
               zk_version: int, controller_epoch: int) -> None:
        self._drop_leader_state()
        self.leader, self.leader_epoch, self.isr = leader, leader_epoch, tuple(isr)
        self.replicas, self.zk_version, self.controller_epoch = tuple(replicas), zk_version, controller_epoch

    def _drop_leader_state(self) -> None:
        self.followers, self.leader_epoch_start_offset, self.pending_isr = {}, -1, None
        self.follower_log_starts = {}
        self.purgatory.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._delete_waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.notify_high_watermark()  # parked fetches re-resolve and see the new role

    # -- leader: produce -----------------------------------------------------------------------
    def append_as_leader(self, buf, acks: int, now_ms: int, verification_guard=None) -> LogAppendInfo:
        """Append a producer's batch; acks=all first needs ISR >= min.insync.replicas (§3.5).
        ``verification_guard``: KIP-890's, from ``log.start_transaction_verification``."""
        if acks == -1:
            self._check_min_isr_before_append()
        info = self.log.append_as_leader(buf, self.leader_epoch, verification_guard)
        self.notify_appended()
        self.maybe_increment_high_watermark(now_ms)
        return info

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      now_ms: int) -> LogAppendInfo:
        """Write a transaction marker (WriteTxnMarkers) as an acks=all append: the ISR must hold
        min.insync.replicas first; the caller then waits ``wait_for_acks(info.last_offset + 1)``."""
        self._check_min_isr_before_append()
        info = self.log.append_marker(producer_id, producer_epoch, commit, coordinator_epoch, self.leader_epoch)
        self.notify_appended()
        self.maybe_increment_high_watermark(now_ms)
        return info

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def _check_min_isr_before_append(self) -> None:
        error = decide.check_min_isr(len(self.isr), self.min_insync_replicas, decide.BEFORE_APPEND)
        if error is not None:
            raise NotEnoughReplicasError(
                f"{self.topic_partition}: ISR {list(self.isr)} is smaller than "
                f"min.insync.replicas={self.min_insync_replicas}")

    def wait_for_acks(self, required_offset: int) -> asyncio.Future:
        """A future of the ErrorCode an acks=all produce ending at ``required_offset - 1`` answers."""
        if decide.acks_all_satisfied(required_offset, self.log.high_watermark):
            future = asyncio.get_running_loop().create_future()
            future.set_result(self._acks_outcome())
            return future
        return self.purgatory.park(required_offset)

    def _acks_outcome(self) -> ErrorCode:
        error = decide.check_min_isr(len(self.maximal_isr), self.min_insync_replicas, decide.AFTER_APPEND)
        return ErrorCode.NONE if error is None else error

    # -- leader: followers, HW and ISR -----------------------------------------------------------
    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                              log_start_offset: int = deletion.UNKNOWN_LOG_START) -> tuple[int, ...] | None:
        """Record a follower's Fetch (§3.3); return the expanded ISR to write, or None."""
        state = self.followers.get(replica_id)
        if state is None:
            return None
        self.followers[replica_id] = decide.update_follower_fetch(state, fetch_offset, now_ms,
                                                                  self.log.log_end_offset)
        if log_start_offset >= 0:
            self.follower_log_starts[replica_id] = log_start_offset
            if len(self._delete_waiters):
                self._delete_waiters.complete(self.low_watermark(self._live_brokers))
        self.maybe_increment_high_watermark(now_ms)
        if (replica_id in self.isr or self.pending_isr is not None
                or not decide.should_expand_isr(fetch_offset, self.log.high_watermark,
                                                self.leader_epoch_start_offset)):
            return None
        return decide.expand_isr(self.isr, replica_id)

    def isr_to_shrink(self, now_ms: int) -> tuple[int, ...] | None:
        """The shrunk ISR when followers fell out of sync (never empty, never without us), or None."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        out = decide.out_of_sync_replicas(self.broker_id, self.log.log_end_offset, self.isr, self.followers,
                                          now_ms, self.replica_lag_time_max_ms)
        return decide.shrink_isr(self.broker_id, self.isr, out) if out else None

    def maybe_increment_high_watermark(self, now_ms: int) -> bool:
        if not self.is_leader:
            return False
        log = self.log
        old = log.high_watermark
        if old == log.log_end_offset:  # the HW never passes the LEO: an idle partition's follower fetch stops here
            return False
        new = decide.high_watermark(old, log.log_end_offset, self.maximal_isr, self.followers, now_ms,
                                    self.replica_lag_time_max_ms)
        if new <= old:
            return False
        log.update_high_watermark(new)
        if len(self.purgatory):
            self.purgatory.complete(new, self._acks_outcome())
        self.notify_high_watermark()
        return True

    def isr_write_started(self, proposed: tuple[int, ...]) -> None:
        self.pending_isr = proposed

    def isr_write_done(self, leader_epoch: int, isr: tuple[int, ...] | None, zk_version: int, now_ms: int) -> None:
        """The ISR write finished: ``isr`` (and ``zk_version``) is what ZooKeeper now holds for
        ``leader_epoch``, or None if the write failed and the state is unknown."""
        if leader_epoch != self.leader_epoch or not self.is_leader:
            return  # a LeaderAndIsr overtook the write: the controller's word wins
        self.pending_isr = None
        if isr is not None:
            self.isr, self.zk_version = tuple(isr), zk_version
            self.history.append(f"isr={list(isr)}")
        self.maybe_increment_high_watermark(now_ms)
        if len(self.purgatory) and self.log.high_watermark >= 0:
            self.purgatory.complete(self.log.high_watermark, self._acks_outcome())

    # -- leader: DeleteRecords (brokers.replication.delete_records) -------------------------------
    def low_watermark(self, live_brokers) -> int:
        return deletion.low_watermark(self.log.log_start_offset, self.follower_log_starts, self.replicas,
                                      self.broker_id, live_brokers)

    def delete_records(self, offset: int, live_brokers) -> asyncio.Future:
        """Move the log start to ``offset`` (validated by ``deletion.delete_offset``); a future of the low
        watermark once it reaches ``offset``, or of NOT_LEADER_OR_FOLLOWER if leadership goes first."""
        self.log.increment_log_start_offset(offset)
        self.notify_log_start_moved()
        self._appended.wake()  # followers' parked Fetches answer now, with the new log start
        self._live_brokers = frozenset(live_brokers)
        return self._delete_waiters.wait(offset, self.low_watermark(self._live_brokers))

    # -- follower ------------------------------------------------------------------------------
    def update_follower_log_start(self, leader_log_start: int) -> bool:
        """A Fetch answer carried the leader's log start: move ours (DeleteRecords). True if it moved."""
        log = self.log
        new = deletion.follower_log_start(leader_log_start, log.high_watermark, log.log_start_offset)
        if new <= log.log_start_offset:
            return False
        log.increment_log_start_offset(new)
        return True

    def append_as_follower(self, buf, leader_high_watermark: int) -> LogAppendInfo | None:
        info = self.log.append_as_follower(buf) if buf else None
        self.update_follower_high_watermark(leader_high_watermark)
        return info

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        hw = decide.follower_high_watermark(leader_high_watermark, self.log.log_end_offset)
        if hw > self.log.high_watermark:
            self.log.update_high_watermark(hw)

    def describe(self) -> dict:
        log = self.log
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "replicas": list(self.replicas), "is_leader": self.is_leader, "zk_version": self.zk_version,
                "log_start_offset": log.log_start_offset, "log_end_offset": log.log_end_offset,
                "high_watermark": log.high_watermark, "last_stable_offset": log.last_stable_offset,
                "followers": {r: s.log_end_offset for r, s in sorted(self.followers.items())}}
