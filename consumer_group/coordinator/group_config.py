"""The group coordinator's settings, read from the broker's Kafka config keys (names and defaults are Kafka 2.8's)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # KAFKA-7610: a new member's liveness until its first join completes


@dataclass(frozen=True)
class GroupConfig:
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    max_size: int = 2**31 - 1  # group.max.size
    offsets_retention_ms: int = 10080 * 60 * 1000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_commit_timeout_ms: int = 5000  # offsets.commit.timeout.ms
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    @classmethod
    def from_broker(cls, config: Mapping[str, Any] | Any) -> "GroupConfig":
        """From a broker config (anything indexable by Kafka's keys)."""
        return cls(
            offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            max_size=config["group.max.size"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60 * 1000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
            offsets_commit_timeout_ms=config["offsets.commit.timeout.ms"],
        )
