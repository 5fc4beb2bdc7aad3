"""Compaction keeps the last record per key, never reorders or renumbers, and ages out tombstones."""
from __future__ import annotations

import os
import random

import pytest

from brokers.storage.cleaner import LogCleaner, group_segments
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig

from .conftest import batch, read_all


def compacted_log(tmp_path, **overrides) -> Log:
    config = dict(segment_bytes=600, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, index_interval_bytes=64)
    config.update(overrides)
    return Log(tmp_path / "c-0", LogConfig(**config))


def produce(log: Log, pairs, codec=0):
    """pairs: list of (key, value) per batch (list of lists)."""
    for records in pairs:
        keys = [k for k, _ in records]
        values = [v for _, v in records]
        log.append_as_leader(batch(values, keys=keys, codec=codec), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


def expected_after_compaction(history, first_uncleanable, retain_tombstones=True):
    """Reference model: for offsets below first_uncleanable keep the last record per key."""
    last = {}
    for offset, key, value in history:
        if offset < first_uncleanable:
            last[key] = offset
    out = []
    for offset, key, value in history:
        if offset >= first_uncleanable or last[key] == offset:
            if value is None and offset < first_uncleanable and not retain_tombstones:
                continue
            out.append((offset, key, value))
    return out


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_keeps_the_last_value_per_key_with_offsets_and_order_intact(tmp_path, codec):
    rng = random.Random(codec)
    log = compacted_log(tmp_path)
    history, offset, batches = [], 0, []
    for _ in range(60):
        records = []
        for _ in range(rng.randint(1, 4)):
            key = b"key-%d" % rng.randint(0, 9)
            value = None if rng.random() < 0.1 else b"val-%d" % offset
            records.append((key, value))
            history.append((offset, key, value))
            offset += 1
        batches.append(records)
    produce(log, batches, codec=codec)
    cleaner = LogCleaner(tmp_path)
    stats = cleaner.clean(log, now_ms=0)
    first_uncleanable = log.active_segment.base_offset
    assert stats.first_uncleanable == first_uncleanable
    got = [(r.offset, r.key, r.value) for r in read_all(log)]
    assert got == expected_after_compaction(history, first_uncleanable)
    assert stats.records_kept < stats.records_read
    assert cleaner.checkpoint.read()[log.topic_partition] == first_uncleanable
    # compressed batches that were rewritten keep their codec
    for segment in log.segments:
        for header in segment.iter_headers(verify_crc=True):
            assert header.compression == codec or header.records_count == 0
    log.close()


def test_active_segment_is_never_cleaned(tmp_path):
    log = compacted_log(tmp_path, segment_bytes=10**6)
    produce(log, [[(b"k", b"v%d" % i)] for i in range(20)])
    assert len(log.segments) == 1
    stats = LogCleaner(tmp_path).clean(log, now_ms=0)
    assert stats.segments_cleaned == 0
    assert len(read_all(log)) == 20
    log.close()


def tombstone_passes(tmp_path, delete_retention_ms, passes=3):
    """Write a tombstone for "a", then run cleaning passes with newer data, the tombstone's segment
    file dated far in the past and all others now. Return whether "a" was visible after each pass."""
    log = compacted_log(tmp_path, delete_retention_ms=delete_retention_ms)
    produce(log, [[(b"a", b"1")], [(b"b", b"1")]] * 6)
    produce(log, [[(b"a", None)]] + [[(b"b", b"2")]] * 8)
    cleaner = LogCleaner(tmp_path)
    seen = []
    for n in range(passes):
        cleaner.clean(log, now_ms=0)
        records = {r.key: r for r in read_all(log)}
        seen.append(b"a" in records)
        if b"a" in records:
            assert records[b"a"].value is None
            holder = next(s for s in log.segments if s.base_offset <= records[b"a"].offset < s.next_offset)
            os.utime(holder.log_path, (1_000_000, 1_000_000))
        produce(log, [[(b"b", b"%d" % (n + 3))]] * 12)
    log.close()
    return seen


def test_tombstones_removed_once_the_clean_section_is_delete_retention_newer(tmp_path):
    seen = tombstone_passes(tmp_path, delete_retention_ms=1000)
    assert seen[0] is True  # the first pass has no clean section yet: tombstones stay
    assert seen[-1] is False


def test_tombstones_kept_within_delete_retention(tmp_path):
    assert tombstone_passes(tmp_path, delete_retention_ms=10**13) == [True, True, True]


def test_records_in_the_uncleanable_tail_are_never_touched(tmp_path):
    log = compacted_log(tmp_path)
    produce(log, [[(b"k", b"old-%d" % i)] for i in range(30)])
    tail_start = log.active_segment.base_offset
    tail = [(r.offset, r.value) for r in read_all(log, start=tail_start)]
    LogCleaner(tmp_path).clean(log, now_ms=0)
    assert [(r.offset, r.value) for r in read_all(log, start=tail_start)] == tail
    # below the tail only the last "k" survives: the offset map never looks into the tail
    assert [r.offset for r in read_all(log) if r.offset < tail_start] == [tail_start - 1]
    log.close()


def test_cleaned_log_survives_restart_with_valid_indexes(tmp_path):
    log = compacted_log(tmp_path)
    produce(log, [[(b"k%d" % (i % 4), b"v%d" % i)] for i in range(50)])
    LogCleaner(tmp_path).clean(log, now_ms=0)
    before = [(r.offset, r.key, r.value) for r in read_all(log)]
    log.close()
    reopened = Log(tmp_path / "c-0", log.config, clean_shutdown=False)
    after = [(r.offset, r.key, r.value) for r in read_all(reopened)]
    assert after == before
    for offset, _, _ in before:  # any surviving offset can be read directly
        assert read_all(reopened, start=offset)[0].offset == offset
    assert not list((tmp_path / "c-0").glob("*.cleaned")) and not list((tmp_path / "c-0").glob("*.swap"))
    reopened.close()


def test_min_compaction_lag_holds_back_young_segments(tmp_path):
    log = compacted_log(tmp_path, min_compaction_lag_ms=10_000)
    produce(log, [[(b"k", b"v%d" % i)] for i in range(30)])
    stats = LogCleaner(tmp_path).clean(log, now_ms=1_000 + 5_000)  # records are 5 s old: too young
    assert stats.segments_cleaned == 0
    stats = LogCleaner(tmp_path).clean(log, now_ms=1_000 + 60_000)
    assert stats.segments_cleaned > 0
    log.close()


def test_filthiest_log_is_chosen_and_ratio_threshold_respected(tmp_path):
    config = LogConfig(segment_bytes=600, cleanup_policy="compact", min_cleanable_dirty_ratio=0.5)
    quiet = Log(tmp_path / "q-0", config)
    busy = Log(tmp_path / "b-0", config)
    deleting = Log(tmp_path / "d-0", LogConfig(segment_bytes=600))
    produce(busy, [[(b"k", b"v%d" % i)] for i in range(40)])
    produce(quiet, [[(b"k%d" % i, b"v")] for i in range(2)])
    produce(deleting, [[(b"k", b"v")] for _ in range(40)])
    stats = LogCleaner(tmp_path).clean_filthiest([quiet, busy, deleting], now_ms=0)
    assert stats is not None and stats.topic_partition == busy.topic_partition
    assert LogCleaner(tmp_path).clean_filthiest([quiet, busy, deleting], now_ms=0) is None  # all clean now
    for log in (quiet, busy, deleting):
        log.close()


def test_group_segments_respects_segment_size(tmp_path):
    log = compacted_log(tmp_path)
    produce(log, [[(b"k%d" % i, b"x" * 50)] for i in range(40)])
    groups = group_segments(log.segments, 1300)
    assert [s for g in groups for s in g] == log.segments
    assert all(sum(s.size for s in g) <= 1300 for g in groups)
    assert len(groups) < len(log.segments)
    log.close()
