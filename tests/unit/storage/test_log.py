"""Log: appends assign offsets in the producer's bytes, reads return file ranges, rolls, truncation."""
from __future__ import annotations

import os
import struct

import pytest

from brokers.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)
from brokers.protocol.record import iter_records
from brokers.protocol.record_batch import CRC_AT, crc32c, iter_batches

from .conftest import batch, read_all


def snapshot(log):
    """Every byte of every segment file, to prove a rejected append changed nothing."""
    return {p.name: p.read_bytes() for p in sorted(log.directory.iterdir())}, log.log_end_offset


def test_append_assigns_consecutive_offsets_and_leader_epoch_in_place(make_log):
    log = make_log()
    first = batch([b"a", b"b", b"c"])
    info = log.append_as_leader(first, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.records_count) == (0, 2, 3)
    second = batch([b"d", b"e"])
    info = log.append_as_leader(second, leader_epoch=7)
    assert (info.first_offset, info.last_offset) == (3, 4)
    header = next(iter_batches(second, verify_crc=True))  # CRC still valid after the rewrite
    assert (header.base_offset, header.partition_leader_epoch) == (3, 7)
    assert log.log_end_offset == 5
    assert [(r.offset, r.value) for r in read_all(log)] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]


def test_bytes_on_disk_are_the_producers_bytes(make_log):
    log = make_log()
    produced = batch([b"x" * 100] * 10, codec=4)
    log.append_as_leader(produced, leader_epoch=0)
    data = (log.directory / "00000000000000000000.log").read_bytes()
    assert data == bytes(produced)


def test_multiple_batches_in_one_append(make_log):
    log = make_log()
    buf = batch([b"1", b"2"]) + batch([b"3"]) + batch([b"4", b"5", b"6"])
    info = log.append_as_leader(buf, leader_epoch=1)
    assert (info.first_offset, info.last_offset, info.records_count) == (0, 5, 6)
    assert [h.base_offset for h in iter_batches(buf)] == [0, 2, 3]
    assert [r.offset for r in read_all(log)] == list(range(6))


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_every_codec_round_trips_untouched(make_log, codec):
    log = make_log()
    values = [f"value-{i}".encode() * 3 for i in range(50)]
    log.append_as_leader(batch(values, codec=codec), leader_epoch=0)
    assert [r.value for r in read_all(log)] == values


def corrupt_crc(buf: bytearray) -> bytearray:
    buf[-1] ^= 0xFF
    return buf


def wrong_magic(buf: bytearray) -> bytearray:
    buf[16] = 1
    return buf


def count_mismatch(buf: bytearray) -> bytearray:
    struct.pack_into(">i", buf, 57, 99)  # records_count is inside the CRC: fix the CRC up
    import crc32c

    struct.pack_into(">I", buf, CRC_AT, crc32c.crc32c(bytes(buf[21:])))
    return buf


@pytest.mark.parametrize(
    "damage, error, code",
    [
        (corrupt_crc, CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (wrong_magic, CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (lambda b: b[:-5], CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (count_mismatch, InvalidRecordError, ErrorCode.INVALID_RECORD),
    ],
    ids=["bad-crc", "wrong-magic", "truncated", "count-mismatch"],
)
def test_bad_batches_are_rejected_whole_and_the_log_is_unchanged(make_log, damage, error, code):
    log = make_log(index_interval_bytes=1)
    for i in range(3):
        log.append_as_leader(batch([b"ok-%d" % i]), leader_epoch=0)
    before = snapshot(log)
    bad = batch([b"good"]) + damage(batch([b"x", b"y"]))  # a good batch first: still all rejected
    with pytest.raises(error) as excinfo:
        log.append_as_leader(bad, leader_epoch=0)
    assert excinfo.value.code == code
    assert snapshot(log) == before
    assert [r.value for r in read_all(log)] == [b"ok-0", b"ok-1", b"ok-2"]


def test_unknown_codec_rejected(make_log):
    log = make_log()
    buf = batch([b"a"])
    buf[22] |= 0x07  # attributes low byte: codec 7, then fix the CRC
    import crc32c

    struct.pack_into(">I", buf, CRC_AT, crc32c.crc32c(bytes(buf[21:])))
    with pytest.raises(UnsupportedCompressionError):
        log.append_as_leader(buf, leader_epoch=0)
    assert log.log_end_offset == 0


def test_batch_larger_than_max_message_bytes_is_rejected(make_log):
    log = make_log(max_message_bytes=200)
    with pytest.raises(RecordTooLargeError) as excinfo:
        log.append_as_leader(batch([b"x" * 300]), leader_epoch=0)
    assert excinfo.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0


def test_compacted_topic_rejects_keyless_records(make_log):
    log = make_log(cleanup_policy="compact")
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch([b"v"], keys=[None]), leader_epoch=0)
    log.append_as_leader(batch([b"v"], keys=[b"k"]), leader_epoch=0)
    assert log.log_end_offset == 1


def test_log_append_time_stamps_batches_and_keeps_crc_valid(make_log):
    log = make_log(message_timestamp_type="LogAppendTime", clock=lambda: 5000.0)
    buf = batch([b"a", b"b"], ts=1)
    info = log.append_as_leader(buf, leader_epoch=0)
    assert info.log_append_time == 5_000_000
    assert [r.timestamp for r in read_all(log)] == [5_000_000, 5_000_000]


def test_roll_by_segment_bytes_and_reads_across_segments(make_log):
    log = make_log(segment_bytes=500, index_interval_bytes=64)
    for i in range(40):
        log.append_as_leader(batch([b"%03d" % i, b"x" * 20]), leader_epoch=0)
    assert len(log.segments) > 5
    assert all(s.size <= 500 for s in log.segments)
    assert [s.base_offset for s in log.segments] == sorted(s.base_offset for s in log.segments)
    assert [r.offset for r in read_all(log)] == list(range(80))
    for offset in (0, 17, 33, 61, 79):  # reading from the middle of any segment
        assert read_all(log, start=offset)[0].offset == offset


def test_roll_by_segment_ms_uses_record_timestamps(make_log):
    log = make_log(segment_ms=1000)
    log.append_as_leader(batch([b"a"], ts=10_000), leader_epoch=0)
    log.append_as_leader(batch([b"b"], ts=10_900), leader_epoch=0)
    assert len(log.segments) == 1
    log.append_as_leader(batch([b"c"], ts=11_001), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_read_respects_max_offset_and_min_one_message(make_log):
    log = make_log()
    for i in range(5):
        log.append_as_leader(batch([b"v" * 50, b"w" * 50]), leader_epoch=0)
    info = log.read(0, 10**6, max_offset=4)
    assert [r.offset for r in iter_records(info.records.read())] == [0, 1, 2, 3]
    assert log.read(4, 10**6, max_offset=4).records is None
    one = log.read(2, max_bytes=10)  # smaller than a batch: still the whole first batch (KIP-74)
    assert [r.offset for r in iter_records(one.records.read())] == [2, 3]
    assert log.read(10, 100).records is None  # at the log end: empty, not an error


def test_read_returns_sendfile_ranges(make_log):
    log = make_log()
    log.append_as_leader(batch([b"abc"]), leader_epoch=0)
    log.append_as_leader(batch([b"def"]), leader_epoch=0)
    info = log.read(1, 10**6)
    rng = info.records
    assert rng.position > 0 and rng.first_offset == 1
    import os

    assert os.pread(rng.fileno(), rng.size, rng.position) == rng.read()


def test_read_out_of_range(make_log):
    log = make_log()
    log.append_as_leader(batch([b"a"]), leader_epoch=0)
    with pytest.raises(OffsetOutOfRangeError) as excinfo:
        log.read(2, 100)
    assert excinfo.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_offset_for_timestamp(make_log):
    log = make_log(segment_bytes=400, index_interval_bytes=50)
    for i in range(30):  # batch i: records at 1000 + 10i, +1, +2
        log.append_as_leader(batch([b"a", b"b", b"c"], ts=1000 + 10 * i), leader_epoch=0)
    assert len(log.segments) > 3
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1001)
    assert log.offset_for_timestamp(1003) == (3, 1010)
    assert log.offset_for_timestamp(1152) == (47, 1152)
    assert log.offset_for_timestamp(1292) == (89, 1292)
    assert log.offset_for_timestamp(1293) is None


def test_offset_for_timestamp_with_out_of_order_timestamps(make_log):
    log = make_log(segment_bytes=200, index_interval_bytes=1)
    for ts in (500, 100, 900, 300, 700):
        log.append_as_leader(batch([b"x"], ts=ts), leader_epoch=0)
    # first offset whose timestamp is >= target, in offset order
    assert log.offset_for_timestamp(200) == (0, 500)
    assert log.offset_for_timestamp(600) == (2, 900)
    assert log.offset_for_timestamp(901) is None


@pytest.mark.parametrize("codec", [0, 1])
def test_batches_with_max_timestamp_minus_one_are_found_by_time(make_log, codec):
    """Sarama writes max_timestamp = -1; the append recomputes it (Kafka's LogValidator), so the time
    index, ListOffsets by time and time-based rolling see the records' timestamps."""
    log = make_log(segment_bytes=300, index_interval_bytes=1)
    for i in range(12):
        produced = batch([b"a", b"b"], ts=1000 + 10 * i, codec=codec)
        produced[35:43] = (-1).to_bytes(8, "big", signed=True)
        produced[17:21] = crc32c(memoryview(produced)[21:]).to_bytes(4, "big")
        info = log.append_as_leader(produced, leader_epoch=0)
        assert info.max_timestamp == 1000 + 10 * i + 1
        assert next(iter_batches(produced, verify_crc=True)).max_timestamp == 1000 + 10 * i + 1
    assert len(log.segments) > 2
    assert max(s.max_timestamp for s in log.segments) == 1111
    assert log.offset_for_timestamp(1055) == (12, 1060)
    assert log.offset_for_timestamp(1111) == (23, 1111)
    assert log.offset_for_timestamp(1112) is None


def test_log_append_time_topics_do_not_walk_records(make_log, monkeypatch):
    monkeypatch.setattr("brokers.storage.log.repair_max_timestamps",
                        lambda *_: (_ for _ in ()).throw(AssertionError("walked")))
    log = make_log(message_timestamp_type="LogAppendTime")
    produced = batch([b"a"])
    produced[35:43] = (-1).to_bytes(8, "big", signed=True)
    produced[17:21] = crc32c(memoryview(produced)[21:]).to_bytes(4, "big")
    assert log.append_as_leader(produced, leader_epoch=0).log_append_time > 0


def test_truncate_to_removes_the_tail_and_epochs(make_log):
    log = make_log(segment_bytes=300, index_interval_bytes=1)
    for i in range(20):
        log.append_as_leader(batch([b"v%d" % i]), leader_epoch=i // 5)
    log.update_high_watermark(20)
    assert log.truncate_to(12)
    assert log.log_end_offset == 12 and log.high_watermark == 12
    assert [r.offset for r in read_all(log)] == list(range(12))
    assert [e.epoch for e in log.leader_epoch_cache.entries] == [0, 1, 2]
    info = log.append_as_leader(batch([b"new"]), leader_epoch=5)
    assert info.first_offset == 12
    assert read_all(log)[-1].value == b"new"
    assert not log.truncate_to(100)


def test_truncate_at_the_log_end_drops_an_epoch_that_wrote_nothing(make_log):
    """Kafka's Log.truncateTo: a leader's epoch entry with no records goes even when nothing else does."""
    log = make_log()
    log.append_as_leader(batch([b"a", b"b"]), leader_epoch=1)
    log.leader_epoch_cache.assign(4, log.log_end_offset)  # became leader at 4, then lost it unwritten
    assert not log.truncate_to(2)
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(1, 0)]
    assert log.log_end_offset == 2


def test_truncate_fully_and_start_at(make_log):
    log = make_log()
    for i in range(5):
        log.append_as_leader(batch([b"v"]), leader_epoch=0)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert [s.base_offset for s in log.segments] == [1000]
    assert log.append_as_leader(batch([b"w"]), leader_epoch=1).first_offset == 1000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)


def test_follower_append_keeps_offsets_and_learns_epochs(make_log):
    leader = make_log("t-0")
    follower = make_log("t-1")
    for epoch in (0, 0, 3):
        leader.append_as_leader(batch([b"a", b"b"]), leader_epoch=epoch)
    data = leader.read(0, 10**6).records.read()
    follower.append_as_follower(bytearray(data))
    assert follower.log_end_offset == 6
    assert [(e.epoch, e.start_offset) for e in follower.leader_epoch_cache.entries] == [(0, 0), (3, 4)]
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(bytearray(data))  # offsets below the log end


def test_reopen_after_close_keeps_everything(make_log, tmp_path):
    from brokers.storage.log import Log
    from brokers.storage.log_config import LogConfig

    config = LogConfig(segment_bytes=300, index_interval_bytes=10)
    log = Log(tmp_path / "r-0", config)
    for i in range(25):
        log.append_as_leader(batch([b"v%d" % i], ts=100 + i), leader_epoch=2)
    log.flush()
    log.close()
    reopened = Log(tmp_path / "r-0", config, recovery_point=25, clean_shutdown=True)
    assert reopened.log_end_offset == 25
    assert [r.value for r in read_all(reopened)] == [b"v%d" % i for i in range(25)]
    assert reopened.offset_for_timestamp(110) == (10, 110)
    assert reopened.append_as_leader(batch([b"more"]), leader_epoch=2).first_offset == 25
    reopened.close()


def test_flush_messages_advances_recovery_point(make_log):
    log = make_log(flush_messages=3)
    log.append_as_leader(batch([b"a", b"b"]), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(batch([b"c"]), leader_epoch=0)
    assert log.recovery_point == 3


def test_flush_ms(make_log):
    now = [1000.0]
    log = make_log(flush_ms=500, clock=lambda: now[0])
    log.append_as_leader(batch([b"a"]), leader_epoch=0)
    assert not log.flush_if_due(int(now[0] * 1000) + 100)
    assert log.flush_if_due(int(now[0] * 1000) + 600)
    assert log.recovery_point == 1


def _open_files_under(directory) -> int:
    """How many of this process's file descriptors point into ``directory``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(str(directory))
        except OSError:
            continue
    return count


def test_a_segment_holds_one_open_file_its_indexes_none(make_log, tmp_path):
    """The open-file budget of a partition replica is one descriptor per segment (the ``.log``): with the
    indexes holding descriptors too, a broker ran out of its 20,000 open files at ~6,600 replicas. The indexes
    still reach their files: entries are written on flush, and a reopened log finds them."""
    log = make_log("fds-0", segment_bytes=300, index_interval_bytes=10)
    for i in range(25):
        log.append_as_leader(batch([b"v%d" % i], ts=100 + i), leader_epoch=1)
    segments = len(log.segments)
    assert segments > 3
    assert _open_files_under(tmp_path / "fds-0") == segments
    log.flush()
    assert _open_files_under(tmp_path / "fds-0") == segments
    index_files = sorted((tmp_path / "fds-0").glob("*.index"))
    assert len(index_files) == segments and sum(f.stat().st_size for f in index_files) > 0
    log.close()
    assert _open_files_under(tmp_path / "fds-0") == 0


def test_close_snapshots_producers_unless_the_log_is_empty_and_has_none(tmp_path):
    """As Kafka (a snapshot only past the last one): closing an empty log writes no producer snapshot, so a clean
    shutdown of 10,000 idle partitions creates no files; a log with records gets one at its end, and reopening it
    keeps an idempotent producer's state (a retried batch is still a duplicate)."""
    from brokers.storage.log import Log
    from brokers.storage.log_config import LogConfig

    from .test_producer_state import idem

    empty = Log(tmp_path / "empty-0", LogConfig())
    empty.close(durable=False)
    assert list((tmp_path / "empty-0").glob("*.snapshot")) == []
    log = Log(tmp_path / "p-0", LogConfig())
    log.append_as_leader(idem(2, seq=0), leader_epoch=0)
    log.close(durable=False)
    assert [p.name for p in (tmp_path / "p-0").glob("*.snapshot")] == ["00000000000000000002.snapshot"]
    reopened = Log(tmp_path / "p-0", LogConfig(), recovery_point=2, clean_shutdown=True)
    assert reopened.append_as_leader(idem(2, seq=0), leader_epoch=0).duplicate
    reopened.close()
