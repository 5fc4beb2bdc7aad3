"""Options of the ``zkafka`` Spark data source, parsed and validated like Spark's own Kafka source.

Pure: no pyspark, no confluent_kafka. The names, defaults and checks follow the Structured Streaming +
Kafka Integration Guide and ``KafkaSourceProvider``; every error is an :class:`OptionError` whose message
starts with ``Option '<name>':`` so a user can find the offending option at once.

Offsets specs (``startingOffsets`` / ``endingOffsets``) are either the string ``"earliest"`` / ``"latest"``
or ``{topic: {partition: offset}}`` parsed from Spark's JSON, where ``-2`` means earliest and ``-1`` latest.
Timestamp specs (``*OffsetsByTimestamp``) have the same shape with epoch-millisecond timestamps.

Precedence (Spark: timestamp > offsetsByTimestamp > offsets): the reader must look at
``starting_timestamp``, then ``starting_offsets_by_timestamp``, then ``starting_offsets``. Giving more than
one of the three is an error here (Spark silently picks the first), so at most one of them was set by the
user; ``starting_offsets`` then holds its default. Likewise for the ``ending*`` options.
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


# Canonical (documented) spelling of every option, keyed by its lower-case form.
_SOURCE_OPTIONS = (
    "subscribe", "subscribePattern", "assign",
    "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger", "minPartitions", "failOnDataLoss", "includeHeaders",
)
_SINK_OPTIONS = ("topic", "checkpointLocation", "queryName", "path")  # Spark passes the last three along
_STRATEGIES = ("subscribe", "subscribePattern", "assign")

# Options of Spark's Kafka source that zkafka does not implement: a clearer error than "unknown".
_SPARK_ONLY_OPTIONS = (
    "minOffsetsPerTrigger", "maxTriggerDelay", "maxRecordsPerPartition", "groupIdPrefix",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "startingOffsetsByTimestampStrategy",
)

_KAFKA_PREFIX = "kafka."

# Kafka params Spark's source refuses, with what to do instead (KafkaSourceProvider.validateGeneralOptions).
_UNSUPPORTED_SOURCE_KAFKA_PARAMS = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Instead set the source option 'startingOffsets' "
        "to 'earliest' or 'latest' to specify where to start. Structured Streaming manages which offsets "
        "are consumed internally, rather than relying on the Kafka consumer to do it"),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays. "
        "Use DataFrame operations (e.g. CAST(key AS STRING)) to explicitly deserialize the keys"),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays. "
        "Use DataFrame operations (e.g. CAST(value AS STRING)) to explicitly deserialize the values"),
    "key.serializer": (
        "Kafka option 'key.serializer' is not supported: the source reads keys as byte arrays; "
        "use DataFrame operations to deserialize them"),
    "value.serializer": (
        "Kafka option 'value.serializer' is not supported: the source reads values as byte arrays; "
        "use DataFrame operations to deserialize them"),
    "enable.auto.commit": (
        "Kafka option 'enable.auto.commit' is not supported: Structured Streaming tracks the consumed "
        "offsets in its checkpoint (checkpointLocation), not in Kafka; use 'startingOffsets' to choose "
        "where a new query starts"),
    "interceptor.classes": (
        "Kafka option 'interceptor.classes' is not supported: interceptors can modify the payload, "
        "so they are not safe"),
}

# The sink refuses what Spark's kafkaParamsForProducer refuses.
_UNSUPPORTED_SINK_KAFKA_PARAMS = {
    "key.serializer": (
        "Kafka option 'key.serializer' is not supported as keys are serialized as byte arrays; "
        "write a binary or string 'key' column"),
    "value.serializer": (
        "Kafka option 'value.serializer' is not supported as values are serialized as byte arrays; "
        "write a binary or string 'value' column"),
}

_INT_RE = re.compile(r"-?[0-9]+")
_PARTITION_RE = re.compile(r"[0-9]+")

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting_offsets: OffsetsSpec = "latest"
    ending_offsets: OffsetsSpec = "latest"
    starting_timestamp: int | None = None
    starting_offsets_by_timestamp: PartitionSpec | None = None
    ending_timestamp: int | None = None
    ending_offsets_by_timestamp: PartitionSpec | None = None
    max_offsets_per_trigger: int | None = None  # parsed in batch too, but only streaming reads use it
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    kafka_params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None = None
    kafka_params: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- helpers


def _lower_keys(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
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


def _check_known(opts: Mapping[str, str], given: Mapping[str, str], known: tuple[str, ...], what: str) -> None:
    by_lower = {k.lower(): k for k in known}
    spark_only = {k.lower(): k for k in _SPARK_ONLY_OPTIONS}
    for key in opts:
        if key.startswith(_KAFKA_PREFIX) or key in by_lower:
            continue
        if what == "source" and key in spark_only:
            raise OptionError(spark_only[key], "is an option of Spark's Kafka source that the zkafka source "
                                               "does not support")
        listed = ", ".join(known)
        raise OptionError(given[key], f"unknown option for the zkafka {what}; known options are {listed} and "
                               "any 'kafka.*' Kafka client setting (e.g. kafka.bootstrap.servers)")


def _kafka_params(opts: Mapping[str, str], unsupported: Mapping[str, str]) -> tuple[str, dict[str, str]]:
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


def _parse_int(option: str, text: str, *, positive: bool = False, non_negative: bool = False) -> int:
    s = text.strip()
    if not _INT_RE.fullmatch(s):
        raise OptionError(option, f"expected an integer, got '{text}'")
    value = int(s)
    if positive and value <= 0:
        raise OptionError(option, f"must be positive, got {value}")
    if non_negative and value < 0:
        raise OptionError(option, f"must not be negative, got {value}")
    return value


def _parse_bool(option: str, text: str) -> bool:
    s = text.strip().lower()
    if s == "true":
        return True
    if s == "false":
        return False
    raise OptionError(option, f"expected 'true' or 'false', got '{text}'")


def _is_json_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_json_object(option: str, text: str, example: str) -> dict:
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise OptionError(option, f"expected JSON like {example}, got '{text}'")
    if not obj:
        raise OptionError(option, f"no topic partitions given; expected JSON like {example}")
    return obj


def _parse_partition_json(option: str, text: str, *, timestamps: bool) -> PartitionSpec:
    example = _TIMESTAMPS_EXAMPLE if timestamps else _OFFSETS_EXAMPLE
    obj = _load_json_object(option, text, example)
    spec: PartitionSpec = {}
    for topic, parts in obj.items():
        if not topic:
            raise OptionError(option, "topic names must not be empty")
        if not isinstance(parts, dict) or not parts:
            raise OptionError(option, f"topic '{topic}' needs a non-empty object of partitions; "
                                      f"expected JSON like {example}, got '{text}'")
        inner: dict[int, int] = {}
        for key, value in parts.items():
            if not _PARTITION_RE.fullmatch(key):
                raise OptionError(option, f"partition '{key}' of topic '{topic}' is not a non-negative integer")
            if not _is_json_int(value):
                raise OptionError(option, f"value for {topic}-{key} must be an integer, got {json.dumps(value)}")
            if timestamps and value < 0:
                raise OptionError(option, f"timestamp for {topic}-{key} must not be negative, got {value}")
            if not timestamps and value < EARLIEST:
                raise OptionError(option, f"offset for {topic}-{key} must be >= 0, or -2 (earliest) or "
                                          f"-1 (latest), got {value}")
            inner[int(key)] = value
        spec[topic] = inner
    return spec


def parse_offsets_spec(option: str, text: str) -> OffsetsSpec:
    """``"earliest"`` / ``"latest"`` (case-insensitive, trimmed) or Spark's per-partition JSON."""
    s = text.strip()
    if s.lower() in ("earliest", "latest"):
        return "earliest" if s.lower() == "earliest" else "latest"
    return _parse_partition_json(option, s, timestamps=False)


def _parse_assign(text: str) -> dict[str, tuple[int, ...]]:
    s = text.strip()
    if not s.startswith("{"):
        raise OptionError("assign", f"no topic partitions to assign as specified value is '{text}'; "
                                    f"expected JSON like {_ASSIGN_EXAMPLE}")
    obj = _load_json_object("assign", s, _ASSIGN_EXAMPLE)
    out: dict[str, tuple[int, ...]] = {}
    for topic, parts in obj.items():
        if not topic:
            raise OptionError("assign", "topic names must not be empty")
        if not isinstance(parts, list) or not parts:
            raise OptionError("assign", f"topic '{topic}' needs a non-empty list of partitions; "
                                        f"expected JSON like {_ASSIGN_EXAMPLE}, got '{text}'")
        for p in parts:
            if not _is_json_int(p) or p < 0:
                raise OptionError("assign", f"partition {json.dumps(p)} of topic '{topic}' is not a "
                                            "non-negative integer")
        out[topic] = tuple(sorted(set(parts)))
    return out


def _tps(spec: PartitionSpec) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in spec.items() for p in parts}


def _fmt_tps(tps: set[tuple[str, int]]) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "}"


def _check_assigned(option: str, spec: PartitionSpec, assign: dict[str, tuple[int, ...]]) -> None:
    given = _tps(spec)
    assigned = {(t, p) for t, parts in assign.items() for p in parts}
    if given != assigned:
        raise OptionError(option, "with 'assign', specific offsets must name exactly the assigned topic "
                                  "partitions (use -2 for earliest, -1 for latest); "
                                  f"specified {_fmt_tps(given)}, assigned {_fmt_tps(assigned)}")


def _pick_one(opts: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    given = [n for n in names if n.lower() in opts]
    if len(given) > 1:
        raise OptionError(given[0], "only one of " + ", ".join(f"'{n}'" for n in names)
                          + " may be specified (given: " + ", ".join(given) + ")")
    return given[0] if given else None


# ------------------------------------------------------------------------------------------------ source


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validate and parse the options of a ``spark.read`` (``streaming=False``) or ``spark.readStream``
    (``streaming=True``) on the ``zkafka`` format. Raises :class:`OptionError`."""
    opts, given = _lower_keys(options)
    _check_known(opts, given, _SOURCE_OPTIONS, "source")
    bootstrap, kafka_params = _kafka_params(opts, _UNSUPPORTED_SOURCE_KAFKA_PARAMS)

    # --- which topics: exactly one strategy
    strategies = [s for s in _STRATEGIES if s.lower() in opts]
    listed = ", ".join(_STRATEGIES)
    if not strategies:
        raise OptionError("subscribe", f"one of the following options must be specified for the Kafka source: "
                                       f"{listed}")
    if len(strategies) > 1:
        raise OptionError(strategies[0], f"only one of the following options can be specified for the Kafka "
                                         f"source: {listed} (given: {', '.join(strategies)})")
    subscribe: tuple[str, ...] | None = None
    pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    strategy = strategies[0]
    value = opts[strategy.lower()]
    if strategy == "subscribe":
        subscribe = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not subscribe:
            raise OptionError("subscribe", f"no topics to subscribe to as specified value is '{value}'")
    elif strategy == "subscribePattern":
        pattern = value.strip()
        if not pattern:
            raise OptionError("subscribePattern", f"pattern to subscribe is empty as specified value is "
                                                  f"'{value}'")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError("subscribePattern", f"invalid regular expression '{pattern}': {exc}") from None
    else:
        assign = _parse_assign(value)

    # --- ending* are batch only
    if streaming:
        for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
            if name.lower() in opts:
                raise OptionError(name, "ending offsets are not valid in streaming queries")

    # --- where to start, and (batch only) where to end
    starting_offsets, starting_timestamp, starting_by_ts = _bound(opts, "starting",
                                                                  "latest" if streaming else "earliest")
    ending_offsets, ending_timestamp, ending_by_ts = (("latest", None, None) if streaming else
                                                      _bound(opts, "ending", "latest"))

    if not streaming:
        _check_batch_bounds(starting_offsets, ending_offsets, starting_timestamp, ending_timestamp,
                            starting_by_ts, ending_by_ts)

    if assign is not None:
        for name, spec in (("startingOffsets", starting_offsets), ("endingOffsets", ending_offsets),
                           ("startingOffsetsByTimestamp", starting_by_ts),
                           ("endingOffsetsByTimestamp", ending_by_ts)):
            if isinstance(spec, dict):
                _check_assigned(name, spec, assign)

    # --- the rest
    max_offsets = None
    if "maxoffsetspertrigger" in opts:
        max_offsets = _parse_int("maxOffsetsPerTrigger", opts["maxoffsetspertrigger"], positive=True)
    min_partitions = None
    if "minpartitions" in opts:
        min_partitions = _parse_int("minPartitions", opts["minpartitions"], positive=True)
    fail_on_data_loss = _parse_bool("failOnDataLoss", opts.get("failondataloss", "true"))
    include_headers = _parse_bool("includeHeaders", opts.get("includeheaders", "false"))

    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting_offsets=starting_offsets,
        ending_offsets=ending_offsets,
        starting_timestamp=starting_timestamp,
        starting_offsets_by_timestamp=starting_by_ts,
        ending_timestamp=ending_timestamp,
        ending_offsets_by_timestamp=ending_by_ts,
        max_offsets_per_trigger=max_offsets,
        min_partitions=min_partitions,
        fail_on_data_loss=fail_on_data_loss,
        include_headers=include_headers,
        kafka_params=kafka_params,
    )


def _bound(opts: dict[str, str], side: str,
           default: OffsetsSpec) -> tuple[OffsetsSpec, int | None, PartitionSpec | None]:
    """One end of the range ("starting" or "ending"): (offsets spec, timestamp, per-partition timestamps)
    from whichever one of ``<side>Timestamp``, ``<side>OffsetsByTimestamp``, ``<side>Offsets`` is given."""
    by_time, by_partition_time, by_offsets = f"{side}Timestamp", f"{side}OffsetsByTimestamp", f"{side}Offsets"
    name = _pick_one(opts, (by_time, by_partition_time, by_offsets))
    if name == by_time:
        return default, _parse_int(name, opts[name.lower()], non_negative=True), None
    if name == by_partition_time:
        return default, None, _parse_partition_json(name, opts[name.lower()], timestamps=True)
    if name == by_offsets:
        return parse_offsets_spec(name, opts[name.lower()]), None, None
    return default, None, None


# Spark's words when a batch range starts at latest or ends at earliest (whole spec, one partition)
_BATCH_REFUSALS = (
    ("startingOffsets", "latest", LATEST, "starting offset can't be latest for batch queries on Kafka",
     "startingOffsets for {tp} can't be latest for batch queries on Kafka"),
    ("endingOffsets", "earliest", EARLIEST, "ending offset can't be earliest for batch queries on Kafka",
     "ending offset for {tp} can't be earliest for batch queries on Kafka"),
)


def _check_batch_bounds(start: OffsetsSpec, end: OffsetsSpec, start_ts: int | None, end_ts: int | None,
                        start_by_ts: PartitionSpec | None, end_by_ts: PartitionSpec | None) -> None:
    """Spark's validateBatchOptions and checkOffsetLimitValidity."""
    for (name, word, sentinel, whole, one), spec in zip(_BATCH_REFUSALS, (start, end)):
        if spec == word:
            raise OptionError(name, whole)
        if isinstance(spec, dict):
            for topic, parts in spec.items():
                for p, off in parts.items():
                    if off == sentinel:
                        raise OptionError(name, one.format(tp=f"{topic}-{p}"))
    for start_name, end_name, s, e, what in (
            ("startingOffsets", "endingOffsets", start, end, "offset"),
            ("startingOffsetsByTimestamp", "endingOffsetsByTimestamp", start_by_ts, end_by_ts, "timestamp")):
        if not (isinstance(s, dict) and isinstance(e, dict)):
            continue
        if _tps(s) != _tps(e):
            raise OptionError(end_name, f"must name the same topic partitions as '{start_name}'; "
                                        f"{start_name}: {_fmt_tps(_tps(s))}, {end_name}: {_fmt_tps(_tps(e))}")
        for topic, parts in s.items():
            for p, s_off in parts.items():
                e_off = e[topic][p]
                if s_off >= 0 and e_off >= 0 and s_off > e_off:
                    raise OptionError(end_name, f"the starting {what} of {topic}-{p} ({s_off}) is greater than "
                                                f"its ending {what} ({e_off})")
    if start_ts is not None and end_ts is not None and start_ts > end_ts:
        raise OptionError("endingTimestamp", f"startingTimestamp ({start_ts}) is greater than endingTimestamp "
                                             f"({end_ts})")


# -------------------------------------------------------------------------------------------------- sink


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate and parse the options of a ``df.write`` / ``df.writeStream`` on the ``zkafka`` format.
    Without ``topic`` every row must carry a ``topic`` column (the writer checks that)."""
    opts, given = _lower_keys(options)
    _check_known(opts, given, _SINK_OPTIONS, "sink")
    bootstrap, kafka_params = _kafka_params(opts, _UNSUPPORTED_SINK_KAFKA_PARAMS)
    topic = None
    if "topic" in opts:
        topic = opts["topic"].strip()
        if not topic:
            raise OptionError("topic", "must not be empty (leave it out to take each row's 'topic' column)")
    return SinkOptions(bootstrap_servers=bootstrap, topic=topic, kafka_params=kafka_params)
