"""PartitionReassignments: the controller's KIP-455 reassignment procedure (the I/O shell around
``reassignment_rules``), run on the controller's event queue only.

For a partition moving from original replicas ORS to target TRS (RS = TRS + ORS, adding = RS - ORS,
removing = RS - TRS), as Kafka's ``onPartitionReassignment``:

- U: write RS with ``adding_replicas`` / ``removing_replicas`` to ``/brokers/topics/<t>`` (fenced, CAS on
  the topic znode); watch the partition's state znode for ISR changes;
- A (targets not all in the ISR yet): bump the leader epoch (same leader and ISR) and send LeaderAndIsr
  with RS to every replica: the new ones create their logs and start fetching from the leader, which
  adds them to the ISR once they have caught up;
- B (every target in the ISR, seen through the state-znode watch or an ISR change notification):
  RS = TRS in memory; elect a leader from TRS if the current one is not a live target, else bump the
  epoch; the removed replicas leave the ISR and get StopReplica(delete=true) (their logs are deleted);
  write TRS to the topic znode last (so the original set stays recoverable until then); remove the
  partition from ``/admin/reassign_partitions``; UpdateMetadata to every broker.

Sources: the AlterPartitionReassignments API (targets or cancellation), the legacy znode
``/admin/reassign_partitions`` (existence watch: only its creation starts work; the latest request for
a partition wins, whichever path it came by), and resumption after a controller failover (from the
topic znodes' adding/removing replicas) or when a broker that a move waits for starts.
Topics queued for deletion cannot be reassigned (UNKNOWN_TOPIC_OR_PARTITION), and a topic under
reassignment is not deleted until its moves are done.
"""
from __future__ import annotations

import logging

from brokers.model import ReplicaAssignment, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import WATCH_LOST
from coordinator import events as ev
from coordinator import reassignment_rules as rules
from coordinator.collaborators import WatchFactory
from coordinator.context import ControllerContext
from coordinator.leader_election import reassign_election
from coordinator.leadership import PartitionLeadership
from coordinator.request_batch import ControllerBrokerRequestBatch
from coordinator.topic_deletion import TopicDeletionManager

log = logging.getLogger(__name__)

Result = dict[TopicPartition, tuple[ErrorCode, str | None]]


def zk_reassignment_event(kind: str) -> ev.ZkPartitionReassignment:
    """The event of the ``/admin/reassign_partitions`` existence watch: only the znode's creation starts
    moves (Kafka's PartitionReassignmentHandler); any other change only re-arms the watch. A watch the
    connection loss dropped counts as a creation: the znode may have appeared meanwhile, and starting
    the moves it lists again is what a failover does too."""
    return ev.ZkPartitionReassignment(created=kind in ("CREATED", WATCH_LOST))


class PartitionReassignments:
    def __init__(self, kzc: KafkaZkClient, context: ControllerContext, batch: ControllerBrokerRequestBatch,
                 leadership: PartitionLeadership, deletion: TopicDeletionManager, watch: WatchFactory):
        self.kzc = kzc
        self.context = context
        self.batch = batch
        self.leadership = leadership
        self.deletion = deletion
        self.watch = watch

    # -- requests --------------------------------------------------------------------------------
    async def process_api_partition_reassignment(self, event: ev.ApiPartitionReassignment, active: bool) -> None:
        """Answer the API's future: NOT_CONTROLLER unless this is the active controller."""
        if not active:
            event.result.set_result(ErrorCode.NOT_CONTROLLER)
        else:
            event.result.set_result(await self.on_api_request(event.reassignments))

    async def process_list_partition_reassignments(self, event: ev.ListPartitionReassignments, active: bool) -> None:
        """Answer the API's future: NOT_CONTROLLER unless this is the active controller."""
        if not active:
            event.result.set_result(ErrorCode.NOT_CONTROLLER)
        else:
            event.result.set_result(self.list(event.partitions))

    async def on_api_request(self, targets: dict[TopicPartition, list[int] | None]) -> Result:
        """AlterPartitionReassignments (Kafka's ``processApiPartitionReassignment``)."""
        moves, results = self._plan(targets)
        await self._forget_zk_requests(set(moves))  # the latest request wins, whichever path it came by
        results.update(await self._trigger(moves))
        return results

    async def process_zk_partition_reassignment(self, event: ev.ZkPartitionReassignment) -> set[TopicPartition]:
        """``/admin/reassign_partitions``: re-arm the existence watch; start what it lists when created."""
        targets = await self.kzc.get_partition_reassignment(watch=self.watch(zk_reassignment_event))
        if not event.created or not targets:
            if targets == {}:
                await self.kzc.set_partition_reassignment(self.context.epoch_zk_version, {})
            return set()
        moves, failed = self._plan(targets)
        results = await self._trigger(moves)
        failed.update({tp: r for tp, r in results.items() if r[0] != ErrorCode.NONE})
        for tp, (code, message) in sorted(failed.items()):
            log.warning("reassignment of %s from %s refused: %s %s", tp, "/admin/reassign_partitions", code.name, message)
        if failed:
            await self._forget_zk_requests(set(failed))
        return set(moves) - set(failed)

    def _plan(self, targets: dict[TopicPartition, list[int] | None]
              ) -> tuple[dict[TopicPartition, ReplicaAssignment], Result]:
        """The moves to start (a target, or None to cancel) and the refused requests with their errors."""
        moves: dict[TopicPartition, ReplicaAssignment] = {}
        refused: Result = {}
        for tp, target in targets.items():
            current = self.context.full_assignment(tp)
            error = None if target is None else rules.validate_target(target, current, self.context.live_broker_ids)
            move = rules.build_reassignment(current, target) if error is None else None
            if error is not None:
                refused[tp] = error
            elif move is None:
                refused[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {tp} is in progress")
            else:
                moves[tp] = move
        return moves, refused

    def list(self, partitions: list[TopicPartition] | None) -> dict[TopicPartition, ReplicaAssignment]:
        ctx = self.context
        wanted = sorted(ctx.reassignments) if partitions is None else partitions
        return {tp: ctx.reassignments[tp] for tp in wanted if tp in ctx.reassignments}

    # -- resumption ------------------------------------------------------------------------------
    async def resume(self, brokers: set[int] | None = None) -> None:
        """Restart moves after a failover (``brokers`` None) or those waiting for a broker that started."""
        for tp, move in sorted(self.context.reassignments.items()):
            if brokers is None or set(move.target_replicas) & brokers:
                await self.resume_one(tp)

    async def resume_one(self, tp: TopicPartition) -> None:
        move = self.context.reassignments.get(tp)
        if move is not None:
            await self._on_partition_reassignment(tp, move)

    async def process_partition_reassignment_isr_change(self, tp: TopicPartition, rearm: bool = True) -> None:
        """The state znode of a moving partition changed (or an ISR notification named it)."""
        ctx, kzc = self.context, self.kzc
        move = ctx.reassignments.get(tp)
        if move is None:
            return
        watch = self.watch(ev.PartitionReassignmentIsrChange(tp.topic, tp.partition)) if rearm else None
        state = await kzc.get_partition_state(tp, watch)
        if state is None:
            return
        ctx.leadership[tp] = state
        if rules.is_complete(move, state.leader_and_isr.isr):
            await self._on_partition_reassignment(tp, move)

    # -- the procedure -----------------------------------------------------------------------------
    async def _trigger(self, moves: dict[TopicPartition, ReplicaAssignment]) -> Result:
        ctx, results = self.context, {}
        for tp, move in sorted(moves.items()):
            if tp.topic in ctx.topics_to_delete or tp not in ctx.assignments:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
                continue
            await self._on_partition_reassignment(tp, move)
            results[tp] = (ErrorCode.NONE, None)
        return results

    async def _on_partition_reassignment(self, tp: TopicPartition, move: ReplicaAssignment) -> None:
        ctx, kzc = self.context, self.kzc
        await self._write_assignment(tp, move)
        watch = self.watch(ev.PartitionReassignmentIsrChange(tp.topic, tp.partition))
        state = await kzc.get_partition_state(tp, watch)
        if state is not None:
            ctx.leadership[tp] = state
        if state is None or not rules.is_complete(move, state.leader_and_isr.isr):
            log.info("%s: reassigning %s -> %s (adding %s, removing %s)", tp, list(move.origin_replicas),
                     list(move.target_replicas), list(move.adding), list(move.removing))
            await self.leadership.bump_leader_epoch(tp)  # A: every replica of RS hears RS
            return
        await self._complete(tp, move)

    async def _complete(self, tp: TopicPartition, move: ReplicaAssignment) -> None:
        ctx, leadership = self.context, self.leadership
        done = rules.completed(move)
        ctx.assignments[tp] = list(done.replicas)  # B2: RS = TRS in memory
        ctx.reassignments.pop(tp, None)
        leader = ctx.leadership[tp].leader_and_isr.leader
        if rules.leader_must_move(leader, done, ctx.live_broker_ids - ctx.shutting_down):
            live = ctx.live_broker_ids - ctx.shutting_down
            await leadership.elect([tp], lambda _tp, replicas, isr: reassign_election(replicas, isr, live),
                                       mark_offline_if_none=False)
        else:
            await leadership.bump_leader_epoch(tp)
        removing = [b for b in move.removing if b not in done.replicas]
        await leadership.remove_replicas_from_isr(tp, removing)  # B4: out of the ISR ...
        for broker in removing:
            self.batch.add_stop_replica(broker, tp, delete=True)  # ... B5: and off their disks
        await self.kzc.update_topic_assignment(ctx.epoch_zk_version, tp.topic, {tp.partition: done})  # B6
        await self._forget_zk_requests({tp}, only_if_target=done.replicas)  # B7
        self.batch.add_update_metadata(ctx.live_brokers, [tp])  # B8
        log.info("%s: reassignment to %s complete (removed %s)", tp, list(done.replicas), removing)
        await self.deletion.resume_deletions()

    async def _write_assignment(self, tp: TopicPartition, move: ReplicaAssignment) -> None:
        """U: RS, adding and removing into the topic znode, then the context."""
        ctx = self.context
        current = ctx.full_assignment(tp)
        if current == move:
            return
        await self.kzc.update_topic_assignment(ctx.epoch_zk_version, tp.topic, {tp.partition: move})
        ctx.assignments[tp] = list(move.replicas)
        if move.is_being_reassigned:
            ctx.reassignments[tp] = move
        else:
            ctx.reassignments.pop(tp, None)
        unneeded = [b for b in current.replicas if b not in move.replicas]  # a superseded or cancelled move's
        if unneeded:
            await self.leadership.remove_replicas_from_isr(tp, unneeded)
            for broker in unneeded:
                self.batch.add_stop_replica(broker, tp, delete=True)

    async def _forget_zk_requests(self, partitions: set[TopicPartition], only_if_target=None) -> None:
        """Drop ``partitions`` from ``/admin/reassign_partitions`` (deleting it once empty)."""
        targets = await self.kzc.get_partition_reassignment()
        if not targets:
            return
        keep = {tp: replicas for tp, replicas in targets.items()
                if tp not in partitions or (only_if_target is not None and tuple(replicas) != tuple(only_if_target))}
        if keep != targets:
            await self.kzc.set_partition_reassignment(self.context.epoch_zk_version, keep)
