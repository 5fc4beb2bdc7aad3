"""KafkaZkClient: Kafka's ZooKeeper operations in Kafka's terms, over ZkGateway.

Every write follows reference §1.3: broker registration through a multi to learn the czxid (broker
epoch); controller election as one multi (create ``/controller`` + conditional epoch bump); every
controller write fenced by the ``/controller_epoch`` version; partition state written with the
partition's expected znode version.
"""
from __future__ import annotations

from brokers.zk.client_base import Watch, new_uuid_base64
from brokers.zk.client_brokers import BrokersZkMixin, ControllerElection, DuplicateBrokerIdError
from brokers.zk.client_configs import CONFIG_CHANGE_EXPIRATION_MS, ConfigsZkMixin
from brokers.zk.client_offsets import ConsumerOffsetsZkMixin
from brokers.zk.client_topics import TopicAssignmentRead, TopicsZkMixin

__all__ = ["CONFIG_CHANGE_EXPIRATION_MS", "ControllerElection", "DuplicateBrokerIdError", "KafkaZkClient",
           "TopicAssignmentRead", "Watch", "new_uuid_base64"]


class KafkaZkClient(BrokersZkMixin, TopicsZkMixin, ConfigsZkMixin, ConsumerOffsetsZkMixin):
    """Kafka's ``kafka.zk.KafkaZkClient``: the one object every component holds for ZooKeeper.

    Its operations live by concern in ``client_brokers`` (registration, cluster id, controller election),
    ``client_topics`` (topics, partition state, admin requests), ``client_configs`` (entity configs and
    change notifications) and ``client_offsets`` (committed consumer offsets); ``KafkaZkClient(gateway)``
    is the only constructor.
    """
