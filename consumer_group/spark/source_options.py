"""Options of the ``zkafka`` Spark source (``spark.read`` / ``spark.readStream``), checked like Spark's
``KafkaSourceProvider``, one option family at a time: the subscription (exactly one of ``subscribe``,
``subscribePattern``, ``assign``), where to start and (batch only) where to end, the streaming limits, the
flags, and ``kafka.isolation.level`` (always set in ``kafka_params``: read_uncommitted unless given). The
grammar shared with the sink is in ``options``.

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
from typing import TypeAlias

from consumer_group.spark.options import (
    EARLIEST,
    LATEST,
    OffsetsSpec,
    OptionError,
    PartitionSpec,
    check_known,
    format_topic_partitions,
    is_json_int,
    kafka_params,
    load_json_object,
    lower_keys,
    parse_bool,
    parse_int,
    parse_offsets_spec,
    parse_partition_json,
    pick_one,
    topic_partitions,
)

# Canonical (documented) spelling of every option.
_SOURCE_OPTIONS = (
    "subscribe", "subscribePattern", "assign",
    "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp",
    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger", "minPartitions", "failOnDataLoss", "includeHeaders",
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
)
_STRATEGIES = ("subscribe", "subscribePattern", "assign")
_ENDING_OPTIONS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")

# Options of Spark's Kafka source that zkafka does not implement: a clearer error than "unknown".
_SPARK_ONLY_OPTIONS = (
    "minOffsetsPerTrigger", "maxTriggerDelay", "maxRecordsPerPartition", "groupIdPrefix",
    "kafkaConsumer.pollTimeoutMs", "startingOffsetsByTimestampStrategy",
)

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

ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
DEFAULT_ISOLATION_LEVEL = "read_uncommitted"  # Spark's (the Java consumer's); librdkafka's own is read_committed

_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'

Assignment: TypeAlias = dict[str, tuple[int, ...]]
Bound: TypeAlias = tuple[OffsetsSpec, int | None, PartitionSpec | None]  # offsets, timestamp, by-partition times


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: Assignment | None = None
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
    fetch_offset_retries: int = 3  # Spark's fetchOffset.numRetries: offsets asked again after a failure
    fetch_offset_retry_interval_ms: int = 1000  # Spark's fetchOffset.retryIntervalMs


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validate and parse the options of a ``spark.read`` (``streaming=False``) or ``spark.readStream``
    (``streaming=True``) on the ``zkafka`` format. Raises :class:`OptionError`."""
    opts, given = lower_keys(options)
    check_known(opts, given, _SOURCE_OPTIONS, "source", spark_only=_SPARK_ONLY_OPTIONS)
    bootstrap, params = kafka_params(opts, _UNSUPPORTED_SOURCE_KAFKA_PARAMS)
    params["isolation.level"] = _isolation_level(params)
    subscribe, pattern, assign = _subscription(opts)
    starting, ending = _bounds(opts, streaming)
    if assign is not None:
        _check_bounds_assigned(starting, ending, assign)
    max_offsets, min_partitions = _limits(opts)
    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting_offsets=starting[0],
        ending_offsets=ending[0],
        starting_timestamp=starting[1],
        starting_offsets_by_timestamp=starting[2],
        ending_timestamp=ending[1],
        ending_offsets_by_timestamp=ending[2],
        max_offsets_per_trigger=max_offsets,
        min_partitions=min_partitions,
        fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failondataloss", "true")),
        include_headers=parse_bool("includeHeaders", opts.get("includeheaders", "false")),
        kafka_params=params,
        fetch_offset_retries=parse_int("fetchOffset.numRetries", opts.get("fetchoffset.numretries", "3"),
                                       non_negative=True),
        fetch_offset_retry_interval_ms=parse_int("fetchOffset.retryIntervalMs",
                                                 opts.get("fetchoffset.retryintervalms", "1000"), non_negative=True),
    )


def _isolation_level(params: Mapping[str, str]) -> str:
    """``kafka.isolation.level``: read_committed reads end at each partition's last stable offset and skip
    aborted transactions' records; read_uncommitted (the default, as Spark's) reads to the high watermark."""
    level = params.get("isolation.level", DEFAULT_ISOLATION_LEVEL).strip().lower()
    if level not in ISOLATION_LEVELS:
        raise OptionError("kafka.isolation.level", f"expected one of {', '.join(ISOLATION_LEVELS)}, got "
                                                   f"'{params['isolation.level']}'")
    return level


# ------------------------------------------------------------------------------------------ subscription


def _subscription(opts: Mapping[str, str]) -> tuple[tuple[str, ...] | None, str | None, Assignment | None]:
    """(subscribe, subscribePattern, assign): exactly one of them is given, the other two are None."""
    strategy = _strategy(opts)
    value = opts[strategy.lower()]
    if strategy == "subscribe":
        return _parse_subscribe(value), None, None
    if strategy == "subscribePattern":
        return None, _parse_subscribe_pattern(value), None
    return None, None, _parse_assign(value)


def _strategy(opts: Mapping[str, str]) -> str:
    strategies = [s for s in _STRATEGIES if s.lower() in opts]
    listed = ", ".join(_STRATEGIES)
    if not strategies:
        raise OptionError("subscribe", f"one of the following options must be specified for the Kafka source: "
                                       f"{listed}")
    if len(strategies) > 1:
        raise OptionError(strategies[0], f"only one of the following options can be specified for the Kafka "
                                         f"source: {listed} (given: {', '.join(strategies)})")
    return strategies[0]


def _parse_subscribe(value: str) -> tuple[str, ...]:
    subscribe = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    if not subscribe:
        raise OptionError("subscribe", f"no topics to subscribe to as specified value is '{value}'")
    return subscribe


def _parse_subscribe_pattern(value: str) -> str:
    pattern = value.strip()
    if not pattern:
        raise OptionError("subscribePattern", f"pattern to subscribe is empty as specified value is "
                                              f"'{value}'")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise OptionError("subscribePattern", f"invalid regular expression '{pattern}': {exc}") from None
    return pattern


def _parse_assign(text: str) -> Assignment:
    s = text.strip()
    if not s.startswith("{"):
        raise OptionError("assign", f"no topic partitions to assign as specified value is '{text}'; "
                                    f"expected JSON like {_ASSIGN_EXAMPLE}")
    obj = load_json_object("assign", s, _ASSIGN_EXAMPLE)
    out: Assignment = {}
    for topic, parts in obj.items():
        if not topic:
            raise OptionError("assign", "topic names must not be empty")
        if not isinstance(parts, list) or not parts:
            raise OptionError("assign", f"topic '{topic}' needs a non-empty list of partitions; "
                                        f"expected JSON like {_ASSIGN_EXAMPLE}, got '{text}'")
        for p in parts:
            if not is_json_int(p) or p < 0:
                raise OptionError("assign", f"partition {json.dumps(p)} of topic '{topic}' is not a "
                                            "non-negative integer")
        out[topic] = tuple(sorted(set(parts)))
    return out


# ----------------------------------------------------------------------------- starting/ending offsets


def _bounds(opts: Mapping[str, str], streaming: bool) -> tuple[Bound, Bound]:
    """Where to start, and where to end: streaming queries have no end (``ending*`` is an error there)."""
    if streaming:
        for name in _ENDING_OPTIONS:
            if name.lower() in opts:
                raise OptionError(name, "ending offsets are not valid in streaming queries")
        return _bound(opts, "starting", "latest"), ("latest", None, None)
    starting, ending = _bound(opts, "starting", "earliest"), _bound(opts, "ending", "latest")
    _check_batch_bounds(starting, ending)
    return starting, ending


def _bound(opts: Mapping[str, str], side: str, default: OffsetsSpec) -> Bound:
    """One end of the range ("starting" or "ending"): (offsets spec, timestamp, per-partition timestamps)
    from whichever one of ``<side>Timestamp``, ``<side>OffsetsByTimestamp``, ``<side>Offsets`` is given."""
    by_time, by_partition_time, by_offsets = f"{side}Timestamp", f"{side}OffsetsByTimestamp", f"{side}Offsets"
    name = pick_one(opts, (by_time, by_partition_time, by_offsets))
    if name == by_time:
        return default, parse_int(name, opts[name.lower()], non_negative=True), None
    if name == by_partition_time:
        return default, None, parse_partition_json(name, opts[name.lower()], timestamps=True)
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


def _check_batch_bounds(starting: Bound, ending: Bound) -> None:
    """Spark's validateBatchOptions and checkOffsetLimitValidity."""
    (start, start_ts, start_by_ts), (end, end_ts, end_by_ts) = starting, ending
    for refusal, spec in zip(_BATCH_REFUSALS, (start, end)):
        _refuse_batch_sentinel(spec, *refusal)
    _check_range("startingOffsets", "endingOffsets", start, end, "offset")
    _check_range("startingOffsetsByTimestamp", "endingOffsetsByTimestamp", start_by_ts, end_by_ts, "timestamp")
    if start_ts is not None and end_ts is not None and start_ts > end_ts:
        raise OptionError("endingTimestamp", f"startingTimestamp ({start_ts}) is greater than endingTimestamp "
                                             f"({end_ts})")


def _refuse_batch_sentinel(spec: OffsetsSpec | None, name: str, word: str, sentinel: int, whole: str,
                           one: str) -> None:
    if spec == word:
        raise OptionError(name, whole)
    if isinstance(spec, dict):
        for topic, parts in spec.items():
            for p, off in parts.items():
                if off == sentinel:
                    raise OptionError(name, one.format(tp=f"{topic}-{p}"))


def _check_range(start_name: str, end_name: str, s: OffsetsSpec | PartitionSpec | None,
                 e: OffsetsSpec | PartitionSpec | None, what: str) -> None:
    """Per-partition starts and ends name the same partitions, and no start is after its end."""
    if not (isinstance(s, dict) and isinstance(e, dict)):
        return
    if topic_partitions(s) != topic_partitions(e):
        raise OptionError(end_name, f"must name the same topic partitions as '{start_name}'; "
                                    f"{start_name}: {format_topic_partitions(topic_partitions(s))}, "
                                    f"{end_name}: {format_topic_partitions(topic_partitions(e))}")
    for topic, parts in s.items():
        for p, s_off in parts.items():
            e_off = e[topic][p]
            if s_off >= 0 and e_off >= 0 and s_off > e_off:
                raise OptionError(end_name, f"the starting {what} of {topic}-{p} ({s_off}) is greater than "
                                            f"its ending {what} ({e_off})")


def _check_bounds_assigned(starting: Bound, ending: Bound, assign: Assignment) -> None:
    for name, spec in (("startingOffsets", starting[0]), ("endingOffsets", ending[0]),
                       ("startingOffsetsByTimestamp", starting[2]), ("endingOffsetsByTimestamp", ending[2])):
        if isinstance(spec, dict):
            _check_assigned(name, spec, assign)


def _check_assigned(option: str, spec: PartitionSpec, assign: Assignment) -> None:
    given = topic_partitions(spec)
    assigned = {(t, p) for t, parts in assign.items() for p in parts}
    if given != assigned:
        raise OptionError(option, "with 'assign', specific offsets must name exactly the assigned topic "
                                  "partitions (use -2 for earliest, -1 for latest); "
                                  f"specified {format_topic_partitions(given)}, "
                                  f"assigned {format_topic_partitions(assigned)}")


# ---------------------------------------------------------------------------------------------- limits


def _limits(opts: Mapping[str, str]) -> tuple[int | None, int | None]:
    """(maxOffsetsPerTrigger, minPartitions), each positive when given."""
    max_offsets = min_partitions = None
    if "maxoffsetspertrigger" in opts:
        max_offsets = parse_int("maxOffsetsPerTrigger", opts["maxoffsetspertrigger"], positive=True)
    if "minpartitions" in opts:
        min_partitions = parse_int("minPartitions", opts["minpartitions"], positive=True)
    return max_offsets, min_partitions
