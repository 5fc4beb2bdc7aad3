"""LogConfig: a topic's log settings under Kafka's topic-level key names, with Kafka's defaults.

``LogConfig.from_properties({"segment.bytes": "1048576", ...})`` validates every key and value and
names the offending key in its error. Broker-level ``log.*`` defaults map onto these keys in
``brokers.config`` (``LOG_KEYS``).

``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas`` are Kafka's
list format: ``*`` (every replica of the topic) or ``partition:broker,...`` (``0:1,0:2,1:3``), empty by
default; ``parse_throttled_replicas`` turns one into ``ALL_REPLICAS`` or a frozenset of
``(partition, broker)`` pairs (the replication layer's view), raising InvalidConfigError on bad input.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Any, Mapping

from brokers.storage import message_format

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class InvalidConfigError(ValueError):
    pass


_POLICIES = {"delete", "compact"}
_INT_KEYS = ("segment.bytes", "segment.index.bytes", "index.interval.bytes", "max.message.bytes")


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    file_delete_delay_ms: int = 60000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_format_version: str = message_format.DEFAULT
    message_downconversion_enable: str = "true"
    # topic-level keys that are not about the log itself but live in the same topic config
    min_insync_replicas: int = 1
    unclean_leader_election_enable: str = "false"
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""

    @cached_property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @cached_property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @cached_property
    def leader_throttled_replicas(self) -> "frozenset[tuple[int, int]] | AllReplicas":
        return parse_throttled_replicas("leader.replication.throttled.replicas", self.leader_replication_throttled_replicas)

    @cached_property
    def follower_throttled_replicas(self) -> "frozenset[tuple[int, int]] | AllReplicas":
        return parse_throttled_replicas("follower.replication.throttled.replicas",
                                        self.follower_replication_throttled_replicas)

    @cached_property
    def message_format_magic(self) -> int:
        return message_format.record_magic(self.message_format_version)

    @cached_property
    def downconversion_enabled(self) -> bool:
        """``message.downconversion.enable``: whether a Fetch v0-3 from a consumer gets old-format records
        (false: UNSUPPORTED_VERSION for that partition)."""
        return self.message_downconversion_enable.lower() == "true"

    @cached_property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @staticmethod
    def key_of(field_name: str) -> str:
        return field_name.replace("_", ".")

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], base: "LogConfig | None" = None) -> "LogConfig":
        """Kafka keys (``segment.bytes``) to a validated LogConfig; unknown keys and bad values raise."""
        known = {cls.key_of(f.name): f for f in fields(cls)}
        changes: dict[str, Any] = {}
        for key, raw in props.items():
            field = known.get(key)
            if field is None:
                raise InvalidConfigError(f"unknown topic config {key!r}; known: {', '.join(sorted(known))}")
            changes[field.name] = _parse(key, field.type, raw)
        config = replace(base or cls(), **changes)
        config.validate()
        return config

    def to_properties(self) -> dict[str, str]:
        return {self.key_of(f.name): str(getattr(self, f.name)) for f in fields(self)}

    def validate(self) -> None:
        for key in _INT_KEYS:  # Kafka declares these INT: .index positions are signed 32-bit
            value = getattr(self, key.replace(".", "_"))
            if value > INT_MAX:
                raise InvalidConfigError(f"topic config {key!r} must be <= {INT_MAX}, got {value}")
        _at_least("segment.bytes", self.segment_bytes, 14)
        _at_least("segment.ms", self.segment_ms, 1)
        _at_least("segment.jitter.ms", self.segment_jitter_ms, 0)
        _at_least("segment.index.bytes", self.segment_index_bytes, 8)
        _at_least("index.interval.bytes", self.index_interval_bytes, 0)
        _at_least("retention.ms", self.retention_ms, -1)
        _at_least("retention.bytes", self.retention_bytes, -1)
        _at_least("delete.retention.ms", self.delete_retention_ms, 0)
        _at_least("min.compaction.lag.ms", self.min_compaction_lag_ms, 0)
        _at_least("file.delete.delay.ms", self.file_delete_delay_ms, 0)
        _at_least("flush.messages", self.flush_messages, 1)
        _at_least("flush.ms", self.flush_ms, 0)
        _at_least("max.message.bytes", self.max_message_bytes, 0)
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise InvalidConfigError(f"min.cleanable.dirty.ratio must be in [0, 1], got {self.min_cleanable_dirty_ratio}")
        policies = set(self.cleanup_policy.split(","))
        if not policies or not policies <= _POLICIES:
            raise InvalidConfigError(f"cleanup.policy must be delete, compact or compact,delete; got {self.cleanup_policy!r}")
        _at_least("min.insync.replicas", self.min_insync_replicas, 1)
        for key in ("unclean.leader.election.enable", "message.downconversion.enable"):
            if getattr(self, key.replace(".", "_")).lower() not in ("true", "false"):
                raise InvalidConfigError(f"{key} must be true or false; got {getattr(self, key.replace('.', '_'))!r}")
        try:
            self.message_format_magic  # noqa: B018 (parsing validates)
        except ValueError as exc:
            raise InvalidConfigError(f"message.format.version: {exc}") from None
        self.leader_throttled_replicas, self.follower_throttled_replicas  # noqa: B018 (parsing validates)
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise InvalidConfigError(
                f"message.timestamp.type must be CreateTime or LogAppendTime; got {self.message_timestamp_type!r}"
            )


class AllReplicas:
    """``*``: every replica of the topic is throttled."""

    def __contains__(self, item: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALL_REPLICAS"


ALL_REPLICAS = AllReplicas()


def parse_throttled_replicas(key: str, value: str) -> "frozenset[tuple[int, int]] | AllReplicas":
    """Kafka's throttled-replica list: ``*``, or comma-separated ``partition:broker`` pairs (spaces
    ignored, empty = none). Raises InvalidConfigError naming ``key`` otherwise."""
    text = value.replace(" ", "")
    if text == "*":
        return ALL_REPLICAS
    pairs = set()
    for item in filter(None, text.split(",")):
        partition, sep, broker = item.partition(":")
        if not (sep and partition.isdigit() and broker.isdigit()):
            raise InvalidConfigError(f"topic config {key!r} must be '*' or a list of partition:broker pairs "
                                     f"(e.g. 0:101,1:102); got {value!r}")
        pairs.add((int(partition), int(broker)))
    return frozenset(pairs)


def _parse(key: str, kind: Any, raw: Any) -> Any:
    kind = kind if isinstance(kind, str) else kind.__name__
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        return str(raw).strip().replace(" ", "")
    except (TypeError, ValueError):
        raise InvalidConfigError(f"topic config {key!r} needs a {kind}, got {raw!r}") from None


def _at_least(key: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise InvalidConfigError(f"topic config {key!r} must be >= {minimum}, got {value}")
