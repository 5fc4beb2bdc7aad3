"""Retention's decision for one Log (Kafka's ``Log.deleteOldSegments``), pure: how many of the oldest
segments go.

Three rules apply in turn, each continuing where the previous one stopped: segments wholly below the
log start offset (DeleteRecords, or a start moved by the cleaner), then, under the ``delete``
cleanup policy, segments whose largest timestamp is older than ``retention.ms`` (when >= 0) and the
oldest segments while the log stays at or above ``retention.bytes`` without them (when >= 0).
Invariants: only a prefix of the segment list is ever chosen; a segment holding offsets at or past
the high watermark never is (a consumer or a follower may still need it); an empty active segment
never is (a log always keeps one segment). When every segment is chosen the Log rolls a new empty
active segment first.
"""
from __future__ import annotations

from typing import Callable, Sequence

from brokers.storage.log_config import LogConfig
from brokers.storage.segment import LogSegment

Rule = Callable[[LogSegment, int], bool]  # (segment, the next segment's base offset) -> delete it?


def segments_to_delete(segments: Sequence[LogSegment], log_end_offset: int, high_watermark: int,
                       log_start_offset: int, config: LogConfig, now_ms: int) -> int:
    """The number of oldest segments retention deletes now."""
    count = _extend(segments, 0, log_end_offset, high_watermark, lambda s, nxt: nxt <= log_start_offset)
    if not config.delete:
        return count
    if config.retention_ms >= 0:
        count = _extend(segments, count, log_end_offset, high_watermark,
                        lambda s, nxt: now_ms - s.largest_timestamp > config.retention_ms)
    if config.retention_bytes >= 0:
        excess = [sum(s.size for s in segments[count:]) - config.retention_bytes]

        def over_size(segment: LogSegment, nxt: int) -> bool:
            if excess[0] - segment.size < 0:
                return False
            excess[0] -= segment.size
            return True

        count = _extend(segments, count, log_end_offset, high_watermark, over_size)
    return count


def _extend(segments: Sequence[LogSegment], count: int, log_end_offset: int, high_watermark: int, rule: Rule) -> int:
    """``count`` grown over the next segments while ``rule`` holds and they lie wholly below the HW."""
    for i in range(count, len(segments)):
        segment = segments[i]
        last = i + 1 == len(segments)
        if last and segment.size == 0:
            break
        upper = log_end_offset if last else segments[i + 1].base_offset
        if upper > high_watermark or not rule(segment, upper):
            break
        count = i + 1
    return count
