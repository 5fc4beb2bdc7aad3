"""The controller's TopicDeletionManager (reference §2.5 "Topic deletion").

Deletion: a marker under ``/admin/delete_topics`` queues the topic; while any replica's broker is
down the topic is ineligible and waits. Otherwise brokers learn leader -2 (LeaderDuringDelete), every
replica gets StopReplica(delete=true), and once all have answered without error the topic's znodes,
config and marker are removed in one fenced multi.
"""
from __future__ import annotations

import logging

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from coordinator import events as ev
from coordinator.collaborators import WatchFactory
from coordinator.context import ControllerContext
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.request_batch import ControllerBrokerRequestBatch

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, context: ControllerContext,
                 batch: ControllerBrokerRequestBatch, states: PartitionStates, watch: WatchFactory,
                 delete_topic_enable: bool):
        self.broker_id = broker_id
        self.kzc = kzc
        self.context = context
        self.batch = batch
        self.states = states
        self.watch = watch
        self.delete_topic_enable = delete_topic_enable

    async def process_topic_deletion(self) -> None:
        """``/admin/delete_topics`` changed (or failover): queue the marked topics, re-arm the watch."""
        ctx = self.context
        topics = await self.kzc.get_topic_deletions(watch=self.watch(ev.TopicDeletion()))
        for topic in topics:
            if not self.delete_topic_enable or topic not in ctx.all_topics:
                if not self.delete_topic_enable:
                    log.warning("delete.topic.enable=false: ignoring the deletion of %s", topic)
                await self.kzc.delete_topic_deletion_marker(ctx.epoch_zk_version, topic)
                continue
            ctx.topics_to_delete.add(topic)
        await self.resume_deletions()

    async def resume_deletions(self) -> None:
        """Start deleting every queued topic whose replicas are all on live brokers."""
        ctx, batch = self.context, self.batch
        for topic in sorted(ctx.topics_to_delete):
            if topic in ctx.deletion_awaiting:
                continue
            replicas = {(tp.partition, b) for tp in ctx.partitions_of(topic) for b in ctx.assignments[tp]}
            if any(b not in ctx.live_brokers for _, b in replicas):
                log.info("deletion of %s waits: a replica's broker is offline", topic)
                continue
            if any(tp.topic == topic for tp in ctx.reassignments):
                log.info("deletion of %s waits: a reassignment of its partitions is in progress", topic)
                continue
            ctx.deletion_awaiting[topic] = replicas
            partitions = ctx.partitions_of(topic)
            batch.add_update_metadata(ctx.live_brokers, partitions)
            for tp in partitions:
                self._move(tp, PartitionState.Offline)
                for broker in ctx.assignments[tp]:
                    batch.add_stop_replica(broker, tp, delete=True)
            if not replicas:
                await self._complete(topic)

    def on_brokers_failed(self, brokers: set[int]) -> None:
        """Deletions waiting on a failed broker start over once it is back (its queue was dropped)."""
        ctx = self.context
        for topic in [t for t, awaiting in ctx.deletion_awaiting.items() if any(b in brokers for _, b in awaiting)]:
            ctx.deletion_awaiting.pop(topic, None)

    async def process_stop_replica_response(self, event: ev.StopReplicaResponseReceived) -> None:
        ctx = self.context
        if event.error_code != ErrorCode.NONE:  # refused whole: every partition in it failed
            log.warning("broker %d refused StopReplica (error %d); deletions retry", event.broker_id, event.error_code)
            for topic in [t for t, awaiting in ctx.deletion_awaiting.items()
                          if any(b == event.broker_id for _, b in awaiting)]:
                ctx.deletion_awaiting.pop(topic, None)
            return
        retry = False
        for topic, partition, error in event.errors:
            awaiting = ctx.deletion_awaiting.get(topic)
            if awaiting is None:
                continue
            if error == ErrorCode.NONE:
                awaiting.discard((partition, event.broker_id))
            else:
                log.warning("replica %s-%d on broker %d failed to delete (error %d); retrying",
                            topic, partition, event.broker_id, error)
                ctx.deletion_awaiting.pop(topic, None)
                retry = True
        for topic in [t for t, awaiting in ctx.deletion_awaiting.items() if not awaiting]:
            await self._complete(topic)
        if retry:
            await self.resume_deletions()

    async def _complete(self, topic: str) -> None:
        ctx = self.context
        await self.kzc.delete_topic(ctx.epoch_zk_version, topic)
        for tp in ctx.partitions_of(topic):
            self._move(tp, PartitionState.NonExistent)
        ctx.remove_topic(topic)
        log.info("controller %d: deleted topic %s", self.broker_id, topic)

    def _move(self, tp: TopicPartition, target: PartitionState) -> None:
        if self.states.get(tp) is not target:
            self.states.transition([tp], target)
