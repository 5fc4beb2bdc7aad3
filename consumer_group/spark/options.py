"""Options of the ``zkafka`` Spark data source, parsed and validated like Spark's own Kafka source: the
grammar the source and the sink share, and the sink's options (the source's: ``source_options``).

Pure: no pyspark, no confluent_kafka. The names, defaults and checks follow the Structured Streaming +
Kafka Integration Guide and ``KafkaSourceProvider``; every error is an :class:`OptionError` whose message
starts with ``Option '<name>':`` so a user can find the offending option at once. Option names are
case-insensitive; ``kafka.*`` options are Kafka client settings, passed on without the prefix.

Offsets specs (``startingOffsets`` / ``endingOffsets``) are either the string ``"earliest"`` / ``"latest"``
or ``{topic: {partition: offset}}`` parsed from Spark's JSON, where ``-2`` means earliest and ``-1`` latest.
Timestamp specs (``*OffsetsByTimestamp``) have the same shape with epoch-millisecond timestamps.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

EARLIEST = -2
LATEST = -1

PartitionSpec: TypeAlias = dict[str, dict[int, int]]
OffsetsSpec: TypeAlias = Literal["earliest", "latest"] | PartitionSpec


class OptionError(ValueError):
    """An invalid, missing, conflicting or unknown option; the message names the option."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"Option '{option}': {message}")
        self.option = option


# Canonical (documented) spelling of every sink option; Spark passes the last three along.
_SINK_OPTIONS = ("topic", "transactionalIdPrefix", "checkpointLocation", "queryName", "path")

_KAFKA_PREFIX = "kafka."

# The sink refuses what Spark's kafkaParamsForProducer refuses.
_UNSUPPORTED_SINK_KAFKA_PARAMS = {
    "key.serializer": (
        "Kafka option 'key.serializer' is not supported as keys are serialized as byte arrays; "
        "write a binary or string 'key' column"),
    "value.serializer": (
        "Kafka option 'value.serializer' is not supported as values are serialized as byte arrays; "
        "write a binary or string 'value' column"),
    "transactional.id": (
        "Kafka option 'transactional.id' is not supported: every task would share it and fence the others; "
        "set the sink option 'transactionalIdPrefix' and each task writes with '<prefix>-<partition id>'"),
}

_INT_RE = re.compile(r"-?[0-9]+")
_PARTITION_RE = re.compile(r"[0-9]+")

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'


@dataclass(frozen=True)
class SinkOptions:
    """``transactional_id_prefix``: each task writes in one Kafka transaction, with the transactional id
    ``transactional_id(prefix, partition id)``, committed when the task has sent all its rows."""
    bootstrap_servers: str
    topic: str | None = None
    kafka_params: dict[str, str] = field(default_factory=dict)
    transactional_id_prefix: str | None = None


# ------------------------------------------------------------------------------------- shared grammar


def lower_keys(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The options keyed by lower-case name, and each lower-case name's spelling as given."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if low in out:
            raise OptionError(key, f"given more than once (as '{seen[low]}' and '{key}'; option names are "
                                   "case-insensitive)")
        if value is None:
            raise OptionError(key, "has no value")
        out[low] = str(value)
        seen[low] = key
    return out, seen


def check_known(opts: Mapping[str, str], given: Mapping[str, str], known: tuple[str, ...], what: str,
                spark_only: tuple[str, ...] = ()) -> None:
    """Every option is one of ``known`` or ``kafka.*``; ``spark_only``: Spark's options zkafka lacks."""
    by_lower = {k.lower(): k for k in known}
    spark_only_by_lower = {k.lower(): k for k in spark_only}
    for key in opts:
        if key.startswith(_KAFKA_PREFIX) or key in by_lower:
            continue
        if key in spark_only_by_lower:
            raise OptionError(spark_only_by_lower[key], f"is an option of Spark's Kafka {what} that the zkafka "
                                                        f"{what} does not support")
        listed = ", ".join(known)
        raise OptionError(given[key], f"unknown option for the zkafka {what}; known options are {listed} and "
                               "any 'kafka.*' Kafka client setting (e.g. kafka.bootstrap.servers)")


def kafka_params(opts: Mapping[str, str], unsupported: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``kafka.bootstrap.servers`` (required) and the Kafka client settings without their prefix."""
    params: dict[str, str] = {}
    for key, value in opts.items():
        if not key.startswith(_KAFKA_PREFIX):
            continue
        name = key[len(_KAFKA_PREFIX):]
        if not name:
            raise OptionError(key, "a Kafka client setting needs a name after 'kafka.'")
        if name in unsupported:
            raise OptionError(key, unsupported[name])
        params[name] = value
    servers = params.get("bootstrap.servers", "").strip()
    if not servers:
        raise OptionError("kafka.bootstrap.servers", "must be specified for configuring the Kafka client "
                                                     "(e.g. 'host1:9092,host2:9092')")
    params["bootstrap.servers"] = servers
    return servers, params


def parse_int(option: str, text: str, *, positive: bool = False, non_negative: bool = False) -> int:
    s = text.strip()
    if not _INT_RE.fullmatch(s):
        raise OptionError(option, f"expected an integer, got '{text}'")
    value = int(s)
    if positive and value <= 0:
        raise OptionError(option, f"must be positive, got {value}")
    if non_negative and value < 0:
        raise OptionError(option, f"must not be negative, got {value}")
    return value


def parse_bool(option: str, text: str) -> bool:
    s = text.strip().lower()
    if s == "true":
        return True
    if s == "false":
        return False
    raise OptionError(option, f"expected 'true' or 'false', got '{text}'")


def is_json_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_json_object(option: str, text: str, example: str) -> dict:
    """A non-empty JSON object, else an error showing ``example``."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise OptionError(option, f"expected JSON like {example}, got '{text}'")
    if not obj:
        raise OptionError(option, f"no topic partitions given; expected JSON like {example}")
    return obj


def parse_partition_json(option: str, text: str, *, timestamps: bool) -> PartitionSpec:
    """Spark's ``{topic: {partition: offset or timestamp}}``."""
    example = _TIMESTAMPS_EXAMPLE if timestamps else _OFFSETS_EXAMPLE
    obj = load_json_object(option, text, example)
    spec: PartitionSpec = {}
    for topic, parts in obj.items():
        if not topic:
            raise OptionError(option, "topic names must not be empty")
        if not isinstance(parts, dict) or not parts:
            raise OptionError(option, f"topic '{topic}' needs a non-empty object of partitions; "
                                      f"expected JSON like {example}, got '{text}'")
        inner: dict[int, int] = {}
        for key, value in parts.items():
            checked = _partition_value(option, topic, key, value, timestamps)
            inner[int(key)] = checked
        spec[topic] = inner
    return spec


def _partition_value(option: str, topic: str, key: str, value: object, timestamps: bool) -> int:
    """One partition's offset (>= -2) or timestamp (>= 0), after checking its key is a partition number."""
    if not _PARTITION_RE.fullmatch(key):
        raise OptionError(option, f"partition '{key}' of topic '{topic}' is not a non-negative integer")
    if not is_json_int(value):
        raise OptionError(option, f"value for {topic}-{key} must be an integer, got {json.dumps(value)}")
    if timestamps and value < 0:
        raise OptionError(option, f"timestamp for {topic}-{key} must not be negative, got {value}")
    if not timestamps and value < EARLIEST:
        raise OptionError(option, f"offset for {topic}-{key} must be >= 0, or -2 (earliest) or "
                                  f"-1 (latest), got {value}")
    return value


def parse_offsets_spec(option: str, text: str) -> OffsetsSpec:
    """``"earliest"`` / ``"latest"`` (case-insensitive, trimmed) or Spark's per-partition JSON."""
    s = text.strip()
    if s.lower() in ("earliest", "latest"):
        return "earliest" if s.lower() == "earliest" else "latest"
    return parse_partition_json(option, s, timestamps=False)


def topic_partitions(spec: PartitionSpec) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in spec.items() for p in parts}


def format_topic_partitions(tps: set[tuple[str, int]]) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "}"


def pick_one(opts: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The one of ``names`` given (in ``names``' spelling), None if none; more than one is an error."""
    given = [n for n in names if n.lower() in opts]
    if len(given) > 1:
        raise OptionError(given[0], "only one of " + ", ".join(f"'{n}'" for n in names)
                          + " may be specified (given: " + ", ".join(given) + ")")
    return given[0] if given else None


# -------------------------------------------------------------------------------------------------- sink


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate and parse the options of a ``df.write`` / ``df.writeStream`` on the ``zkafka`` format.
    Without ``topic`` every row must carry a ``topic`` column (the writer checks that)."""
    opts, given = lower_keys(options)
    check_known(opts, given, _SINK_OPTIONS, "sink")
    bootstrap, params = kafka_params(opts, _UNSUPPORTED_SINK_KAFKA_PARAMS)
    topic = None
    if "topic" in opts:
        topic = opts["topic"].strip()
        if not topic:
            raise OptionError("topic", "must not be empty (leave it out to take each row's 'topic' column)")
    prefix = None
    if "transactionalidprefix" in opts:
        prefix = opts["transactionalidprefix"].strip()
        if not prefix:
            raise OptionError("transactionalIdPrefix", "must not be empty (leave it out to write without transactions)")
    return SinkOptions(bootstrap_servers=bootstrap, topic=topic, kafka_params=params, transactional_id_prefix=prefix)


def transactional_id(prefix: str, partition_id: int) -> str:
    """A task's transactional id: stable per Spark partition, so a retried or speculative attempt of the task
    fences the earlier one (its open transaction is aborted, its commit refused)."""
    return f"{prefix}-{partition_id}"
