"""DeleteRecords' decisions (Kafka 2.8's ``ReplicaManager.deleteRecords``, ``Partition.deleteRecordsOnLeader``,
``Partition.lowWatermarkIfLeader`` and ``DelayedDeleteRecords``), pure but for the waiters at the end.

A DeleteRecords request asks a partition's leader to move its **log start offset** up to an offset
(-1: the high watermark). Records below the log start are gone for every reader at once: a Fetch
below it is OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST answers it; the segments wholly below it are
deleted by the next retention pass (``brokers.storage.retention``). Followers learn the leader's log
start from every Fetch answer and move theirs (never past their own high watermark); the leader learns
theirs from their Fetch requests (``log_start_offset``, Fetch v5+).

The answer waits, like Kafka's ``DelayedDeleteRecords``, until the partition's **low watermark** -- the
smallest log start offset among the leader and its followers on live brokers -- reaches the requested
offset, then carries that low watermark; a follower whose log start the leader has not heard yet counts
as -1 (unknown), so the answer waits for its next fetch. Not reached within the request's timeout:
REQUEST_TIMED_OUT (the log start has moved on the leader regardless).

Errors per partition, as Kafka: OFFSET_OUT_OF_RANGE for an offset above the high watermark or below -1;
POLICY_VIOLATION for a topic whose ``cleanup.policy`` lacks ``delete`` (a compacted topic's records
cannot be deleted by offset); NOT_LEADER_OR_FOLLOWER when leadership is lost while waiting.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from brokers.protocol.errors import ErrorCode

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK: delete everything below the high watermark
UNKNOWN_LOG_START = -1


def delete_offset(requested: int, high_watermark: int, cleanup_policy: str) -> int | ErrorCode:
    """The new log start offset for a request of ``requested``, or the partition's error."""
    if "delete" not in {p.strip() for p in cleanup_policy.split(",")}:
        return ErrorCode.POLICY_VIOLATION
    offset = high_watermark if requested == HIGH_WATERMARK else requested
    if offset < 0 or offset > high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return offset


def low_watermark(leader_log_start: int, follower_log_starts: Mapping[int, int], replicas: Iterable[int],
                  leader_id: int, live_brokers: Iterable[int]) -> int:
    """The smallest log start offset of the leader and of each other replica on a live broker (a follower
    not heard from yet counts as -1)."""
    live = set(live_brokers)
    starts = [follower_log_starts.get(r, UNKNOWN_LOG_START) for r in replicas if r != leader_id and r in live]
    return min([leader_log_start, *starts])


def follower_log_start(leader_log_start: int, follower_high_watermark: int, current: int) -> int:
    """A follower's log start after a Fetch answer carrying the leader's: the leader's, but never past the
    follower's own high watermark and never backwards."""
    return max(current, min(leader_log_start, follower_high_watermark))


class LowWatermarkWaiters:
    """Parked DeleteRecords answers of one partition: each resolves with the low watermark once it reaches
    the requested offset, or with an ErrorCode when leadership goes (``fail_all``)."""

    def __init__(self) -> None:
        self._waiting: list[tuple[int, asyncio.Future]] = []

    def __len__(self) -> int:
        return len(self._waiting)

    def wait(self, offset: int, current_low_watermark: int) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if current_low_watermark >= offset:
            future.set_result(current_low_watermark)
        else:
            self._waiting.append((offset, future))
        return future

    def complete(self, current_low_watermark: int) -> None:
        still = []
        for offset, future in self._waiting:
            if future.done():
                continue
            if current_low_watermark >= offset:
                future.set_result(current_low_watermark)
            else:
                still.append((offset, future))
        self._waiting = still

    def fail_all(self, code: ErrorCode) -> None:
        waiting, self._waiting = self._waiting, []
        for _, future in waiting:
            if not future.done():
                future.set_result(code)
