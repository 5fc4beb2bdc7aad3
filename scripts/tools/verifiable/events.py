"""The JSON event lines of Kafka 2.8's ``VerifiableProducer`` and ``VerifiableConsumer`` (pure): one compact JSON
object per line, ``timestamp`` (ms since the epoch, when the event happened) and ``name`` first, then the event's
fields in the order Kafka's Jackson mapper writes them::

    {"timestamp":1700000000000,"name":"startup_complete"}
    {"timestamp":...,"name":"producer_send_success","key":null,"value":"7","topic":"t","partition":1,"offset":2}
    {"timestamp":...,"name":"producer_send_error","topic":"t","key":null,"value":"8",
     "exception":"class org.apache.kafka.common.errors.TimeoutException","message":"Local: Message timed out"}
    {"timestamp":...,"name":"shutdown_complete"}
    {"timestamp":...,"name":"tool_data","sent":10,"acked":10,"target_throughput":-1,"avg_throughput":32.15}

    {"timestamp":...,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"partitions_revoked","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"records_consumed","count":20,
     "partitions":[{"topic":"t","partition":0,"count":20,"minOffset":0,"maxOffset":19}]}
    {"timestamp":...,"name":"record_data","key":null,"value":"3","topic":"t","partition":0,"offset":3}
    {"timestamp":...,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":20}],"success":true}

``offsets_committed`` has ``"error":"..."`` between ``offsets`` and ``success`` only when the commit failed.
Doubles are written as Java's ``Double.toString`` writes them (``5.0``, ``1.0E7``; NaN and infinities as the
strings Jackson writes). A librdkafka error becomes the Java exception class Kafka's client would raise
(``exception``); its ``message`` is librdkafka's text for the error, not Kafka's. The producer's ``offset`` is
-1 when the broker gave none (acks=0), as Kafka's ``RecordMetadata`` has it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

TopicPartitionLike = tuple[str, int]
ERRORS_PACKAGE = "org.apache.kafka.common.errors."
# librdkafka's error names whose Java exception is not the CamelCase of the name
JAVA_CLASSES = {"REQUEST_TIMED_OUT": "TimeoutException", "_TIMED_OUT": "TimeoutException",
                "_MSG_TIMED_OUT": "TimeoutException",
                "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
                "UNKNOWN_TOPIC_OR_PART": "UnknownTopicOrPartitionException",
                "NOT_LEADER_FOR_PARTITION": "NotLeaderOrFollowerException",
                "MSG_SIZE_TOO_LARGE": "RecordTooLargeException",
                "RECORD_LIST_TOO_LARGE": "RecordBatchTooLargeException",
                "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
                "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
                "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "TransactionalIdAuthorizationException",
                "_UNKNOWN_TOPIC": "UnknownTopicOrPartitionException",
                "_UNKNOWN_PARTITION": "UnknownTopicOrPartitionException",
                "KAFKA_STORAGE_ERROR": "KafkaStorageException",
                "CORRUPT_MESSAGE": "CorruptRecordException",
                "OUT_OF_ORDER_SEQUENCE_NUMBER": "OutOfOrderSequenceException",
                "DUPLICATE_SEQUENCE_NUMBER": "DuplicateSequenceException",
                "INVALID_PRODUCER_EPOCH": "ProducerFencedException",
                "_FENCED": "ProducerFencedException",
                "_TRANSPORT": "NetworkException",
                "_ALL_BROKERS_DOWN": "NetworkException",
                "ILLEGAL_GENERATION": "CommitFailedException",
                "UNKNOWN_MEMBER_ID": "CommitFailedException",
                "REBALANCE_IN_PROGRESS": "RebalanceInProgressException",
                "SASL_AUTHENTICATION_FAILED": "SaslAuthenticationException",
                "_AUTO_OFFSET_RESET": "NoOffsetForPartitionException",
                "FENCED_INSTANCE_ID": "FencedInstanceIdException"}
CLIENT_PACKAGE = {"CommitFailedException": "org.apache.kafka.clients.consumer.",
                  "NoOffsetForPartitionException": "org.apache.kafka.clients.consumer."}


def line(name: str, timestamp: int, **fields: Any) -> str:
    """One event line (with its newline): ``timestamp``, ``name``, then ``fields`` in order."""
    return json.dumps({"timestamp": timestamp, "name": name, **fields}, ensure_ascii=False,
                      separators=(",", ":")) + "\n"


def java_double(value: float) -> str:
    """``value`` as Jackson writes a Java double: ``Double.toString`` (decimal from 10^-3 to 10^7, else
    ``d.dddE±n``), NaN and infinities as strings."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # Python's repr is decimal in this range, shortest digits like Java's
    sign, digits, exponent = Decimal(repr(float(value))).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) - 1 + exponent
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def kafka_error(error: Any) -> Any:
    """confluent-kafka's ``KafkaError`` in ``error`` (itself, or the one a ``KafkaException`` carries), else
    None. Duck-typed: this module does not import confluent-kafka."""
    if isinstance(error, Exception) and error.args:
        error = error.args[0]
    return error if callable(getattr(error, "name", None)) and callable(getattr(error, "str", None)) else None


def java_exception_class(error: Any) -> str:
    """Java's ``exception.getClass().toString()`` for a librdkafka error: ``class org.apache.kafka...``."""
    found = kafka_error(error)
    if found is None:
        return "class org.apache.kafka.common.KafkaException"
    name = found.name()
    cls = JAVA_CLASSES.get(name) or "".join(w.capitalize() for w in name.strip("_").split("_")) + "Exception"
    return f"class {CLIENT_PACKAGE.get(cls, ERRORS_PACKAGE)}{cls}"


def error_message(error: Any) -> str:
    """Java's ``exception.getMessage()`` for a librdkafka error: its text."""
    found = kafka_error(error)
    return found.str() if found is not None else str(error)


def java_exception_text(error: Any) -> str:
    """How Java prints the exception: ``org.apache.kafka.common.errors.TimeoutException: message``."""
    return f"{java_exception_class(error).removeprefix('class ')}: {error_message(error)}"


# -- both tools -----------------------------------------------------------------------------------------

def startup_complete(timestamp: int) -> str:
    return line("startup_complete", timestamp)


def shutdown_complete(timestamp: int) -> str:
    return line("shutdown_complete", timestamp)


# -- the producer ---------------------------------------------------------------------------------------

def send_success(timestamp: int, key: str | None, value: str | None, topic: str, partition: int,
                 offset: int | None) -> str:
    """An acknowledged record; ``offset`` unknown (acks=0: librdkafka gives None) is Kafka's -1."""
    if offset is None or offset < 0:
        offset = -1
    return line("producer_send_success", timestamp, key=key, value=value, topic=topic, partition=partition,
                offset=offset)


def send_error(timestamp: int, key: str | None, value: str | None, topic: str, error: Any) -> str:
    return line("producer_send_error", timestamp, topic=topic, key=key, value=value,
                exception=java_exception_class(error), message=error_message(error))


def average_throughput(acked: int, elapsed_ms: int) -> float:
    """Kafka's ``1000 * (acked / (double) elapsed_ms)``: NaN or infinity when no time passed, as in Java."""
    if elapsed_ms == 0:
        return math.nan if acked == 0 else math.inf
    return 1000 * (acked / elapsed_ms)


def tool_data(timestamp: int, sent: int, acked: int, target_throughput: int, avg_throughput: float) -> str:
    head = json.dumps({"timestamp": timestamp, "name": "tool_data", "sent": sent, "acked": acked,
                       "target_throughput": target_throughput}, separators=(",", ":"))
    return f'{head[:-1]},"avg_throughput":{java_double(avg_throughput)}}}\n'


# -- the consumer ---------------------------------------------------------------------------------------

def _partitions(partitions: Iterable[TopicPartitionLike]) -> list[dict[str, Any]]:
    return [{"topic": topic, "partition": partition} for topic, partition in partitions]


def partitions_assigned(timestamp: int, partitions: Iterable[TopicPartitionLike]) -> str:
    return line("partitions_assigned", timestamp, partitions=_partitions(partitions))


def partitions_revoked(timestamp: int, partitions: Iterable[TopicPartitionLike]) -> str:
    return line("partitions_revoked", timestamp, partitions=_partitions(partitions))


def records_consumed(timestamp: int, count: int,
                     summaries: Iterable[tuple[str, int, int, int, int]]) -> str:
    """``summaries``: (topic, partition, count, minOffset, maxOffset) of each partition, in poll order."""
    return line("records_consumed", timestamp, count=count,
                partitions=[{"topic": t, "partition": p, "count": n, "minOffset": low, "maxOffset": high}
                            for t, p, n, low, high in summaries])


def record_data(timestamp: int, key: str | None, value: str | None, topic: str, partition: int, offset: int) -> str:
    return line("record_data", timestamp, key=key, value=value, topic=topic, partition=partition, offset=offset)


def offsets_committed(timestamp: int, offsets: Iterable[tuple[str, int, int]], error: str | None = None) -> str:
    """``offsets``: (topic, partition, offset) committed; ``error`` (its message) when the commit failed."""
    fields: dict[str, Any] = {"offsets": [{"topic": t, "partition": p, "offset": o} for t, p, o in offsets]}
    if error is not None:
        fields["error"] = error
    return line("offsets_committed", timestamp, **fields, success=error is None)
