"""The group coordinator's settings: a view of the broker config (Kafka's GroupConfig and OffsetConfig,
which ``GroupCoordinator.apply`` builds from ``KafkaConfig``). Each field's key and default are the
broker schema's (``brokers.config.SCHEMA``); ``from_broker`` reads them from a broker config."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from brokers.config import from_schema, schema_field

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # KAFKA-7610: a new member's liveness until its first join completes


def _minutes_to_ms(minutes: int) -> int:
    return minutes * 60 * 1000


@dataclass(frozen=True)
class GroupConfig:
    offsets_topic_num_partitions: int = schema_field("offsets.topic.num.partitions")
    min_session_timeout_ms: int = schema_field("group.min.session.timeout.ms")
    max_session_timeout_ms: int = schema_field("group.max.session.timeout.ms")
    initial_rebalance_delay_ms: int = schema_field("group.initial.rebalance.delay.ms")
    max_size: int = schema_field("group.max.size")
    offsets_retention_ms: int = schema_field("offsets.retention.minutes", _minutes_to_ms)
    offsets_retention_check_interval_ms: int = schema_field("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = schema_field("offset.metadata.max.bytes")
    offsets_commit_timeout_ms: int = schema_field("offsets.commit.timeout.ms")
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS  # not a broker config in Kafka either

    @classmethod
    def from_broker(cls, config: Mapping[str, Any] | Any) -> "GroupConfig":
        """From a broker config (anything indexable by Kafka's keys)."""
        return from_schema(cls, config)
