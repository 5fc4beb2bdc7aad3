"""Topic creation, Kafka's ``AdminZkClient.createTopic``: the admin path that CreateTopics and
``kafka-topics --zookeeper`` share. Validates the name, assigns replicas (``brokers.admin.assignment``)
and writes the topic's znodes; the controller notices the new topic through its watch and does the rest.
"""
from __future__ import annotations

import logging
import random
from typing import Callable

from brokers.admin.assignment import assign_replicas_to_brokers, topics_collide, validate_topic_name
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import NodeExistsError

log = logging.getLogger(__name__)


async def create_topic(kzc: KafkaZkClient, topic: str, num_partitions: int, replication_factor: int,
                       config: dict[str, str] | None = None, *, rng: random.Random | None = None,
                       check: Callable[[dict[int, list[int]]], None] | None = None,
                       rack_aware: bool = True) -> dict[int, list[int]]:
    """Validate, assign replicas (Kafka's algorithm, rack-aware when the brokers have racks) and write the topic's znodes; ``check`` sees
    the assignment before anything is written (it raises to refuse it: the partition caps). ``rack_aware``
    False is ``kafka-topics --disable-rack-aware`` (Kafka's ``RackAwareMode.Disabled``)."""
    validate_topic_name(topic)
    existing = await kzc.get_all_topics()
    if topic in existing:
        raise KafkaError(f"topic {topic!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
    clash = next((t for t in existing if topics_collide(t, topic)), None)
    if clash is not None:
        raise KafkaError(f"topic {topic!r} collides with existing topic {clash!r} ('.' and '_' clash in metric names)",
                         ErrorCode.INVALID_TOPIC_EXCEPTION)
    brokers = await kzc.get_broker_racks() if rack_aware else await kzc.get_broker_ids()
    assignment = assign_replicas_to_brokers(brokers, num_partitions, replication_factor, rng=rng)
    if check is not None:
        check(assignment)
    try:
        await kzc.create_topic(topic, assignment, dict(config or {}))
    except NodeExistsError:
        raise KafkaError(f"topic {topic!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS) from None
    log.info("created topic %s with assignment %s", topic, assignment)
    return assignment
