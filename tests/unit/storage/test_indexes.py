"""Segment indexes (index_file.py, offset_index.py, time_index.py): semantics and binary format."""
from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.storage import index_file
from brokers.storage.index_file import CorruptIndexError
from brokers.storage.offset_index import OffsetIndex
from brokers.storage.time_index import TimeIndex

BASE = 1000
MAX = 10 * 1024 * 1024


@pytest.fixture
def opened():
    indexes = []

    def track(index):
        indexes.append(index)
        return index

    yield track
    for index in indexes:
        index.close()


@pytest.fixture
def oi(tmp_path, opened) -> OffsetIndex:
    return opened(OffsetIndex(tmp_path / "00000000000000001000.index", BASE, MAX))


@pytest.fixture
def ti(tmp_path, opened) -> TimeIndex:
    return opened(TimeIndex(tmp_path / "00000000000000001000.timeindex", BASE, MAX))


# -- OffsetIndex: lookup --------------------------------------------------------------------------


def test_offset_index_empty_lookup_falls_back_to_base(oi):
    assert len(oi) == 0
    assert oi.last_entry() is None
    assert oi.last_offset == BASE
    assert oi.lookup(BASE) == (BASE, 0)
    assert oi.lookup(BASE + 10**6) == (BASE, 0)


def test_offset_index_lookup_largest_entry_at_or_below(oi):
    oi.append(BASE + 10, 100)
    oi.append(BASE + 20, 250)
    oi.append(BASE + 35, 900)
    assert len(oi) == 3
    assert oi.lookup(BASE) == (BASE, 0)
    assert oi.lookup(BASE + 9) == (BASE, 0)
    assert oi.lookup(BASE + 10) == (BASE + 10, 100)
    assert oi.lookup(BASE + 19) == (BASE + 10, 100)
    assert oi.lookup(BASE + 20) == (BASE + 20, 250)
    assert oi.lookup(BASE + 34) == (BASE + 20, 250)
    assert oi.lookup(BASE + 35) == (BASE + 35, 900)
    assert oi.lookup(BASE + 10**6) == (BASE + 35, 900)
    assert oi.lookup(0) == (BASE, 0)  # below the segment
    assert oi.last_offset == BASE + 35
    assert oi.entry(1) == (20, 250)  # stored relative
    assert oi.last_entry() == (35, 900)


@pytest.mark.parametrize("offset", [BASE + 10, BASE + 5])
def test_offset_index_append_non_increasing_offset_raises(oi, offset):
    oi.append(BASE + 10, 100)
    with pytest.raises(CorruptIndexError):
        oi.append(offset, 200)
    assert len(oi) == 1
    assert oi.lookup(BASE + 100) == (BASE + 10, 100)


# -- OffsetIndex: file format and persistence -----------------------------------------------------


def test_offset_index_binary_format_after_flush(oi):
    oi.append(BASE + 3, 0)
    oi.append(BASE + 7, 4096)
    oi.append(BASE + 2**31 - 1, 2**31 - 1)
    assert oi.path.read_bytes() == b""  # not durable before a flush
    oi.flush()
    data = oi.path.read_bytes()
    assert len(data) == 24
    assert data == struct.pack(">ii", 3, 0) + struct.pack(">ii", 7, 4096) + struct.pack(">ii", 2**31 - 1, 2**31 - 1)
    assert data[:8] == bytes([0, 0, 0, 3, 0, 0, 0, 0])  # big-endian, relative to the base offset


def test_offset_index_flush_without_fsync_writes_and_repeated_flush_appends_only_new(oi):
    oi.append(BASE + 1, 10)
    oi.flush(fsync=False)
    assert oi.path.read_bytes() == struct.pack(">ii", 1, 10)
    oi.flush()
    assert oi.path.read_bytes() == struct.pack(">ii", 1, 10)
    oi.append(BASE + 2, 20)
    oi.flush(fsync=False)
    assert oi.path.read_bytes() == struct.pack(">ii", 1, 10) + struct.pack(">ii", 2, 20)


def test_offset_index_pending_entries_written_on_close_and_reloaded(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    index = OffsetIndex(path, BASE, MAX)
    index.append(BASE + 5, 50)
    index.append(BASE + 9, 90)
    index.close()
    index.close()  # idempotent
    assert path.read_bytes() == struct.pack(">ii", 5, 50) + struct.pack(">ii", 9, 90)

    reopened = OffsetIndex(path, BASE, MAX)
    try:
        assert len(reopened) == 2
        assert reopened.lookup(BASE + 7) == (BASE + 5, 50)
        assert reopened.lookup(BASE + 9) == (BASE + 9, 90)
        reopened.append(BASE + 12, 120)  # continues after the loaded entries
        with pytest.raises(CorruptIndexError):
            reopened.append(BASE + 9, 130)
    finally:
        reopened.close()
    assert path.read_bytes() == b"".join(struct.pack(">ii", k, v) for k, v in [(5, 50), (9, 90), (12, 120)])


def test_offset_index_reads_a_hand_written_file(tmp_path, opened):
    path = tmp_path / "00000000000000000050.index"
    path.write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 4, 300))
    index = opened(OffsetIndex(path, 50, MAX))
    assert index.lookup(53) == (50, 0)
    assert index.lookup(54) == (54, 300)
    index.sanity_check(log_size=301)


def test_many_pending_entries_are_written_without_a_flush(tmp_path, opened):
    index = opened(OffsetIndex(tmp_path / "x.index", 0, MAX))
    n = index_file._PENDING_FLUSH_ENTRIES
    for i in range(n):
        index.append(i, i * 10)
    assert os.path.getsize(index.path) == n * 8


# -- OffsetIndex: truncation ----------------------------------------------------------------------


def test_offset_index_truncate_to_in_memory(oi):
    for rel in (10, 20, 30):
        oi.append(BASE + rel, rel * 10)
    oi.truncate_to(BASE + 21)
    assert [oi.entry(i) for i in range(len(oi))] == [(10, 100), (20, 200)]
    oi.truncate_to(BASE + 20)  # removes the entry *at* the offset
    assert [oi.entry(i) for i in range(len(oi))] == [(10, 100)]
    assert oi.lookup(BASE + 50) == (BASE + 10, 100)
    oi.truncate_to(BASE + 1000)  # past everything: no-op
    assert len(oi) == 1
    oi.append(BASE + 15, 150)  # appending resumes after the new last entry
    oi.flush()
    assert oi.path.read_bytes() == struct.pack(">ii", 10, 100) + struct.pack(">ii", 15, 150)


def test_offset_index_truncate_to_after_flush_shrinks_file(oi):
    for rel in (10, 20, 30, 40):
        oi.append(BASE + rel, rel * 10)
    oi.flush()
    assert os.path.getsize(oi.path) == 32
    oi.truncate_to(BASE + 25)
    assert os.path.getsize(oi.path) == 16
    assert oi.path.read_bytes() == struct.pack(">ii", 10, 100) + struct.pack(">ii", 20, 200)
    oi.append(BASE + 22, 220)
    oi.close()
    reopened = OffsetIndex(oi.path, BASE, MAX)
    try:
        assert [reopened.entry(i) for i in range(len(reopened))] == [(10, 100), (20, 200), (22, 220)]
    finally:
        reopened.close()


def test_offset_index_truncate_with_mixed_persisted_and_pending(oi):
    oi.append(BASE + 1, 1)
    oi.append(BASE + 2, 2)
    oi.flush()
    oi.append(BASE + 3, 3)
    oi.append(BASE + 4, 4)
    oi.truncate_to(BASE + 4)  # only a pending entry goes; the file is untouched
    assert os.path.getsize(oi.path) == 16
    oi.flush()
    assert oi.path.read_bytes() == b"".join(struct.pack(">ii", k, k) for k in (1, 2, 3))


def test_reset_empties_index_and_file(oi):
    oi.append(BASE + 1, 1)
    oi.flush()
    oi.append(BASE + 2, 2)
    oi.reset()
    assert len(oi) == 0
    assert os.path.getsize(oi.path) == 0
    assert oi.lookup(BASE + 5) == (BASE, 0)
    oi.append(BASE + 1, 7)
    oi.flush()
    assert oi.path.read_bytes() == struct.pack(">ii", 1, 7)


# -- fullness -------------------------------------------------------------------------------------


def test_offset_index_is_full_with_tiny_max_size(tmp_path, opened):
    index = opened(OffsetIndex(tmp_path / "x.index", 0, max_index_size=20))  # room for 2 entries
    assert index.max_entries == 2
    assert not index.is_full
    index.append(1, 10)
    assert not index.is_full
    index.append(2, 20)
    assert index.is_full
    with pytest.raises(CorruptIndexError):
        index.append(3, 30)
    assert len(index) == 2
    index.truncate_to(2)
    assert not index.is_full


def test_time_index_is_full_with_tiny_max_size(tmp_path, opened):
    index = opened(TimeIndex(tmp_path / "x.timeindex", 0, max_index_size=24))  # room for 2 entries
    assert index.max_entries == 2
    index.maybe_append(100, 1)
    index.maybe_append(200, 2)
    assert index.is_full
    with pytest.raises(CorruptIndexError):
        index.maybe_append(300, 3)
    assert index.max_timestamp == 200


def test_max_index_size_smaller_than_an_entry_still_holds_one(tmp_path, opened):
    index = opened(OffsetIndex(tmp_path / "x.index", 0, max_index_size=4))
    assert index.max_entries == 1
    index.append(0, 0)
    assert index.is_full


# -- sanity checks --------------------------------------------------------------------------------


def test_offset_index_sanity_check_passes_for_good_index(oi):
    oi.sanity_check(log_size=0)  # empty index, empty log
    oi.append(BASE + 1, 0)
    oi.append(BASE + 5, 500)
    oi.sanity_check(log_size=501)


def test_offset_index_sanity_check_rejects_position_past_log_size(oi):
    oi.append(BASE + 1, 0)
    oi.append(BASE + 5, 500)
    with pytest.raises(CorruptIndexError, match="past the log end"):
        oi.sanity_check(log_size=500)
    with pytest.raises(CorruptIndexError):
        oi.sanity_check(log_size=0)


@pytest.mark.parametrize(
    "entries",
    [
        [(5, 0), (3, 100)],  # offsets decrease
        [(5, 0), (5, 100)],  # offsets repeat
        [(1, 200), (2, 100)],  # positions decrease
        [(-1, 0), (2, 10)],  # negative relative offset
    ],
)
def test_offset_index_sanity_check_rejects_hand_written_bad_entries(tmp_path, opened, entries):
    path = tmp_path / "00000000000000001000.index"
    path.write_bytes(b"".join(struct.pack(">ii", k, v) for k, v in entries))
    index = opened(OffsetIndex(path, BASE, MAX))
    assert len(index) == len(entries)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(log_size=10**6)


@pytest.mark.parametrize("extra", [1, 4, 7])
def test_offset_index_partial_entry_raises_on_open(tmp_path, extra):
    path = tmp_path / "x.index"
    path.write_bytes(struct.pack(">ii", 1, 0) + b"\x00" * extra)
    with pytest.raises(CorruptIndexError, match="multiple"):
        OffsetIndex(path, 0, MAX)


@pytest.mark.parametrize("extra", [1, 8, 11])
def test_time_index_partial_entry_raises_on_open(tmp_path, extra):
    path = tmp_path / "x.timeindex"
    path.write_bytes(struct.pack(">qi", 100, 1) + b"\x00" * extra)
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0, MAX)


def test_offset_index_bytes_are_not_mistaken_for_time_index_entries(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(struct.pack(">ii", 1, 0))  # 8 bytes: whole for .index, torn for .timeindex
    OffsetIndex(path, 0, MAX).close()
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0, MAX)


def test_failed_open_does_not_leak_the_file_descriptor(tmp_path, monkeypatch):
    """LogSegment._open_index catches this error and reopens, so a leaked fd per torn index adds up."""
    path = tmp_path / "x.index"
    path.write_bytes(b"\x00" * 5)
    fds = []
    real_open = os.open

    def recording_open(*args, **kwargs):
        fd = real_open(*args, **kwargs)
        fds.append(fd)
        return fd

    monkeypatch.setattr(index_file.os, "open", recording_open)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, MAX)
    monkeypatch.undo()
    assert len(fds) == 1
    leaked = []
    try:
        os.fstat(fds[0])
        leaked.append(fds[0])
    except OSError:
        pass
    for fd in leaked:
        os.close(fd)  # don't let the leak outlive this test
    assert leaked == [], "IndexFile.__init__ left its fd open after CorruptIndexError"


# -- TimeIndex ------------------------------------------------------------------------------------


def test_time_index_empty_lookup(ti):
    assert ti.lookup(0) == (-1, BASE)
    assert ti.lookup(10**15) == (-1, BASE)
    assert ti.max_timestamp == -1


def test_time_index_lookup_largest_timestamp_at_or_below(ti):
    ti.maybe_append(1_000, BASE + 4)
    ti.maybe_append(2_000, BASE + 9)
    ti.maybe_append(5_000, BASE + 20)
    assert ti.lookup(999) == (-1, BASE)
    assert ti.lookup(1_000) == (1_000, BASE + 4)
    assert ti.lookup(1_999) == (1_000, BASE + 4)
    assert ti.lookup(2_000) == (2_000, BASE + 9)
    assert ti.lookup(4_999) == (2_000, BASE + 9)
    assert ti.lookup(10**15) == (5_000, BASE + 20)
    assert ti.max_timestamp == 5_000
    assert ti.entry(0) == (1_000, 4)  # offsets stored relative


def test_time_index_ignores_non_increasing_timestamps(ti):
    ti.maybe_append(2_000, BASE + 5)
    ti.maybe_append(2_000, BASE + 6)  # equal
    ti.maybe_append(1_500, BASE + 7)  # lower
    assert len(ti) == 1
    assert ti.lookup(10**9) == (2_000, BASE + 5)


def test_time_index_ignores_negative_timestamp_and_backward_offset(ti):
    ti.maybe_append(-1, BASE + 1)
    assert len(ti) == 0
    ti.maybe_append(1_000, BASE + 10)
    ti.maybe_append(2_000, BASE + 9)  # offset went backwards
    assert len(ti) == 1
    ti.maybe_append(3_000, BASE + 10)  # same offset, higher timestamp: accepted
    assert [ti.entry(i) for i in range(len(ti))] == [(1_000, 10), (3_000, 10)]


def test_time_index_binary_format_after_flush(ti):
    ti.maybe_append(1_600_000_000_000, BASE + 3)
    ti.maybe_append(1_600_000_000_500, BASE + 2**31 - 1)
    ti.flush()
    data = ti.path.read_bytes()
    assert len(data) == 24
    assert data == struct.pack(">qi", 1_600_000_000_000, 3) + struct.pack(">qi", 1_600_000_000_500, 2**31 - 1)
    assert data[:12] == (1_600_000_000_000).to_bytes(8, "big") + (3).to_bytes(4, "big")


def test_time_index_pending_entries_written_on_close_and_reloaded(tmp_path):
    path = tmp_path / "x.timeindex"
    index = TimeIndex(path, BASE, MAX)
    index.maybe_append(100, BASE + 1)
    index.maybe_append(200, BASE + 2)
    index.close()
    assert path.read_bytes() == struct.pack(">qi", 100, 1) + struct.pack(">qi", 200, 2)
    reopened = TimeIndex(path, BASE, MAX)
    try:
        assert reopened.max_timestamp == 200
        assert reopened.lookup(150) == (100, BASE + 1)
        reopened.maybe_append(200, BASE + 3)  # still ignored after reload
        assert len(reopened) == 2
    finally:
        reopened.close()


def test_time_index_truncate_to(ti):
    ti.maybe_append(100, BASE + 1)
    ti.maybe_append(200, BASE + 5)
    ti.maybe_append(300, BASE + 5)
    ti.maybe_append(400, BASE + 9)
    ti.flush()
    ti.truncate_to(BASE + 6)
    assert [ti.entry(i) for i in range(len(ti))] == [(100, 1), (200, 5), (300, 5)]
    ti.truncate_to(BASE + 5)  # removes every entry pointing at offset 5
    assert [ti.entry(i) for i in range(len(ti))] == [(100, 1)]
    assert os.path.getsize(ti.path) == 12
    assert ti.max_timestamp == 100
    ti.maybe_append(150, BASE + 2)  # timestamps above the remaining last entry are accepted again
    assert ti.max_timestamp == 150
    ti.truncate_to(BASE)
    assert len(ti) == 0
    assert os.path.getsize(ti.path) == 0


def test_time_index_sanity_check(ti):
    ti.sanity_check(next_offset=BASE)  # empty
    ti.maybe_append(100, BASE + 4)
    ti.sanity_check(next_offset=BASE + 5)
    with pytest.raises(CorruptIndexError):
        ti.sanity_check(next_offset=BASE + 4)  # entry points at the next offset
    with pytest.raises(CorruptIndexError):
        ti.sanity_check(next_offset=BASE)


@pytest.mark.parametrize(
    "entries",
    [
        [(200, 1), (100, 2)],  # timestamps decrease
        [(100, 1), (100, 2)],  # timestamps repeat
        [(100, 5), (200, 3)],  # offsets decrease
        [(100, -1)],  # offset before the base
    ],
)
def test_time_index_sanity_check_rejects_hand_written_bad_entries(tmp_path, opened, entries):
    path = tmp_path / "x.timeindex"
    path.write_bytes(b"".join(struct.pack(">qi", k, v) for k, v in entries))
    index = opened(TimeIndex(path, BASE, MAX))
    assert len(index) == len(entries)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(next_offset=BASE + 10**6)


# -- files ----------------------------------------------------------------------------------------


def test_rename_to_and_delete(tmp_path):
    index = OffsetIndex(tmp_path / "a.index", 0, MAX)
    index.append(1, 1)
    index.flush()
    index.rename_to(tmp_path / "a.index.deleted")
    assert index.path == tmp_path / "a.index.deleted"
    assert not (tmp_path / "a.index").exists()
    index.append(2, 2)
    index.flush()  # the open fd follows the rename
    assert index.path.read_bytes() == struct.pack(">ii", 1, 1) + struct.pack(">ii", 2, 2)
    index.delete()
    assert list(tmp_path.iterdir()) == []
    index.close()  # harmless after delete


# -- property: lookup against a brute-force reference ---------------------------------------------


@st.composite
def increasing_entries(draw):
    offset_steps = draw(st.lists(st.integers(min_value=1, max_value=50), max_size=60))
    position_steps = draw(st.lists(st.integers(min_value=0, max_value=5000), min_size=len(offset_steps),
                                   max_size=len(offset_steps)))
    entries, offset, position = [], draw(st.integers(min_value=0, max_value=10)), 0
    for d_offset, d_position in zip(offset_steps, position_steps):
        entries.append((offset, position))
        offset += d_offset
        position += d_position
    return entries


@settings(max_examples=200, deadline=None)
@given(
    base=st.integers(min_value=0, max_value=2**40),
    entries=increasing_entries(),
    targets=st.lists(st.integers(min_value=-20, max_value=3000), min_size=1, max_size=30),
    flush_and_reload=st.booleans(),
)
def test_offset_index_lookup_matches_brute_force(base, entries, targets, flush_and_reload):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "x.index"
        index = OffsetIndex(path, base, MAX)
        for rel, position in entries:
            index.append(base + rel, position)
        if flush_and_reload:
            index.close()
            index = OffsetIndex(path, base, MAX)
        try:
            for t in targets:
                target = base + t
                below = [(base + rel, pos) for rel, pos in entries if base + rel <= target]
                expected = max(below) if below else (base, 0)
                assert index.lookup(target) == expected
        finally:
            index.close()
