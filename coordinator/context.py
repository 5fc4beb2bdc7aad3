"""ControllerContext: the controller's in-memory view of the cluster, rebuilt from ZooKeeper on
failover and changed only by the event thread."""
from __future__ import annotations

from dataclasses import dataclass, field

from brokers.model import BrokerInfo, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition


@dataclass
class ControllerContext:
    epoch: int = 0
    epoch_zk_version: int = -1
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    assignments: dict[TopicPartition, list[int]] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)  # overrides from /config/topics
    topic_ids: dict[str, str] = field(default_factory=dict)  # Kafka 2.8's topic ids, as their znodes hold them
    topics_to_delete: set[str] = field(default_factory=set)
    deletion_awaiting: dict[str, set[tuple[int, int]]] = field(default_factory=dict)  # topic -> {(partition, broker)}
    # KIP-455: partitions being reassigned, with their full assignment (``assignments`` holds its replica set RS)
    reassignments: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)
    # KIP-112: broker -> its replicas on an offline log dir (their LeaderAndIsr answered KAFKA_STORAGE_ERROR)
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def all_topics(self) -> set[str]:
        return {tp.topic for tp in self.assignments}

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        """Kafka's ``isReplicaOnline``: the broker is live and the replica's log dir is not offline."""
        return broker_id in self.live_brokers and tp not in self.replicas_on_offline_dirs.get(broker_id, ())

    def offline_replica_brokers(self, tp: TopicPartition) -> set[int]:
        """Live brokers whose replica of ``tp`` is on an offline log dir."""
        return {b for b, tps in self.replicas_on_offline_dirs.items() if tp in tps}

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def partitions_on(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, replicas in self.assignments.items() if broker_id in replicas)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, state in self.leadership.items() if state.leader_and_isr.leader == broker_id)

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_of(topic):
            self.assignments.pop(tp, None)
            self.leadership.pop(tp, None)
        self.topics_to_delete.discard(topic)
        self.topic_configs.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.deletion_awaiting.pop(topic, None)
        for tp in [tp for tp in self.reassignments if tp.topic == topic]:
            del self.reassignments[tp]

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """Kafka's ``partitionFullReplicaAssignment``: with adding/removing replicas while reassigning."""
        return self.reassignments.get(tp) or ReplicaAssignment(tuple(self.assignments.get(tp, ())))
