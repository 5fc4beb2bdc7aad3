"""MetadataCache: what this broker knows of the cluster, fed only by the controller's UpdateMetadata.

Live brokers are replaced wholesale by each request; partition states are replaced per partition,
and a partition whose leader is -2 (LeaderDuringDelete) is removed. Each topic's id (Kafka 2.8's topic ids,
UpdateMetadata v7's ``topic_id``) comes with its partition states and leaves with its last partition.
Metadata responses are answered from here alone, as in Kafka.

Generations tell a reader what changed: ``brokers_generation`` moves when the live brokers change,
``topic_generation(t)`` when an UpdateMetadata touched topic t. ``encoded_topics`` is the Metadata handler's memo
of encoded topic entries (``brokers/server/handlers/metadata.py``), emptied here when the brokers change and per
topic when a topic leaves, so it never outgrows the topics the cache knows.
"""
from __future__ import annotations

import uuid

from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import LEADER_DURING_DELETE, ZERO_UUID, BrokerInfo, TopicPartition, topic_id_from_text


class MetadataCache:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.controller_id: int | None = None
        self._live_brokers: dict[int, BrokerInfo] = {}
        self.partitions: dict[TopicPartition, PartitionState] = {}
        self._by_topic: dict[str, dict[int, PartitionState]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self.brokers_generation = 0
        self._topic_generations: dict[str, int] = {}
        self.encoded_topics: dict[tuple, tuple[tuple[int, int], bytes]] = {}

    @property
    def live_brokers(self) -> dict[int, BrokerInfo]:
        return self._live_brokers

    @live_brokers.setter
    def live_brokers(self, brokers: dict[int, BrokerInfo]) -> None:
        if brokers != self._live_brokers:
            self.brokers_generation += 1
            self.encoded_topics.clear()
        self._live_brokers = brokers

    def update(self, request: UpdateMetadataRequest) -> list[TopicPartition]:
        """Apply an UpdateMetadata; return the partitions it deleted."""
        self.controller_id = request.controller_id
        self.live_brokers = {broker.id: broker for broker in request.live_brokers}
        deleted = []
        for topic in {state.topic for state in request.partition_states}:
            self._topic_generations[topic] = self._topic_generations.get(topic, 0) + 1
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            if state.leader == LEADER_DURING_DELETE:
                if self.partitions.pop(tp, None) is not None:
                    deleted.append(tp)
                    topic = self._by_topic.get(tp.topic, {})
                    topic.pop(tp.partition, None)
                    if not topic:
                        self._forget_topic(tp.topic)
            else:
                self.partitions[tp] = state
                self._by_topic.setdefault(tp.topic, {})[tp.partition] = state
                if state.topic_id:
                    self._set_topic_id(tp.topic, topic_id_from_text(state.topic_id))
        return deleted

    def _forget_topic(self, topic: str) -> None:
        self._by_topic.pop(topic, None)
        self._topic_names.pop(self._topic_ids.pop(topic, ZERO_UUID), None)
        self._topic_generations.pop(topic, None)
        for key in [k for k in self.encoded_topics if k[0] == topic]:
            del self.encoded_topics[key]

    def topic_generation(self, topic: str) -> tuple[int, int]:
        """(brokers generation, topic generation): equal values mean the topic's Metadata answer is unchanged."""
        return self.brokers_generation, self._topic_generations.get(topic, 0)

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
