"""ControllerBrokerRequestBatch: the control requests one controller event produces, per broker.

Sent in Kafka's order: LeaderAndIsr, then UpdateMetadata, then StopReplica. Adding a LeaderAndIsr
for a partition also schedules an UpdateMetadata for it to every live broker. Topics queued for
deletion are announced with leader -2 (LeaderDuringDelete) so brokers drop them from metadata.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from brokers.control import (
    LeaderAndIsrRequest,
    PartitionState,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from brokers.model import LEADER_DURING_DELETE, TopicPartition
from coordinator.context import ControllerContext


class ControllerBrokerRequestBatch:
    def __init__(self, controller_id: int, context: ControllerContext):
        self.controller_id = controller_id
        self.context = context
        self.leader_and_isr: dict[int, dict[TopicPartition, bool]] = defaultdict(dict)  # broker -> tp -> is_new
        self.update_metadata_partitions: set[TopicPartition] = set()
        self.update_metadata_brokers: set[int] = set()
        self.stop_replica: dict[int, dict[TopicPartition, bool]] = defaultdict(dict)  # broker -> tp -> delete

    def add_leader_and_isr(self, brokers, tp: TopicPartition, is_new: bool = False) -> None:
        for broker in brokers:
            if broker in self.context.live_brokers:
                self.leader_and_isr[broker][tp] = is_new
        self.add_update_metadata(self.context.live_brokers, [tp])

    def add_update_metadata(self, brokers, partitions) -> None:
        self.update_metadata_brokers.update(b for b in brokers if b in self.context.live_brokers)
        self.update_metadata_partitions.update(partitions)

    def add_stop_replica(self, broker: int, tp: TopicPartition, delete: bool) -> None:
        if broker in self.context.live_brokers:
            self.stop_replica[broker][tp] = delete or self.stop_replica[broker].get(tp, False)

    def clear(self) -> None:
        self.leader_and_isr.clear()
        self.update_metadata_partitions.clear()
        self.update_metadata_brokers.clear()
        self.stop_replica.clear()

    def _partition_state(self, tp: TopicPartition, is_new: bool = False, for_metadata: bool = False) -> PartitionState | None:
        state = self.context.leadership.get(tp)
        replicas = tuple(self.context.assignments.get(tp, ()))
        if state is None:
            return None
        lai = state.leader_and_isr
        deleting = for_metadata and tp.topic in self.context.topics_to_delete
        leader = LEADER_DURING_DELETE if deleting else lai.leader  # -2 only tells metadata caches
        offline = tuple(b for b in replicas if not self.context.is_replica_online(b, tp))
        return PartitionState(tp.topic, tp.partition, state.controller_epoch, leader, lai.leader_epoch, lai.isr,
                              lai.zk_version, replicas, is_new, offline, self.context.topic_ids.get(tp.topic, ""))

    def send(self, send: Callable[..., None], on_stop_replica: Callable[[int, object], None] | None = None,
             on_leader_and_isr: Callable[[int, object], None] | None = None) -> None:
        """Hand every request to ``send(broker_id, request, callback)`` in Kafka's order, then reset.
        ``on_stop_replica`` / ``on_leader_and_isr(broker_id, response)`` hear the answers.

        Brokers that died since a request was queued are skipped (the channel dropped them too).
        """
        try:
            self._send(send, on_stop_replica, on_leader_and_isr)
        finally:
            self.clear()

    def _send(self, send: Callable[..., None], on_stop_replica: Callable[[int, object], None] | None,
              on_leader_and_isr: Callable[[int, object], None] | None = None) -> None:
        ctx = self.context
        live = tuple(ctx.live_brokers.values())
        for broker, partitions in self.leader_and_isr.items():
            if broker not in ctx.live_brokers:
                continue
            states = tuple(s for tp, new in sorted(partitions.items()) if (s := self._partition_state(tp, new)))
            leaders = tuple(ctx.live_brokers[s.leader] for s in states if s.leader in ctx.live_brokers)
            answered = (lambda response, b=broker: on_leader_and_isr(b, response)) if on_leader_and_isr else None
            send(broker, LeaderAndIsrRequest(self.controller_id, ctx.epoch, ctx.live_brokers[broker].epoch, states,
                                             tuple({b.id: b for b in leaders}.values())), answered)
        if self.update_metadata_brokers:
            states = tuple(s for tp in sorted(self.update_metadata_partitions)
                           if (s := self._partition_state(tp, for_metadata=True)))
            for broker in sorted(self.update_metadata_brokers & set(ctx.live_brokers)):
                send(broker, UpdateMetadataRequest(self.controller_id, ctx.epoch, ctx.live_brokers[broker].epoch,
                                                   states, live), None)
        for broker, partitions in self.stop_replica.items():
            if broker not in ctx.live_brokers:
                continue
            items = tuple(StopReplicaPartition(tp.topic, tp.partition, self._stop_epoch(tp), delete)
                          for tp, delete in sorted(partitions.items()))
            callback = (lambda response, b=broker: on_stop_replica(b, response)) if on_stop_replica else None
            send(broker, StopReplicaRequest(self.controller_id, ctx.epoch, ctx.live_brokers[broker].epoch, items), callback)

    def _stop_epoch(self, tp: TopicPartition) -> int:
        if tp.topic in self.context.topics_to_delete:
            return -2  # EpochDuringDelete: bypasses the broker's leader-epoch check
        state = self.context.leadership.get(tp)
        return state.leader_and_isr.leader_epoch if state else -1
