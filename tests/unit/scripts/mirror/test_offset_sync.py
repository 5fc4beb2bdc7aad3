"""Offset syncs (scripts/tools/kafka_mirror_maker/offset_sync.py): which mirrored records become syncs
(Kafka 2.8's rule plus downstream gaps and Kafka 3.5's staleness bound), pending syncs at commit, and the
translation of consumer group offsets: exact between syncs, conservative after the last, never skipping a
record; checked by hand and against simulated mirrors with gaps at both ends, commits and restarts."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scripts.tools.kafka_mirror_maker.offset_sync import (MAX_SYNCS_PER_PARTITION, OFFSET_LAG_MAX_DEFAULT,
                                                          OffsetSyncStore, PartitionSyncState, reread_bound)
from scripts.tools.kafka_mirror_maker.records import OffsetSync


def run(state: PartitionSyncState, pairs) -> list[tuple[int, int]]:
    """The pairs ``state.update`` asks to emit."""
    return [pair for pair in pairs if state.update(*pair)]


def store_of(*pairs, topic="t", partition=0, cap=MAX_SYNCS_PER_PARTITION) -> OffsetSyncStore:
    store = OffsetSyncStore(cap)
    for upstream, downstream in pairs:
        store.add(OffsetSync(topic, partition, upstream, downstream))
    return store


# -- PartitionSyncState.update --------------------------------------------------------------------------

def test_contiguous_records_sync_only_the_first():
    state = PartitionSyncState(100)
    assert run(state, [(i, i + 50) for i in range(100)]) == [(0, 50)]


def test_first_record_is_always_a_sync_wherever_it_starts():
    assert run(PartitionSyncState(100), [(500, 7), (501, 8)]) == [(500, 7)]
    assert run(PartitionSyncState(100), [(0, 0), (1, 1)]) == [(0, 0)]


def test_upstream_gap_is_a_sync():
    """Transaction markers or compaction at the source: the next record is a sync (Kafka 2.8's rule)."""
    state = PartitionSyncState(100)
    assert run(state, [(0, 0), (1, 1), (2, 2), (4, 3), (5, 4), (10, 5), (11, 6)]) == [(0, 0), (4, 3), (10, 5)]


def test_downstream_gap_is_a_sync():
    """Markers written at the target by an exactly-once mirror: zkafka's addition to Kafka 2.8's rule."""
    state = PartitionSyncState(100)
    assert run(state, [(0, 0), (1, 1), (2, 3), (3, 4), (4, 6)]) == [(0, 0), (2, 3), (4, 6)]


def test_small_downstream_gap_under_kafka_lag_is_still_a_sync():
    """Kafka 2.8 would wait for a drift of offset.lag.max; a gap of 1 already breaks exact translation."""
    state = PartitionSyncState(100)
    assert state.update(0, 0)
    assert state.update(1, 2)


def test_downstream_going_backwards_is_a_sync():
    state = PartitionSyncState(100)
    assert run(state, [(0, 10), (1, 11), (2, 5), (3, 6)]) == [(0, 10), (2, 5)]


def test_duplicate_downstream_offset_is_a_sync():
    state = PartitionSyncState(100)
    assert run(state, [(0, 10), (1, 11), (2, 11)]) == [(0, 10), (2, 11)]


def test_upstream_going_backwards_is_a_sync():
    state = PartitionSyncState(100)
    assert run(state, [(5, 0), (6, 1), (3, 2), (4, 3)]) == [(5, 0), (3, 2)]


def test_lag_rule_emits_when_translation_would_be_too_stale():
    """Kafka 3.5: sync when d - (last sync's d + 1) >= offset_lag_max."""
    state = PartitionSyncState(3)
    syncs = run(state, [(i, i) for i in range(12)])
    assert syncs == [(0, 0), (4, 4), (8, 8)]


def test_lag_rule_counts_from_the_last_sync_whatever_made_it():
    state = PartitionSyncState(3)
    syncs = run(state, [(0, 0), (1, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6), (8, 7)])
    assert syncs == [(0, 0), (3, 2), (7, 6)]


@pytest.mark.parametrize("lag", [0, -1])
def test_lag_zero_syncs_every_record(lag):
    state = PartitionSyncState(lag)
    assert run(state, [(i, i) for i in range(5)]) == [(i, i) for i in range(5)]


def test_lag_one_syncs_every_other_record():
    state = PartitionSyncState(1)
    assert run(state, [(i, i) for i in range(6)]) == [(0, 0), (2, 2), (4, 4)]


def test_default_lag_is_kafkas():
    assert OFFSET_LAG_MAX_DEFAULT == 100
    state = PartitionSyncState()
    assert state.offset_lag_max == 100
    assert run(state, [(i, i) for i in range(250)]) == [(0, 0), (101, 101), (202, 202)]


def test_update_tracks_previous_and_last_sync():
    state = PartitionSyncState(100)
    state.update(7, 3)
    state.update(8, 4)
    assert (state.previous_upstream_offset, state.previous_downstream_offset) == (8, 4)
    assert (state.last_sync_upstream_offset, state.last_sync_downstream_offset) == (7, 3)
    assert "previous=(8, 4)" in repr(state) and "last_sync=(7, 3)" in repr(state)


# -- pending and mark_synced ----------------------------------------------------------------------------

def test_pending_is_none_before_any_record():
    assert PartitionSyncState(100).pending() is None


def test_pending_is_none_right_after_a_sync():
    state = PartitionSyncState(100)
    assert state.update(0, 0)
    assert state.pending() is None


def test_pending_is_the_last_record_not_emitted():
    state = PartitionSyncState(100)
    run(state, [(0, 0), (1, 1), (2, 2)])
    assert state.pending() == (2, 2)
    state.update(3, 3)
    assert state.pending() == (3, 3)


def test_mark_synced_clears_pending_and_restarts_the_lag_count():
    state = PartitionSyncState(3)
    run(state, [(0, 0), (1, 1), (2, 2)])
    state.mark_synced(*state.pending())
    assert state.pending() is None
    assert run(state, [(3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]) == [(6, 6)]


def test_a_gap_sync_after_pending_clears_it():
    state = PartitionSyncState(100)
    run(state, [(0, 0), (1, 1)])
    assert state.pending() == (1, 1)
    assert state.update(5, 2)
    assert state.pending() is None


def test_mark_synced_of_an_older_pair_leaves_the_latest_pending():
    state = PartitionSyncState(100)
    run(state, [(0, 0), (1, 1), (2, 2)])
    state.mark_synced(1, 1)
    assert state.pending() == (2, 2)
    assert (state.last_sync_upstream_offset, state.last_sync_downstream_offset) == (1, 1)


def test_contiguity_is_with_records_seen_not_with_marked_syncs():
    """No record was seen before (5, 10): a gap from nothing, so it is a sync despite the marked (4, 9)."""
    state = PartitionSyncState(100)
    state.mark_synced(4, 9)
    assert state.pending() is None
    assert state.update(5, 10)
    assert not state.update(6, 11)


# -- OffsetSyncStore.translate --------------------------------------------------------------------------

def test_translate_without_syncs():
    store = OffsetSyncStore()
    assert store.translate("t", 0, 0) is None
    assert store.latest("t", 0) is None
    assert store.syncs("t", 0) == ()
    assert store.partitions() == []


def test_translate_exact_sync():
    store = store_of((10, 100), (20, 105))
    assert store.translate("t", 0, 10) == 100
    assert store.translate("t", 0, 20) == 105


def test_translate_before_first_sync_is_none():
    store = store_of((10, 100))
    assert store.translate("t", 0, 9) is None
    assert store.translate("t", 0, 0) is None
    assert store.translate("t", 0, -1) is None


def test_translate_between_syncs_is_contiguous():
    store = store_of((10, 100), (20, 110))
    assert [store.translate("t", 0, g) for g in range(10, 21)] == list(range(100, 111))


def test_translate_between_syncs_never_passes_the_next_sync():
    """Records 10..14 at 100..104, then an upstream gap: 15..19 are markers, 20 is at 105."""
    store = store_of((10, 100), (20, 105))
    assert [store.translate("t", 0, g) for g in range(10, 21)] == [100, 101, 102, 103, 104, 105, 105, 105, 105,
                                                                   105, 105]


def test_translate_with_downstream_gaps():
    """Records 0..4 at 0..4, a marker at 5, records 5..9 at 6..10."""
    state, store = PartitionSyncState(100), OffsetSyncStore()
    for upstream in range(10):
        downstream = upstream if upstream < 5 else upstream + 1
        if state.update(upstream, downstream):
            store.add(OffsetSync("t", 0, upstream, downstream))
    assert store.syncs("t", 0) == (OffsetSync("t", 0, 0, 0), OffsetSync("t", 0, 5, 6))
    assert [store.translate("t", 0, g) for g in range(6)] == [0, 1, 2, 3, 4, 6]


def test_translate_after_last_sync_is_one_past_it():
    store = store_of((10, 100), (20, 110))
    assert store.translate("t", 0, 21) == 111
    assert store.translate("t", 0, 25) == 111
    assert store.translate("t", 0, 10**12) == 111


def test_translate_clamps_to_a_lower_next_sync():
    """After a restart, a later-upstream sync may sit lower downstream: translating never passes it."""
    store = store_of((0, 0), (5, 10), (9, 9))
    assert store.translate("t", 0, 7) == 9
    assert store.translate("t", 0, 9) == 9
    assert store.translate("t", 0, 6) == 9


def test_translate_is_per_partition():
    store = store_of((0, 100), topic="a", partition=0)
    store.add(OffsetSync("a", 1, 0, 200))
    store.add(OffsetSync("b", 0, 0, 300))
    assert store.translate("a", 0, 0) == 100
    assert store.translate("a", 1, 0) == 200
    assert store.translate("b", 0, 0) == 300
    assert store.translate("b", 1, 0) is None
    assert store.partitions() == [("a", 0), ("a", 1), ("b", 0)]


# -- OffsetSyncStore.add --------------------------------------------------------------------------------

def test_out_of_order_adds_are_sorted():
    store = store_of((20, 110), (0, 0), (10, 100), (5, 5))
    assert [s.upstream_offset for s in store.syncs("t", 0)] == [0, 5, 10, 20]
    assert store.latest("t", 0) == OffsetSync("t", 0, 20, 110)
    assert store.translate("t", 0, 7) == 7


def test_duplicate_adds_are_harmless():
    store = store_of((10, 100), (10, 100), (10, 100))
    assert store.syncs("t", 0) == (OffsetSync("t", 0, 10, 100),)


def test_last_read_wins_for_the_same_upstream_offset():
    store = store_of((5, 6), (9, 20), (5, 12))
    assert store.syncs("t", 0) == (OffsetSync("t", 0, 5, 12), OffsetSync("t", 0, 9, 20))
    assert store.translate("t", 0, 5) == 12
    store.add(OffsetSync("t", 0, 9, 3))
    assert store.latest("t", 0) == OffsetSync("t", 0, 9, 3)


def test_negative_offsets_are_ignored():
    store = OffsetSyncStore()
    assert not store.add(OffsetSync("t", 0, -1, -1))
    assert not store.add(OffsetSync("t", 0, 3, -1))
    assert not store.add(OffsetSync("t", 0, -1, 3))
    assert store.add(OffsetSync("t", 0, 0, 0))
    assert store.syncs("t", 0) == (OffsetSync("t", 0, 0, 0),)


def test_cap_drops_the_lowest_upstream_offsets():
    store = store_of(*[(i * 10, i * 10) for i in range(8)], cap=5)
    assert [s.upstream_offset for s in store.syncs("t", 0)] == [30, 40, 50, 60, 70]
    assert store.translate("t", 0, 29) is None
    assert store.translate("t", 0, 35) == 35


def test_cap_drops_a_late_sync_older_than_all_kept():
    store = store_of((10, 10), (20, 20), cap=2)
    store.add(OffsetSync("t", 0, 5, 5))
    assert [s.upstream_offset for s in store.syncs("t", 0)] == [10, 20]


def test_replacing_does_not_count_against_the_cap():
    store = store_of((10, 10), (20, 20), cap=2)
    store.add(OffsetSync("t", 0, 10, 11))
    assert store.syncs("t", 0) == (OffsetSync("t", 0, 10, 11), OffsetSync("t", 0, 20, 20))


def test_default_cap():
    assert MAX_SYNCS_PER_PARTITION == 1024
    store = store_of(*[(i, i) for i in range(1100)])
    assert len(store.syncs("t", 0)) == 1024
    assert store.syncs("t", 0)[0].upstream_offset == 1100 - 1024
    assert store.max_syncs_per_partition == 1024


def test_cap_must_be_positive():
    with pytest.raises(ValueError, match="max_syncs_per_partition"):
        OffsetSyncStore(0)


# -- reread_bound ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("sync_upstream, upstream, bound", [(10, 10, 0), (10, 11, 0), (10, 12, 1), (10, 25, 14),
                                                            (10, 5, 0)])
def test_reread_bound(sync_upstream, upstream, bound):
    assert reread_bound(sync_upstream, upstream) == bound


# -- simulated mirrors ----------------------------------------------------------------------------------

class Mirror:
    """A mirror of one partition: upstream records (offsets with gaps) copied in order to a remote log with
    markers, source offsets committed now and then, restarts from the last commit; every sync delivered."""

    def __init__(self, records: list[int], lag: int) -> None:
        self.records, self.lag = records, lag
        self.copies: dict[int, list[int]] = defaultdict(list)  # upstream offset -> downstream offsets
        self.syncs: list[OffsetSync] = []
        self.log_end = self.next = self.committed = 0
        self.state = PartitionSyncState(lag)

    def write(self, markers: int) -> None:
        if self.next == len(self.records):
            return
        self.log_end += markers
        upstream, downstream = self.records[self.next], self.log_end
        self.copies[upstream].append(downstream)
        self.log_end += 1
        self.next += 1
        if self.state.update(upstream, downstream):
            self.syncs.append(OffsetSync("t", 0, upstream, downstream))

    def commit(self) -> None:
        pending = self.state.pending()
        if pending is not None:
            self.syncs.append(OffsetSync("t", 0, *pending))
            self.state.mark_synced(*pending)
        self.committed = self.next

    def restart(self) -> None:
        self.next = self.committed
        self.state = PartitionSyncState(self.lag)


steps = st.lists(st.one_of(st.tuples(st.just("write"), st.sampled_from([0] * 6 + [1, 2, 5])),
                           st.tuples(st.just("commit")), st.tuples(st.just("restart"))), max_size=120)
upstream_gaps = st.lists(st.sampled_from([1] * 6 + [2, 3, 10]), min_size=1, max_size=60)


def mirror_of(gaps: list[int], plan, lag: int) -> Mirror:
    records = [sum(gaps[:i + 1]) for i in range(len(gaps))]
    mirror = Mirror(records, lag)
    for step in plan:
        if step[0] == "write":
            mirror.write(step[1])
        else:
            getattr(mirror, step[0])()
    return mirror


def assert_never_skips(mirror: Mirror, store: OffsetSyncStore) -> None:
    """Every record at or after g has a copy at or after g's translation, or the running lifetime will
    write one (at the log's end: translations never pass it)."""
    first = min((s.upstream_offset for s in store.syncs("t", 0)), default=None)
    to_come = set(mirror.records[mirror.next:])
    for g in range(0, mirror.records[-1] + 3):
        translated = store.translate("t", 0, g)
        if translated is None:
            assert first is None or g < first
            continue
        assert translated <= mirror.log_end
        for upstream, copies in mirror.copies.items():
            if upstream >= g and upstream not in to_come:
                assert max(copies) >= translated, (g, translated, upstream, copies)


@settings(max_examples=400, deadline=None)
@given(upstream_gaps, steps, st.sampled_from([0, 1, 3, 100]), st.randoms(use_true_random=False))
def test_translation_never_skips_a_record(gaps, plan, lag, rnd):
    mirror = mirror_of(gaps, plan, lag)
    assert_never_skips(mirror, store_of(*[(s.upstream_offset, s.downstream_offset) for s in mirror.syncs]))
    shuffled = mirror.syncs[:]
    rnd.shuffle(shuffled)  # read in any order: still never skips
    assert_never_skips(mirror, store_of(*[(s.upstream_offset, s.downstream_offset) for s in shuffled]))


@settings(max_examples=400, deadline=None)
@given(upstream_gaps, steps.map(lambda plan: [step for step in plan if step[0] != "restart"]),
       st.sampled_from([0, 1, 3, 100]))
def test_without_restarts_translation_is_exact_up_to_the_last_sync(gaps, plan, lag):
    mirror = mirror_of(gaps, plan, lag)
    store = store_of(*[(s.upstream_offset, s.downstream_offset) for s in mirror.syncs])
    last = store.latest("t", 0)
    if last is None:
        return
    position = {upstream: copies[0] for upstream, copies in mirror.copies.items()}
    for g in range(mirror.records[0], mirror.records[-1] + 3):
        translated = store.translate("t", 0, g)
        if g <= last.upstream_offset:
            # exact: past every record before g, not past any record at or after it
            before = [position[u] for u in position if u < g]
            assert translated > max(before, default=-1), (g, translated)
            assert translated <= min(position[u] for u in position if u >= g), (g, translated)
        else:
            assert translated == last.downstream_offset + 1
            reread = [u for u in position if last.upstream_offset < u < g]
            assert len(reread) <= reread_bound(last.upstream_offset, g)
            if g <= max(position) + 1:
                assert len(reread) <= max(lag, 0)


def test_simulated_restart_example():
    """Records 0..9 mirrored, commit at 5, crash, restart: 5..9 are written again after 9."""
    mirror = Mirror(list(range(10)), 100)
    for _ in range(5):
        mirror.write(0)
    mirror.commit()
    for _ in range(5):
        mirror.write(0)
    mirror.restart()
    for _ in range(5):
        mirror.write(0)
    assert [(s.upstream_offset, s.downstream_offset) for s in mirror.syncs] == [(0, 0), (4, 4), (5, 10)]
    store = store_of(*[(s.upstream_offset, s.downstream_offset) for s in mirror.syncs])
    assert [store.translate("t", 0, g) for g in range(11)] == [0, 1, 2, 3, 4, 10, 11, 11, 11, 11, 11]
    assert_never_skips(mirror, store)


def test_lost_sync_is_what_breaks_the_guarantee():
    """Why the mirror must deliver every sync: without (10, 5), 12 would translate past records 10 and 11."""
    store = store_of((0, 0), (20, 15))
    assert store.translate("t", 0, 12) == 12  # records 10, 11 sit at 5, 6: skipped
    store.add(OffsetSync("t", 0, 10, 5))
    assert store.translate("t", 0, 12) == 7


def test_random_history_smoke():
    rnd = random.Random(29)
    gaps = [rnd.choice([1, 1, 1, 2, 7]) for _ in range(500)]
    plan = [rnd.choice([("write", 0)] * 8 + [("write", 1), ("commit",), ("restart",)]) for _ in range(2000)]
    mirror = mirror_of(gaps, plan, 10)
    assert_never_skips(mirror, store_of(*[(s.upstream_offset, s.downstream_offset) for s in mirror.syncs]))
