"""TopicChangeProcessor: how the controller follows topics and partitions in ZooKeeper (Kafka's
``KafkaController.processTopicChange``, ``processPartitionModifications`` and
``processIsrChangeNotification``, with the topic part of ``initializeControllerContext``).

- Loading a topic reads its config overrides, its full assignment (arming the data watch on
  ``/brokers/topics/<topic>``) and each partition's state znode into the context; a partition without
  a state znode is New, one whose leader is not live Offline, the others Online.
- TopicChange (``/brokers/topics`` children): topics gone leave the context; new ones are loaded and
  their partitions go New -> Online.
- PartitionModifications (a topic znode's data watch): partitions without an assignment in the context
  are new (CreatePartitions) and go New -> Online, unless the topic is queued for deletion.
- IsrChangeNotification (``/isr_change_notification`` children): the named partitions' states are
  re-read, brokers get UpdateMetadata for them, moving ones may complete their reassignment, and the
  notifications are deleted (fenced).
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from brokers.model import TopicPartition
from brokers.zk.client import KafkaZkClient
from coordinator import events as ev
from coordinator.collaborators import WatchFactory
from coordinator.context import ControllerContext
from coordinator.event_manager import EventFor
from coordinator.leadership import PartitionLeadership
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.reassignment import PartitionReassignments
from coordinator.request_batch import ControllerBrokerRequestBatch

log = logging.getLogger(__name__)


class TopicChangeProcessor:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, context: ControllerContext,
                 batch: ControllerBrokerRequestBatch, states: PartitionStates, leadership: PartitionLeadership,
                 reassignments: PartitionReassignments, watch: WatchFactory, term: Callable[[], int]):
        self.broker_id = broker_id
        self.kzc = kzc
        self.context = context
        self.batch = batch
        self.states = states
        self.leadership = leadership
        self.reassignments = reassignments
        self.watch = watch
        self.term = term  # elections won so far by this broker: a watch of an earlier term lapses

    async def load_topics(self, topics: list[str]) -> list[TopicPartition]:
        """Read assignments and partition states of ``topics`` into the context; return new partitions.
        Configs, assignments and then partition states each go out as one pipelined batch."""
        ctx, new = self.context, []
        for topic, config in zip(topics, await self.kzc.get_topic_configs(topics)):
            ctx.topic_configs[topic] = config
        watches = [self.watch(self._partition_modifications(topic)) for topic in topics]
        assignments = await self.kzc.get_full_topic_assignments(topics, watches)
        tps = []
        for topic, (assignment, topic_id) in zip(topics, (a or ({}, None) for a in assignments)):
            if assignment and topic_id is None:  # Kafka 2.8's processTopicIds: every topic gets one
                topic_id = await self.kzc.set_topic_id(ctx.epoch_zk_version, topic)
            if topic_id is not None:
                ctx.topic_ids[topic] = topic_id
            for partition, full in assignment.items():
                tp = TopicPartition(topic, partition)
                ctx.assignments[tp] = list(full.replicas)
                if full.is_being_reassigned:
                    ctx.reassignments[tp] = full
                tps.append(tp)
        for tp, state in (await self.kzc.get_partition_states(tps)).items():
            if state is None:
                self.states.set_initial(tp, PartitionState.New)
                new.append(tp)
            else:
                ctx.leadership[tp] = state
                online = state.leader_and_isr.leader in ctx.live_brokers
                self.states.set_initial(tp, PartitionState.Online if online else PartitionState.Offline)
        return new

    def _partition_modifications(self, topic: str) -> EventFor:
        """The event of the data watch on ``/brokers/topics/<topic>``. A watch armed by an earlier term of
        this controller only lapses: the new term armed its own when it loaded the topic."""
        term = self.term()
        return lambda _kind: ev.PartitionModifications(topic) if term == self.term() else None

    async def process_topic_change(self) -> None:
        ctx = self.context
        topics = set(await self.kzc.get_all_topics(watch=self.watch(ev.TopicChange())))
        for gone in ctx.all_topics - topics:
            for tp in ctx.partitions_of(gone):
                self.states.remove(tp)
            ctx.remove_topic(gone)
        new_topics = sorted(topics - ctx.all_topics)
        if new_topics:
            started = time.monotonic()
            new = await self.load_topics(new_topics)
            loaded = time.monotonic()
            await self.leadership.on_new_partition_creation(new)
            log.info("controller %d: %d new topics with %d new partitions (%s%s) in %.3f s (read in %.3f s)",
                     self.broker_id, len(new_topics), len(new), ", ".join(new_topics[:10]),
                     ", ..." if len(new_topics) > 10 else "", time.monotonic() - started, loaded - started)

    async def process_partition_modifications(self, topic: str) -> None:
        """Partitions without an assignment in the context are new (CreatePartitions); they go New ->
        Online. Existing partitions' replica lists are left to whoever rewrote them (a reassignment); a
        topic queued for deletion gets no new partitions."""
        ctx = self.context
        if topic not in ctx.all_topics:
            return  # deleted, or new and TopicChange will load it (and arm its watch)
        watch = self.watch(self._partition_modifications(topic))
        assignment, _ = await self.kzc.get_full_topic_assignment(topic, watch) or ({}, None)
        new = {TopicPartition(topic, p): list(full.replicas) for p, full in sorted(assignment.items())
               if TopicPartition(topic, p) not in ctx.assignments}
        if not new:
            return
        if topic in ctx.topics_to_delete:
            log.warning("controller %d: not adding partitions %s to %s, it is being deleted",
                        self.broker_id, sorted(tp.partition for tp in new), topic)
            return
        log.info("controller %d: %d new partitions of %s", self.broker_id, len(new), topic)
        ctx.assignments.update(new)
        await self.leadership.on_new_partition_creation(sorted(new))

    async def process_isr_change_notification(self) -> None:
        ctx = self.context
        names = await self.kzc.get_isr_change_notifications(watch=self.watch(ev.IsrChangeNotification()))
        changed = set(await self.kzc.read_isr_change_notifications(names))
        for tp, state in (await self.kzc.get_partition_states(sorted(changed))).items():
            if state is not None and tp in ctx.assignments:
                ctx.leadership[tp] = state
        self.batch.add_update_metadata(ctx.live_brokers, sorted(changed & set(ctx.assignments)))
        await self.kzc.delete_isr_change_notifications(ctx.epoch_zk_version, names)
        for tp in sorted(changed & set(ctx.reassignments)):
            await self.reassignments.process_partition_reassignment_isr_change(tp, rearm=False)
