"""The confluent-kafka clients of one flow, configured as MirrorMaker 2 configures its own (the module that
turns a flow's settings into librdkafka's; the tasks only use what it returns).

- the **source consumer** reads the mirrored partitions by ``assign()`` (no group membership, nothing
  committed at the source), ``read_committed``: aborted records are never mirrored;
- the **target producer** is idempotent with ``acks=all`` (MM2's default producer), transactional with a
  ``transactional.id`` per flow when the flow is exactly-once;
- the **progress consumer** at the target is never subscribed: it owns the flow's progress group
  (``progress_group``), where the next source offset of each partition is committed under the remote topic's
  name (at least once: after the target acknowledged; exactly once: inside the target transaction);
- the **offset-syncs producer** writes ``mm2-offset-syncs.<target>.internal`` at the source (MM2's
  ``offset-syncs.topic.location = source``); admins for both clusters.
"""
from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from scripts.tools.kafka_mirror_maker.config import ClusterConfig, FlowConfig


def progress_group(flow: FlowConfig) -> str:
    """The target group holding the flow's source offsets (``connect-``: MM2's default groups.exclude
    keeps it from being mirrored back)."""
    return f"connect-mirror-maker-{flow.source}-{flow.target}"


def transactional_id(flow: FlowConfig) -> str:
    return f"mirror-maker-{flow.source}-{flow.target}-0"


def _client_id(flow: FlowConfig, role: str) -> str:
    return f"mirror-maker-{flow.source}-{flow.target}-{role}"


def source_consumer(flow: FlowConfig, cluster: ClusterConfig) -> Consumer:
    return Consumer({**cluster.client, "group.id": f"mirror-maker-{flow.source}-{flow.target}-{uuid.uuid4().hex[:8]}",
                     "client.id": _client_id(flow, "source-consumer"), "enable.auto.commit": False,
                     "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed", "enable.partition.eof": False,
                     **cluster.consumer})


def target_producer(flow: FlowConfig, cluster: ClusterConfig) -> Producer:
    config = {**cluster.client, "client.id": _client_id(flow, "producer"), "enable.idempotence": True,
              "acks": "all", "linger.ms": 5, "max.in.flight.requests.per.connection": 5, **cluster.producer}
    if flow.exactly_once:
        config.update({"transactional.id": transactional_id(flow),
                       "transaction.timeout.ms": flow.transaction_timeout_ms})
    return Producer(config)


def progress_consumer(flow: FlowConfig, cluster: ClusterConfig) -> Consumer:
    return Consumer({**cluster.client, "group.id": progress_group(flow),
                     "client.id": _client_id(flow, "progress"), "enable.auto.commit": False,
                     **cluster.consumer})


def offset_syncs_producer(flow: FlowConfig, cluster: ClusterConfig) -> Producer:
    return Producer({**cluster.client, "client.id": _client_id(flow, "offset-syncs"), "acks": "all",
                     "enable.idempotence": True, **cluster.producer})


def plain_producer(flow: FlowConfig, cluster: ClusterConfig, role: str) -> Producer:
    """Checkpoints and heartbeats at the target."""
    return Producer({**cluster.client, "client.id": _client_id(flow, role), "acks": "all",
                     "enable.idempotence": True, **cluster.producer})


def reader(cluster: ClusterConfig, client_id: str) -> Consumer:
    """A consumer for reading an internal topic from its beginning by ``assign()``."""
    return Consumer({**cluster.client, "group.id": f"{client_id}-{uuid.uuid4().hex[:8]}", "client.id": client_id,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "enable.partition.eof": True, **cluster.consumer})


def admin(cluster: ClusterConfig) -> AdminClient:
    return AdminClient({**cluster.client, **cluster.admin})


def check_settings(flow: FlowConfig, source: ClusterConfig, target: ClusterConfig) -> None:
    """Builds (and drops) each kind of client once, so a setting librdkafka refuses (``a.consumer.bogus``) is the
    process's error at start-up rather than a task failing for ever; raises ``KafkaException`` naming it."""
    for make in (lambda: source_consumer(flow, source), lambda: progress_consumer(flow, target)):
        make().close()
    for producer in (target_producer(flow, target), offset_syncs_producer(flow, source),
                     plain_producer(flow, target, "checkpoints")):
        producer.flush(0)
    admin(source), admin(target)
