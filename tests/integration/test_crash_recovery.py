"""kill -9 a real writer process at random points, many rounds: what survives is a prefix of what was
written, nothing that was flushed is lost, the indexes are valid, and the log takes appends again.

Half the rounds also play a power cut on top of the kill: the unflushed tail of the newest segment is
cut at a random byte and, sometimes, followed by zeros or garbage (what a file system may show after
a crash). Flushed bytes are never touched, because fsync promised them.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brokers.protocol.record import iter_records
from brokers.protocol.record_batch import iter_batches, read_header
from brokers.storage.log_manager import LogManager
from tests.integration.crash_writer import (
    COMPACT_CONFIG,
    CONFIG,
    TP,
    expected_txn_state,
    planned_records,
    planned_values,
)

WRITER = Path(__file__).with_name("crash_writer.py")
ROUNDS = int(os.environ.get("ZKAFKA_CRASH_ROUNDS", "24"))


def run_writer_and_kill(log_dir: Path, seed: int, rng: random.Random, *extra: str) -> list[tuple[int, int, int]]:
    """Start the writer, wait until it has flushed at least once, SIGKILL it at a random moment."""
    proc = subprocess.Popen([sys.executable, str(WRITER), str(log_dir), str(seed), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    flushed = []
    deadline = time.monotonic() + 60
    first = proc.stdout.readline()  # blocks until the first durable point (or the writer dies)
    if not first.startswith("FLUSHED"):
        proc.kill()
        raise AssertionError(f"writer failed: {first!r} {proc.stderr.read()}")
    time.sleep(rng.uniform(0.0, 0.6))  # the kill lands at a random point of the append loop
    assert time.monotonic() < deadline
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    for line in [first] + out.splitlines():
        if line.startswith("FLUSHED"):
            _, offset, base, size = line.split()
            flushed.append((int(offset), int(base), int(size)))
    return flushed


def power_cut(partition_dir: Path, last_flush: tuple[int, int, int], rng: random.Random) -> None:
    """Lose part of the unflushed tail of the newest segment, maybe leaving zeros or garbage."""
    newest = max(partition_dir.glob("*.log"))
    base = int(newest.name.split(".")[0])
    size = newest.stat().st_size
    durable = last_flush[2] if base == last_flush[1] else 0
    if base < last_flush[1] or size <= durable:
        return
    cut = rng.randint(durable, size)
    with open(newest, "r+b") as f:
        f.truncate(cut)
        f.seek(cut)
        tail = rng.choice([b"", b"\0" * rng.randint(1, 4096), os.urandom(rng.randint(1, 4096))])
        f.write(tail)


def check_indexes(log) -> None:
    for segment in log.segments:
        for n in range(len(segment.offset_index)):
            relative, position = segment.offset_index.entry(n)
            header = read_header(segment.read_bytes(position, segment.size - position))
            assert header.last_offset == segment.base_offset + relative
        for n in range(len(segment.time_index)):
            _, relative = segment.time_index.entry(n)
            assert segment.base_offset + relative < segment.next_offset


def read_records(log) -> list:
    records, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        found = log.read(offset, 1 << 20).records
        if found is None:
            break
        data = found.read()
        batches = list(iter_batches(data, verify_crc=True))  # a whole, CRC-valid prefix: never torn bytes
        records.extend(r for r in iter_records(data) if r.offset >= offset)
        offset = batches[-1].next_offset
    return records


def read_everything(log) -> list[bytes]:
    return [r.value for r in read_records(log)]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_kill_minus_nine_loses_nothing_flushed(tmp_path, round_):
    rng = random.Random(round_)
    seed = 1000 + round_
    flushed = run_writer_and_kill(tmp_path, seed, rng)
    assert flushed, "the writer never reached a durable point"
    if round_ % 2:
        power_cut(tmp_path / TP.dir_name, flushed[-1], rng)

    manager = LogManager([tmp_path], CONFIG)
    manager.startup()
    log = manager.get_log(TP)
    survivors = read_everything(log)
    assert survivors == planned_values(seed, len(survivors)), "survivors are not a prefix of what was written"
    assert log.log_end_offset == len(survivors)
    assert log.log_end_offset >= flushed[-1][0], "flushed records were lost"
    check_indexes(log)
    assert all(e.start_offset < max(log.log_end_offset, 1) for e in log.leader_epoch_cache.entries)

    # The recovered log takes appends right at its end, and a clean restart keeps them.
    from brokers.protocol.record import Record, build_batch

    end = log.log_end_offset
    info = log.append_as_leader(build_batch([Record(0, 0, b"k", b"after-crash")], base_timestamp=1), 99)
    assert info.first_offset == end
    manager.shutdown()
    again = LogManager([tmp_path], CONFIG)
    again.startup()
    assert read_everything(again.get_log(TP)) == survivors + [b"after-crash"]
    again.shutdown()


@pytest.mark.parametrize("round_", range(max(4, ROUNDS // 2)))
def test_kill_minus_nine_during_compaction_keeps_every_latest_value(tmp_path, round_):
    """Kills land in appends, cleaning and segment swaps: after recovery every record is the one
    written at its offset, offsets only go up, and each key's latest value is still there."""
    rng = random.Random(10_000 + round_)
    seed = 5000 + round_
    flushed = run_writer_and_kill(tmp_path, seed, rng, "compact")
    manager = LogManager([tmp_path], COMPACT_CONFIG)
    manager.startup()
    log = manager.get_log(TP)
    end = log.log_end_offset
    assert end >= flushed[-1][0], "flushed records were lost"
    history = planned_records(seed, end, compact=True)
    records = read_records(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert all((r.key, r.value) == history[r.offset] for r in records), "a record is not what was written there"
    latest = {key: offset for offset, (key, _) in enumerate(history)}
    assert set(latest.values()) <= set(offsets), "compaction lost the latest value of a key"
    assert not list((tmp_path / TP.dir_name).glob("*.swap")) and not list((tmp_path / TP.dir_name).glob("*.cleaned"))
    check_indexes(log)
    manager.shutdown()


@pytest.mark.parametrize("round_", range(max(4, ROUNDS // 4)))
def test_kill_minus_nine_with_transactions_rebuilds_producer_state_lso_and_txnindex(tmp_path, round_):
    """Transactional batches and markers: after kill -9 (and, every other round, a torn tail) the open
    transactions, the LSO and every segment's .txnindex are those of the surviving prefix."""
    rng = random.Random(20_000 + round_)
    seed = 7000 + round_
    flushed = run_writer_and_kill(tmp_path, seed, rng, "txn")
    if round_ % 2:
        power_cut(tmp_path / TP.dir_name, flushed[-1], rng)
    manager = LogManager([tmp_path], CONFIG)
    manager.startup()
    log = manager.get_log(TP)
    end = log.log_end_offset
    assert end >= flushed[-1][0], "flushed records were lost"
    ongoing, aborted = expected_txn_state(seed, end)
    assert log.producer_state.ongoing_transactions() == ongoing
    assert [tuple(e) for s in log.segments for e in s.txn_index.entries()] == aborted
    log.update_high_watermark(end)
    assert log.last_stable_offset == min(ongoing.values(), default=end)
    assert [tuple(e) for e in log.collect_aborted_transactions(0, end)] == aborted
    check_indexes(log)
    if ongoing:  # the log takes the open transaction's marker, and a clean restart keeps it
        pid = min(ongoing, key=ongoing.get)
        log.append_marker(pid, 0, False, 0, 0)
        manager.shutdown()
        again = LogManager([tmp_path], CONFIG)
        again.startup()
        reopened = again.get_log(TP)
        assert pid not in reopened.producer_state.ongoing_transactions()
        assert reopened.active_segment.txn_index.entries()[-1][:3] == (pid, ongoing[pid], end)
        again.shutdown()
    else:
        manager.shutdown()
