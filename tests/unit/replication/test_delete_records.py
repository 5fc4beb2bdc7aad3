"""DeleteRecords' decisions (brokers.replication.delete_records): the new log start, the low watermark, a
follower's log start, and the parked answers."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.replication.delete_records import (LowWatermarkWaiters, delete_offset, follower_log_start,
                                                low_watermark)


@pytest.mark.parametrize("requested, hw, policy, expected", [
    (5, 10, "delete", 5),
    (10, 10, "delete", 10),  # up to the high watermark itself
    (-1, 10, "delete", 10),  # -1: the high watermark
    (0, 10, "delete", 0),
    (11, 10, "delete", ErrorCode.OFFSET_OUT_OF_RANGE),
    (-2, 10, "delete", ErrorCode.OFFSET_OUT_OF_RANGE),
    (5, 10, "compact", ErrorCode.POLICY_VIOLATION),
    (5, 10, "compact,delete", 5),
    (5, 10, "delete, compact", 5),
    (-1, 0, "delete", 0),  # an empty partition: nothing to delete, no error
])
def test_delete_offset(requested, hw, policy, expected):
    assert delete_offset(requested, hw, policy) == expected


def test_low_watermark_is_the_smallest_log_start_of_the_live_replicas():
    assert low_watermark(10, {2: 7, 3: 10}, (1, 2, 3), 1, {1, 2, 3}) == 7
    assert low_watermark(10, {2: 7, 3: 10}, (1, 2, 3), 1, {1, 3}) == 10  # broker 2 is not live: it does not count
    assert low_watermark(10, {}, (1,), 1, {1}) == 10  # no followers
    assert low_watermark(10, {3: 12}, (1, 3), 1, {1, 3}) == 10  # the leader's own start counts too


def test_a_live_follower_not_heard_from_counts_as_unknown():
    assert low_watermark(10, {2: 10}, (1, 2, 3), 1, {1, 2, 3}) == -1


@pytest.mark.parametrize("leader, follower_hw, current, expected", [
    (10, 20, 0, 10),
    (10, 5, 0, 5),  # never past the follower's own high watermark
    (10, 20, 15, 15),  # never backwards
    (0, 20, 0, 0),
])
def test_follower_log_start(leader, follower_hw, current, expected):
    assert follower_log_start(leader, follower_hw, current) == expected


def test_waiters_resolve_when_the_low_watermark_reaches_their_offset():
    async def scenario():
        waiters = LowWatermarkWaiters()
        ready = waiters.wait(5, 7)
        later, later_still = waiters.wait(10, 7), waiters.wait(20, 7)
        assert ready.done() and ready.result() == 7 and len(waiters) == 2
        waiters.complete(9)
        assert not later.done()
        waiters.complete(12)
        assert later.result() == 12 and not later_still.done() and len(waiters) == 1
        waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        assert later_still.result() == ErrorCode.NOT_LEADER_OR_FOLLOWER and len(waiters) == 0

    asyncio.run(scenario())


def test_a_cancelled_waiter_is_dropped():
    async def scenario():
        waiters = LowWatermarkWaiters()
        gone = waiters.wait(10, 0)
        gone.cancel()
        waiters.complete(3)
        assert len(waiters) == 0

    asyncio.run(scenario())
