"""Replica leader elections the controller runs on request: preferred (and unclean) elections from
ElectLeaders, from the ``/admin/preferred_replica_election`` znode, and the auto leader rebalance
(reference §2.3 step 6, §2.5 "Preferred leader election / auto rebalance", Kafka 2.8's
``KafkaController.processReplicaLeaderElection`` and ``checkAndTriggerAutoLeaderRebalance``).

Pure decisions, exhaustively unit-tested:

- :func:`triage` splits the requested partitions: unknown ones answer UNKNOWN_TOPIC_OR_PARTITION,
  those of topics being deleted INVALID_TOPIC_EXCEPTION, those that need no election
  ELECTION_NOT_NEEDED (PREFERRED: ``assignment[0]`` already leads; UNCLEAN: the leader is live), the
  rest are elected. A failed election answers PREFERRED_LEADER_NOT_AVAILABLE (80) or
  ELIGIBLE_LEADERS_NOT_AVAILABLE (83) and leaves the partition as it was (nothing written).
- :func:`auto_rebalance_candidates`: per broker B, the partitions whose preferred replica
  (``assignment[0]``) is B; the imbalance ratio is (those led by another broker) / (all of them);
  when it exceeds ``leader.imbalance.per.broker.percentage`` / 100, the not-preferred-led ones whose
  preferred replica is live and in the ISR are elected -- none while any reassignment runs, none of
  topics being deleted.

The I/O shell, :class:`ReplicaLeaderElections`, runs only on the controller's event queue. Preferred
elections write leader epoch + 1 with the ISR unchanged (``PartitionLeadership.elect``, fenced CAS),
which queues LeaderAndIsr to the replicas and UpdateMetadata to all. The znode has an existence watch
from failover on (a pending znode is processed then); after an election the controller deletes it
with the version it read, fenced (a znode rewritten meanwhile is processed again). Unparseable content
is logged and deleted, so that a new request can be written. The auto-rebalance timer only enqueues
an event: first 5 s after failover, then ``leader.imbalance.check.interval.seconds`` after each check;
it is cancelled when the controller resigns.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from brokers.model import NO_LEADER, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from coordinator import events as ev
from coordinator.collaborators import AutoRebalanceConfig, Enqueue, IsActive, WatchFactory
from coordinator.context import ControllerContext
from coordinator.leadership import PartitionLeadership

log = logging.getLogger(__name__)

PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}
AUTO_REBALANCE_FIRST_CHECK_SECONDS = 5.0  # Kafka schedules the first check 5 s after failover

Outcome = tuple[int, "str | None", int]  # (error code, message, elected leader or -1)
STRATEGY_NAMES = {PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
                  UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)"}


# -- pure decisions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Triage:
    electable: list[TopicPartition]
    outcomes: dict[TopicPartition, Outcome] = field(default_factory=dict)  # partitions answered without election


def triage(election_type: int, partitions: Iterable[TopicPartition], assignments: Mapping[TopicPartition, Sequence[int]],
           leaders: Mapping[TopicPartition, int], live: Collection[int], topics_to_delete: Collection[str]) -> Triage:
    """Which of ``partitions`` to elect, and the answer for the others (Kafka's order of checks:
    unknown, topic being deleted, election not needed). ``leaders``: current leader per partition
    (absent = none yet); ``live``: brokers alive and not shutting down."""
    electable, outcomes = [], {}
    for tp in sorted(set(partitions)):
        replicas = assignments.get(tp)
        leader = leaders.get(tp, NO_LEADER)
        if replicas is None:
            outcomes[tp] = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), "The partition does not exist.", NO_LEADER)
        elif tp.topic in topics_to_delete:
            outcomes[tp] = (int(ErrorCode.INVALID_TOPIC_EXCEPTION), "The topic is being deleted", NO_LEADER)
        elif election_type == PREFERRED and replicas and leader == replicas[0]:
            outcomes[tp] = (int(ErrorCode.ELECTION_NOT_NEEDED), None, leader)
        elif election_type == UNCLEAN and leader != NO_LEADER and leader in live:
            outcomes[tp] = (int(ErrorCode.ELECTION_NOT_NEEDED), None, leader)
        else:
            electable.append(tp)
    return Triage(electable, outcomes)


def failure_outcome(election_type: int, tp: TopicPartition) -> Outcome:
    """The answer for a partition whose election found no leader (it keeps its current one)."""
    code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    return int(code), f"Failed to elect leader for partition {tp} under strategy {STRATEGY_NAMES[election_type]}", NO_LEADER


def leader_imbalance(assignments: Mapping[TopicPartition, Sequence[int]], leaders: Mapping[TopicPartition, int],
                     topics_to_delete: Collection[str] = ()) -> dict[int, tuple[list[TopicPartition], int]]:
    """Per preferred broker B: (its partitions led by another broker, how many partitions prefer B).
    Partitions of topics being deleted are left out; one without a known leader counts in the total
    but not as led by another broker (Kafka's ``leadershipInfo.exists(leader != B)``)."""
    by_broker: dict[int, tuple[list[TopicPartition], int]] = {}
    for tp in sorted(assignments):
        replicas = assignments[tp]
        if not replicas or tp.topic in topics_to_delete:
            continue
        preferred = replicas[0]
        not_preferred, total = by_broker.get(preferred, ([], 0))
        if tp in leaders and leaders[tp] != preferred:
            not_preferred.append(tp)
        by_broker[preferred] = (not_preferred, total + 1)
    return by_broker


def is_imbalanced(not_preferred: int, total: int, imbalance_percentage: int) -> bool:
    """``not_preferred / total > percentage / 100``, in exact integer arithmetic."""
    return total > 0 and not_preferred * 100 > imbalance_percentage * total


def auto_rebalance_candidates(assignments: Mapping[TopicPartition, Sequence[int]],
                              leadership: Mapping[TopicPartition, tuple[int, Sequence[int]]], live: Collection[int],
                              imbalance_percentage: int, topics_to_delete: Collection[str] = (),
                              reassignment_in_progress: bool = False) -> list[TopicPartition]:
    """The partitions the auto leader rebalance elects now. ``leadership``: (leader, ISR) per partition;
    ``live``: brokers alive and not shutting down."""
    if reassignment_in_progress:
        return []
    leaders = {tp: leader for tp, (leader, _) in leadership.items()}
    candidates = []
    for broker, (not_preferred, total) in leader_imbalance(assignments, leaders, topics_to_delete).items():
        if broker not in live or not is_imbalanced(len(not_preferred), total, imbalance_percentage):
            continue
        candidates.extend(tp for tp in not_preferred if broker in leadership[tp][1])
    return sorted(candidates)


# -- the controller's shell ------------------------------------------------------------------------
class ReplicaLeaderElections:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, context: ControllerContext, leadership: PartitionLeadership,
                 config: AutoRebalanceConfig, is_active: IsActive, enqueue: Enqueue, watch: WatchFactory):
        self.broker_id = broker_id
        self.kzc = kzc
        self.context = context
        self.leadership = leadership
        self.config = config
        self.is_active = is_active
        self.enqueue = enqueue
        self.watch = watch
        self._timer: asyncio.TimerHandle | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    async def on_failover(self) -> None:
        """Watch the znode (processing a pending one) and start the auto-rebalance timer."""
        await self._elect_from_znode()
        self._schedule(AUTO_REBALANCE_FIRST_CHECK_SECONDS)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self, delay: float) -> None:
        self.stop()
        if not self.config.auto_leader_rebalance_enable:
            return
        event = ev.AutoPreferredReplicaLeaderElection(self.context.epoch)
        self._timer = asyncio.get_running_loop().call_later(delay, self.enqueue, event)

    # -- events ------------------------------------------------------------------------------------
    async def process_replica_leader_election(self, event: ev.ReplicaLeaderElection) -> None:
        """ElectLeaders (answers NOT_CONTROLLER when inactive), or the znode's watch fired."""
        if event.result is None:
            if self.is_active():
                await self._elect_from_znode()
            return
        try:
            outcomes = await self.elect_for_admin(event.election_type, event.partitions or frozenset())
        except BaseException:
            self._answer(event, {tp: (int(ErrorCode.NOT_CONTROLLER), None, NO_LEADER) for tp in event.partitions or ()})
            raise
        self._answer(event, outcomes)

    @staticmethod
    def _answer(event: ev.ReplicaLeaderElection, outcomes: dict[TopicPartition, Outcome]) -> None:
        if not event.result.done():  # the request may have timed out and gone
            event.result.set_result(outcomes)

    async def process_auto_preferred_replica_leader_election(self, event: ev.AutoPreferredReplicaLeaderElection
                                                             ) -> None:
        if event.epoch != self.context.epoch:
            return  # a timer of an earlier term
        try:
            await self._auto_rebalance()
        finally:
            self._schedule(self.config.leader_imbalance_check_interval_seconds)

    # -- the three sources -------------------------------------------------------------------------
    async def elect_for_admin(self, election_type: int, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Outcome]:
        """ElectLeaders: one outcome per requested partition."""
        partitions = set(partitions)
        if not self.is_active():
            return {tp: (int(ErrorCode.NOT_CONTROLLER), None, NO_LEADER) for tp in partitions}
        ctx = self.context
        found = triage(election_type, partitions, ctx.assignments, self._leaders(), self._live(), ctx.topics_to_delete)
        outcomes = dict(found.outcomes)
        outcomes.update(await self._elect(found.electable, election_type))
        log.info("controller %d: %s leader election for %d partition(s) requested by an admin client: %d elected",
                 self.broker_id, ELECTION_TYPES[election_type], len(partitions),
                 sum(1 for code, _, _ in outcomes.values() if code == ErrorCode.NONE))
        return outcomes

    async def _elect_from_znode(self) -> None:
        ctx = self.context
        try:
            pending = await self.kzc.get_preferred_replica_election(watch=self.watch(ev.ReplicaLeaderElection()))
        except ValueError as exc:
            log.error("controller %d: ignoring and deleting a malformed preferred replica election request: %s",
                      self.broker_id, exc)
            await self.kzc.delete_preferred_replica_election(ctx.epoch_zk_version)
            return
        if pending is None:
            return
        partitions, version = pending
        found = triage(PREFERRED, partitions, ctx.assignments, self._leaders(), self._live(), ctx.topics_to_delete)
        skipped = {tp: message for tp, (code, message, _) in sorted(found.outcomes.items())
                   if code != ErrorCode.ELECTION_NOT_NEEDED}
        outcomes = await self._elect(found.electable, PREFERRED)
        failed = {tp: message for tp, (code, message, _) in sorted(outcomes.items()) if code != ErrorCode.NONE}
        for tp, (code, message, leader) in sorted(outcomes.items()):
            log.debug("preferred replica election of %s: %s", tp, f"leader {leader}" if code == ErrorCode.NONE else message)
        log.info("controller %d: preferred replica election (ZooKeeper request) for %d partitions: %d elected, "
                 "%d skipped%s", self.broker_id, len(partitions), len(outcomes) - len(failed), len(skipped),
                 "".join(f"; {tp}: {m}" for tp, m in list(skipped.items())[:5]))
        if failed:
            log.warning("controller %d: preferred replica election failed for %d partitions: %s", self.broker_id,
                        len(failed), "; ".join(f"{tp}: {m}" for tp, m in list(failed.items())[:10]))
        if not await self.kzc.delete_preferred_replica_election(ctx.epoch_zk_version, version):
            self.enqueue(ev.ReplicaLeaderElection())  # rewritten while we elected: look again

    async def _auto_rebalance(self) -> None:
        ctx, config = self.context, self.config
        leadership = {tp: (s.leader_and_isr.leader, s.leader_and_isr.isr) for tp, s in ctx.leadership.items()}
        candidates = auto_rebalance_candidates(ctx.assignments, leadership, self._live(),
                                               config.leader_imbalance_per_broker_percentage, ctx.topics_to_delete,
                                               bool(ctx.reassignments))
        if not candidates:
            return
        log.info("controller %d: auto leader rebalance moves %s back to their preferred replicas",
                 self.broker_id, ", ".join(map(str, candidates)))
        await self._elect(candidates, PREFERRED)

    # -- helpers -----------------------------------------------------------------------------------
    async def _elect(self, partitions: list[TopicPartition], election_type: int) -> dict[TopicPartition, Outcome]:
        leadership = self.leadership
        strategy = leadership.preferred_strategy() if election_type == PREFERRED else leadership.unclean_strategy()
        failed = set(await leadership.elect(partitions, strategy, mark_offline_if_none=False))
        ctx = self.context
        return {tp: failure_outcome(election_type, tp) if tp in failed
                else (int(ErrorCode.NONE), None, ctx.leadership[tp].leader_and_isr.leader) for tp in partitions}

    def _leaders(self) -> dict[TopicPartition, int]:
        return {tp: s.leader_and_isr.leader for tp, s in self.context.leadership.items()}

    def _live(self) -> set[int]:
        return self.context.live_broker_ids - self.context.shutting_down
