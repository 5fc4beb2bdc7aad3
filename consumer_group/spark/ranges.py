"""Offset-range arithmetic of the ``zkafka`` Spark source, after Spark's Kafka source.

Pure: no pyspark, no confluent_kafka.

* :func:`split_ranges` is ``KafkaOffsetRangeCalculator.getRanges`` (the ``minPartitions`` option).
* :func:`rate_limit` is ``KafkaMicroBatchStream.rateLimit`` (the ``maxOffsetsPerTrigger`` option), except
  that the budget is met exactly: Spark rounds each partition's share down (and shares below 1 up), so a
  trigger may read a little less, or up to one offset per partition more, than ``maxOffsetsPerTrigger``.
* :func:`offsets_to_json_dict` / :func:`offsets_from_json_dict` give the ``{topic: {"partition": offset}}``
  form of a streaming offset with a stable key order, since Spark compares offsets by their JSON text.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TP = tuple[str, int]


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[from_offset, until_offset)`` of one topic partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round(double) rounds half up: floor(x + 0.5), not Python's round-half-to-even.
    return max(math.floor(size / total * min_parts + 0.5), 1)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Spark's ``KafkaOffsetRangeCalculator.getRanges``.

    Empty (and inverted) ranges are dropped. If ``min_partitions`` is unset or not more than the number of
    remaining ranges, those ranges are returned as they are, one Spark partition per Kafka partition.
    Otherwise ranges are split in proportion to their size so that there are *about* ``min_partitions``
    pieces: ranges whose share rounds to one piece stay whole and are taken out of the proportion, the rest
    get ``max(round(size / splitTotal * (min_partitions - #whole)), 1)`` contiguous pieces of near-equal size
    (the last piece takes the remainder). Pieces cover their range exactly and are never empty.
    """
    if min_partitions is not None and min_partitions <= 0:
        raise ValueError(f"min_partitions must be positive, got {min_partitions}")
    non_empty = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(non_empty) >= min_partitions:
        return non_empty

    total = sum(r.size for r in non_empty)
    unsplit = [r for r in non_empty if _part_count(r.size, total, min_partitions) == 1]
    unsplit_keys = {(r.topic, r.partition, r.from_offset) for r in unsplit}
    split_total = total - sum(r.size for r in unsplit)
    split_min_parts = max(min_partitions - len(unsplit), 1)

    out: list[OffsetRange] = []
    for r in non_empty:
        if (r.topic, r.partition, r.from_offset) in unsplit_keys:
            parts = 1
        else:
            parts = _part_count(r.size, split_total, split_min_parts)
        remaining = r.size
        start = r.from_offset
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            end = min(start + this, r.until_offset)
            if end > start:
                out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out


def rate_limit(start: dict[TP, int], latest: dict[TP, int], max_offsets: int) -> dict[TP, int]:
    """The end offsets of the next micro-batch under ``maxOffsetsPerTrigger`` (Spark's ``rateLimit``).

    Returns an end offset for every partition of ``latest``; ``start`` must have an offset for each of them
    (resolve new partitions to their earliest offset first). ``max_offsets`` is shared out in proportion to
    each partition's available size ``latest - start``: every share is rounded down, then the offsets left
    over go one each first to partitions whose share rounded to zero (Spark's "don't starve small
    partitions") and then to the largest fractional parts, ties broken by (topic, partition). So the total
    advance is exactly ``min(max_offsets, total available)``; no end is beyond ``latest`` nor before
    ``start``; a partition with nothing new (or whose ``latest`` is behind ``start``) keeps ``start``.
    """
    if max_offsets < 1:
        raise ValueError(f"max_offsets must be positive, got {max_offsets}")
    missing = [tp for tp in latest if tp not in start]
    if missing:
        raise ValueError(f"no start offset for {sorted(missing)}")

    sizes = {tp: end - start[tp] for tp, end in latest.items() if end > start[tp]}
    total = sum(sizes.values())
    result = {tp: (end if tp in sizes else start[tp]) for tp, end in latest.items()}
    if total <= max_offsets:
        return result  # everything fits (or nothing is new)

    shares = {tp: max_offsets * size // total for tp, size in sizes.items()}
    fractions = {tp: max_offsets * size % total for tp, size in sizes.items()}
    leftover = max_offsets - sum(shares.values())  # < len(sizes), and share + 1 <= size when limited
    order = sorted(sizes, key=lambda tp: (shares[tp] > 0, -fractions[tp], tp))
    for tp in order[:leftover]:
        shares[tp] += 1
    for tp, share in shares.items():
        result[tp] = start[tp] + share
    return result


def offsets_to_json_dict(offsets: dict[TP, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` → ``{topic: {"partition": offset}}``, topics sorted and partitions
    sorted numerically, so ``json.dumps`` of the result is the same text for the same offsets."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return out


def offsets_from_json_dict(data: dict[str, dict[str, int]]) -> dict[TP, int]:
    """The inverse of :func:`offsets_to_json_dict` (e.g. of ``json.loads`` of a checkpointed offset)."""
    out: dict[TP, int] = {}
    for topic, parts in data.items():
        if not isinstance(parts, dict):
            raise ValueError(f"offsets of topic {topic!r} must be an object, got {parts!r}")
        for key, offset in parts.items():
            try:
                partition = int(key)
            except (TypeError, ValueError):
                raise ValueError(f"partition {key!r} of topic {topic!r} is not an integer") from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise ValueError(f"offset of {topic}-{key} must be an integer, got {offset!r}")
            out[(topic, partition)] = offset
    return out
