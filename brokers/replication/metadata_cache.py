"""MetadataCache: what this broker knows of the cluster, fed only by the controller's UpdateMetadata.

Live brokers are replaced wholesale by each request; partition states are replaced per partition,
and a partition whose leader is -2 (LeaderDuringDelete) is removed. Metadata responses
are answered from here alone, as in Kafka.
"""
from __future__ import annotations

from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import LEADER_DURING_DELETE, BrokerInfo, TopicPartition


class MetadataCache:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self.live_brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self._by_topic: dict[str, dict[int, PartitionState]] = {}

    def update(self, request: UpdateMetadataRequest) -> list[TopicPartition]:
        """Apply an UpdateMetadata; return the partitions it deleted."""
        self.controller_id = request.controller_id
        self.live_brokers = {broker.id: broker for broker in request.live_brokers}
        deleted = []
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            if state.leader == LEADER_DURING_DELETE:
                if self.partitions.pop(tp, None) is not None:
                    deleted.append(tp)
                    topic = self._by_topic.get(tp.topic, {})
                    topic.pop(tp.partition, None)
                    if not topic:
                        self._by_topic.pop(tp.topic, None)
            else:
                self.partitions[tp] = state
                self._by_topic.setdefault(tp.topic, {})[tp.partition] = state
        return deleted

    def topics(self) -> set[str]:
        return set(self._by_topic)

    def contains_topic(self, topic: str) -> bool:
        return topic in self._by_topic

    def partitions_of(self, topic: str) -> dict[int, PartitionState]:
        return dict(self._by_topic.get(topic, {}))

    def leader_of(self, tp: TopicPartition) -> BrokerInfo | None:
        state = self.partitions.get(tp)
        return self.live_brokers.get(state.leader) if state else None

    def snapshot(self) -> dict:
        return {
            "controller_id": self.controller_id,
            "live_brokers": sorted(self.live_brokers),
            "partitions": {str(tp): {"leader": s.leader, "leader_epoch": s.leader_epoch, "isr": list(s.isr),
                                     "replicas": list(s.replicas)} for tp, s in sorted(self.partitions.items())},
        }
