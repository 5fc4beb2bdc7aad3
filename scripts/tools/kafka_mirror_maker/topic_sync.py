"""Which topics a flow mirrors, and keeping their remote copies shaped like the source (MM2's
``MirrorSourceConnector``: ``refreshTopicPartitions``, ``createTopicPartitions``, ``syncTopicConfigs``).

``plan_topics`` is the decision (pure): a source topic is mirrored when the flow's ``topics`` regexes match it
and ``topics.exclude`` does not (or it is a heartbeats topic, which MM2 always passes on), it is not an internal
topic and it did not come from the target (the naming
policy's cycle check: ``b.x`` is never mirrored back to ``b``). Its remote topic is created with the source's
partition count, or grown to it; a remote topic never shrinks (Kafka cannot). ``plan_configs`` picks the source
topic's dynamic configs that ``config.properties.exclude`` lets through.

``TopicSync`` is the I/O: it lists both clusters, creates and grows topics, alters configs when they differ
from what it last applied, and creates the flow's internal topics (offset syncs at the source; checkpoints and
heartbeats at the target; one compacted partition each).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic

from scripts.tools.kafka_mirror_maker.config import FlowConfig

log = logging.getLogger("kafka_mirror_maker.topics")
TIMEOUT_S = 30.0


class InternalTopicError(RuntimeError):
    """An internal topic the flow needs could not be created (the message names the setting to change)."""


@dataclass(frozen=True)
class TopicPlan:
    mirrored: dict[str, tuple[str, int]] = field(default_factory=dict)  # source topic -> (remote, partitions)
    create: dict[str, int] = field(default_factory=dict)                # remote topic -> partitions
    grow: dict[str, int] = field(default_factory=dict)                  # remote topic -> new partition count


def mirrors(flow: FlowConfig, topic: str) -> bool:
    policy = flow.policy
    return ((flow.topic_allowed(topic) or policy.is_heartbeats_topic(topic)) and not policy.is_internal_topic(topic)
            and not policy.is_cycle(topic, flow.target))


def plan_topics(flow: FlowConfig, source: dict[str, int], target: dict[str, int]) -> TopicPlan:
    """``source`` / ``target``: topic -> partition count of each cluster."""
    plan = TopicPlan()
    for topic, partitions in sorted(source.items()):
        if not mirrors(flow, topic):
            continue
        remote = flow.policy.format_remote_topic(flow.source, topic)
        plan.mirrored[topic] = (remote, partitions)
        if remote not in target:
            plan.create[remote] = partitions
        elif target[remote] < partitions:
            plan.grow[remote] = partitions
    return plan


def plan_configs(flow: FlowConfig, dynamic: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(dynamic.items()) if flow.config_property_allowed(k)}


def internal_topics(flow: FlowConfig) -> tuple[tuple[str, str, int, str], ...]:
    """(side, topic, replication factor, the key that sets it) of the flow's internal topics."""
    policy = flow.policy
    topics = [("source", policy.offset_syncs_topic(flow.target), flow.offset_syncs_topic_replication_factor,
               "offset-syncs.topic.replication.factor")]
    if flow.emit_checkpoints_enabled:
        topics.append(("target", policy.checkpoints_topic(flow.source), flow.checkpoints_topic_replication_factor,
                       "checkpoints.topic.replication.factor"))
    if flow.emit_heartbeats_enabled:
        topics.append(("target", policy.heartbeats_topic(), flow.heartbeats_topic_replication_factor,
                       "heartbeats.topic.replication.factor"))
    return tuple(topics)


def partition_counts(admin: AdminClient) -> dict[str, int]:
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}


def _wait_all(futures: dict, what: str) -> dict[str, Exception]:
    failed = {}
    for name, future in futures.items():
        try:
            future.result(timeout=TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - each topic's failure is logged, the others go on
            failed[name] = exc
            log.warning("%s %s failed: %s", what, name, exc)
    return failed


class TopicSync:
    def __init__(self, flow: FlowConfig, source_admin: AdminClient, target_admin: AdminClient):
        self.flow = flow
        self.source_admin = source_admin
        self.target_admin = target_admin
        self.applied_configs: dict[str, dict[str, str]] = {}

    def ensure_internal_topics(self) -> None:
        admins = {"source": self.source_admin, "target": self.target_admin}
        existing = {side: set(partition_counts(admin)) for side, admin in admins.items()}  # one listing each
        for side, topic, replication_factor, key in internal_topics(self.flow):
            admin = admins[side]
            if topic in existing[side]:
                continue
            new = NewTopic(topic, num_partitions=1, replication_factor=replication_factor,
                           config={"cleanup.policy": "compact"})
            failed = _wait_all(admin.create_topics([new], operation_timeout=TIMEOUT_S), "creating")
            error = failed.get(topic)
            if error is not None and "TOPIC_ALREADY_EXISTS" not in str(error):
                cluster = self.flow.source if side == "source" else self.flow.target
                raise InternalTopicError(f"{self.flow.name}: cannot create {topic} at cluster {cluster} with "
                                         f"replication factor {replication_factor} ({key}): {error}")

    def refresh(self) -> dict[str, tuple[str, int]]:
        """Create and grow remote topics; returns the mirrored topics (source -> (remote, partitions))
        whose remote topics exist with enough partitions."""
        source = partition_counts(self.source_admin)
        plan = plan_topics(self.flow, source, partition_counts(self.target_admin))
        failed: dict[str, Exception] = {}
        if plan.create:
            configs = self._source_configs([t for t, (r, _) in plan.mirrored.items() if r in plan.create])
            new = [NewTopic(remote, num_partitions=n, replication_factor=self.flow.replication_factor,
                            config=configs.get(remote, {})) for remote, n in plan.create.items()]
            failed |= _wait_all(self.target_admin.create_topics(new, operation_timeout=TIMEOUT_S), "creating")
            for remote in plan.create:
                if remote not in failed:
                    self.applied_configs[remote] = configs.get(remote, {})
                    log.info("%s: created %s (%d partitions)", self.flow.name, remote, plan.create[remote])
        if plan.grow:
            grow = [NewPartitions(remote, n) for remote, n in plan.grow.items()]
            failed |= _wait_all(self.target_admin.create_partitions(grow, operation_timeout=TIMEOUT_S),
                                "adding partitions to")
        return {t: (r, n) for t, (r, n) in plan.mirrored.items() if r not in failed}

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """remote topic -> the source topic's mirrored dynamic configs."""
        if not topics:
            return {}
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        out = {}
        for resource, future in self.source_admin.describe_configs(resources).items():
            try:
                entries = future.result(timeout=TIMEOUT_S)
            except KafkaException as exc:
                log.warning("describing configs of %s failed: %s", resource.name, exc)
                continue
            dynamic = {name: e.value for name, e in entries.items()
                       if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and not e.is_sensitive
                       and e.value is not None}
            remote = self.flow.policy.format_remote_topic(self.flow.source, resource.name)
            out[remote] = plan_configs(self.flow, dynamic)
        return out

    def sync_configs(self, mirrored: dict[str, tuple[str, int]]) -> int:
        """Alter the remote topics whose source configs changed since last applied; returns how many."""
        wanted = self._source_configs(sorted(mirrored))
        changed = {remote: configs for remote, configs in wanted.items()
                   if self.applied_configs.get(remote) != configs}
        if not changed:
            return 0
        resources = []
        for remote, configs in changed.items():
            resource = ConfigResource(ConfigResource.Type.TOPIC, remote)
            for name, value in configs.items():
                resource.set_config(name, value)
            resources.append(resource)
        futures = {r.name: f for r, f in self.target_admin.alter_configs(resources).items()}
        failed = _wait_all(futures, "altering configs of")
        for remote, configs in changed.items():
            if remote not in failed:
                self.applied_configs[remote] = configs
                log.info("%s: synced configs of %s: %s", self.flow.name, remote, configs)
        return len(changed) - len(failed)
