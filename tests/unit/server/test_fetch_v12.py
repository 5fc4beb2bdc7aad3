"""Fetch v12 in the handler: KIP-320's ``last_fetched_epoch`` checked against the leader's epoch cache.

The leader's log of partition ("t", 0) in these tests: epoch 0 wrote offsets 0-2, epoch 3 offsets 3-4,
so its epoch cache is [(0, 0), (3, 3)] and its log end is 5.
"""
from __future__ import annotations

import asyncio
import struct

import pytest

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import iter_records
from brokers.server.handlers.fetch import handle_fetch
from tests.unit.server.test_handlers import FETCH, World, batch, produce, run

FOLLOWER = 2


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    run(produce(w, "t", 0, batch([1, 2, 3])))
    partition = w.replica_manager.partitions[TopicPartition("t", 0)]
    partition.make_leader(3, (1,), (1, FOLLOWER), 1, 1, 0)
    run(produce(w, "t", 0, batch([4, 5])))
    yield w
    w.log_manager.shutdown()


async def fetch_v12(world, fetch_offset, last_fetched_epoch, *, replica_id=-1, current_leader_epoch=-1,
                    max_wait=0, min_bytes=1):
    segments = await world.call(
        handle_fetch, FETCH, 12, replica_id=replica_id, max_wait=max_wait, min_bytes=min_bytes, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[dict(topic="t", partitions=[dict(
            partition=0, current_leader_epoch=current_leader_epoch, fetch_offset=fetch_offset,
            last_fetched_epoch=last_fetched_epoch, log_start_offset=-1, partition_max_bytes=1 << 20)])])
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    correlation_id, body = codec.decode_response(FETCH, 12, frame[4:])
    assert correlation_id == 7
    (topic,) = body.responses
    (partition,) = topic.partitions
    return partition


def offsets(p) -> list[int]:
    return [r.offset for r in iter_records(p.records)] if p.records else []


def diverging(p) -> tuple[int, int]:
    return p.diverging_epoch.epoch, p.diverging_epoch.end_offset


@pytest.mark.parametrize("fetch_offset, last_fetched_epoch, expected", [
    (0, -1, list(range(5))),  # no epoch sent (librdkafka, a follower with an empty log): no check
    (3, 0, [3, 4]),  # epoch 0 ends at 3 here: consistent
    (5, 3, []),  # the latest epoch ends at the log end: consistent, nothing new
    (4, 3, [3, 4]),  # the batch holding offset 4 is sent whole (it starts at 3)
])
def test_consistent_fetches_read_as_usual(world, fetch_offset, last_fetched_epoch, expected):
    p = run(fetch_v12(world, fetch_offset, last_fetched_epoch))
    assert (p.error_code, p.high_watermark, offsets(p)) == (ErrorCode.NONE, 5, expected)
    assert diverging(p) == (-1, -1)
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)


@pytest.mark.parametrize("fetch_offset, last_fetched_epoch, expected", [
    (4, 0, (0, 3)),  # the fetcher has an epoch-0 record at 3 that we do not
    (5, 1, (0, 3)),  # we never had epoch 1: the largest epoch below it is 0, which ends at 3
    (9, 2, (0, 3)),
    (7, 3, (3, 5)),  # epoch 3 ends at our log end (5): the fetcher's 5 and 6 are not ours
])
def test_divergent_fetches_get_no_records_and_the_diverging_epoch(world, fetch_offset, last_fetched_epoch, expected):
    p = run(fetch_v12(world, fetch_offset, last_fetched_epoch))
    assert (p.error_code, p.records, diverging(p)) == (ErrorCode.NONE, b"", expected)
    assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (5, 5, 0)


def test_an_epoch_above_ours_is_offset_out_of_range(world):
    p = run(fetch_v12(world, 5, 4))
    assert (p.error_code, p.records, diverging(p)) == (ErrorCode.OFFSET_OUT_OF_RANGE, b"", (-1, -1))


def test_the_leader_epoch_check_comes_first(world):
    p = run(fetch_v12(world, 7, 0, current_leader_epoch=2))
    assert (p.error_code, diverging(p)) == (ErrorCode.FENCED_LEADER_EPOCH, (-1, -1))
    assert run(fetch_v12(world, 7, 0, current_leader_epoch=3)).error_code == ErrorCode.NONE


def test_a_divergent_follower_is_answered_at_once_and_its_position_not_recorded(world):
    partition = world.replica_manager.partitions[TopicPartition("t", 0)]
    before = partition.followers[FOLLOWER]

    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        p = await asyncio.wait_for(fetch_v12(world, 7, 3, replica_id=FOLLOWER, current_leader_epoch=3,
                                             max_wait=30_000, min_bytes=1), timeout=5)
        return p, loop.time() - started

    p, elapsed = run(scenario())
    assert diverging(p) == (3, 5) and elapsed < 5
    assert partition.followers[FOLLOWER] == before  # a log end of 7 is not this leader's to count
    assert FOLLOWER not in partition.isr
    caught_up = run(fetch_v12(world, 5, 3, replica_id=FOLLOWER, current_leader_epoch=3))
    assert diverging(caught_up) == (-1, -1)
    assert partition.followers[FOLLOWER].log_end_offset == 5


def test_a_follower_reads_past_the_high_watermark_from_its_last_epoch(world):
    world.log().append_as_leader(bytearray(batch([6])), 3)  # offset 5, above the HW
    p = run(fetch_v12(world, 3, 0, replica_id=FOLLOWER, current_leader_epoch=3))
    assert (diverging(p), offsets(p)) == ((-1, -1), [3, 4, 5])
