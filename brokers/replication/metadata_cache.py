"""MetadataCache: what this broker knows of the cluster, fed only by the controller's UpdateMetadata.

Live brokers are replaced wholesale by each request; partition states are replaced per partition,
and a partition whose leader is -2 (LeaderDuringDelete) is removed. Each topic's id (Kafka 2.8's topic ids,
UpdateMetadata v7's ``topic_id``) comes with its partition states and leaves with its last partition.
Metadata responses are answered from here alone, as in Kafka.
"""
from __future__ import annotations

import uuid

from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import LEADER_DURING_DELETE, ZERO_UUID, BrokerInfo, TopicPartition, topic_id_from_text


class MetadataCache:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self.live_brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self._by_topic: dict[str, dict[int, PartitionState]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}

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
                        self._topic_names.pop(self._topic_ids.pop(tp.topic, ZERO_UUID), None)
            else:
                self.partitions[tp] = state
                self._by_topic.setdefault(tp.topic, {})[tp.partition] = state
                if state.topic_id:
                    self._set_topic_id(tp.topic, topic_id_from_text(state.topic_id))
        return deleted

    def _set_topic_id(self, topic: str, topic_id: uuid.UUID) -> None:
        previous = self._topic_ids.get(topic)
        if previous == topic_id or topic_id == ZERO_UUID:
            return
        self._topic_names.pop(previous, None)
        self._topic_ids[topic] = topic_id
        self._topic_names[topic_id] = topic

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id, ZERO_UUID if the cache knows none (Kafka's ``MetadataCache.getTopicId``)."""
        return self._topic_ids.get(topic, ZERO_UUID)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with that id, None if none (Kafka's ``MetadataCache.getTopicName``)."""
        return self._topic_names.get(topic_id)

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
                                     "replicas": list(s.replicas), "offline_replicas": list(s.offline_replicas)} for tp, s in sorted(self.partitions.items())},
        }
