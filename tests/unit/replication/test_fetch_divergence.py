"""KIP-320 as pure decisions: the leader's ``fetch_divergence`` and the follower's ``truncation_offset``.

Hand cases for every rule; an exhaustive comparison with an oracle written from the definition (the
fetcher is consistent when the leader has its last fetched epoch and that epoch reaches the fetch
offset); and a simulation of replicas whose logs are built by leader changes, appends and partial
replication, where a follower that fetches with its last epoch and truncates on every diverging
answer ends with exactly the leader's log.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.protocol.errors import ErrorCode
from brokers.replication.isr import NO_DIVERGENCE, FetchDivergence, end_offset_for, fetch_divergence, truncation_offset

OUT_OF_RANGE = FetchDivergence(ErrorCode.OFFSET_OUT_OF_RANGE, None)
LEADER = [(0, 0), (3, 3), (5, 8)]  # epoch 0 wrote 0-2, epoch 3 wrote 3-7, epoch 5 writes from 8
LEADER_LEO = 10


def check(last_fetched_epoch: int, fetch_offset: int, log_start_offset: int = 0) -> FetchDivergence:
    answer = end_offset_for(LEADER, last_fetched_epoch, LEADER_LEO)
    return fetch_divergence(last_fetched_epoch, fetch_offset, log_start_offset, answer)


@pytest.mark.parametrize("epoch, offset, expected", [
    (-1, 0, NO_DIVERGENCE),  # no epoch: consumers of 2.8 and librdkafka; a follower with no epoch yet
    (-1, 99, NO_DIVERGENCE),  # (the read itself decides whether 99 is out of range)
    (0, 3, NO_DIVERGENCE),  # epoch 0 ends at 3 here
    (0, 1, NO_DIVERGENCE),
    (3, 8, NO_DIVERGENCE),
    (5, 10, NO_DIVERGENCE),  # the latest epoch ends at the log end
    (5, 9, NO_DIVERGENCE),
    (0, 4, FetchDivergence(ErrorCode.NONE, (0, 3))),  # the fetcher has more of epoch 0 than we do
    (3, 9, FetchDivergence(ErrorCode.NONE, (3, 8))),
    (5, 11, FetchDivergence(ErrorCode.NONE, (5, 10))),  # more of our own latest epoch than we have
    (4, 8, FetchDivergence(ErrorCode.NONE, (3, 8))),  # we never had epoch 4: 3 is the largest below it
    (4, 5, FetchDivergence(ErrorCode.NONE, (3, 8))),  # ... even when the offset is not past 3's end
    (1, 2, FetchDivergence(ErrorCode.NONE, (0, 3))),
    (6, 10, OUT_OF_RANGE),  # an epoch above our latest: no end offset to compare with
])
def test_hand_cases(epoch, offset, expected):
    assert check(epoch, offset) == expected


def test_an_epoch_below_all_of_ours_ends_where_our_first_epoch_starts():
    entries = [(2, 5), (4, 9)]
    assert fetch_divergence(1, 5, 5, end_offset_for(entries, 1, 12)) == NO_DIVERGENCE
    assert fetch_divergence(1, 6, 5, end_offset_for(entries, 1, 12)) == FetchDivergence(ErrorCode.NONE, (1, 5))


def test_below_the_log_start_is_out_of_range_whatever_the_epochs_say():
    assert check(0, 1, log_start_offset=2) == OUT_OF_RANGE
    assert check(4, 1, log_start_offset=2) == OUT_OF_RANGE  # would diverge otherwise
    assert check(0, 2, log_start_offset=2) == NO_DIVERGENCE


def test_no_entries_is_out_of_range():
    assert fetch_divergence(0, 0, 0, end_offset_for([], 0, 0)) == OUT_OF_RANGE


def oracle(entries, log_end_offset, log_start_offset, last_fetched_epoch, fetch_offset) -> FetchDivergence:
    """From the definition: where each of our epochs ends, and whether the fetcher's epoch is one of them."""
    if last_fetched_epoch < 0:
        return NO_DIVERGENCE
    if not entries or last_fetched_epoch > entries[-1][0] or fetch_offset < log_start_offset:
        return OUT_OF_RANGE
    ends = {epoch: (entries[i + 1][1] if i + 1 < len(entries) else log_end_offset)
            for i, (epoch, _) in enumerate(entries)}
    if last_fetched_epoch in ends:
        end = ends[last_fetched_epoch]
        return NO_DIVERGENCE if end >= fetch_offset else FetchDivergence(ErrorCode.NONE, (last_fetched_epoch, end))
    below = [epoch for epoch, _ in entries if epoch < last_fetched_epoch]
    if not below:  # below all our epochs: it ends where our first one starts
        first_start = entries[0][1]
        return (NO_DIVERGENCE if first_start >= fetch_offset
                else FetchDivergence(ErrorCode.NONE, (last_fetched_epoch, first_start)))
    return FetchDivergence(ErrorCode.NONE, (below[-1], ends[below[-1]]))


def histories():
    """Every epoch history with up to three epochs among 0-4 starting at offsets among 0-6."""
    for size in range(4):
        for epochs in itertools.combinations(range(5), size):
            for starts in itertools.combinations(range(7), size):
                yield list(zip(epochs, starts))


def test_exhaustively_against_the_definition():
    cases = 0
    for entries in histories():
        first_start = entries[-1][1] if entries else 0
        for log_end_offset in (first_start, first_start + 2):
            for log_start_offset, epoch, fetch_offset in itertools.product((0, 2), range(-1, 6), range(10)):
                answer = end_offset_for(entries, epoch, log_end_offset)
                got = fetch_divergence(epoch, fetch_offset, log_start_offset, answer)
                assert got == oracle(entries, log_end_offset, log_start_offset, epoch, fetch_offset), (
                    entries, log_end_offset, log_start_offset, epoch, fetch_offset)
                cases += 1
    assert cases > 100_000


# -- simulation -------------------------------------------------------------------------------------
@dataclass
class Replica:
    """A replica's log as the epoch of each record, and its epoch cache with LeaderEpochCache's rules."""

    records: list[int] = field(default_factory=list)
    entries: list[tuple[int, int]] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start: int) -> None:
        if self.entries and epoch <= self.entries[-1][0]:
            return
        while self.entries and self.entries[-1][1] >= start:
            self.entries.pop()
        self.entries.append((epoch, start))

    def append(self, epochs: list[int]) -> None:
        for epoch in epochs:
            self.assign(epoch, len(self.records))
            self.records.append(epoch)

    def truncate_to(self, offset: int) -> None:
        """Log.truncate_to: at or past the end only epoch entries starting at the end go."""
        self.records = self.records[:offset]
        self.entries = [(e, s) for e, s in self.entries if s < min(offset, len(self.records))]


def fetch_until_caught_up(leader: Replica, follower: Replica) -> int:
    """The follower's fetch loop against a leader that does not move: returns the rounds it took."""
    for rounds in range(1, 50):
        epoch, fetch_offset = follower.latest_epoch, follower.log_end_offset
        answer = fetch_divergence(epoch, fetch_offset, 0, end_offset_for(leader.entries, epoch, leader.log_end_offset))
        assert answer.error == ErrorCode.NONE, (leader, follower)
        if answer.diverging_epoch is None:
            follower.append(leader.records[fetch_offset:])
            return rounds
        decision = truncation_offset(follower.entries, fetch_offset, *answer.diverging_epoch)
        follower.truncate_to(fetch_offset if decision.offset is None else decision.offset)
    raise AssertionError(f"no convergence: {leader} {follower}")


actions = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("elect"), st.integers(0, 2)),
    st.tuples(st.just("replicate"), st.integers(0, 2), st.integers(0, 12)),
), max_size=25)


@given(actions, st.integers(0, 2), st.integers(0, 2))
@settings(max_examples=500, deadline=None)
def test_a_follower_truncating_on_diverging_answers_ends_with_the_leaders_log(steps, final_leader, follower_id):
    replicas = [Replica() for _ in range(3)]
    leader, epoch = 0, 0
    replicas[0].assign(0, 0)
    for step in steps:
        if step[0] == "append":
            replicas[leader].append([epoch] * step[1])
        elif step[0] == "elect":  # clean or not: any replica may become the next leader
            leader, epoch = step[1], epoch + 1
            replicas[leader].assign(epoch, replicas[leader].log_end_offset)
        elif step[1] != leader:  # a follower copied a prefix of the leader's log, as fetching does
            source, copy = replicas[leader], replicas[step[1]]
            copy.records, copy.entries = [], []
            copy.append(source.records[:step[2]])
    if final_leader != leader:
        leader, epoch = final_leader, epoch + 1
        replicas[leader].assign(epoch, replicas[leader].log_end_offset)
    replicas[leader].append([epoch])
    if follower_id == leader:
        return
    follower = replicas[follower_id]
    fetch_until_caught_up(replicas[leader], follower)
    assert follower.records == replicas[leader].records
    assert follower.entries == [(e, s) for e, s in replicas[leader].entries if s < follower.log_end_offset]


def test_the_kip_320_scenario_in_one_diverging_round():
    """The old leader wrote offsets 3-4 at epoch 1 that no one copied; the new leader wrote 3-5 at 2."""
    old, new = Replica(), Replica()
    old.append([0, 0, 0, 1, 1])
    new.append([0, 0, 0])
    new.assign(2, 3)
    new.append([2, 2, 2])
    assert fetch_until_caught_up(new, old) == 2  # one diverging answer (1 -> (0, 3)), then the records
    assert old.records == [0, 0, 0, 2, 2, 2] and old.entries == [(0, 0), (2, 3)]


def test_a_leader_epoch_that_wrote_nothing_is_dropped_not_resent_forever():
    old, new = Replica(), Replica()
    old.append([0, 0])
    old.assign(1, 2)  # became leader at epoch 1, then lost leadership before writing
    new.append([0, 0])
    new.assign(2, 2)
    new.append([2])
    assert fetch_until_caught_up(new, old) == 2
    assert old.records == [0, 0, 2] and old.entries == [(0, 0), (2, 2)]
