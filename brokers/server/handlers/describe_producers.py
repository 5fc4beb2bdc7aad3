"""DescribeProducers (61, v0; KIP-664): the active producers of partitions this broker leads, as Kafka 2.8's
``KafkaApis.handleDescribeProducersRequest`` and ``Log.activeProducers``.

Per topic, in Kafka's order: without Read on the topic every partition answers TOPIC_AUTHORIZATION_FAILED; a
topic the metadata cache does not know answers UNKNOWN_TOPIC_OR_PARTITION. Per partition: UNKNOWN_TOPIC_OR_PARTITION
when nobody hosts it, NOT_LEADER_OR_FOLLOWER unless this broker leads it; else one ``ProducerState`` per producer
id in the partition's producer state (``storage.producer_state``), ordered by producer id:

* ``producer_epoch``, ``last_sequence`` (-1 when no data batch is retained, e.g. only a marker since the last
  epoch bump), ``last_timestamp`` (max timestamp of its latest data batch, -1 when none);
* ``coordinator_epoch``: of the last transaction marker written for it (-1 unknown);
* ``current_txn_start_offset``: first offset of its open transaction on this partition, -1 when none.

A producer id in the state stays listed until it expires, whether or not it is still writing: what Kafka's
producer state holds is what ``kafka-transactions describe-producers`` shows, and what an operator uses to
find (and abort) a hanging transaction.
"""
from __future__ import annotations

from typing import Any, Iterable

from brokers.model import NO_TIMESTAMP
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import READ
from brokers.server.context import ServerContext
from brokers.server.handlers import leader_for, response
from brokers.storage.producer_state import NO_SEQUENCE, ProducerStateEntry

NO_OFFSET = -1


def producer_state(entry: ProducerStateEntry) -> dict[str, Any]:
    """One ``ProducerState`` of the response from a producer-state entry."""
    last = entry.batches[-1] if entry.batches else None
    first_offset = entry.current_txn_first_offset
    return dict(producer_id=entry.producer_id, producer_epoch=entry.epoch,
                last_sequence=last.last_seq if last is not None else NO_SEQUENCE,
                last_timestamp=last.timestamp if last is not None else NO_TIMESTAMP,
                coordinator_epoch=entry.coordinator_epoch,
                current_txn_start_offset=NO_OFFSET if first_offset is None else first_offset)


def active_producers(entries: Iterable[ProducerStateEntry]) -> list[dict[str, Any]]:
    return [producer_state(entry) for entry in sorted(entries, key=lambda e: e.producer_id)]


def _partition_answer(context: ServerContext, topic: str, index: int) -> dict[str, Any]:
    try:
        partition = leader_for(context, topic, index)
    except PartitionError as exc:
        return dict(partition_index=index, error_code=exc.code, active_producers=[])
    producers = partition.log.producer_state.producers  # a copy, read without awaiting
    return dict(partition_index=index, error_code=ErrorCode.NONE, active_producers=active_producers(producers.values()))


def _topic_error(context: ServerContext, topic: str, readable: set[str]) -> ErrorCode | None:
    if topic not in readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not context.metadata_cache.contains_topic(topic):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


async def handle_describe_producers(context: ServerContext, header: RequestHeader, request: Any) -> Any:
    readable = context.authorized_topics(READ, {topic.name for topic in request.topics})
    topics = []
    for topic in request.topics:
        error = _topic_error(context, topic.name, readable)
        if error is not None:
            partitions = [dict(partition_index=index, error_code=error, active_producers=[])
                          for index in topic.partition_indexes]
        else:
            partitions = [_partition_answer(context, topic.name, index) for index in topic.partition_indexes]
        topics.append(dict(name=topic.name, partitions=partitions))
    return response(header, topics=topics)
