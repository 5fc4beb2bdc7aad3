"""What ``kafka-verifiable-consumer`` makes of one poll (pure): Kafka 2.8's ``VerifiableConsumer.onRecordsReceived``.

The records of a poll are taken partition by partition (in the order each partition first appears, each
partition's records in offset order, as Kafka's ``ConsumerRecords`` groups them). With a message limit, a
partition's records are cut to what is left of the limit, a partition left with none is skipped, and the
rest of the poll is not looked at once the limit is reached. For each partition kept: a summary (topic,
partition, count, minOffset, maxOffset) for ``records_consumed``, and the offset to commit, maxOffset + 1.
``records_consumed``'s ``count`` stays the number of records the poll returned, as Kafka reports it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class Record(Protocol):
    """The parts of confluent-kafka's ``Message`` used here."""

    def topic(self) -> str: ...

    def partition(self) -> int: ...

    def offset(self) -> int: ...


@dataclass
class Batch:
    count: int                                                           # records the poll returned
    summaries: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    offsets: list[tuple[str, int, int]] = field(default_factory=list)    # (topic, partition, next offset)
    records: list[Any] = field(default_factory=list)                     # the records taken, partition by partition

    @property
    def taken(self) -> int:
        return len(self.records)


def by_partition(records: Sequence[Record]) -> dict[tuple[str, int], list[Record]]:
    """``records`` grouped by (topic, partition), partitions in order of first appearance."""
    groups: dict[tuple[str, int], list[Record]] = {}
    for record in records:
        key = (record.topic(), record.partition())
        group = groups.get(key)
        if group is None:
            groups[key] = [record]
        else:
            group.append(record)
    return groups


def take(records: Sequence[Record], max_messages: int, consumed: int) -> Batch:
    """What Kafka's tool processes of one poll's ``records`` when it has ``consumed`` records before, with the
    limit ``max_messages`` (negative: none)."""
    batch = Batch(count=len(records))
    limited = max_messages >= 0
    for (topic, partition), group in by_partition(records).items():
        if limited and consumed + len(group) > max_messages:
            group = group[:max(max_messages - consumed, 0)]
        if not group:
            continue
        low, high = group[0].offset(), group[-1].offset()
        batch.summaries.append((topic, partition, len(group), low, high))
        batch.offsets.append((topic, partition, high + 1))
        batch.records.extend(group)
        consumed += len(group)
        if limited and consumed >= max_messages:
            break
    return batch
