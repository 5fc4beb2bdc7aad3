"""Retention deletes whole segments, oldest first, never at or above the high watermark."""
from __future__ import annotations

import pytest

from brokers.protocol.errors import OffsetOutOfRangeError
from brokers.storage.log import Log

from .conftest import batch, read_all


def fill(log: Log, count: int, ts=lambda i: 100_000 + i * 1000):
    for i in range(count):
        log.append_as_leader(batch([b"%04d" % i, b"x" * 40], ts=ts(i)), leader_epoch=i // 10)
    log.update_high_watermark(log.log_end_offset)


class RecordingScheduler:
    def __init__(self):
        self.tasks = []

    def schedule_once(self, name, fn, delay_ms=0):
        self.tasks.append((name, fn, delay_ms))


def test_time_retention_deletes_old_segments_and_moves_log_start(make_log):
    log = make_log(segment_bytes=400, retention_ms=20_000, clock=lambda: 140.0)  # now = 140_000 ms
    fill(log, 40)  # record timestamps 100_000 .. 139_000
    before = log.segments
    deleted = log.delete_old_segments()
    assert deleted > 0
    remaining = log.segments
    assert remaining == before[deleted:]
    assert all(s.largest_timestamp >= 120_000 for s in remaining)
    assert before[deleted - 1].largest_timestamp < 120_000
    assert log.log_start_offset == remaining[0].base_offset
    assert read_all(log)[0].offset == log.log_start_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert log.leader_epoch_cache.entries[0].start_offset == log.log_start_offset
    assert not any(s.log_path.exists() for s in before[:deleted])


def test_nothing_at_or_above_the_high_watermark_is_deleted(make_log):
    log = make_log(segment_bytes=400, retention_ms=0, clock=lambda: 10**6)
    fill(log, 40)
    segments = log.segments
    log.update_high_watermark(segments[2].base_offset)  # only the first two lie wholly below it
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == segments[2].base_offset


def test_when_every_segment_expires_an_empty_active_segment_remains(make_log):
    log = make_log(segment_bytes=400, retention_ms=1, clock=lambda: 10**6)
    fill(log, 20)
    end = log.log_end_offset
    log.delete_old_segments()
    assert [s.base_offset for s in log.segments] == [end]
    assert (log.log_start_offset, log.log_end_offset) == (end, end)
    assert log.append_as_leader(batch([b"next"]), leader_epoch=5).first_offset == end


def test_future_timestamp_pins_its_segment_and_everything_after(make_log):
    log = make_log(segment_bytes=400, retention_ms=20_000, clock=lambda: 140.0)
    fill(log, 40, ts=lambda i: 10**8 if i == 1 else 100_000 + i * 1000)
    assert log.delete_old_segments() == 0
    assert log.log_start_offset == 0


def test_size_retention(make_log):
    log = make_log(segment_bytes=400, retention_bytes=1000, retention_ms=-1)
    fill(log, 40)
    deleted = log.delete_old_segments()
    assert deleted > 0
    sizes = [s.size for s in log.segments]
    assert sum(sizes) >= 1000 > sum(sizes) - sizes[0]


def test_compact_only_topics_ignore_time_retention(make_log):
    log = make_log(segment_bytes=400, retention_ms=1, cleanup_policy="compact", clock=lambda: 10**6)
    for i in range(20):
        log.append_as_leader(batch([b"v"], keys=[b"k%d" % i]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0


def test_log_start_offset_deletes_segments_below_it(make_log):
    log = make_log(segment_bytes=400, retention_ms=-1, cleanup_policy="compact,delete")
    for i in range(30):
        log.append_as_leader(batch([b"v" * 30], keys=[b"k%d" % i]), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    segments = log.segments
    log.increment_log_start_offset(segments[2].base_offset + 1)
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == segments[2].base_offset + 1
    assert read_all(log)[0].offset == segments[2].base_offset + 1
    with pytest.raises(OffsetOutOfRangeError):
        log.increment_log_start_offset(log.log_end_offset + 1)


def test_deleted_files_linger_as_dot_deleted_until_the_delay(tmp_path):
    from brokers.storage.log_config import LogConfig

    scheduler = RecordingScheduler()
    log = Log(tmp_path / "d-0", LogConfig(segment_bytes=400, retention_ms=1, file_delete_delay_ms=60000),
              scheduler=scheduler, clock=lambda: 10**6)
    fill(log, 20)
    log.delete_old_segments()
    deletions = [t for t in scheduler.tasks if t[0].startswith("delete-")]
    assert deletions and all(delay == 60000 for _, _, delay in deletions)
    assert list(tmp_path.glob("d-0/*.log.deleted"))
    for _, fn, _ in deletions:
        fn()
    assert not list(tmp_path.glob("d-0/*.deleted"))
    log.close()


@pytest.mark.parametrize("config", [dict(retention_ms=1), dict(retention_bytes=0, retention_ms=-1), dict()])
def test_an_empty_log_survives_retention(make_log, config):
    """Regression: an empty partition once lost its only segment to retention and broke for good."""
    log = make_log(clock=lambda: 10**6, **config)
    assert log.delete_old_segments() == 0
    assert [s.base_offset for s in log.segments] == [0]
    assert log.append_as_leader(batch([b"after"]), leader_epoch=0).first_offset == 0


def test_an_emptied_log_keeps_an_empty_active_segment_through_repeated_retention(make_log):
    log = make_log(segment_bytes=400, retention_ms=1, clock=lambda: 10**6)
    fill(log, 10)
    log.delete_old_segments()
    end = log.log_end_offset
    for _ in range(3):  # the retention task runs again and again on the now-empty log
        assert log.delete_old_segments() == 0
    assert [s.base_offset for s in log.segments] == [end] and log.log_start_offset == end
    assert log.append_as_leader(batch([b"next"]), leader_epoch=1).first_offset == end
