"""brokers.replication.isr: ISR maintenance, HW, acks=all and follower truncation (reference §3.3-§3.6, §7).

Hand cases for every rule, hypothesis properties over the pure functions, simulations that drive them
the way a leader and its fetchers do, and a replay of KIP-101's scenarios showing HW-based truncation
losing acknowledged data (and diverging) where epoch-based truncation does not.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st

from brokers.protocol.errors import ErrorCode
from brokers.replication.isr import (
    AFTER_APPEND,
    BEFORE_APPEND,
    UNKNOWN_OFFSET,
    FollowerState,
    TruncationDecision,
    acks_all_satisfied,
    caught_up_while_quiet,
    check_min_isr,
    end_offset_for,
    expand_isr,
    follower_high_watermark,
    follower_state_on_become_leader,
    high_watermark,
    is_follower_out_of_sync,
    out_of_sync_replicas,
    should_expand_isr,
    shrink_isr,
    truncation_offset,
    update_follower_fetch,
)
from brokers.storage.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    LeaderEpochCache,
)

LAG = 30_000  # replica.lag.time.max.ms (2.5+ default)


def follower(replica_id: int, leo: int, caught_up: int, last_leader_leo: int = 0, last_fetch: int = 0) -> FollowerState:
    return FollowerState(replica_id, leo, caught_up, last_leader_leo, last_fetch)


# ==================================================================================================
# §3.3 lastCaughtUpTimeMs


class TestUpdateFollowerFetch:
    def test_initial_state_is_kafkas(self):
        assert FollowerState(2) == FollowerState(2, UNKNOWN_OFFSET, 0, 0, 0)

    def test_fetch_at_leader_leo_is_caught_up_now(self):
        state = update_follower_fetch(follower(2, 5, 100, 5, 100), fetch_offset=10, fetch_time_ms=200,
                                      leader_log_end_offset=10)
        assert state == FollowerState(2, 10, 200, 10, 200)

    def test_fetch_beyond_leader_leo_is_caught_up_now(self):
        assert update_follower_fetch(follower(2, 5, 0), 11, 200, 10).last_caught_up_time_ms == 200

    def test_fetch_at_previous_leader_leo_is_caught_up_at_previous_fetch(self):
        # Previous fetch at t=100 saw leader LEO 10; the follower now asks for 10 while the leader is at 15:
        # it had everything the leader had at t=100.
        state = update_follower_fetch(follower(2, 7, 50, last_leader_leo=10, last_fetch=100), 10, 200, 15)
        assert state == FollowerState(2, 10, 100, 15, 200)

    def test_fetch_below_previous_leader_leo_is_not_caught_up(self):
        state = update_follower_fetch(follower(2, 7, 50, last_leader_leo=10, last_fetch=100), 9, 200, 15)
        assert state == FollowerState(2, 9, 50, 15, 200)

    def test_last_caught_up_never_moves_backwards(self):
        # After a become-leader reset the follower counts as caught up "now" (t=500) although its previous
        # fetch time is older; a fetch at the previous leader LEO must not pull it back to t=100.
        state = follower(2, 7, caught_up=500, last_leader_leo=10, last_fetch=100)
        assert update_follower_fetch(state, 10, 600, 15).last_caught_up_time_ms == 500

    def test_fetch_offset_becomes_leo_even_when_lower(self):
        assert update_follower_fetch(follower(2, 20, 0), 12, 10, 30).log_end_offset == 12

    def test_follower_that_keeps_up_with_a_busy_leader_stays_caught_up(self):
        # The leader appends 10 records between every fetch; the follower always asks for what the leader
        # had at the previous fetch, so it never equals the leader's LEO but is caught up one round late.
        state, leader_leo = FollowerState(2), 0
        for t in range(0, 100_000, 500):
            state = update_follower_fetch(state, leader_leo, t, leader_leo + 10)
            leader_leo += 10
            assert state.last_caught_up_time_ms == max(0, t - 500)
            assert not is_follower_out_of_sync(state, leader_leo, t, LAG)

    def test_follower_slower_than_the_leader_falls_out_of_sync(self):
        # The leader appends 10 records per 500 ms; the follower only gets 5 per fetch: it never reaches
        # the previous-fetch LEO after its second round (offset 10 at t=1000 matches the LEO seen at t=500),
        # so lastCaughtUpTime stays at 500 and it is evicted once more than the lag has passed since.
        state, follower_leo, leader_leo = FollowerState(2), 0, 0
        t = 0
        while not is_follower_out_of_sync(state, leader_leo, t, LAG):
            state = update_follower_fetch(state, follower_leo, t, leader_leo)
            follower_leo, leader_leo, t = follower_leo + 5, leader_leo + 10, t + 500
        assert state.last_caught_up_time_ms == 500 and t == 500 + LAG + 500

    def test_become_leader_reset(self):
        assert follower_state_on_become_leader(2, True, 40, 1_000) == FollowerState(2, UNKNOWN_OFFSET, 1_000, 40, 1_000)
        assert follower_state_on_become_leader(3, False, 40, 1_000) == FollowerState(3, UNKNOWN_OFFSET, 0, 40, 1_000)

    @given(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 10_000),
           st.integers(0, 10_000), st.integers(0, 10_000))
    def test_rule_exhaustively(self, fetch_offset, leader_leo, previous_leader_leo, previous_time, now, caught_up):
        state = follower(2, 0, caught_up, previous_leader_leo, previous_time)
        new = update_follower_fetch(state, fetch_offset, now, leader_leo)
        if fetch_offset >= leader_leo:
            expected = max(caught_up, now)
        elif fetch_offset >= previous_leader_leo:
            expected = max(caught_up, previous_time)
        else:
            expected = caught_up
        assert new == FollowerState(2, fetch_offset, expected, leader_leo, now)
        assert new.last_caught_up_time_ms >= caught_up


# ==================================================================================================
# §3.3 shrink


class TestOutOfSync:
    def test_equal_leo_is_never_out_of_sync_however_idle(self):
        # KAFKA-7152: an idle partition must not evict a follower that has everything.
        assert not is_follower_out_of_sync(follower(2, 10, 0), 10, 10**9, LAG)

    def test_lagging_for_exactly_the_limit_is_still_in_sync(self):
        assert not is_follower_out_of_sync(follower(2, 9, 1_000), 10, 1_000 + LAG, LAG)
        assert is_follower_out_of_sync(follower(2, 9, 1_000), 10, 1_000 + LAG + 1, LAG)

    def test_behind_but_recently_caught_up_is_in_sync(self):
        assert not is_follower_out_of_sync(follower(2, 0, 5_000), 1_000_000, 6_000, LAG)

    def test_unknown_follower_is_out_of_sync(self):
        assert is_follower_out_of_sync(None, 10, 0, LAG)

    def test_out_of_sync_replicas(self):
        followers = {
            2: follower(2, 10, 0),           # equal LEO: in sync
            3: follower(3, 9, 0),            # behind for 40 s: out
            4: follower(4, 9, 20_000),       # behind, caught up 20 s ago: in
            5: follower(5, 0, 0),            # out of sync but not in the ISR: not a candidate
        }
        assert out_of_sync_replicas(1, 10, (1, 2, 3, 4, 6), followers, 40_000, LAG) == {3, 6}  # 6: no state

    def test_leader_is_never_out_of_sync(self):
        followers = {1: follower(1, 0, 0)}  # even if the caller passes state for the leader
        assert out_of_sync_replicas(1, 10, (1,), followers, 10**9, LAG) == set()

    @given(st.data())
    def test_candidates_are_isr_followers(self, data):
        isr = data.draw(st.lists(st.integers(0, 6), min_size=1, unique=True))
        leader = data.draw(st.sampled_from(isr))
        followers = data.draw(follower_maps(exclude=leader))
        leader_leo, now = data.draw(st.integers(0, 50)), data.draw(st.integers(0, 100_000))
        out = out_of_sync_replicas(leader, leader_leo, isr, followers, now, LAG)
        assert out <= set(isr) - {leader}
        for replica in set(isr) - {leader}:
            state = followers.get(replica)
            expected = state is None or (state.log_end_offset != leader_leo
                                         and now - state.last_caught_up_time_ms > LAG)
            assert (replica in out) == expected


class TestShrinkAndExpand:
    def test_shrink_removes_and_keeps_order(self):
        assert shrink_isr(2, (3, 2, 1, 4), {1, 4}) == (3, 2)

    def test_shrink_never_removes_the_leader(self):
        assert shrink_isr(2, (3, 2, 1), {1, 2, 3}) == (2,)

    def test_shrink_to_leader_alone_never_empty(self):
        assert shrink_isr(1, (1,), {1}) == (1,)

    def test_shrink_with_nothing_out_of_sync_is_identity(self):
        assert shrink_isr(1, (1, 2, 3), set()) == (1, 2, 3)

    def test_shrink_rejects_a_leader_outside_its_isr(self):
        with pytest.raises(ValueError):
            shrink_isr(9, (1, 2), {1})

    def test_expand_needs_hw(self):
        assert should_expand_isr(follower_log_end_offset=10, high_watermark=10, leader_epoch_start_offset=5)
        assert not should_expand_isr(9, 10, 5)

    def test_expand_needs_leader_epoch_start_kafka_7128(self):
        # New leader: epoch starts at 100 but its HW (inherited from follower days) is still 90. A follower at
        # 95 is past the HW yet lacks everything the new leader wrote in this epoch: not admitted.
        assert not should_expand_isr(95, 90, 100)
        assert should_expand_isr(100, 90, 100)

    def test_expand_without_leadership_admits_nobody(self):
        assert not should_expand_isr(100, 0, -1)

    def test_expand_isr(self):
        assert expand_isr((1, 2), 3) == (1, 2, 3)
        assert expand_isr((1, 2), 2) == (1, 2)

    @given(st.integers(-1, 200), st.integers(0, 200), st.integers(-1, 200))
    def test_expand_rule_exhaustively(self, leo, hw, epoch_start):
        assert should_expand_isr(leo, hw, epoch_start) == (epoch_start >= 0 and leo >= hw and leo >= epoch_start)

    @given(st.data())
    def test_isr_never_empty_and_keeps_leader(self, data):
        isr = data.draw(st.lists(st.integers(0, 8), min_size=1, unique=True))
        leader = data.draw(st.sampled_from(isr))
        out = data.draw(st.sets(st.integers(0, 8)))
        new = shrink_isr(leader, isr, out)
        assert new and leader in new
        assert set(new) == set(isr) - (out - {leader})
        assert list(new) == [r for r in isr if r in new]

    @given(st.data())
    def test_shrink_then_expand_round_trips(self, data):
        isr = data.draw(st.lists(st.integers(0, 8), min_size=1, unique=True))
        leader = data.draw(st.sampled_from(isr))
        hw = data.draw(st.integers(0, 100))
        leader_leo = hw + data.draw(st.integers(0, 100))
        epoch_start = data.draw(st.integers(0, leader_leo))
        followers = data.draw(follower_maps(exclude=leader, ids=st.sampled_from(isr)))
        now = data.draw(st.integers(0, 200_000))
        out = out_of_sync_replicas(leader, leader_leo, isr, followers, now, LAG)
        shrunk = shrink_isr(leader, isr, out)
        assert set(shrunk) == set(isr) - out
        # Every evicted follower catches up (fetches at the leader's LEO) and asks to come back.
        expanded = shrunk
        for replica in sorted(out):
            state = followers.get(replica, FollowerState(replica))
            state = update_follower_fetch(state, leader_leo, now + 1, leader_leo)
            assert not is_follower_out_of_sync(state, leader_leo, now + 1, LAG)
            assert should_expand_isr(state.log_end_offset, hw, epoch_start)
            expanded = expand_isr(expanded, replica)
        assert sorted(expanded) == sorted(isr)


# ==================================================================================================
# §3.4 high watermark


class TestHighWatermark:
    def test_leader_alone(self):
        assert high_watermark(3, 10, (1,), {}, 0, LAG) == 10

    def test_min_over_isr(self):
        followers = {2: follower(2, 7, 0), 3: follower(3, 9, 0)}
        assert high_watermark(0, 10, (1, 2, 3), followers, 10**6, LAG) == 7

    def test_follower_outside_isr_but_caught_up_within_lag_holds_hw(self):
        # §3.4: "in the ISR or caught up within replica.lag.time.max.ms": a follower about to rejoin counts.
        followers = {2: follower(2, 10, 0), 3: follower(3, 6, 50_000)}
        assert high_watermark(0, 10, (1, 2), followers, 50_000 + LAG, LAG) == 6

    def test_follower_outside_isr_and_lagging_is_ignored(self):
        followers = {2: follower(2, 10, 0), 3: follower(3, 6, 50_000)}
        assert high_watermark(0, 10, (1, 2), followers, 50_000 + LAG + 1, LAG) == 10

    def test_isr_member_counts_however_long_ago_it_caught_up(self):
        followers = {2: follower(2, 4, 0)}
        assert high_watermark(0, 10, (1, 2), followers, 10**9, LAG) == 4

    def test_never_moves_backwards(self):
        # A follower (re)joining with a LEO below the HW (or a shrink that leaves one) must not lower it.
        followers = {2: follower(2, 3, 0)}
        assert high_watermark(8, 10, (1, 2), followers, 0, LAG) == 8

    def test_unknown_follower_leo_holds_hw(self):
        followers = {2: follower_state_on_become_leader(2, True, 10, 0)}
        assert high_watermark(5, 10, (1, 2), followers, 0, LAG) == 5

    def test_shrink_lets_hw_advance(self):
        followers = {2: follower(2, 10, 0), 3: follower(3, 4, 0)}
        isr = (1, 2, 3)
        assert high_watermark(4, 10, isr, followers, 40_000, LAG) == 4
        isr = shrink_isr(1, isr, out_of_sync_replicas(1, 10, isr, followers, 40_000, LAG))
        assert isr == (1, 2)
        assert high_watermark(4, 10, isr, followers, 40_000, LAG) == 10

    def test_hw_above_leader_leo_is_rejected(self):
        with pytest.raises(ValueError):
            high_watermark(11, 10, (1,), {}, 0, LAG)

    def test_follower_hw(self):
        assert follower_high_watermark(leader_high_watermark=10, follower_log_end_offset=7) == 7
        assert follower_high_watermark(5, 7) == 5

    @given(st.data())
    def test_properties(self, data):
        leader = 0
        followers = data.draw(follower_maps(exclude=leader))
        isr = (leader, *data.draw(st.lists(st.sampled_from(sorted(followers) or [leader]), unique=True)))
        isr = tuple(dict.fromkeys(isr))
        leader_leo = data.draw(st.integers(0, 60))
        current = data.draw(st.integers(0, leader_leo))
        now = data.draw(st.integers(0, 100_000))
        hw = high_watermark(current, leader_leo, isr, followers, now, LAG)
        counted = [s.log_end_offset for r, s in followers.items()
                   if r in isr or now - s.last_caught_up_time_ms <= LAG]
        assert hw == max(current, min([leader_leo, *counted]))
        assert current <= hw <= leader_leo  # never decreases, never past the leader
        if hw > current:  # whenever it advances, every in-sync follower has everything below it
            assert all(followers[r].log_end_offset >= hw for r in isr if r != leader)
        assert high_watermark(hw, leader_leo, isr, followers, now, LAG) == hw  # idempotent


# ==================================================================================================
# §3.5 acks and min.insync.replicas


class TestAcks:
    def test_acks_all_needs_hw_past_last_offset(self):
        # The last appended record is at offset 9: required offset 10.
        assert not acks_all_satisfied(10, 9)
        assert acks_all_satisfied(10, 10)
        assert acks_all_satisfied(10, 11)

    def test_min_isr_before_append(self):
        assert check_min_isr(1, 2, when=BEFORE_APPEND) is ErrorCode.NOT_ENOUGH_REPLICAS
        assert check_min_isr(2, 2, when=BEFORE_APPEND) is None
        assert check_min_isr(3, 2, when="before_append") is None
        assert ErrorCode.NOT_ENOUGH_REPLICAS == 19

    def test_min_isr_after_append(self):
        assert check_min_isr(1, 2, when=AFTER_APPEND) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert check_min_isr(2, 2, when=AFTER_APPEND) is None
        assert ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND == 20

    def test_default_min_isr_of_one_is_always_met_by_the_leader(self):
        assert check_min_isr(1, 1, when=BEFORE_APPEND) is None
        assert check_min_isr(1, 1, when=AFTER_APPEND) is None

    def test_when_is_checked(self):
        with pytest.raises(ValueError):
            check_min_isr(1, 2, when="during")  # type: ignore[arg-type]

    @given(st.integers(0, 10), st.integers(1, 10))
    def test_min_isr_exhaustively(self, size, minimum):
        short = size < minimum
        assert check_min_isr(size, minimum, when=BEFORE_APPEND) == (ErrorCode.NOT_ENOUGH_REPLICAS if short else None)
        assert check_min_isr(size, minimum, when=AFTER_APPEND) == (
            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND if short else None)


# ==================================================================================================
# Leader and ISR together: a leader with followers fetching, appends, time passing, shrink and expand.


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_leader_simulation_invariants(data):
    """Drive the functions like a leader does; after every step: HW never decreases, HW <= leader LEO,
    the ISR is non-empty, holds the leader, and every ISR member has everything below the HW, so every
    acknowledged acks=all produce is on every in-sync replica."""
    leader, lag, min_isr = 0, 1_000, data.draw(st.integers(1, 3))
    follower_ids = list(range(1, data.draw(st.integers(1, 3)) + 1))
    now, leader_leo, hw, epoch_start = 0, 0, 0, 0
    isr: tuple[int, ...] = (leader, *follower_ids)
    states = {f: follower_state_on_become_leader(f, True, leader_leo, now) for f in follower_ids}
    local_leo = dict.fromkeys(follower_ids, 0)  # what the follower really has (the leader learns it next fetch)
    pending: list[int] = []
    for _ in range(data.draw(st.integers(1, 60))):
        previous_hw = hw
        step = data.draw(st.sampled_from(["append", "fetch", "tick"]))
        if step == "append":
            records = data.draw(st.integers(1, 5))
            if check_min_isr(len(isr), min_isr, when=BEFORE_APPEND) is None:
                leader_leo += records
                pending.append(leader_leo)
            else:
                assert len(isr) < min_isr
        elif step == "fetch":
            f = data.draw(st.sampled_from(follower_ids))
            now += data.draw(st.integers(0, 600))
            states[f] = update_follower_fetch(states[f], local_leo[f], now, leader_leo)
            if f not in isr and should_expand_isr(states[f].log_end_offset, hw, epoch_start):
                isr = expand_isr(isr, f)
            hw = high_watermark(hw, leader_leo, isr, states, now, lag)
            local_leo[f] += data.draw(st.integers(0, leader_leo - local_leo[f]))  # the fetch response
        else:
            now += data.draw(st.integers(0, 1_500))
            out = out_of_sync_replicas(leader, leader_leo, isr, states, now, lag)
            assert out <= set(isr) - {leader}
            isr = shrink_isr(leader, isr, out)
            hw = high_watermark(hw, leader_leo, isr, states, now, lag)
        assert previous_hw <= hw <= leader_leo
        assert isr and isr[0] == leader and len(set(isr)) == len(isr)
        for f in isr[1:]:
            assert local_leo[f] >= hw
            # The leader's view: at or past the HW, or not known yet, in which case the HW has not moved.
            assert states[f].log_end_offset >= hw or (states[f].log_end_offset == UNKNOWN_OFFSET and hw == 0)
        for required in [r for r in pending if acks_all_satisfied(r, hw)]:
            pending.remove(required)
            assert all(local_leo[f] >= required for f in isr[1:])
            assert (check_min_isr(len(isr), min_isr, when=AFTER_APPEND) is None) == (len(isr) >= min_isr)


# ==================================================================================================
# §3.6 OffsetsForLeaderEpoch answers


class TestEndOffsetFor:
    ENTRIES = ((0, 0), (2, 10), (5, 30))

    @pytest.mark.parametrize(("requested", "expected"), [
        (5, (5, 42)),                    # latest epoch: the log end offset
        (2, (2, 30)),                    # known older epoch: where the next one starts
        (3, (2, 30)),                    # unknown epoch between: largest epoch below, next start
        (4, (2, 30)),
        (1, (0, 10)),
        (0, (0, 10)),
        (6, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),   # above the latest
        (-1, (UNDEFINED_EPOCH, UNDEFINED_OFFSET)),  # undefined
    ])
    def test_reference_cases(self, requested, expected):
        assert end_offset_for(self.ENTRIES, requested, 42) == expected

    def test_below_every_epoch_answers_the_requested_epoch_and_the_earliest_start(self):
        assert end_offset_for([(3, 100), (4, 150)], 1, 200) == (1, 100)

    def test_empty(self):
        assert end_offset_for([], 0, 10) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)

    def test_entries_must_increase(self):
        with pytest.raises(ValueError):
            end_offset_for([(1, 5), (0, 6)], 1, 10)
        with pytest.raises(ValueError):
            end_offset_for([(0, 5), (1, 5)], 1, 10)

    @settings(max_examples=100, deadline=None)
    @given(st.data())
    def test_agrees_with_leader_epoch_cache(self, data):
        entries = data.draw(epoch_entries())
        leo = data.draw(st.integers(entries[-1][1] if entries else 0, 200))
        with tempfile.TemporaryDirectory() as directory:
            cache = LeaderEpochCache(Path(directory))
            for epoch, start in entries:
                assert cache.assign(epoch, start)
            assert [(e.epoch, e.start_offset) for e in cache.entries] == entries
            for requested in range(-1, (entries[-1][0] if entries else 0) + 3):
                assert end_offset_for(entries, requested, leo) == cache.end_offset_for(requested, leo)


# ==================================================================================================
# §3.6 follower truncation


class TestTruncationOffset:
    def test_same_latest_epoch_truncates_to_the_shorter_log(self):
        # Follower and leader both on epoch 3; the leader's log ends at 20, the follower's at 25.
        assert truncation_offset([(0, 0), (3, 10)], 25, 3, 20) == (20, None)
        assert truncation_offset([(0, 0), (3, 10)], 15, 3, 20) == (15, None)  # never past the follower LEO

    def test_known_older_epoch_truncates_to_its_end(self):
        # The follower's epoch 3 is unknown to the leader, whose answer is epoch 2 ending at 12 (where its
        # epoch 4 starts). The follower knows epoch 2 and it ends at 10 there (its epoch 3 starts at 10).
        entries = [(0, 0), (2, 5), (3, 10)]
        assert truncation_offset(entries, 20, 2, 12) == (10, None)
        assert truncation_offset(entries, 20, 2, 8) == (8, None)

    def test_known_epoch_never_truncates_past_the_follower_leo(self):
        # min(answer end, own end for that epoch, LEO): even if the cache claims epoch 3 starts at 10
        # while the log only reaches 8, the follower truncates to 8, not to 10.
        assert truncation_offset([(0, 0), (2, 5), (3, 10)], 8, 2, 12) == (8, None)

    def test_unknown_epoch_truncates_to_own_end_of_largest_epoch_below_and_asks_again_kip_279(self):
        # Leader answers epoch 1 (ending at 6); the follower never saw epoch 1: its largest epoch below is 0,
        # which ends at 5 where its epoch 2 starts. Truncate to 5 and ask again about epoch 0.
        decision = truncation_offset([(0, 0), (2, 5)], 8, 1, 6)
        assert decision == TruncationDecision(offset=5, next_epoch=0)
        assert decision == (5, 0)

    def test_undefined_answer_falls_back_to_the_high_watermark(self):
        assert truncation_offset([(0, 0)], 10, UNDEFINED_EPOCH, UNDEFINED_OFFSET) == (None, None)
        assert truncation_offset([], 0, UNDEFINED_EPOCH, UNDEFINED_OFFSET) == TruncationDecision(None, None)

    def test_answer_without_epoch_from_an_old_leader_truncates_to_its_offset(self):
        assert truncation_offset([(0, 0)], 10, UNDEFINED_EPOCH, 7) == (7, None)
        assert truncation_offset([(0, 0)], 5, UNDEFINED_EPOCH, 7) == (5, None)

    def test_follower_without_epochs_takes_the_leaders_offset(self):
        assert truncation_offset([], 10, 2, 7) == (7, None)
        assert truncation_offset([], 4, 2, 7) == (4, None)

    def test_answer_epoch_below_all_follower_epochs(self):
        # LeaderEpochFileCache answers (requested, earliest start) there, so the epoch "matches".
        assert truncation_offset([(3, 4), (5, 9)], 12, 1, 6) == (4, None)

    def test_kip_279_multi_round(self):
        """Rapid leader changes: the follower wrote epoch 0 then led epoch 2 (offsets 5-7) while the leader
        had gone through epoch 1 (3-5) and 3 (6-). Two rounds find the true divergence point, 3."""
        leader_entries, leader_leo = [(0, 0), (1, 3), (3, 6)], 9
        follower_entries, follower_leo = [(0, 0), (2, 5)], 8
        rounds = run_truncation(leader_entries, leader_leo, follower_entries, follower_leo)
        assert rounds == [((2, (1, 6)), (5, 0)),   # ask 2: leader says epoch 1 ends at 6; unknown -> 5, ask 0
                          ((0, (0, 3)), (3, None))]  # ask 0: epoch 0 ends at 3 on the leader -> truncate to 3

    @given(st.data())
    def test_properties(self, data):
        entries = data.draw(epoch_entries())
        leo = data.draw(st.integers(entries[-1][1] if entries else 0, 200))
        answer = data.draw(st.one_of(st.just((UNDEFINED_EPOCH, UNDEFINED_OFFSET)),
                                     st.tuples(st.integers(-1, 12), st.integers(0, 200))))
        decision = truncation_offset(entries, leo, *answer)
        if answer[1] == UNDEFINED_OFFSET:
            assert decision == (None, None)
            return
        assert decision.offset is not None and 0 <= decision.offset <= leo
        assert decision.offset <= answer[1] or decision.next_epoch is not None
        if decision.next_epoch is not None:
            # The follower did not know the epoch: after truncating, its latest epoch is the one it asks
            # about next, strictly below the answered one.
            kept = [e for e in entries if e[1] < decision.offset]
            assert kept and kept[-1][0] == decision.next_epoch < answer[0]
            assert answer[0] not in [epoch for epoch, _ in entries]


def run_truncation(leader_entries, leader_leo, follower_entries, follower_leo, max_rounds=50):
    """The follower's OffsetsForLeaderEpoch loop; returns [((asked, answer), decision), ...]."""
    rounds = []
    entries, leo = list(follower_entries), follower_leo
    for _ in range(max_rounds):
        asked = entries[-1][0] if entries else UNDEFINED_EPOCH
        answer = end_offset_for(leader_entries, asked, leader_leo)
        decision = truncation_offset(entries, leo, *answer)
        rounds.append(((asked, answer), tuple(decision)))
        if decision.offset is None:
            return rounds
        leo = decision.offset
        entries = [e for e in entries if e[1] < leo]
        if decision.next_epoch is None:
            return rounds
        assert entries[-1][0] == decision.next_epoch
    raise AssertionError(f"truncation did not converge: {rounds}")


# ==================================================================================================
# Replica histories: random leader changes, crashes and partial replication.


@dataclass
class Replica:
    broker_id: int
    log: list[tuple[int, str]] = field(default_factory=list)  # (leader epoch of the batch, payload)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    hw: int = 0

    @property
    def leo(self) -> int:
        return len(self.log)

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start: int) -> None:
        """LeaderEpochCache.assign: ignore non-increasing epochs, supersede entries at or past start."""
        if self.epochs and epoch <= self.epochs[-1][0]:
            return
        while self.epochs and self.epochs[-1][1] >= start:
            self.epochs.pop()
        self.epochs.append((epoch, start))

    def become_leader(self, epoch: int) -> None:
        self.assign(epoch, self.leo)

    def append_as_leader(self, payload: str) -> None:
        self.log.append((self.epochs[-1][0], payload))

    def truncate(self, offset: int) -> None:
        del self.log[offset:]
        self.epochs = [e for e in self.epochs if e[1] < offset]
        self.hw = min(self.hw, offset)

    def fetch_from(self, leader: Replica, max_records: int | None = None) -> None:
        """Append the leader's records verbatim from our LEO; learn epochs from the batches; set the HW."""
        end = leader.leo if max_records is None else min(leader.leo, self.leo + max_records)
        for offset in range(self.leo, end):
            epoch, payload = leader.log[offset]
            self.assign(epoch, offset)
            self.log.append((epoch, payload))
        self.hw = follower_high_watermark(leader.hw, self.leo)

    def truncate_by_epoch(self, leader: Replica) -> int:
        """§3.6 follower truncation against ``leader``; returns the rounds taken."""
        for rounds in range(1, 50):
            answer = end_offset_for(leader.epochs, self.latest_epoch, leader.leo)
            decision = truncation_offset(self.epochs, self.leo, *answer)
            if decision.offset is None:
                self.truncate(self.hw)
                return rounds
            self.truncate(decision.offset)
            if decision.next_epoch is None:
                return rounds
            assert self.latest_epoch == decision.next_epoch
        raise AssertionError("truncation did not converge")

    def truncate_to_hw(self) -> None:
        """The pre-KIP-101 rule."""
        self.truncate(self.hw)


def common_prefix(a: list, b: list) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_epoch_truncation_always_leaves_a_prefix_of_the_leader(data):
    """Random histories over three replicas (clean and unclean elections, crashes of leaders and followers,
    partial fetches): every follower truncation ends exactly at the longest common prefix with the
    leader, so logs never diverge and nothing the leader also has is thrown away. Followers truncate when
    a leader is elected or when they restart under a live leader; a replica restarting while there is
    no leader keeps its log until the next election (which is how KIP-279's unknown epochs arise)."""
    replicas = [Replica(i) for i in range(3)]
    alive = {0, 1, 2}
    epoch, leader = 0, replicas[0]
    leader.become_leader(epoch)
    serial = 0

    most_rounds = 1

    def truncate_against_leader(follower: Replica) -> None:
        nonlocal most_rounds
        expect = common_prefix(follower.log, leader.log)
        most_rounds = max(most_rounds, follower.truncate_by_epoch(leader))
        assert follower.log == leader.log[:expect]

    for _ in range(data.draw(st.integers(1, 50))):
        step = data.draw(st.sampled_from(["append", "fetch", "fetch", "crash", "restart", "elect", "elect"]))
        followers = [r for r in replicas if r is not leader and r.broker_id in alive]
        if step == "append" and leader is not None:
            for _ in range(data.draw(st.integers(1, 3))):
                serial += 1
                leader.append_as_leader(f"m{serial}")
        elif step == "fetch" and leader is not None and followers:
            data.draw(st.sampled_from(followers)).fetch_from(leader, data.draw(st.integers(0, 4)))
        elif step == "crash" and alive:
            down = replicas[data.draw(st.sampled_from(sorted(alive)))]
            alive.discard(down.broker_id)
            if down is leader:
                leader = None
        elif step == "restart" and len(alive) < 3:
            back = replicas[data.draw(st.sampled_from(sorted({0, 1, 2} - alive)))]
            alive.add(back.broker_id)
            if leader is not None:
                truncate_against_leader(back)
        elif step == "elect" and alive:
            epoch += 1
            leader = replicas[data.draw(st.sampled_from(sorted(alive)))]  # any live replica: possibly unclean
            leader.become_leader(epoch)
            for r in replicas:
                if r is not leader and r.broker_id in alive:
                    truncate_against_leader(r)
        for r in replicas:
            assert r.epochs == sorted(set(r.epochs))
            assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(r.epochs, r.epochs[1:]))
    target(most_rounds, label="OffsetsForLeaderEpoch rounds")  # steer towards KIP-279 multi-round histories


def test_kip_279_history_needs_two_rounds_and_loses_nothing_the_leader_has():
    """KAFKA-6361 / KIP-279: rapid leader changes leave a follower whose latest epoch the leader never saw
    and the leader's answer names an epoch the follower never saw."""
    r0, r1, r2 = Replica(0), Replica(1), Replica(2)
    r0.become_leader(0)
    for payload in ("a", "b", "c"):
        r0.append_as_leader(payload)
    r1.fetch_from(r0)
    r2.fetch_from(r0)                  # everyone has a, b, c (epoch 0)
    r1.become_leader(1)                # r0 briefly unreachable; r1 leads epoch 1
    r1.append_as_leader("d")
    r2.fetch_from(r1)                  # r2 gets d, then r2 and r1 crash
    r0.become_leader(2)                # r0 (unclean) leads epoch 2 without d
    r0.append_as_leader("e")
    r0.append_as_leader("f")           # r0 crashes; r2 restarts alone and leads epoch 3
    r2.become_leader(3)
    r2.append_as_leader("g")
    assert r0.epochs == [(0, 0), (2, 3)] and r2.epochs == [(0, 0), (1, 3), (3, 4)]
    # r0 restarts as r2's follower. Round 1: "epoch 2?" -> "epoch 1 ends at 4"; r0 has no epoch 1, so it
    # truncates to where its own epoch 2 starts (3) and asks about epoch 0. Round 2: "epoch 0 ends at 3".
    assert run_truncation(r2.epochs, r2.leo, r0.epochs, r0.leo) == [((2, (1, 4)), (3, 0)), ((0, (0, 3)), (3, None))]
    single_round = Replica(0, list(r0.log), list(r0.epochs))
    assert r0.truncate_by_epoch(r2) == 2
    r0.fetch_from(r2)
    assert r0.log == r2.log and [p for _, p in r0.log] == ["a", "b", "c", "d", "g"]
    # The single-round rule (KIP-101 alone: truncate to the leader's offset) would cut at 4 and keep "e" at
    # offset 3 where the leader has "d": divergence.
    single_round.truncate(min(end_offset_for(r2.epochs, single_round.latest_epoch, r2.leo)[1], single_round.leo))
    single_round.fetch_from(r2)
    assert [p for _, p in single_round.log] == ["a", "b", "c", "e", "g"] != [p for _, p in r2.log]


# ==================================================================================================
# KIP-101 replayed: HW-based truncation loses acknowledged data and diverges; epoch-based does not.


def two_replicas_with_m2_acknowledged_but_follower_hw_lagging():
    """KIP-101 scenario 1 up to the crash. B leads epoch 0, A follows, ISR {B, A}, acks=all.

    m1 and m2 are both acknowledged to the producer (B's HW reached 2 when A fetched at offset 2) but A
    crashes before the fetch response carrying HW 2 arrives, so A's own HW is still 1.
    """
    a, b = Replica(broker_id=1), Replica(broker_id=2)
    isr, now, acked = (2, 1), 0, []
    b.become_leader(0)
    states = {1: follower_state_on_become_leader(1, True, b.leo, now)}

    def produce(payload: str) -> int:
        assert check_min_isr(len(isr), 2, when=BEFORE_APPEND) is None
        b.append_as_leader(payload)
        return b.leo  # required offset

    def a_fetches(deliver_response: bool = True) -> None:
        nonlocal now
        now += 10
        states[1] = update_follower_fetch(states[1], a.leo, now, b.leo)
        b.hw = high_watermark(b.hw, b.leo, isr, states, now, LAG)
        if deliver_response:
            a.fetch_from(b)

    def complete(required: int, payload: str) -> None:
        if acks_all_satisfied(required, b.hw):
            assert check_min_isr(len(isr), 2, when=AFTER_APPEND) is None
            acked.append(payload)

    r1 = produce("m1")
    a_fetches()                       # A gets m1; B's HW stays 0 (A asked for 0)
    assert (b.hw, a.leo, a.hw) == (0, 1, 0)
    a_fetches()                       # A asked for 1: B's HW -> 1, m1 acknowledged; A learns HW 1
    complete(r1, "m1")
    assert (b.hw, a.hw) == (1, 1)
    r2 = produce("m2")
    a_fetches()                       # A gets m2 but HW in the response is still 1
    assert (b.hw, a.leo, a.hw) == (1, 2, 1)
    a_fetches(deliver_response=False)  # A asked for 2: B's HW -> 2, m2 acknowledged... and A crashes
    complete(r2, "m2")
    assert acked == ["m1", "m2"] and b.hw == 2
    assert a.log == b.log and a.hw == 1  # A has m2 but its HW lags by one fetch round
    return a, b, acked


def test_kip_101_scenario_1_hw_truncation_loses_an_acknowledged_record():
    a, b, acked = two_replicas_with_m2_acknowledged_but_follower_hw_lagging()
    a.truncate_to_hw()                   # old rule on restart: truncate to the (stale) HW
    assert [p for _, p in a.log] == ["m1"]
    # B dies before A refetches m2; A was in the ISR, so the controller elects it (clean election).
    a.become_leader(1)
    a.append_as_leader("m3")             # acks=all with ISR {A}, min.insync.replicas 1
    assert "m2" in acked and "m2" not in [p for _, p in a.log]  # an acknowledged record is gone
    # B comes back as a follower and, under the old rule, truncates to its own HW (2): nothing.
    b.truncate_to_hw()
    b.fetch_from(a)
    assert [p for _, p in b.log] == ["m1", "m2"] and [p for _, p in a.log] == ["m1", "m3"]  # and diverged


def test_kip_101_scenario_1_epoch_truncation_keeps_acknowledged_records():
    a, b, acked = two_replicas_with_m2_acknowledged_but_follower_hw_lagging()
    # A restarts as B's follower: no HW truncation; it asks B about its latest epoch 0. B answers (0, 2).
    assert end_offset_for(b.epochs, a.latest_epoch, b.leo) == (0, 2)
    assert a.truncate_by_epoch(b) == 1
    assert [p for _, p in a.log] == ["m1", "m2"]
    # B dies; A is elected for epoch 1 and takes m3 at offset 2.
    a.become_leader(1)
    assert a.epochs == [(0, 0), (1, 2)]
    a.append_as_leader("m3")
    assert all(p in [q for _, q in a.log] for p in acked)
    # B comes back as A's follower: asks about epoch 0, A answers "epoch 0 ended at 2": nothing to cut.
    assert end_offset_for(a.epochs, b.latest_epoch, a.leo) == (0, 2)
    b.truncate_by_epoch(a)
    b.fetch_from(a)
    assert b.log == a.log and [p for _, p in a.log] == ["m1", "m2", "m3"]


def leader_with_an_uncommitted_record_then_power_loss():
    """KIP-101 scenario 2 up to the outage. A leads epoch 0 with m1, m2; B (out of the ISR, acks=1) only
    replicated m1. A's HW is 2 (ISR {A}), B's is 1. Both lose power; B restarts first and is elected for
    epoch 1 (it is the only live replica), taking m3 at offset 1. Then A restarts as B's follower."""
    a, b = Replica(broker_id=1), Replica(broker_id=2)
    a.become_leader(0)
    a.append_as_leader("m1")
    a.hw = 1
    b.fetch_from(a)
    a.append_as_leader("m2")
    a.hw = high_watermark(1, a.leo, (1,), {}, 0, LAG)
    assert (a.hw, b.hw, b.leo) == (2, 1, 1)
    b.become_leader(1)
    b.append_as_leader("m3")
    return a, b


def test_kip_101_scenario_2_hw_truncation_diverges():
    a, b = leader_with_an_uncommitted_record_then_power_loss()
    a.truncate_to_hw()  # HW 2: nothing truncated
    a.fetch_from(b)     # nothing to fetch: A's LEO already equals B's
    assert a.leo == b.leo == 2 and a.log[1] != b.log[1]  # same offset, different records, forever


def test_kip_101_scenario_2_epoch_truncation_converges():
    a, b = leader_with_an_uncommitted_record_then_power_loss()
    assert end_offset_for(b.epochs, a.latest_epoch, b.leo) == (0, 1)  # epoch 0 ended at 1 on B
    a.truncate_by_epoch(b)
    assert [p for _, p in a.log] == ["m1"]  # the never-committed m2 goes
    a.fetch_from(b)
    assert a.log == b.log


# ==================================================================================================
# strategies


def follower_maps(exclude: int, ids=None):
    ids = st.integers(0, 6) if ids is None else ids
    state = st.builds(lambda leo, caught_up, prev_leo, prev_time: (leo, caught_up, prev_leo, prev_time),
                      st.integers(-1, 60), st.integers(0, 100_000), st.integers(0, 60), st.integers(0, 100_000))
    return st.dictionaries(ids.filter(lambda r: r != exclude), state, max_size=5).map(
        lambda d: {r: FollowerState(r, *fields) for r, fields in d.items()})


def epoch_entries():
    """Strictly increasing (epoch, start_offset) lists, as a LeaderEpochCache holds them."""
    return st.lists(st.tuples(st.integers(1, 3), st.integers(1, 20)), max_size=6).map(_accumulate)


def _accumulate(steps):
    entries, epoch, start = [], -1, -1
    for epoch_step, start_step in steps:
        epoch += epoch_step
        start = start + start_step if entries else start_step - 1
        entries.append((epoch, start))
    return entries



# -- a quiet partition's skipped fetches ----------------------------------------------------------


def test_a_skipped_fetch_at_the_log_end_is_recorded_as_a_fetch_at_that_offset():
    state = update_follower_fetch(FollowerState(2), 40, 1_000, 40)  # caught up at 1 s
    assert caught_up_while_quiet(state, 50_000) == FollowerState(2, 40, 50_000, 40, 50_000)
    # the same as a fetch at 50 s from offset 40 while the leader's LEO was 40
    assert caught_up_while_quiet(state, 50_000) == update_follower_fetch(state, 40, 50_000, 40)


def test_a_skipped_fetch_changes_nothing_when_older_or_when_the_follower_was_behind():
    state = update_follower_fetch(FollowerState(2), 40, 9_000, 40)
    assert caught_up_while_quiet(state, 9_000) is state and caught_up_while_quiet(state, 5_000) is state
    behind = update_follower_fetch(FollowerState(2), 30, 9_000, 40)  # not at the leader's end when last seen
    assert caught_up_while_quiet(behind, 50_000) is behind


@given(st.integers(-1, 100), st.integers(0, 100), st.integers(0, 10**6), st.integers(0, 10**6),
       st.integers(0, 10**6))
def test_a_skipped_fetch_never_moves_times_back_nor_the_follower(offset, leader_end, caught_up, last_fetch, at):
    state = FollowerState(2, offset, caught_up, leader_end, last_fetch)
    after = caught_up_while_quiet(state, at)
    assert after.log_end_offset == offset and after.replica_id == 2
    assert after.last_caught_up_time_ms >= caught_up and after.last_fetch_time_ms >= last_fetch
    assert after == state or (offset == leader_end and at > last_fetch and after.last_caught_up_time_ms == max(caught_up, at))
