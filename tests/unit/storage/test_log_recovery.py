"""Recovery: torn or corrupt tails are cut at the last whole batch, indexes are rebuilt, swaps finish."""
from __future__ import annotations

import os
import random

import pytest

from brokers.protocol.record_batch import read_header
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig

from .conftest import batch, read_all

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=100)


def assert_indexes_valid(log: Log) -> None:
    """Every offset-index entry names a batch start and that batch's last offset; time entries fit."""
    for segment in log.segments:
        index = segment.offset_index
        for n in range(len(index)):
            relative, position = index.entry(n)
            data = segment.read_bytes(position, segment.size - position)
            header = read_header(data, 0)
            assert header.last_offset == segment.base_offset + relative
        for n in range(len(segment.time_index)):
            timestamp, relative = segment.time_index.entry(n)
            assert segment.base_offset + relative < segment.next_offset
            assert timestamp <= segment.max_timestamp


def write_log(path, batches=60, config=CONFIG):
    log = Log(path, config)
    values = []
    for i in range(batches):
        vals = [b"v%d-%d" % (i, j) for j in range(1 + i % 3)]
        values.extend(vals)
        log.append_as_leader(batch(vals, ts=1000 + i), leader_epoch=i // 20)
    log.close()
    return values


def reopen(path, recovery_point=0, config=CONFIG) -> Log:
    return Log(path, config, recovery_point=recovery_point, clean_shutdown=False)


def test_rebuilt_indexes_equal_the_ones_written_while_appending(tmp_path):
    write_log(tmp_path / "t-0")
    originals = {p.name: p.read_bytes() for p in (tmp_path / "t-0").glob("*index")}
    assert any(originals.values())
    log = reopen(tmp_path / "t-0")
    log.close()
    assert {p.name: p.read_bytes() for p in (tmp_path / "t-0").glob("*index")} == originals


@pytest.mark.parametrize("seed", range(12))
def test_torn_tail_is_truncated_to_a_prefix(tmp_path, seed):
    values = write_log(tmp_path / "t-0")
    last = max((tmp_path / "t-0").glob("*.log"))
    size = last.stat().st_size
    cut = random.Random(seed).randrange(1, size)
    os.truncate(last, cut)
    log = reopen(tmp_path / "t-0")
    survivors = [r.value for r in read_all(log)]
    assert survivors == values[: len(survivors)]
    assert log.active_segment.size <= cut
    assert log.log_end_offset == len(survivors)
    assert_indexes_valid(log)
    # the log accepts appends right after the survivors
    assert log.append_as_leader(batch([b"after"]), leader_epoch=9).first_offset == len(survivors)
    log.close()


@pytest.mark.parametrize("garbage", [b"\0" * 100, os.urandom(300), b"\xff" * 12])
def test_garbage_after_the_last_batch_is_cut(tmp_path, garbage):
    values = write_log(tmp_path / "t-0")
    last = max((tmp_path / "t-0").glob("*.log"))
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(garbage)
    log = reopen(tmp_path / "t-0")
    assert [r.value for r in read_all(log)] == values
    assert log.active_segment.size == size
    log.close()


def test_corruption_in_an_unflushed_segment_drops_it_and_everything_after(tmp_path):
    values = write_log(tmp_path / "t-0")
    logs = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(logs) >= 3
    victim = logs[1]
    data = bytearray(victim.read_bytes())
    data[200] ^= 0x55  # inside some batch of the second segment
    victim.write_bytes(bytes(data))
    log = reopen(tmp_path / "t-0")
    survivors = [r.value for r in read_all(log)]
    assert survivors == values[: len(survivors)]
    assert len(log.segments) == 2
    assert log.load_result.deleted_segments == len(logs) - 2
    assert not any(p.exists() for p in logs[2:])
    assert log.leader_epoch_cache.entries[-1].start_offset < log.log_end_offset
    assert_indexes_valid(log)
    log.close()


def test_segments_before_the_recovery_point_are_trusted_not_scanned(tmp_path):
    write_log(tmp_path / "t-0")
    log = reopen(tmp_path / "t-0", recovery_point=10**9)
    assert log.load_result.recovered_segments == 1  # only the segment holding the recovery point
    log.close()


@pytest.mark.parametrize("damage", ["delete", "odd-size", "out-of-order", "past-end"])
def test_missing_or_insane_index_is_rebuilt(tmp_path, damage):
    values = write_log(tmp_path / "t-0")
    index = sorted((tmp_path / "t-0").glob("*.index"))[0]
    good = index.read_bytes()
    assert len(good) >= 16
    if damage == "delete":
        index.unlink()
    elif damage == "odd-size":
        index.write_bytes(good + b"\1\2\3")
    elif damage == "out-of-order":
        index.write_bytes(good[8:16] + good[0:8] + good[16:])
    else:
        index.write_bytes(good + (10**6).to_bytes(4, "big") + (10**7).to_bytes(4, "big"))
    log = reopen(tmp_path / "t-0", recovery_point=10**9)  # even for a trusted (flushed) segment
    assert [r.value for r in read_all(log)] == values
    assert log.segments[0].base_offset in log.load_result.rebuilt_indexes
    log.close()
    assert index.read_bytes() == good


def test_leftover_cleaned_files_are_removed(tmp_path):
    values = write_log(tmp_path / "t-0")
    stray = tmp_path / "t-0" / "00000000000000000000.log.cleaned"
    stray.write_bytes(b"half-written")
    (tmp_path / "t-0" / "00000000000000000000.index.cleaned").write_bytes(b"x")
    log = reopen(tmp_path / "t-0")
    assert [r.value for r in read_all(log)] == values
    assert not list((tmp_path / "t-0").glob("*.cleaned"))
    log.close()


def test_interrupted_swap_is_completed(tmp_path):
    """A .log.swap (fsynced before its rename) replaces the segments its offsets cover."""
    values = write_log(tmp_path / "t-0")
    directory = tmp_path / "t-0"
    logs = sorted(directory.glob("*.log"))
    first, second = logs[0], logs[1]
    # The "cleaned" replacement for the first two segments: here simply their concatenation.
    swap = directory / (first.name + ".swap")
    swap.write_bytes(first.read_bytes() + second.read_bytes())
    (directory / first.name).rename(directory / (first.name + ".deleted"))  # crash mid-swap
    log = reopen(directory)
    assert [r.value for r in read_all(log)] == values
    assert len(log.segments) == len(logs) - 1
    assert not second.exists() and not list(directory.glob("*.swap")) and not list(directory.glob("*.deleted"))
    assert log.segments[0].base_offset == 0
    log.close()
