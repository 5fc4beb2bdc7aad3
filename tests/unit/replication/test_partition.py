"""Partition as leader and follower over a real Log in tmp_path: HW, acks=all outcomes, ISR proposals;
the purgatory's FIFO; the fetcher's cut of a trailing partial batch."""
from __future__ import annotations

import asyncio

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import whole_batches
from brokers.replication.partition import NotEnoughReplicasError, Partition
from brokers.replication.purgatory import FetchWatchers, ProducePurgatory
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig

LAG = 1000
T0 = 1_000_000


def batch(n: int = 1) -> bytearray:
    return bytearray(build_batch([Record(i, 0, None, b"v%d" % i) for i in range(n)], base_timestamp=T0))


@pytest.fixture
def partition(tmp_path):
    log = Log(tmp_path / "t-0", LogConfig(min_insync_replicas=2))
    p = Partition(TopicPartition("t", 0), 1, log, LAG)
    yield p
    log.close()


def lead(p: Partition, isr=(1, 2, 3), epoch=5, now=T0) -> None:
    p.make_leader(epoch, tuple(isr), (1, 2, 3), 0, 1, now)


def watched(watch) -> asyncio.Future:
    """A future registered with a Partition's ``watch_*`` method (inside a running loop)."""
    future = asyncio.get_running_loop().create_future()
    watch(future)
    return future


def run(coro):
    return asyncio.run(coro)


def test_becoming_leader_starts_an_epoch_at_the_log_end_and_tracks_every_follower(partition):
    partition.log.append_as_leader(batch(3), 2)
    lead(partition)
    assert partition.leader_epoch_start_offset == 3
    assert [(e.epoch, e.start_offset) for e in partition.log.leader_epoch_cache.entries] == [(2, 0), (5, 3)]
    assert sorted(partition.followers) == [2, 3]
    assert all(s.log_end_offset == -1 and s.last_caught_up_time_ms == T0 for s in partition.followers.values())


def test_hw_is_the_minimum_leo_of_the_isr_and_only_moves_forward(partition):
    async def scenario():
        lead(partition)
        partition.append_as_leader(batch(4), acks=1, now_ms=T0)
        assert partition.log.high_watermark == 0  # followers' LEOs unknown
        partition.update_follower_fetch(2, 4, T0)
        assert partition.log.high_watermark == 0
        partition.update_follower_fetch(3, 2, T0)
        assert partition.log.high_watermark == 2
        partition.update_follower_fetch(3, 4, T0)
        assert partition.log.high_watermark == 4
        partition.update_follower_fetch(3, 1, T0)  # a follower that truncated never pulls the HW back
        assert partition.log.high_watermark == 4

    run(scenario())


def test_acks_all_needs_min_isr_before_the_append_and_writes_nothing_otherwise(partition):
    async def scenario():
        lead(partition, isr=(1,))
        with pytest.raises(NotEnoughReplicasError) as caught:
            partition.append_as_leader(batch(), acks=-1, now_ms=T0)
        assert caught.value.code == ErrorCode.NOT_ENOUGH_REPLICAS and partition.log.log_end_offset == 0
        partition.append_as_leader(batch(), acks=1, now_ms=T0)  # acks=1 ignores min.insync.replicas
        assert partition.log.log_end_offset == 1 and partition.log.high_watermark == 1

    run(scenario())


def test_acks_all_completes_when_every_isr_member_has_the_records(partition):
    async def scenario():
        lead(partition)
        info = partition.append_as_leader(batch(2), acks=-1, now_ms=T0)
        waiting = partition.wait_for_acks(info.last_offset + 1)
        partition.update_follower_fetch(2, 2, T0)
        assert not waiting.done()
        partition.update_follower_fetch(3, 2, T0)
        assert waiting.done() and waiting.result() == ErrorCode.NONE

    run(scenario())


def test_acks_all_after_the_isr_shrank_below_min_is_not_enough_replicas_after_append(partition):
    async def scenario():
        lead(partition, isr=(1, 2))
        info = partition.append_as_leader(batch(), acks=-1, now_ms=T0)
        waiting = partition.wait_for_acks(info.last_offset + 1)
        partition.isr_write_started((1,))
        partition.update_follower_fetch(2, 0, T0)  # the maximal ISR (1, 2) still holds the HW back
        assert not waiting.done()
        partition.isr_write_done(5, (1,), 1, T0 + 10 * LAG)
        assert waiting.result() == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert partition.isr == (1,) and partition.zk_version == 1 and partition.pending_isr is None

    run(scenario())


def test_losing_leadership_answers_every_parked_produce_not_leader(partition):
    async def scenario():
        lead(partition)
        info = partition.append_as_leader(batch(), acks=-1, now_ms=T0)
        waiting = partition.wait_for_acks(info.last_offset + 1)
        event = watched(partition.watch_appends)
        partition.make_follower(2, 6, (2, 3), (1, 2, 3), 1, 1)
        assert waiting.result() == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert event.done() and partition.followers == {} and not partition.is_leader

    run(scenario())


def test_staying_leader_with_a_bumped_epoch_keeps_parked_produces_and_known_followers(partition):
    """A reassignment bumps the epoch and widens the replica set while this broker keeps leading: the
    parked acks=all produce must still complete (not fail NOT_LEADER), followers that stay keep their
    progress, a new replica starts unknown and out of the ISR, a removed one is forgotten."""
    async def scenario():
        lead(partition)
        info = partition.append_as_leader(batch(2), acks=-1, now_ms=T0)
        waiting = partition.wait_for_acks(info.last_offset + 1)
        partition.update_follower_fetch(2, 2, T0)
        partition.isr_write_started((1, 2, 3))
        partition.make_leader(6, (1, 2, 3), (1, 2, 3, 4), 3, 1, T0 + 5)  # adding replica 4
        assert not waiting.done() and partition.pending_isr is None
        assert partition.leader_epoch == 6 and partition.leader_epoch_start_offset == 2
        assert sorted(partition.followers) == [2, 3, 4]
        assert partition.followers[2].log_end_offset == 2 and partition.followers[4].log_end_offset == -1
        partition.make_leader(7, (1, 2), (1, 2, 4), 4, 1, T0 + 6)  # 3 removed, and out of the ISR
        assert sorted(partition.followers) == [2, 4]
        assert waiting.result() == ErrorCode.NONE

    run(scenario())


def test_isr_expansion_needs_the_hw_and_the_current_epochs_start(partition):
    async def scenario():
        partition.log.append_as_leader(batch(5), 2)
        lead(partition, isr=(1, 2))
        partition.update_follower_fetch(2, 5, T0)
        assert partition.log.high_watermark == 5
        # follower 3 at the HW would do under the old rule, but lacks nothing only if >= epoch start (5)
        assert partition.update_follower_fetch(3, 4, T0) is None
        assert partition.update_follower_fetch(3, 5, T0) == (1, 2, 3)
        partition.isr_write_started((1, 2, 3))
        assert partition.update_follower_fetch(3, 5, T0) is None  # one ISR change at a time

    run(scenario())


def test_shrink_drops_followers_behind_for_longer_than_the_lag_but_never_the_leader(partition):
    async def scenario():
        lead(partition)
        partition.append_as_leader(batch(), acks=1, now_ms=T0)
        partition.update_follower_fetch(2, 1, T0 + LAG)
        assert partition.isr_to_shrink(T0 + LAG) is None
        assert partition.isr_to_shrink(T0 + LAG + 1) == (1, 2)
        partition.make_follower(2, 6, (2,), (1, 2, 3), 1, 1)
        assert partition.isr_to_shrink(T0 + 10 * LAG) is None  # followers decide nothing

    run(scenario())


def test_an_isr_write_overtaken_by_a_new_leader_epoch_is_ignored(partition):
    async def scenario():
        lead(partition)
        partition.isr_write_started((1, 2))
        lead(partition, epoch=6)
        partition.isr_write_done(5, (1, 2), 9, T0)
        assert partition.isr == (1, 2, 3) and partition.zk_version == 0

    run(scenario())


def test_follower_hw_is_the_leaders_capped_at_its_own_log_end(partition):
    partition.make_follower(2, 5, (1, 2), (1, 2), 0, 1)
    leader_log_batch = batch(3)
    leader_log_batch[0:8] = (0).to_bytes(8, "big")
    partition.append_as_follower(bytes(leader_log_batch), leader_high_watermark=10)
    assert partition.log.log_end_offset == 3 and partition.log.high_watermark == 3


def test_purgatory_completes_in_required_offset_order():
    async def scenario():
        purgatory = ProducePurgatory()
        first, second = purgatory.park(3), purgatory.park(7)
        retried = purgatory.park(5)  # a duplicate of a batch ending at 4, retried while 3..7 wait
        assert purgatory.complete(6, ErrorCode.NONE) == 2
        assert first.result() == ErrorCode.NONE and retried.result() == ErrorCode.NONE and not second.done()
        second.cancel()  # its request timed out
        assert purgatory.complete(100, ErrorCode.NONE) == 0 and len(purgatory) == 0
        third = purgatory.park(8)
        assert purgatory.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER) == 1
        assert third.result() == ErrorCode.NOT_LEADER_OR_FOLLOWER

    run(scenario())


def test_whole_batches_cuts_a_trailing_partial_batch():
    one, two = bytes(batch(1)), bytes(batch(2))
    assert whole_batches(one + two) == one + two
    assert whole_batches(one + two[:-1]) == one
    assert whole_batches(one + two[:5]) == one
    assert whole_batches(two[:20]) == b""
    assert whole_batches(None) == b"" and whole_batches(b"") == b""


def test_consumers_wake_on_high_watermark_moves_followers_on_appends_too(partition):
    """A consumer's parked Fetch reads below the HW only: an append the ISR has not got yet must not wake
    it; the follower's must. The HW moving wakes both; so does a role change."""
    async def scenario():
        lead(partition, isr=(1, 2))
        consumer, follower = watched(partition.watch_high_watermark), watched(partition.watch_appends)
        info = partition.append_as_leader(batch(3), acks=1, now_ms=T0)
        assert follower.done() and not consumer.done()  # follower 2 has not fetched it yet
        follower = watched(partition.watch_appends)
        partition.update_follower_fetch(2, info.last_offset + 1, T0)  # follower 2 caught up: the HW moves
        assert partition.log.high_watermark == 3 and consumer.done() and follower.done()
        consumer = watched(partition.watch_high_watermark)
        partition.make_follower(2, 6, (2,), (1, 2), 1, 1)
        assert consumer.done()

    run(scenario())


def test_fetch_watchers_wake_everything_once_and_prune_what_finished_elsewhere():
    async def scenario():
        loop = asyncio.get_running_loop()
        watchers = FetchWatchers()
        shared, other = loop.create_future(), loop.create_future()
        watchers.watch(shared)
        watchers.watch(other)
        other.cancel()  # e.g. the Fetch's request was cancelled
        assert watchers.wake() == 1 and shared.done() and len(watchers) == 0
        assert watchers.wake() == 0  # a wake starts a new list: nothing is woken twice
        timed_out = [loop.create_future() for _ in range(FetchWatchers.PRUNE_MIN * 4)]
        for future in timed_out:  # an idle partition long-polled over and over: each poll times out
            watchers.watch(future)
            future.set_result(None)
        assert len(watchers) < FetchWatchers.PRUNE_MIN  # pruned, not grown without bound
        live = loop.create_future()
        watchers.watch(live)
        assert watchers.wake() == 1 and live.done()

    run(scenario())


def txn_batch(pid: int, seq: int = 0) -> bytearray:
    return bytearray(build_batch([Record(0, 0, None, b"t")], base_timestamp=T0, producer_id=pid, producer_epoch=0,
                                 base_sequence=seq, transactional=True))


def test_append_marker_is_an_acks_all_append_and_the_lso_follows_the_hw(partition):
    async def scenario():
        lead(partition)
        partition.append_as_leader(txn_batch(7), -1, T0)  # 0
        partition.update_follower_fetch(2, 1, T0)
        partition.update_follower_fetch(3, 1, T0)
        assert partition.log.high_watermark == 1
        assert partition.last_stable_offset == 0  # the transaction is open
        woken = watched(partition.watch_high_watermark)
        info = partition.append_marker(7, 0, True, 0, T0)  # 1
        assert (info.first_offset, info.last_offset) == (1, 1)
        assert partition.log.read(1, 1000).records.read()[21:23] == b"\x00\x30"  # transactional | control
        assert partition.log.leader_epoch_cache.epoch_for_offset(1) == 5
        acks = partition.wait_for_acks(info.last_offset + 1)
        assert partition.last_stable_offset == 0  # marker not replicated yet (KAFKA-5121)
        assert not woken.done()
        partition.update_follower_fetch(2, 2, T0)
        partition.update_follower_fetch(3, 2, T0)
        assert await acks == ErrorCode.NONE
        assert woken.done()
        assert partition.last_stable_offset == 2
    run(scenario())


def test_append_marker_needs_min_isr(partition):
    lead(partition, isr=(1,))
    with pytest.raises(NotEnoughReplicasError):
        partition.append_marker(7, 0, False, 0, T0)
    assert partition.log.log_end_offset == 0
