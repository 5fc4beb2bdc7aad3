"""Partition leadership changes with their ZooKeeper writes (the I/O shell around the pure
``leader_election`` and ``partition_state_machine`` modules).

- New -> Online: leader = first live replica, ISR = live replicas, leader epoch 0; the state znode is
  created in a fenced multi.
- Offline/Online -> Online: an election strategy picks the leader; the state is written with leader
  epoch + 1 as a compare-and-set on the znode version, fenced by the controller epoch. On a version
  conflict the state is re-read from ZooKeeper and the election retried once.
- A strategy that finds no leader: for the offline elections (broker failure, New/Offline partitions)
  the partition goes Offline; for every other election (preferred, reassignment, controlled
  shutdown: ``mark_offline_if_none=False``) nothing is written and the partition stays as it is,
  Online under its current leader. Either way it is in the list ``elect`` returns.
- Replicas going offline leave the ISR (never emptying it, pitfall 9), leader -1 if they led.
Every change queues LeaderAndIsr for the partition's live replicas (and so UpdateMetadata to all).
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable

from brokers.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import BadVersionError, MultiOpError, NodeExistsError
from coordinator.context import ControllerContext
from coordinator.leader_election import (
    ElectionResult,
    controlled_shutdown_election,
    offline_election,
    preferred_election,
    remove_replica_from_isr,
)
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.request_batch import ControllerBrokerRequestBatch

log = logging.getLogger(__name__)

Strategy = Callable[[TopicPartition, list[int], tuple[int, ...]], ElectionResult]


class PartitionLeadership:
    def __init__(self, kzc: KafkaZkClient, context: ControllerContext, batch: ControllerBrokerRequestBatch,
                 states: PartitionStates, unclean_allowed: Callable[[str], bool]):
        self.kzc = kzc
        self.context = context
        self.batch = batch
        self.states = states
        self.unclean_allowed = unclean_allowed

    # -- strategies ----------------------------------------------------------------------------
    def offline_strategy(self) -> Strategy:
        """Live replicas only: not shutting down, not on an offline log dir (KIP-112)."""
        live, ctx = self.context.live_broker_ids - self.context.shutting_down, self.context
        return lambda tp, replicas, isr: offline_election(replicas, isr, live - ctx.offline_replica_brokers(tp),
                                                          self.unclean_allowed(tp.topic))

    def preferred_strategy(self) -> Strategy:
        """``assignment[0]`` if live (not shutting down, not on an offline log dir) and in the ISR; ISR unchanged."""
        live, ctx = self.context.live_broker_ids - self.context.shutting_down, self.context
        return lambda tp, replicas, isr: preferred_election(replicas, isr, live - ctx.offline_replica_brokers(tp))

    def unclean_strategy(self) -> Strategy:
        """ElectLeaders UNCLEAN: the offline strategy with unclean election allowed whatever the config."""
        live, ctx = self.context.live_broker_ids - self.context.shutting_down, self.context
        return lambda tp, replicas, isr: offline_election(replicas, isr, live - ctx.offline_replica_brokers(tp), True)

    def controlled_shutdown_strategy(self) -> Strategy:
        live, shutting = self.context.live_broker_ids, set(self.context.shutting_down)
        return lambda tp, replicas, isr: controlled_shutdown_election(replicas, isr, live, shutting)

    # -- New -> Online -------------------------------------------------------------------------
    async def on_new_partition_creation(self, tps: list[TopicPartition]) -> None:
        """Kafka's onNewPartitionCreation: ``tps`` go New -> Online (a partition without a live replica
        stays New). The state znodes are created as pipelined fenced multis, one per partition."""
        ctx = self.context
        states, leaderless = {}, []
        for tp in tps:
            if self.states.get(tp) is PartitionState.NonExistent:
                self.states.transition([tp], PartitionState.New)
            live = [b for b in ctx.assignments[tp] if b in ctx.live_brokers]
            if not live:
                leaderless.append(tp)
                continue
            states[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(live[0], 0, tuple(live), 0), ctx.epoch)
        if leaderless:
            log.warning("%d new partitions have no live replica; they stay New: %s", len(leaderless), _some(leaderless))
        outcomes = await self.kzc.create_partition_states(ctx.epoch_zk_version, states) if states else {}
        existed = [tp for tp, error in outcomes.items() if error is not None]
        unexpected = next((e for e in outcomes.values() if e is not None
                           and not (isinstance(e, MultiOpError) and isinstance(e.cause, NodeExistsError))), None)
        if unexpected is not None:
            raise unexpected
        states.update(await self.kzc.get_partition_states(existed) if existed else {})  # by an earlier controller
        for tp, state in states.items():
            ctx.leadership[tp] = state
            self.states.transition([tp], PartitionState.Online)
            self.batch.add_leader_and_isr(ctx.assignments[tp], tp, is_new=True)
        if states:
            log.info("%d new partitions online (%d created by an earlier controller)", len(states), len(existed))

    # -- elections -----------------------------------------------------------------------------
    async def elect(self, tps: list[TopicPartition], strategy: Strategy, *,
                    mark_offline_if_none: bool = True) -> list[TopicPartition]:
        """Elect leaders for ``tps``; return those for which the strategy found nobody. They go Offline
        when ``mark_offline_if_none`` (offline elections); otherwise they are left untouched, nothing
        written (preferred, reassignment and controlled-shutdown elections: the current leader stays).
        The writes are pipelined; a partition whose write met a version conflict is re-read and elected
        again once (a second conflict raises)."""
        failed, conflicts = await self._elect_many(tps, strategy, mark_offline_if_none, retry=True)
        if conflicts:
            failed += (await self._elect_many(conflicts, strategy, mark_offline_if_none, retry=False))[0]
        failed_set = set(failed)
        return [tp for tp in dict.fromkeys(tps) if tp in failed_set]

    async def _elect_many(self, tps: list[TopicPartition], strategy: Strategy, mark_offline_if_none: bool,
                          retry: bool) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """One round of elections: (partitions without a leader, partitions whose write conflicted)."""
        ctx, failed, news = self.context, [], {}
        for tp in tps:
            current = ctx.leadership.get(tp)
            if current is None:
                failed.append(tp)
                continue
            result = strategy(tp, ctx.assignments[tp], current.leader_and_isr.isr)
            if result.leader is None:
                if mark_offline_if_none:
                    self._mark_offline(tp)
                failed.append(tp)
                continue
            if result.leader not in current.leader_and_isr.isr:
                log.warning("%s: UNCLEAN leader election of %d, outside the ISR %s (unclean.leader.election.enable): "
                            "committed records it lacks are lost", tp, result.leader, list(current.leader_and_isr.isr))
            news[tp] = current.leader_and_isr.new_leader_and_isr(result.leader, tuple(result.isr))
        conflicts = await self._write_many(news, retry)
        elected = [tp for tp in news if tp not in set(conflicts)]
        for tp in elected:
            self._transition(tp, PartitionState.Online)
            self.batch.add_leader_and_isr(ctx.assignments[tp], tp)
            log.debug("%s: leader %d epoch %d isr %s", tp, news[tp].leader, news[tp].leader_epoch, list(news[tp].isr))
        if tps:
            log.info("elected leaders of %d of %d partitions (%d without a leader, %d version conflicts)%s",
                     len(elected), len(tps), len(failed), len(conflicts), "" if retry else " on retry")
        return failed, conflicts

    async def _write(self, tp: TopicPartition, new: LeaderAndIsr, retry: bool) -> bool:
        """``_write_many`` of one partition: False on a version conflict (re-read, the caller decides again)."""
        return not await self._write_many({tp: new}, retry)

    async def _write_many(self, news: dict[TopicPartition, LeaderAndIsr], retry: bool) -> list[TopicPartition]:
        """Compare-and-set each partition's state (pipelined) and record it (with its new znode version) in
        the context. Return the partitions whose write met a version conflict, re-read from ZooKeeper (the
        caller decides again, once); with no retry left a conflict raises, as does any other error (after
        the successful writes are recorded)."""
        if not news:
            return []
        ctx = self.context
        outcomes = await self.kzc.update_partition_states(
            ctx.epoch_zk_version, {tp: LeaderIsrAndControllerEpoch(new, ctx.epoch) for tp, new in news.items()})
        conflicts, error = [], None
        for tp, outcome in outcomes.items():
            if isinstance(outcome, int):
                ctx.leadership[tp] = LeaderIsrAndControllerEpoch(replace(news[tp], zk_version=outcome), ctx.epoch)
            elif retry and isinstance(outcome, MultiOpError) and isinstance(outcome.cause, BadVersionError):
                conflicts.append(tp)
            elif error is None:
                error = outcome
        if conflicts:
            ctx.leadership.update(await self.kzc.get_partition_states(conflicts))  # someone wrote first
        if error is not None:
            raise error
        return conflicts

    def _mark_offline(self, tp: TopicPartition) -> None:
        self._transition(tp, PartitionState.Offline)
        self.batch.add_update_metadata(self.context.live_brokers, [tp])

    def _transition(self, tp: TopicPartition, target: PartitionState) -> None:
        if self.states.get(tp) is PartitionState.NonExistent:
            self.states.transition([tp], PartitionState.New)
        self.states.transition([tp], target)

    # -- replicas going offline ----------------------------------------------------------------
    async def take_replicas_offline(self, broker_ids: set[int], partitions: list[TopicPartition] | None = None) -> None:
        """OfflineReplica for the replicas on ``broker_ids`` (of ``partitions``, default all): leave
        the ISR, never emptying it. One pipelined batch of writes per broker."""
        ctx = self.context
        for broker in sorted(broker_ids):
            tps = [tp for tp in sorted(ctx.leadership if partitions is None else partitions)
                   if broker in ctx.assignments.get(tp, ())]
            await self._remove_from_isr(tps, broker)

    async def _remove_from_isr(self, tps: list[TopicPartition], broker: int, retry: bool = True) -> None:
        ctx, news = self.context, {}
        for tp in tps:
            current = ctx.leadership.get(tp)
            if current is None:
                continue
            lai = current.leader_and_isr
            leader, isr = remove_replica_from_isr(lai.leader, lai.isr, broker)
            if (leader, tuple(isr)) != (lai.leader, lai.isr):
                news[tp] = lai.new_leader_and_isr(leader, tuple(isr))
        conflicts = set(await self._write_many(news, retry))
        for tp, new in news.items():
            if tp in conflicts:
                continue
            if new.leader < 0:
                self._mark_offline(tp)
            self.batch.add_leader_and_isr([b for b in ctx.assignments[tp] if b != broker], tp)
        if news:
            log.info("broker %d left the ISR of %d partitions (%d version conflicts)", broker, len(news) - len(conflicts),
                     len(conflicts))
        if conflicts:
            await self._remove_from_isr(sorted(conflicts), broker, retry=False)

    # -- reassignment steps ----------------------------------------------------------------------
    async def bump_leader_epoch(self, tp: TopicPartition, retry: bool = True) -> bool:
        """Leader epoch + 1 with the same leader and ISR, then LeaderAndIsr to every assigned replica:
        how a changed replica set reaches the brokers (they ignore a LeaderAndIsr without a newer epoch).
        False when the partition has no state (nothing written)."""
        ctx = self.context
        current = ctx.leadership.get(tp)
        if current is None:
            return False
        lai = current.leader_and_isr
        if not await self._write(tp, lai.new_leader_and_isr(lai.leader, lai.isr), retry):
            return await self.bump_leader_epoch(tp, retry=False)
        self.batch.add_leader_and_isr(ctx.assignments[tp], tp)
        return True

    async def remove_replicas_from_isr(self, tp: TopicPartition, brokers: list[int]) -> None:
        """OfflineReplica for replicas that are no longer assigned (a reassignment's removed replicas)."""
        for broker in brokers:
            if tp in self.context.leadership:
                await self._remove_from_isr([tp], broker)


def _some(tps: list[TopicPartition], limit: int = 10) -> str:
    """A few of ``tps`` for a summary line."""
    return ", ".join(map(str, tps[:limit])) + (f", ... ({len(tps) - limit} more)" if len(tps) > limit else "")
