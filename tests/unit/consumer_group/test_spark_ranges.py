"""consumer_group.spark.ranges: Spark's minPartitions split, maxOffsetsPerTrigger rate limit, and the
stable JSON form of streaming offsets."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consumer_group.spark.ranges import (
    OffsetRange,
    offsets_from_json_dict,
    offsets_to_json_dict,
    rate_limit,
    split_ranges,
)


def R(tp: str, from_offset: int, until_offset: int) -> OffsetRange:
    topic, partition = tp.rsplit("-", 1)
    return OffsetRange(topic, int(partition), from_offset, until_offset)


# ------------------------------------------------------------------------------------------- OffsetRange


def test_offset_range_size():
    assert R("t-0", 10, 25).size == 15
    assert R("t-0", 5, 5).size == 0
    assert R("t-0", 9, 5).size == -4


def test_offset_range_is_frozen_and_hashable():
    r = R("t-0", 0, 1)
    with pytest.raises(AttributeError):
        r.from_offset = 3  # type: ignore[misc]
    assert {r, R("t-0", 0, 1)} == {r}


# ------------------------------------------------------------------------------------------ split_ranges
# The expectations below are those of Spark's KafkaOffsetRangeCalculatorSuite.


def test_no_min_partitions_is_one_to_one():
    ranges = [R("t1-1", 1, 2), R("t2-1", 1, 11)]
    assert split_ranges(ranges, None) == ranges


def test_min_partitions_not_above_range_count_is_one_to_one():
    ranges = [R("t1-1", 1, 2), R("t2-1", 1, 11), R("t3-1", 0, 7)]
    assert split_ranges(ranges, 3) == ranges
    assert split_ranges(ranges, 2) == ranges
    assert split_ranges(ranges, 1) == ranges


def test_empty_and_inverted_ranges_are_dropped():
    ranges = [R("t1-1", 5, 5), R("t1-2", 1, 3), R("t1-3", 9, 4)]
    assert split_ranges(ranges, None) == [R("t1-2", 1, 3)]
    assert split_ranges(ranges, 1) == [R("t1-2", 1, 3)]
    assert split_ranges([R("t-0", 3, 3)], 4) == []
    assert split_ranges([], 4) == []
    assert split_ranges([], None) == []


def test_empty_ranges_do_not_count_towards_min_partitions():
    # two ranges, one empty: 1 < 2, so the non-empty one is split in two
    assert split_ranges([R("t1-1", 1, 1), R("t2-1", 0, 10)], 2) == [R("t2-1", 0, 5), R("t2-1", 5, 10)]


def test_single_range_split_evenly():
    assert split_ranges([R("t1-1", 1, 5)], 4) == [
        R("t1-1", 1, 2), R("t1-1", 2, 3), R("t1-1", 3, 4), R("t1-1", 4, 5)]


def test_last_piece_takes_the_remainder():
    assert split_ranges([R("t1-1", 1, 6)], 2) == [R("t1-1", 1, 3), R("t1-1", 3, 6)]
    assert split_ranges([R("t1-1", 0, 10)], 3) == [R("t1-1", 0, 3), R("t1-1", 3, 6), R("t1-1", 6, 10)]


def test_more_parts_than_offsets_never_makes_empty_pieces():
    assert split_ranges([R("t1-1", 1, 2)], 3) == [R("t1-1", 1, 2)]
    assert split_ranges([R("t1-1", 0, 2)], 5) == [R("t1-1", 0, 1), R("t1-1", 1, 2)]


def test_proportional_split_of_skewed_partitions():
    ranges = [R("t1-1", 1, 5), R("t2-1", 1, 21)]
    assert split_ranges(ranges, 3) == [R("t1-1", 1, 5), R("t2-1", 1, 11), R("t2-1", 11, 21)]


def test_small_ranges_stay_whole_and_leave_the_proportion():
    # t1-1 (size 1) rounds to one part and is taken out: the other 10 parts - 1 go to t2-1
    ranges = [R("t1-1", 0, 1), R("t2-1", 0, 90)]
    out = split_ranges(ranges, 10)
    assert out[0] == R("t1-1", 0, 1)
    assert len(out) == 10
    assert [r.size for r in out[1:]] == [10] * 9


def test_spark_suite_several_skewed_partitions():
    ranges = [R("t1-1", 1, 5), R("t2-1", 1, 21), R("t3-1", 1, 6)]
    # sizes 4, 20, 5 (total 29), minPartitions 4: 4 -> round(0.55)=1, 20 -> round(2.76)=3, 5 -> round(0.69)=1;
    # split part: 4 - 2 unsplit = 2 parts for t2-1
    assert split_ranges(ranges, 4) == [
        R("t1-1", 1, 5), R("t2-1", 1, 11), R("t2-1", 11, 21), R("t3-1", 1, 6)]


def test_rounding_is_half_up_like_scala():
    # sizes 5 and 5, minPartitions 5: each share is 2.5, which Scala's math.round makes 3 (Python's
    # round-half-even would make it 2)
    assert len(split_ranges([R("a-0", 0, 5), R("b-0", 0, 5)], 5)) == 6  # 2.5 -> 3 each
    assert split_ranges([R("a-0", 0, 5), R("b-0", 0, 5)], 5)[:3] == [R("a-0", 0, 1), R("a-0", 1, 3),
                                                                     R("a-0", 3, 5)]


def test_invalid_min_partitions():
    with pytest.raises(ValueError):
        split_ranges([R("t-0", 0, 1)], 0)


range_lists = st.lists(
    st.builds(
        lambda topic, partition, start, size: OffsetRange(topic, partition, start, start + size),
        st.sampled_from(["a", "b", "c"]), st.integers(0, 5),
        st.integers(0, 10**12), st.integers(-3, 10**6)),
    max_size=12,
).map(lambda rs: list({(r.topic, r.partition): r for r in rs}.values()))  # one range per partition


@settings(max_examples=400, deadline=None)
@given(range_lists, st.one_of(st.none(), st.integers(1, 200)))
def test_split_covers_each_range_exactly(ranges, min_partitions):
    out = split_ranges(ranges, min_partitions)
    assert all(r.size > 0 for r in out)
    for r in ranges:
        pieces = [p for p in out if (p.topic, p.partition) == (r.topic, r.partition)]
        if r.size <= 0:
            assert pieces == []
            continue
        assert pieces, r
        assert pieces[0].from_offset == r.from_offset
        assert pieces[-1].until_offset == r.until_offset
        for a, b in zip(pieces, pieces[1:]):
            assert a.until_offset == b.from_offset  # contiguous, in order
        assert sum(p.size for p in pieces) == r.size
        # near-equal pieces
        assert max(p.size for p in pieces) - min(p.size for p in pieces) <= 1


@settings(max_examples=400, deadline=None)
@given(range_lists, st.one_of(st.none(), st.integers(1, 200)))
def test_split_keeps_order_and_count(ranges, min_partitions):
    out = split_ranges(ranges, min_partitions)
    non_empty = [r for r in ranges if r.size > 0]
    # partitions appear in input order
    seen = list(dict.fromkeys((p.topic, p.partition) for p in out))
    assert seen == [(r.topic, r.partition) for r in non_empty]
    if min_partitions is None or min_partitions <= len(non_empty):
        assert out == non_empty
    else:
        assert len(out) >= len(non_empty)
        # never more pieces than offsets
        assert len(out) <= sum(r.size for r in non_empty)
        # "about" minPartitions: rounding adds at most half a part per split range
        assert len(out) <= min_partitions + len(non_empty)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 64))
def test_single_big_range_gets_min_partitions_pieces(size, min_partitions):
    out = split_ranges([R("t-0", 7, 7 + size)], min_partitions)
    assert len(out) == min(size, min_partitions)


# -------------------------------------------------------------------------------------------- rate_limit


def test_rate_limit_everything_fits():
    start = {("t", 0): 0, ("t", 1): 10}
    latest = {("t", 0): 5, ("t", 1): 15}
    assert rate_limit(start, latest, 10) == latest
    assert rate_limit(start, latest, 1000) == latest


def test_rate_limit_proportional():
    start = {("t", 0): 0, ("t", 1): 100}
    latest = {("t", 0): 300, ("t", 1): 200}  # sizes 300 and 100
    assert rate_limit(start, latest, 40) == {("t", 0): 30, ("t", 1): 110}


def test_rate_limit_rounds_down_then_hands_out_leftover():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    latest = {("t", 0): 10, ("t", 1): 10, ("t", 2): 10}
    out = rate_limit(start, latest, 10)  # 3.33 each: floors 3+3+3, one left over to t-0 (tie -> order)
    assert out == {("t", 0): 4, ("t", 1): 3, ("t", 2): 3}


def test_rate_limit_does_not_starve_small_partitions_first():
    start = {("big", 0): 0, ("small", 0): 0}
    latest = {("big", 0): 1000, ("small", 0): 1}
    # shares: big 9.99 -> 9, small 0.00999 -> 0; the leftover goes to the starved small partition
    assert rate_limit(start, latest, 10) == {("big", 0): 9, ("small", 0): 1}


def test_rate_limit_makes_progress_with_budget_below_partition_count():
    start = {("t", p): 0 for p in range(5)}
    latest = {("t", p): 1 for p in range(5)}
    out = rate_limit(start, latest, 2)
    assert sum(out[tp] - start[tp] for tp in start) == 2
    assert out == {("t", 0): 1, ("t", 1): 1, ("t", 2): 0, ("t", 3): 0, ("t", 4): 0}
    assert sum(rate_limit(start, latest, 1).values()) == 1


def test_rate_limit_partitions_with_nothing_new_keep_start():
    start = {("t", 0): 50, ("t", 1): 7, ("t", 2): 0}
    latest = {("t", 0): 50, ("t", 1): 3, ("t", 2): 100}  # t-1 went backwards (data loss): not below start
    assert rate_limit(start, latest, 10) == {("t", 0): 50, ("t", 1): 7, ("t", 2): 10}


def test_rate_limit_nothing_available():
    start = {("t", 0): 5}
    assert rate_limit(start, {("t", 0): 5}, 3) == {("t", 0): 5}
    assert rate_limit({}, {}, 3) == {}


def test_rate_limit_result_has_the_partitions_of_latest():
    start = {("t", 0): 0, ("gone", 0): 9}
    assert rate_limit(start, {("t", 0): 4}, 2) == {("t", 0): 2}


def test_rate_limit_errors():
    with pytest.raises(ValueError, match="max_offsets"):
        rate_limit({("t", 0): 0}, {("t", 0): 1}, 0)
    with pytest.raises(ValueError, match="no start offset"):
        rate_limit({}, {("t", 0): 1}, 10)


def test_rate_limit_large_offsets_exact():
    big = 2**62
    start = {("t", 0): big, ("t", 1): 0}
    latest = {("t", 0): big + 3 * 10**15, ("t", 1): 10**15}
    out = rate_limit(start, latest, 4 * 10**14)
    assert out == {("t", 0): big + 3 * 10**14, ("t", 1): 10**14}


offset_maps = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 7)),
    st.tuples(st.integers(0, 10**15), st.integers(-1000, 10**6)),
    max_size=16,
)


@settings(max_examples=500, deadline=None)
@given(offset_maps, st.integers(1, 10**7))
def test_rate_limit_invariants(pairs, max_offsets):
    start = {tp: s for tp, (s, _) in pairs.items()}
    latest = {tp: s + d for tp, (s, d) in pairs.items()}
    out = rate_limit(start, latest, max_offsets)
    assert out.keys() == latest.keys()
    available = sum(max(latest[tp] - start[tp], 0) for tp in latest)
    advanced = 0
    for tp, end in out.items():
        assert end >= start[tp]
        assert end <= max(latest[tp], start[tp])
        if latest[tp] <= start[tp]:
            assert end == start[tp]
        advanced += end - start[tp]
    assert advanced <= max_offsets
    assert advanced == min(max_offsets, available)
    if available > 0:
        assert advanced > 0


@settings(max_examples=300, deadline=None)
@given(offset_maps, st.integers(1, 10**7))
def test_rate_limit_is_near_proportional(pairs, max_offsets):
    start = {tp: s for tp, (s, _) in pairs.items()}
    latest = {tp: s + d for tp, (s, d) in pairs.items()}
    sizes = {tp: latest[tp] - start[tp] for tp in latest if latest[tp] > start[tp]}
    total = sum(sizes.values())
    out = rate_limit(start, latest, max_offsets)
    if total > max_offsets:
        for tp, size in sizes.items():
            exact = max_offsets * size / total
            got = out[tp] - start[tp]
            assert exact - 1 < got < exact + 1


# ----------------------------------------------------------------------------------------- JSON offsets


def test_offsets_to_json_dict_sorted_topics_and_numeric_partitions():
    offsets = {("b", 10): 5, ("a", 2): 1, ("b", 9): 4, ("b", 1): 3, ("a", 0): 0}
    out = offsets_to_json_dict(offsets)
    assert list(out) == ["a", "b"]
    assert list(out["b"]) == ["1", "9", "10"]  # numeric, not "1", "10", "9"
    assert json.dumps(out) == '{"a": {"0": 0, "2": 1}, "b": {"1": 3, "9": 4, "10": 5}}'


def test_offsets_json_text_independent_of_insertion_order():
    a = {("t", 10): 1, ("s", 0): 2, ("t", 2): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(offsets_to_json_dict(a)) == json.dumps(offsets_to_json_dict(b))


def test_offsets_from_json_dict():
    assert offsets_from_json_dict({"t": {"0": 5, "12": -1}, "u": {}}) == {("t", 0): 5, ("t", 12): -1}
    assert offsets_from_json_dict(json.loads('{"t":{"3":7}}')) == {("t", 3): 7}
    assert offsets_to_json_dict({}) == {}
    assert offsets_from_json_dict({}) == {}


@pytest.mark.parametrize("bad", [{"t": {"x": 1}}, {"t": {"0": "1"}}, {"t": {"0": True}}, {"t": [1]},
                                 {"t": {"0": 1.5}}])
def test_offsets_from_json_dict_rejects_malformed(bad):
    with pytest.raises(ValueError):
        offsets_from_json_dict(bad)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 10**5)),
                       st.integers(-2, 2**63 - 1)))
def test_offsets_json_round_trip(offsets):
    d = offsets_to_json_dict(offsets)
    assert offsets_from_json_dict(json.loads(json.dumps(d))) == offsets
    assert list(d) == sorted(d)
    for parts in d.values():
        keys = [int(k) for k in parts]
        assert keys == sorted(keys)
        assert all(str(k) == s for k, s in zip(keys, parts))
