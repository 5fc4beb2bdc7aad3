"""LogManager: loading log dirs, checkpoints in Kafka's format, clean-shutdown marker, locks, tasks."""
from __future__ import annotations

import time

import pytest

from brokers.model import TopicPartition
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogDirInUseError, LogManager, LogManagerConfig
from brokers.storage.scheduler import Scheduler

from .conftest import batch, read_all

TP = TopicPartition("orders", 0)


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    raise AssertionError("condition not met before the deadline")


def test_shutdown_writes_checkpoints_and_marker_and_restart_trusts_them(tmp_path):
    manager = LogManager([tmp_path], LogConfig(segment_bytes=500))
    manager.startup()
    log = manager.get_or_create_log(TP)
    for i in range(20):
        log.append_as_leader(batch([b"v%d" % i]), leader_epoch=0)
    log.update_high_watermark(15)
    manager.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 0 20\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n1\norders 0 15\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\norders 0 0\n"

    again = LogManager([tmp_path], LogConfig(segment_bytes=500))
    again.startup()
    log = again.get_log(TP)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()  # removed once loaded
    assert log.load_result.recovered_segments == 0
    assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (20, 15, 20)
    assert [r.value for r in read_all(log)] == [b"v%d" % i for i in range(20)]
    again.shutdown()


def test_unclean_start_recovers_past_the_recovery_point(tmp_path):
    manager = LogManager([tmp_path], LogConfig(segment_bytes=500))
    manager.startup()
    log = manager.get_or_create_log(TP)
    for i in range(20):
        log.append_as_leader(batch([b"v%d" % i]), leader_epoch=0)
    log.flush(up_to=log.segments[1].base_offset)
    manager.checkpoint_recovery_points()
    recovery_point = log.recovery_point
    # no shutdown: the process "died"; release the lock the way the kernel would
    for d in manager._dirs:
        d.release()
    again = LogManager([tmp_path], LogConfig(segment_bytes=500))
    again.startup()
    reloaded = again.get_log(TP)
    holding = sum(1 for s in reloaded.segments if s.base_offset <= recovery_point)
    assert reloaded.load_result.recovered_segments == len(reloaded.segments) - holding + 1
    assert reloaded.log_end_offset == 20
    again.shutdown()


def test_a_log_dir_is_locked_against_a_second_manager(tmp_path):
    manager = LogManager([tmp_path])
    with pytest.raises(LogDirInUseError, match=str(tmp_path)):
        LogManager([tmp_path])
    manager.shutdown()
    LogManager([tmp_path]).shutdown()  # free again after shutdown


def test_new_logs_go_to_the_least_loaded_dir_and_are_found_after_restart(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs)
    manager.startup()
    for p in range(4):
        manager.get_or_create_log(TopicPartition("t", p))
    assert len(list(dirs[0].glob("t-*"))) == 2 and len(list(dirs[1].glob("t-*"))) == 2
    manager.shutdown()
    again = LogManager(dirs)
    again.startup()
    assert sorted(l.topic_partition.partition for l in again.all_logs()) == [0, 1, 2, 3]
    again.shutdown()


def test_many_new_logs_spread_over_the_dirs_with_one_fsync_per_dir(tmp_path, monkeypatch):
    import brokers.storage.log_manager as log_manager
    synced = []
    monkeypatch.setattr(log_manager, "fsync_dir", synced.append)
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs)
    manager.startup()
    manager.get_or_create_log(TopicPartition("t", 0))  # one alone: its own fsync, in dir a
    synced.clear()
    made = manager.get_or_create_logs({TopicPartition("u", p): (None, True) for p in range(5)})
    assert all(made[TopicPartition("u", p)] is manager.get_log(TopicPartition("u", p)) for p in range(5))
    assert len(list(dirs[0].glob("*-*"))) == 3 and len(list(dirs[1].glob("*-*"))) == 3
    assert sorted(synced) == sorted(dirs)  # each dir once, after its new logs
    synced.clear()
    assert manager.get_or_create_logs({TopicPartition("u", 0): (None, True)})[TopicPartition("u", 0)] is made[
        TopicPartition("u", 0)] and synced == []  # nothing new: nothing to sync
    manager.shutdown()


def test_delete_log_removes_the_directory(tmp_path):
    manager = LogManager([tmp_path])
    manager.startup()
    log = manager.get_or_create_log(TP)
    log.append_as_leader(batch([b"x"]), leader_epoch=0)
    assert manager.delete_log(TP)
    assert manager.get_log(TP) is None
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]
    assert not manager.delete_log(TP)
    manager.shutdown()


def test_leftover_delete_dirs_are_removed_at_startup(tmp_path):
    (tmp_path / "orders-3.123-delete").mkdir()
    (tmp_path / "orders-3.123-delete" / "00000000000000000000.log").write_bytes(b"x")
    manager = LogManager([tmp_path])
    manager.startup()
    assert not (tmp_path / "orders-3.123-delete").exists()
    manager.shutdown()


def test_per_topic_configs(tmp_path):
    manager = LogManager([tmp_path], LogConfig(), topic_configs={"compacted": LogConfig(cleanup_policy="compact")})
    manager.startup()
    assert manager.get_or_create_log(TopicPartition("compacted", 0)).config.compact
    assert not manager.get_or_create_log(TP).config.compact
    manager.shutdown()


def test_a_restart_loads_existing_logs_with_their_topics_configs_and_a_later_config_applies(tmp_path):
    first = LogManager([tmp_path], LogConfig())
    first.startup()
    first.get_or_create_log(TopicPartition("compacted", 0)).append_as_leader(batch([b"v"]), leader_epoch=0)
    first.shutdown()

    again = LogManager([tmp_path], LogConfig(), topic_configs={"compacted": LogConfig(cleanup_policy="compact")})
    again.startup()
    loaded = again.get_log(TopicPartition("compacted", 0))
    assert loaded.config.compact  # loaded with the override, not the defaults
    changed = LogConfig(cleanup_policy="delete", retention_ms=1000)
    assert again.get_or_create_log(TopicPartition("compacted", 0), changed) is loaded
    assert loaded.config is changed and again.config_for("compacted") is changed  # a LeaderAndIsr's config applies
    again.shutdown()


def test_background_tasks_run_retention_and_checkpoints(tmp_path):
    scheduler = Scheduler()
    config = LogConfig(segment_bytes=400, retention_ms=1, file_delete_delay_ms=0)
    tasks = LogManagerConfig(retention_check_interval_ms=20, flush_offset_checkpoint_interval_ms=20,
                             high_watermark_checkpoint_interval_ms=20, cleaner_enable=False)
    manager = LogManager([tmp_path], config, tasks, scheduler=scheduler, clock=lambda: time.time() + 3600)
    manager.startup()
    log = manager.get_or_create_log(TP)
    for i in range(20):
        log.append_as_leader(batch([b"x" * 40], ts=1000 + i), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    wait_for(lambda: log.log_start_offset == log.log_end_offset)
    checkpoint = tmp_path / "replication-offset-checkpoint"
    wait_for(lambda: checkpoint.exists() and "orders 0 20" in checkpoint.read_text())
    manager.shutdown()


def test_corrupt_checkpoint_means_full_recovery_not_a_crash(tmp_path):
    manager = LogManager([tmp_path])
    manager.startup()
    manager.get_or_create_log(TP).append_as_leader(batch([b"x"]), leader_epoch=0)
    manager.shutdown()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage")
    (tmp_path / ".kafka_cleanshutdown").unlink()
    again = LogManager([tmp_path])
    again.startup()
    assert again.get_log(TP).log_end_offset == 1
    assert again.get_log(TP).load_result.recovered_segments == 1
    again.shutdown()


def test_a_topic_config_change_reaches_every_local_log_of_the_topic_and_retention_uses_it(tmp_path):
    manager = LogManager([tmp_path], LogConfig(segment_bytes=500), clock=lambda: 10_000.0)
    manager.startup()
    a0, a1 = manager.get_or_create_log(TopicPartition("a", 0)), manager.get_or_create_log(TopicPartition("a", 1))
    b0 = manager.get_or_create_log(TopicPartition("b", 0))
    for log in (a0, a1, b0):
        for i in range(20):
            log.append_as_leader(batch([b"v%03d" % i, b"x" * 40], ts=1000 + i), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
    assert manager.cleanup_logs() == 0  # the default 7-day retention keeps everything
    config = LogConfig(segment_bytes=500, retention_ms=1000)
    assert manager.update_topic_config("a", config) == 2
    assert a0.config is config and a1.config is config and b0.config == LogConfig(segment_bytes=500)
    assert manager.config_for("a") is config
    moved = []
    manager.log_start_listener = moved.append  # what the replica manager hears (quiet fetch sessions)
    assert manager.cleanup_logs() > 0
    assert a0.log_start_offset > 0 and a1.log_start_offset > 0 and b0.log_start_offset == 0
    assert sorted(moved, key=str) == [TopicPartition("a", 0), TopicPartition("a", 1)]
    manager.shutdown()


def test_new_log_defaults_reach_logs_without_overrides(tmp_path):
    manager = LogManager([tmp_path], LogConfig(), topic_configs={"a": LogConfig(retention_ms=5)})
    manager.startup()
    a0, b0 = manager.get_or_create_log(TopicPartition("a", 0)), manager.get_or_create_log(TopicPartition("b", 0))
    default = LogConfig(retention_ms=77)
    manager.update_default_config(default, {"a": LogConfig(retention_ms=5, segment_ms=9)})
    assert (a0.config.retention_ms, a0.config.segment_ms) == (5, 9)
    assert b0.config is default and manager.config_for("c") is default
    manager.shutdown()


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "unclean"])
def test_recovery_threads_load_every_log_as_one_thread_does(tmp_path, clean, caplog):
    """``num.recovery.threads.per.data.dir`` > 1 loads the partitions in a pool: the same logs, offsets and
    high watermarks as a serial load, and one summary line for the dir instead of a line per log."""
    manager = LogManager([tmp_path], LogConfig(segment_bytes=300))
    manager.startup()
    for p in range(12):
        log = manager.get_or_create_log(TopicPartition("many", p))
        for i in range(p + 1):
            log.append_as_leader(batch([b"v%d" % i]), leader_epoch=0)
        log.update_high_watermark(p)
    manager.shutdown()

    def load(threads: int) -> dict:
        if not clean:  # each load recovers, as after a crash
            (tmp_path / ".kafka_cleanshutdown").unlink()
        config = LogManagerConfig(recovery_threads_per_data_dir=threads)
        again = LogManager([tmp_path], LogConfig(segment_bytes=300), config)
        caplog.clear()
        with caplog.at_level("INFO", logger="brokers.storage.log_manager"):
            again.startup()
        seen = {tp.partition: (log.log_end_offset, log.high_watermark, [r.value for r in read_all(log)])
                for tp, log in ((log.topic_partition, log) for log in again.all_logs())}
        lines = [r.getMessage() for r in caplog.records if r.name == "brokers.storage.log_manager"]
        again.shutdown()
        assert len(lines) == 1 and lines[0].startswith(f"loaded 12 logs from {tmp_path}") and \
            f"with {threads} thread(s)" in lines[0], lines
        return seen

    serial = load(1)
    assert serial == load(4)
    assert serial[11] == (12, 11, [b"v%d" % i for i in range(12)])


def test_a_clean_shutdown_syncs_the_filesystem_once_instead_of_each_log(tmp_path, monkeypatch):
    """Each log's producer snapshot and epoch checkpoint are written unsynced, then one ``syncfs`` before the
    clean-shutdown marker: two fsyncs per log made a 5,000-partition broker's shutdown take most of a minute.
    The next load trusts what was written."""
    import os

    from brokers.storage import log_manager

    manager = LogManager([tmp_path], LogConfig(segment_bytes=500))
    manager.startup()
    for p in range(20):
        log = manager.get_or_create_log(TopicPartition("quiet", p))
        log.append_as_leader(batch([b"v"]), leader_epoch=3)
        log.flush()
    fsyncs, syncs = [], []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    real_sync = log_manager.sync_filesystem
    monkeypatch.setattr(log_manager, "sync_filesystem", lambda path: (syncs.append(path), real_sync(path)))
    manager.shutdown()
    assert syncs == [tmp_path]
    assert len(fsyncs) <= 8  # the three offset checkpoints and the marker's dir: not two per log
    again = LogManager([tmp_path], LogConfig(segment_bytes=500))
    again.startup()
    loaded = {log.topic_partition.partition: log for log in again.all_logs()}
    assert all(loaded[p].log_end_offset == 1 and loaded[p].leader_epoch_cache.latest_epoch == 3 for p in range(20))
    assert all(not log.load_result.recovered_segments for log in loaded.values())
    again.shutdown()


def test_the_flusher_pass_flushes_logs_with_a_flush_ms_and_never_asks_the_others(tmp_path, monkeypatch):
    now = [1000.0]
    manager = LogManager([tmp_path], LogConfig(), topic_configs={"timed": LogConfig(flush_ms=500)},
                         clock=lambda: now[0])
    manager.startup()
    timed = manager.get_or_create_log(TopicPartition("timed", 0))
    untimed = [manager.get_or_create_log(TopicPartition("default", p)) for p in range(3)]
    for log in [timed, *untimed]:
        log.append_as_leader(batch([b"v"]), leader_epoch=0)
    asked = []
    for log in untimed:
        monkeypatch.setattr(log, "flush_if_due", lambda now_ms, log=log: asked.append(log) or False)
    now[0] += 1.0  # past the timed log's flush.ms
    assert manager.flush_dirty_logs() == 1
    assert timed.recovery_point == timed.log_end_offset == 1
    assert asked == [] and all(log.recovery_point == 0 for log in untimed)  # default flush.ms: never due
    manager.shutdown()


def test_checkpoints_follow_logs_added_and_deleted_between_them(tmp_path):
    manager = LogManager([tmp_path], LogConfig())
    manager.startup()
    first = manager.get_or_create_log(TopicPartition("b", 0))
    first.append_as_leader(batch([b"v"]), leader_epoch=0)
    first.high_watermark = 1
    manager.checkpoint_high_watermarks()
    hw_file = tmp_path / "replication-offset-checkpoint"
    assert hw_file.read_text() == "0\n1\nb 0 1\n"
    manager.get_or_create_log(TopicPartition("a", 10))
    manager.get_or_create_log(TopicPartition("a", 9))
    manager.checkpoint_high_watermarks()
    assert hw_file.read_text() == "0\n3\na 9 0\na 10 0\nb 0 1\n"
    manager.delete_log(TopicPartition("a", 10))
    manager.checkpoint_high_watermarks()
    assert hw_file.read_text() == "0\n2\na 9 0\nb 0 1\n"
    manager.shutdown()
