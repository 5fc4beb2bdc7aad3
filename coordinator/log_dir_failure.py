"""Log dir failures (KIP-112): Kafka's ``processLogDirEventNotification``, ``onBrokerLogDirFailure`` and
the LeaderAndIsr-response half of ``onReplicasBecomeOffline``.

1. A broker whose log dir failed writes ``/log_dir_event_notification/log_dir_event_<seq>`` naming itself.
   The controller (watching the children) reads the brokers named, deletes the notifications (fenced)
   and sends each named live broker a LeaderAndIsr for every partition it hosts.
2. The broker answers KAFKA_STORAGE_ERROR for each partition whose log is in an offline dir (also a
   broker that started with a dir unusable, answering the LeaderAndIsr of its start-up).
3. ``offline_replica_changes`` (pure) turns a LeaderAndIsr response into the broker's replicas on
   offline dirs (``ControllerContext.replicas_on_offline_dirs``): storage errors join, NONE leaves.
   The replicas that newly joined go offline as if their broker died, only for those partitions:
   partitions they led go Offline and get a leader elected among the others, then the replica leaves
   the ISR (OfflineReplica), and UpdateMetadata carries it in ``offline_replicas``.
A broker's entry is dropped when it dies or registers anew (its dirs are checked again at start-up).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.zk.client import KafkaZkClient
from coordinator import events as ev
from coordinator.collaborators import WatchFactory
from coordinator.context import ControllerContext
from coordinator.leadership import PartitionLeadership
from coordinator.partition_state_machine import PartitionState, PartitionStates
from coordinator.request_batch import ControllerBrokerRequestBatch

log = logging.getLogger(__name__)

PartitionErrors = Iterable[tuple[str, int, int]]  # LeaderAndIsrResponse.partition_errors


def offline_replica_changes(previous: frozenset[TopicPartition] | set[TopicPartition],
                            partition_errors: PartitionErrors) -> tuple[set[TopicPartition], set[TopicPartition]]:
    """Kafka's ``onLeaderAndIsrResponse``: ``(current, newly_offline)`` for one broker, from the replicas
    it had on offline dirs before and the per-partition errors of its LeaderAndIsr response.
    KAFKA_STORAGE_ERROR adds a partition, NONE removes it, any other error changes nothing."""
    errors = [(TopicPartition(topic, partition), code) for topic, partition, code in partition_errors]
    offline = {tp for tp, code in errors if code == ErrorCode.KAFKA_STORAGE_ERROR}
    online = {tp for tp, code in errors if code == ErrorCode.NONE}
    current = (set(previous) - online) | offline
    return current, current - set(previous)


def wants_response(context: ControllerContext, broker_id: int, partition_errors: PartitionErrors) -> bool:
    """Whether a LeaderAndIsr response can change anything here (the event queue is spared the rest)."""
    return broker_id in context.replicas_on_offline_dirs or any(
        code == ErrorCode.KAFKA_STORAGE_ERROR for _, _, code in partition_errors)


class LogDirFailures:
    def __init__(self, kzc: KafkaZkClient, context: ControllerContext, batch: ControllerBrokerRequestBatch,
                 states: PartitionStates, leadership: PartitionLeadership, watch: WatchFactory):
        self.kzc = kzc
        self.context = context
        self.batch = batch
        self.states = states
        self.leadership = leadership
        self.watch = watch

    async def process_log_dir_event_notification(self) -> None:
        """The children of ``/log_dir_event_notification`` changed (the watch is re-armed here)."""
        ctx = self.context
        names = await self.kzc.get_log_dir_event_notifications(watch=self.watch(ev.LogDirEventNotification()))
        brokers = set()
        for name in sorted(names):
            broker = await self.kzc.read_log_dir_event_notification(name)
            if broker is not None:
                brokers.add(broker)
        await self.kzc.delete_log_dir_event_notifications(ctx.epoch_zk_version, names)
        if brokers:
            self.on_broker_log_dir_failure(sorted(brokers))

    def on_broker_log_dir_failure(self, brokers: list[int]) -> None:
        """LeaderAndIsr for every replica the brokers host: their answers name the offline ones."""
        ctx = self.context
        log.info("controller: brokers %s reported a log dir failure", brokers)
        for broker in brokers:
            if broker not in ctx.live_brokers:
                continue
            for tp in ctx.partitions_on(broker):
                if tp in ctx.leadership:
                    self.batch.add_leader_and_isr([broker], tp)

    async def process_leader_and_isr_response(self, event: ev.LeaderAndIsrResponseReceived) -> None:
        ctx = self.context
        if event.error_code != ErrorCode.NONE or event.broker_id not in ctx.live_brokers:
            return
        previous = ctx.replicas_on_offline_dirs.get(event.broker_id, set())
        current, new = offline_replica_changes(previous, event.errors)
        if current:
            ctx.replicas_on_offline_dirs[event.broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(event.broker_id, None)
        new = {tp for tp in new if tp in ctx.leadership}
        if new:
            log.warning("controller: replicas of %s on broker %d are on an offline log dir",
                        sorted(map(str, new)), event.broker_id)
            await self.on_replicas_become_offline(event.broker_id, sorted(new))

    async def on_replicas_become_offline(self, broker: int, tps: list[TopicPartition]) -> None:
        """Led partitions elect another leader (Offline first), then the replicas leave the ISR."""
        ctx = self.context
        led = [tp for tp in tps if ctx.leadership[tp].leader_and_isr.leader == broker
               and tp.topic not in ctx.topics_to_delete]
        for tp in led:
            self.states.transition([tp], PartitionState.Offline)
        await self.leadership.elect(led, self.leadership.offline_strategy())
        await self.leadership.take_replicas_offline({broker}, tps)
        self.batch.add_update_metadata(ctx.live_brokers, tps)
