"""The requests ``kafka-consumer-groups`` sends, through confluent-kafka's AdminClient (the only module of the
tool that imports confluent_kafka): ListGroups, DescribeGroups, OffsetFetch, ListOffsets, Metadata,
OffsetCommit and DeleteGroups, as Kafka's ``ConsumerGroupService`` does.
"""
from __future__ import annotations

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from scripts.tools.kafka_consumer_groups.reset_plan import CommandError
from scripts.tools.kafka_consumer_groups.syntax import TP
from scripts.tools.kafka_consumer_groups.tables import Member

TIMEOUT_S = 30.0
STATE_NAMES = {ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.EMPTY: "Empty", ConsumerGroupState.DEAD: "Dead",
               ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
               ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance", ConsumerGroupState.UNKNOWN: "Unknown"}


def error_text(exc: KafkaException) -> str:
    """``NAME: message`` of the KafkaError inside, else the exception's text."""
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return f"{err.name()}: {err.str()}" if err else str(exc)


def _code(exc: KafkaException) -> int | None:
    return exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None


def group_ids(admin: AdminClient) -> list[str]:
    result = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
    if result.errors:  # a broker that could not answer: the list would be incomplete
        error = result.errors[0]
        raise error if isinstance(error, KafkaException) else KafkaException(error)
    return sorted({listing.group_id for listing in result.valid})


def descriptions(admin: AdminClient, groups: list[str]) -> dict[str, object | None]:
    """Each group's ConsumerGroupDescription; None when the coordinator answers GROUP_ID_NOT_FOUND."""
    if not groups:
        return {}
    out: dict[str, object | None] = {}
    for group, future in admin.describe_consumer_groups(groups, request_timeout=TIMEOUT_S).items():
        try:
            out[group] = future.result()
        except KafkaException as exc:
            if _code(exc) != KafkaError.GROUP_ID_NOT_FOUND:
                raise
            out[group] = None
    return out


def members(description: object | None) -> list[Member]:
    return [Member(m.member_id, m.host, m.client_id,
                   tuple((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])))
            for m in (description.members if description is not None else [])]


def state(description: object | None) -> str:
    """Kafka's name of the group's state; a group the coordinator does not know is Dead."""
    return STATE_NAMES.get(description.state, str(description.state)) if description is not None else "Dead"


def committed(admin: AdminClient, group: str) -> dict[TP, int]:
    request = [ConsumerGroupTopicPartitions(group)]
    answer = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or []
            if tp.error is None and tp.offset >= 0}


def _log_offsets(admin: AdminClient, partitions: list[TP], spec: OffsetSpec) -> dict[TP, int]:
    """ListOffsets for each partition; the ones that fail are left out."""
    if not partitions:
        return {}
    futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, request_timeout=TIMEOUT_S)
    out = {}
    for tp, future in futures.items():
        try:
            out[(tp.topic, tp.partition)] = future.result().offset
        except KafkaException:
            continue
    return out


def log_start_offsets(admin: AdminClient, partitions: list[TP]) -> dict[TP, int]:
    return _log_offsets(admin, partitions, OffsetSpec.earliest())


def log_end_offsets(admin: AdminClient, partitions: list[TP]) -> dict[TP, int]:
    """The high watermarks (ListOffsets latest)."""
    return _log_offsets(admin, partitions, OffsetSpec.latest())


def offsets_for_time(admin: AdminClient, partitions: list[TP], timestamp_ms: int) -> dict[TP, int]:
    """The first offset with a timestamp at or after ``timestamp_ms``; -1 where there is none."""
    return _log_offsets(admin, partitions, OffsetSpec.for_timestamp(timestamp_ms))


def all_partitions(admin: AdminClient, topics: list[str]) -> list[TP]:
    """Every partition of each topic; a topic that does not exist is a :class:`CommandError`."""
    # All topics, never Metadata for one name: the AdminClient's metadata requests allow auto-creation.
    metadata = admin.list_topics(timeout=TIMEOUT_S).topics
    out: list[TP] = []
    for topic in topics:
        if topic not in metadata or metadata[topic].error is not None:
            raise CommandError(f"Topic '{topic}' does not exist")
        out += [(topic, p) for p in metadata[topic].partitions]
    return out


def commit(admin: AdminClient, group: str, plan: dict[TP, int]) -> None:
    """OffsetCommit of the plan; the first partition that failed raises its error."""
    offsets = [TopicPartition(t, p, offset) for (t, p), offset in sorted(plan.items())]
    request = [ConsumerGroupTopicPartitions(group, offsets)]
    answer = admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
    failed = [tp for tp in answer.topic_partitions or [] if tp.error is not None]
    if failed:
        raise KafkaException(failed[0].error)


def delete_groups(admin: AdminClient, groups: list[str]) -> tuple[list[str], dict[str, str]]:
    """DeleteGroups: the groups deleted, and each group that was not with its error text."""
    futures = admin.delete_consumer_groups(groups, request_timeout=TIMEOUT_S) if groups else {}
    deleted, failed = [], {}
    for group in groups:
        try:
            futures[group].result()
            deleted.append(group)
        except KafkaException as exc:
            failed[group] = error_text(exc)
    return deleted, failed
