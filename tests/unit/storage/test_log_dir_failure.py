"""KIP-112 storage side: the LogDirFailureChannel (pure bookkeeping), a Log whose I/O fails, and the
LogManager's offline dirs (at start-up and at run time)."""
from __future__ import annotations

import errno
from pathlib import Path

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.log_dir_failure import KafkaStorageError, LogDirFailureChannel, guarded
from brokers.storage.log_manager import LogManager
from brokers.storage.segment import LogSegment
from tests.unit.storage.conftest import batch

TP = TopicPartition("t", 0)


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


# -- the channel ------------------------------------------------------------------------------------
def test_a_dir_goes_offline_once_and_listeners_hear_it_once():
    channel, heard = LogDirFailureChannel(), []
    channel.add_listener(heard.append)
    assert channel.maybe_add_offline_log_dir(Path("/d/b"), "boom", OSError(5, "EIO"))
    assert not channel.maybe_add_offline_log_dir(Path("/d/b"), "again")
    assert heard == [Path("/d/b")] and channel.offline_dirs() == [Path("/d/b")]
    assert channel.is_offline("/d/b") and not channel.is_offline("/d/a")
    assert "boom" in channel.reason(Path("/d/b")) and channel.reason(Path("/d/a")) is None


def test_a_listener_that_raises_does_not_hide_the_failure_from_the_others():
    channel, heard = LogDirFailureChannel(), []
    channel.add_listener(lambda d: 1 / 0)
    channel.add_listener(heard.append)
    channel.maybe_add_offline_log_dir(Path("/d"), "x")
    assert heard == [Path("/d")]


def test_call_turns_an_os_error_into_a_storage_error_and_refuses_the_dir_afterwards():
    channel, calls = LogDirFailureChannel(), []
    assert channel.call(Path("/d"), "reading", lambda: 7) == 7
    with pytest.raises(KafkaStorageError) as failed:
        channel.call(Path("/d"), "writing", lambda: enospc())
    assert failed.value.code == ErrorCode.KAFKA_STORAGE_ERROR == 56
    assert isinstance(failed.value, KafkaError) and isinstance(failed.value.__cause__, OSError)
    assert channel.is_offline(Path("/d"))
    with pytest.raises(KafkaStorageError):
        channel.call(Path("/d"), "reading", lambda: calls.append(1))
    assert calls == []  # nothing touches an offline dir


def test_errors_that_are_not_os_errors_pass_through_and_leave_the_dir_online():
    channel = LogDirFailureChannel()
    with pytest.raises(ValueError):
        channel.call(Path("/d"), "x", lambda: int("nope"))
    assert not channel.is_offline(Path("/d"))


def test_guarded_methods_without_a_channel_raise_the_os_error_itself():
    class Thing:
        failure_channel = None
        log_dir = Path("/d")

        @guarded("doing")
        def work(self):
            enospc()

    with pytest.raises(OSError):
        Thing().work()
    thing = Thing()
    thing.failure_channel = LogDirFailureChannel()
    with pytest.raises(KafkaStorageError):
        thing.work()


# -- a log ---------------------------------------------------------------------------------------
def test_an_append_that_fails_takes_the_dir_offline_and_the_log_serves_nothing_more(tmp_path, monkeypatch):
    channel = LogDirFailureChannel()
    log = Log(tmp_path / "t-0", LogConfig(), failure_channel=channel)
    log.append_as_leader(batch([b"a"]), 0)
    monkeypatch.setattr(LogSegment, "append", enospc)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch([b"b"]), 0)
    assert channel.offline_dirs() == [tmp_path]
    monkeypatch.undo()
    for attempt in (lambda: log.read(0, 1000), lambda: log.append_as_leader(batch([b"c"]), 0), log.flush,
                    log.roll, lambda: log.truncate_to(0), log.delete_old_segments):
        with pytest.raises(KafkaStorageError):
            attempt()
    log.close_handlers()


def test_a_flush_that_fails_is_a_storage_error(tmp_path, monkeypatch):
    channel = LogDirFailureChannel()
    log = Log(tmp_path / "t-0", LogConfig(), failure_channel=channel)
    log.append_as_leader(batch([b"a"]), 0)
    monkeypatch.setattr(LogSegment, "flush", enospc)
    with pytest.raises(KafkaStorageError):
        log.flush()
    assert channel.is_offline(tmp_path)
    log.close_handlers()


# -- the log manager ------------------------------------------------------------------------------
def test_a_dir_that_cannot_be_created_starts_offline(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a regular file where a dir should be")
    manager = LogManager([tmp_path / "a", blocked])
    manager.startup()
    try:
        assert manager.offline_log_dirs() == [blocked] and manager.online_log_dirs == [tmp_path / "a"]
        assert [(path, reason is not None) for path, reason, _ in manager.describe_log_dirs()] == [
            (tmp_path / "a", False), (blocked, True)]
        created = manager.get_or_create_log(TP, is_new=True)  # a new partition goes to an online dir
        assert created.log_dir == tmp_path / "a"
        with pytest.raises(KafkaStorageError):  # an old one may be in the offline dir: not re-created
            manager.get_or_create_log(TopicPartition("t", 1), is_new=False)
    finally:
        manager.shutdown()


def test_no_usable_dir_is_fatal(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("x")
    with pytest.raises(RuntimeError):
        LogManager([blocked])


def test_handle_log_dir_failure_drops_the_dirs_logs_and_skips_it_at_shutdown(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager([a, b])
    manager.startup()
    logs = {tp: manager.get_or_create_log(tp) for tp in (TopicPartition("t", 0), TopicPartition("t", 1))}
    in_b = [tp for tp, log in logs.items() if log.log_dir == b]
    assert len(in_b) == 1
    manager.failure_channel.maybe_add_offline_log_dir(b, "test")
    assert manager.handle_log_dir_failure(b) == in_b
    assert manager.handle_log_dir_failure(b) == []  # idempotent
    assert manager.get_log(in_b[0]) is None and len(manager.all_logs()) == 1
    assert dict((p, s) for p, r, s in manager.describe_log_dirs())[b] == {}
    manager.checkpoint_high_watermarks()  # the offline dir is not written
    manager.shutdown()
    assert (a / ".kafka_cleanshutdown").exists() and not (b / ".kafka_cleanshutdown").exists()


def test_a_checkpoint_write_that_fails_takes_only_its_dir_offline(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager([a, b])
    manager.startup()
    manager.get_or_create_log(TopicPartition("t", 0))
    manager.get_or_create_log(TopicPartition("t", 1))
    from brokers.storage import checkpoints

    real_write = checkpoints.OffsetCheckpointFile.write_ordered

    def write(self, partitions, offsets):
        if self.path.parent == b:
            enospc()
        return real_write(self, partitions, offsets)

    monkeypatch.setattr(checkpoints.OffsetCheckpointFile, "write_ordered", write)
    manager.checkpoint_recovery_points()
    assert manager.offline_log_dirs() == [b]
    manager.handle_log_dir_failure(b)
    manager.shutdown()
