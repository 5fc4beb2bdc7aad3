"""LeaderEpochCache (leader_epoch_cache.py): KIP-101 epoch -> start offset bookkeeping."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.storage.checkpoints import LEADER_EPOCH_CHECKPOINT
from brokers.storage.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)


def pairs(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in cache.entries]


def checkpoint_text(directory: Path) -> str:
    return (directory / LEADER_EPOCH_CHECKPOINT).read_text()


@pytest.fixture
def cache(tmp_path) -> LeaderEpochCache:
    return LeaderEpochCache(tmp_path)


# -- assign ---------------------------------------------------------------------------------------


def test_new_cache_is_empty(cache, tmp_path):
    assert cache.entries == []
    assert cache.latest_epoch == UNDEFINED_EPOCH
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()


def test_assign_appends_and_persists(cache, tmp_path):
    assert cache.assign(3, 0) is True
    assert cache.assign(5, 1200) is True
    assert cache.entries == [EpochEntry(3, 0), EpochEntry(5, 1200)]
    assert cache.latest_epoch == 5
    assert checkpoint_text(tmp_path) == "0\n2\n3 0\n5 1200\n"


def test_entries_is_a_copy(cache):
    cache.assign(1, 0)
    cache.entries.append(EpochEntry(9, 9))
    assert pairs(cache) == [(1, 0)]


@pytest.mark.parametrize("epoch", [3, 2, 0])
def test_assign_ignores_equal_or_lower_epoch(cache, tmp_path, epoch):
    cache.assign(3, 100)
    before = checkpoint_text(tmp_path)
    assert cache.assign(epoch, 500) is False
    assert cache.assign(epoch, 50) is False
    assert pairs(cache) == [(3, 100)]
    assert checkpoint_text(tmp_path) == before


def test_assign_ignores_negative_epoch(cache, tmp_path):
    assert cache.assign(-1, 0) is False
    assert cache.assign(-5, 10) is False
    assert cache.entries == []
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()
    cache.assign(2, 0)
    assert cache.assign(-1, 100) is False
    assert pairs(cache) == [(2, 0)]


def test_new_epoch_at_same_start_supersedes_older(cache, tmp_path):
    cache.assign(1, 0)
    cache.assign(2, 100)
    assert cache.assign(3, 100) is True
    assert pairs(cache) == [(1, 0), (3, 100)]
    assert checkpoint_text(tmp_path) == "0\n2\n1 0\n3 100\n"


def test_new_epoch_below_older_starts_supersedes_all_of_them(cache):
    cache.assign(1, 0)
    cache.assign(2, 100)
    cache.assign(3, 200)
    assert cache.assign(4, 50) is True
    assert pairs(cache) == [(1, 0), (4, 50)]
    assert cache.assign(5, 0) is True
    assert pairs(cache) == [(5, 0)]


# -- end_offset_for -------------------------------------------------------------------------------


@pytest.fixture
def populated(cache) -> LeaderEpochCache:
    # epochs 2 and 3 are missing (e.g. leaders that never wrote)
    for epoch, start in [(1, 0), (4, 100), (6, 250)]:
        cache.assign(epoch, start)
    return cache


def test_end_offset_for_empty_cache_is_undefined(cache):
    assert cache.end_offset_for(0, 500) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_end_offset_for_undefined_epoch(populated):
    assert populated.end_offset_for(UNDEFINED_EPOCH, 500) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_end_offset_for_epoch_below_first_ends_where_the_first_starts(populated):
    """Kafka answers (requested epoch, first entry's start offset): the follower truncates there."""
    assert populated.end_offset_for(0, 500) == (0, 0)


def test_end_offset_for_epoch_above_latest_is_undefined(populated):
    assert populated.end_offset_for(7, 500) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_negative_start_offset_is_refused(cache):
    with pytest.raises(ValueError):
        cache.assign(1, -5)


def test_end_offset_for_latest_epoch_is_log_end(populated):
    assert populated.end_offset_for(6, 500) == (6, 500)
    assert populated.end_offset_for(6, 321) == (6, 321)


def test_end_offset_for_present_epoch_is_next_epochs_start(populated):
    assert populated.end_offset_for(1, 500) == (1, 100)
    assert populated.end_offset_for(4, 500) == (4, 250)


def test_end_offset_for_absent_epoch_uses_largest_epoch_below(populated):
    assert populated.end_offset_for(2, 500) == (1, 100)
    assert populated.end_offset_for(3, 500) == (1, 100)
    assert populated.end_offset_for(5, 500) == (4, 250)


def test_end_offset_for_single_entry(cache):
    cache.assign(3, 10)
    assert cache.end_offset_for(3, 42) == (3, 42)
    assert cache.end_offset_for(2, 42) == (2, 10)
    assert cache.end_offset_for(4, 42) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)


# -- epoch_for_offset -----------------------------------------------------------------------------


def test_epoch_for_offset(populated, tmp_path):
    assert LeaderEpochCache(tmp_path / "empty").epoch_for_offset(0) == UNDEFINED_EPOCH
    assert populated.epoch_for_offset(0) == 1
    assert populated.epoch_for_offset(99) == 1
    assert populated.epoch_for_offset(100) == 4
    assert populated.epoch_for_offset(249) == 4
    assert populated.epoch_for_offset(250) == 6
    assert populated.epoch_for_offset(10**12) == 6


def test_epoch_for_offset_before_first_entry_is_undefined(cache):
    cache.assign(2, 50)
    assert cache.epoch_for_offset(49) == UNDEFINED_EPOCH
    assert cache.epoch_for_offset(50) == 2


# -- truncation -----------------------------------------------------------------------------------


def test_truncate_from_end_removes_entries_starting_at_or_after(populated, tmp_path):
    populated.truncate_from_end(250)
    assert pairs(populated) == [(1, 0), (4, 100)]
    assert checkpoint_text(tmp_path) == "0\n2\n1 0\n4 100\n"
    populated.truncate_from_end(101)
    assert pairs(populated) == [(1, 0), (4, 100)]
    populated.truncate_from_end(100)
    assert pairs(populated) == [(1, 0)]
    populated.truncate_from_end(0)
    assert pairs(populated) == []
    assert checkpoint_text(tmp_path) == "0\n0\n"


def test_truncate_from_end_past_everything_is_a_no_op(populated, tmp_path):
    before = checkpoint_text(tmp_path)
    populated.truncate_from_end(10**9)
    assert pairs(populated) == [(1, 0), (4, 100), (6, 250)]
    assert checkpoint_text(tmp_path) == before


def test_after_truncate_from_end_lower_epochs_still_ignored(populated):
    populated.truncate_from_end(100)
    assert populated.latest_epoch == 1
    assert populated.assign(4, 100) is True  # epoch 4 is above the latest again
    assert pairs(populated) == [(1, 0), (4, 100)]


def test_truncate_from_start_clamps_first_entry(populated, tmp_path):
    populated.truncate_from_start(150)
    assert pairs(populated) == [(4, 150), (6, 250)]
    assert checkpoint_text(tmp_path) == "0\n2\n4 150\n6 250\n"


def test_truncate_from_start_at_an_entry_boundary(populated):
    populated.truncate_from_start(250)
    assert pairs(populated) == [(6, 250)]


def test_truncate_from_start_past_last_entry_keeps_latest_epoch(populated):
    populated.truncate_from_start(1000)
    assert pairs(populated) == [(6, 1000)]
    assert populated.latest_epoch == 6


def test_truncate_from_start_before_first_entry_is_a_no_op(cache, tmp_path):
    cache.assign(2, 50)
    cache.assign(3, 80)
    before = checkpoint_text(tmp_path)
    cache.truncate_from_start(10)
    assert pairs(cache) == [(2, 50), (3, 80)]
    assert checkpoint_text(tmp_path) == before


def test_truncate_from_start_at_first_start_is_a_no_op(populated):
    populated.truncate_from_start(0)
    assert pairs(populated) == [(1, 0), (4, 100), (6, 250)]


def test_truncate_from_start_on_empty_cache(cache, tmp_path):
    cache.truncate_from_start(100)
    assert cache.entries == []
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()


# -- persistence ----------------------------------------------------------------------------------


def test_new_cache_on_same_dir_reads_same_entries(populated, tmp_path):
    populated.truncate_from_start(120)
    reopened = LeaderEpochCache(tmp_path)
    assert reopened.entries == populated.entries == [EpochEntry(4, 120), EpochEntry(6, 250)]
    assert reopened.latest_epoch == 6
    assert reopened.end_offset_for(4, 999) == (4, 250)


def test_reads_a_kafka_written_checkpoint(tmp_path):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n3 0\n5 1200\n")
    cache = LeaderEpochCache(tmp_path)
    assert pairs(cache) == [(3, 0), (5, 1200)]
    assert cache.end_offset_for(3, 2000) == (3, 1200)


def test_clear_and_flush(populated, tmp_path):
    populated.clear_and_flush()
    assert populated.entries == []
    assert populated.latest_epoch == UNDEFINED_EPOCH
    assert checkpoint_text(tmp_path) == "0\n0\n"
    assert LeaderEpochCache(tmp_path).entries == []
    assert populated.assign(0, 0) is True  # any epoch is accepted again


# -- property -------------------------------------------------------------------------------------

_offsets = st.integers(min_value=0, max_value=1000)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), st.integers(min_value=-2, max_value=30), _offsets),
        st.tuples(st.just("truncate_from_end"), _offsets),
        st.tuples(st.just("truncate_from_start"), _offsets),
        st.tuples(st.just("clear"),),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(ops=_ops)
def test_entries_stay_strictly_increasing_and_persisted(ops):
    with tempfile.TemporaryDirectory() as directory:
        cache = LeaderEpochCache(Path(directory))
        for op in ops:
            if op[0] == "assign":
                cache.assign(op[1], op[2])
            elif op[0] == "truncate_from_end":
                cache.truncate_from_end(op[1])
            elif op[0] == "truncate_from_start":
                cache.truncate_from_start(op[1])
            else:
                cache.clear_and_flush()
            entries = cache.entries
            for a, b in zip(entries, entries[1:]):
                assert a.epoch < b.epoch, entries
                assert a.start_offset < b.start_offset, entries
            assert all(e.epoch >= 0 for e in entries)
        assert LeaderEpochCache(Path(directory)).entries == cache.entries


def test_a_new_epoch_is_written_without_fsync_and_made_durable_by_flush(tmp_path, monkeypatch):
    """KAFKA-15046's discipline: ``assign`` (every partition a LeaderAndIsr makes leader) costs no fsync; the
    Log's flush makes the file durable before its recovery point moves."""
    from brokers.storage import files
    from brokers.storage.leader_epoch_cache import LeaderEpochCache

    synced = []
    monkeypatch.setattr(files.os, "fsync", lambda fd: synced.append(fd))
    cache = LeaderEpochCache(tmp_path)
    assert cache.assign(3, 10)
    assert synced == [] and (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n1\n3 10\n"
    cache.flush()
    assert len(synced) == 2  # the file, then its directory
    cache.flush()
    assert len(synced) == 2  # nothing left to make durable
    cache.truncate_from_end(5)
    assert len(synced) == 4  # truncations are durable at once


def test_recovery_reassigns_the_epochs_a_lost_checkpoint_held(tmp_path):
    """After a machine crash the unsynced checkpoint may have lost the latest epochs: the unclean load re-assigns
    them from the batches it recovers past the recovery point (Kafka's LogSegment.recover)."""
    from brokers.storage.log import Log
    from brokers.storage.log_config import LogConfig

    from .conftest import batch

    log = Log(tmp_path / "e-0", LogConfig(segment_bytes=300))
    for i in range(6):
        log.append_as_leader(batch([b"v%d" % i]), leader_epoch=0 if i < 2 else 4)
    log.flush(up_to=2)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(0, 0), (4, 2)]
    log.close_handlers()
    (tmp_path / "e-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")  # the machine crash's view
    again = Log(tmp_path / "e-0", LogConfig(segment_bytes=300), recovery_point=2, clean_shutdown=False)
    assert [(e.epoch, e.start_offset) for e in again.leader_epoch_cache.entries] == [(0, 0), (4, 2)]
    again.close()


def test_a_flush_left_to_the_callers_filesystem_sync_writes_nothing(tmp_path, monkeypatch):
    """A clean shutdown closes every log with ``durable=False`` and then syncs the filesystem once: the file already
    holds every entry, so closing 10,000 logs rewrites no checkpoint."""
    from brokers.storage.leader_epoch_cache import LeaderEpochCache

    cache = LeaderEpochCache(tmp_path)
    assert cache.assign(3, 10)
    writes = []
    monkeypatch.setattr(cache._checkpoint, "write", lambda *args: writes.append(args))
    cache.flush(durable=False)
    assert writes == [] and (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n1\n3 10\n"
    cache.flush()
    assert writes == []  # the caller's sync made it durable: nothing left to do
