"""Moving a replica between this broker's log dirs (AlterReplicaLogDirs, KIP-113), the storage half: the
LogManager's future logs and preferred dirs. ``brokers.replication.log_dir_mover`` copies the data.

A move of partition P to dir D:

1. ``create_future_log(P, D)``: an empty log in ``D/<P>.<id>-future`` (Kafka's name), started at the
   current log's log start offset. One future log per partition: a move to another dir replaces it.
2. The mover appends the current log's batches to it, as a follower appends the leader's (same offsets,
   epochs, producer state, transaction index), until it reaches the current log's end.
3. ``replace_current_with_future(P)``, on the event loop with no await since the last append (so no
   append can fall between): the future log takes the current one's high watermark and log start, is
   closed (its snapshot and epoch checkpoint written), renamed to ``D/<P>`` and opened again as P's log;
   the old directory is renamed ``<P>.<id>-delete`` at once and its files are closed and removed after
   ``file.delete.delay.ms`` (a Fetch may still be sending from them), as Kafka deletes.

A broker restarted mid-move deletes ``-future`` directories on start (the current log is intact; the
move is asked for again by re-running the reassignment). ``preferred_dirs`` holds the dir asked for a
partition this broker does not host yet: the log is created there when it comes (Kafka's
``maybeUpdatePreferredLogDir``).
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from pathlib import Path

from brokers.model import TopicPartition
from brokers.storage.files import fsync_dir
from brokers.storage.log import Log
from brokers.storage.log_dir_failure import KafkaStorageError

log = logging.getLogger(__name__)
FUTURE_SUFFIX = "-future"


class LogDirNotFoundError(ValueError):
    """The dir asked for is not one of ``log.dirs`` (LOG_DIR_NOT_FOUND)."""


class SwapPostponed(RuntimeError):
    """The swap cannot happen now (the cleaner is running, or the copy fell behind again): try again."""


class LogDirMovesMixin:
    """LogManager's half of AlterReplicaLogDirs (mixed into ``LogManager``; uses its lock, dirs and logs)."""

    def _init_moves(self) -> None:
        self._futures: dict[TopicPartition, tuple[Log, object]] = {}
        self.preferred_dirs: dict[TopicPartition, Path] = {}
        # held by a cleaner pass (LogManager.clean_logs), which skips moving partitions: a swap never renames a
        # directory the cleaner is writing into (Kafka's abortAndPauseCleaning)
        self._cleaning_lock = threading.Lock()

    def moving(self, tp: TopicPartition) -> bool:
        return tp in self._futures

    def online_dir(self, path: Path | str):
        """The online ``_LogDir`` at ``path``: LogDirNotFoundError if it is not in ``log.dirs``,
        KafkaStorageError if it is offline."""
        wanted = Path(path)
        if not wanted.is_absolute() or all(Path(p).resolve() != wanted.resolve() for p in self.log_dirs):
            raise LogDirNotFoundError(f"{path} is not one of log.dirs {[str(p) for p in self.log_dirs]}")
        for log_dir in self._dirs:
            if log_dir.path.resolve() == wanted.resolve():
                return log_dir
        raise KafkaStorageError(f"log dir {path} is offline")

    def future_log(self, tp: TopicPartition) -> Log | None:
        entry = self._futures.get(tp)
        return entry[0] if entry else None

    def create_future_log(self, tp: TopicPartition, destination: Path, start_offset: int) -> Log:
        """The future log of ``tp`` in ``destination`` (an existing one there is kept, one elsewhere deleted)."""
        log_dir = self.online_dir(destination)
        with self._lock:
            entry = self._futures.get(tp)
            if entry is not None and entry[1] is log_dir:
                return entry[0]
            if entry is not None:
                self.abandon_future_log(tp)
            directory = log_dir.path / f"{tp.dir_name}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"
            future = self.failure_channel.call(
                log_dir.path, f"creating the future log of {tp}",
                lambda: Log(directory, self.config_for(tp.topic), log_start_offset=start_offset,
                            scheduler=self._scheduler, clock=self._clock, failure_channel=self.failure_channel,
                            topic_partition=tp))
            if future.log_end_offset != start_offset:
                future.truncate_fully_and_start_at(start_offset)
            self._futures[tp] = (future, log_dir)
            log.info("%s: moving to %s (future log %s)", tp, log_dir.path, directory.name)
            return future

    def abandon_future_log(self, tp: TopicPartition) -> bool:
        """Stop a move: delete the future log (the current log is untouched)."""
        with self._lock:
            entry = self._futures.pop(tp, None)
        if entry is None:
            return False
        entry[0].retired = True  # a flush scheduled by one of its rolls does nothing
        entry[0].delete()
        return True

    def replace_current_with_future(self, tp: TopicPartition) -> Log:
        """Step 3 of the move (see the module docstring); returns P's new log. The caller made sure the
        future log ends where the current one does. SwapPostponed while a cleaner pass runs (the cleaner
        may be writing into the current log's directory): the mover tries again shortly."""
        if not self._cleaning_lock.acquire(blocking=False):
            raise SwapPostponed(f"{tp}: the cleaner is running")
        try:
            with self._lock:
                future, log_dir = self._futures[tp]
                current, old_dir = self._logs[tp]
                with current._lock:
                    if future.log_end_offset != current.log_end_offset:
                        raise SwapPostponed(f"{tp}: the future log ends at {future.log_end_offset}, "
                                            f"the current one at {current.log_end_offset}")
                    del self._futures[tp]
                    replaced = self.failure_channel.call(
                        log_dir.path, f"moving {tp} into", lambda: self._reopen_in_place(tp, future, log_dir, current))
                    self._logs[tp] = (replaced, log_dir)
                    self._layout += 1
                    current.retired = True  # late retention, flush or delete tasks on it do nothing
                    doomed = self._retire_directory(tp, current, old_dir)
        finally:
            self._cleaning_lock.release()
        if doomed is not None:
            self._delete_later(current, doomed)
        log.info("%s: moved from %s to %s", tp, old_dir.path, log_dir.path)
        return replaced

    def _retire_directory(self, tp: TopicPartition, current: Log, old_dir) -> Path | None:
        """Rename the replaced log's directory ``<P>.<id>-delete``; a failure takes that dir offline (the
        partition is already served from its new dir)."""
        doomed = old_dir.path / f"{tp.dir_name}.{uuid.uuid4().hex}-delete"
        try:
            os.replace(current.directory, doomed)
            fsync_dir(old_dir.path)
            return doomed
        except OSError as exc:
            self.failure_channel.failed(old_dir.path, f"retiring the old log of {tp}", exc)
            return None

    def _reopen_in_place(self, tp: TopicPartition, future: Log, log_dir, current: Log) -> Log:
        start = max(future.log_start_offset, current.log_start_offset)
        hw = min(current.high_watermark, future.log_end_offset)
        future.flush()  # the mover flushed all but the last rounds off the loop
        future.close(durable=True)
        future.retired = True
        final = log_dir.path / tp.dir_name
        os.replace(future.directory, final)
        fsync_dir(log_dir.path)
        return Log(final, current.config, recovery_point=future.log_end_offset, log_start_offset=start,
                   high_watermark=hw, clean_shutdown=True, scheduler=self._scheduler, clock=self._clock,
                   failure_channel=self.failure_channel)

    def _delete_later(self, old: Log, directory: Path) -> None:
        def remove() -> None:
            old.close_handlers()
            shutil.rmtree(directory, ignore_errors=True)

        delay = old.config.file_delete_delay_ms
        if self._scheduler is None or delay == 0:
            remove()
        else:
            self._scheduler.schedule_once(f"delete-{directory.name}", remove, delay)

    def future_logs(self) -> dict[Path, dict[TopicPartition, tuple[int, int]]]:
        """DescribeLogDirs' future replicas: per dir, each future log's (size, offset lag behind the current)."""
        out: dict[Path, dict[TopicPartition, tuple[int, int]]] = {}
        for tp, (future, log_dir) in list(self._futures.items()):
            current = self.get_log(tp)
            lag = max(0, current.log_end_offset - future.log_end_offset) if current else 0
            out.setdefault(log_dir.path, {})[tp] = (future.size, lag)
        return out

    def _placement(self, tp: TopicPartition, online: list, counts: dict[int, int]):
        """The dir for a new log: the preferred one if online, else the one holding the fewest logs."""
        preferred = self.preferred_dirs.pop(tp, None)
        if preferred is not None:
            for log_dir in online:
                if log_dir.path.resolve() == Path(preferred).resolve():
                    return log_dir
        return min(online, key=lambda d: counts[id(d)])

    @staticmethod
    def _remove_unfinished_moves(child: Path) -> bool:
        """A ``-future`` directory found at start: an unfinished move, deleted (True)."""
        if not child.name.endswith(FUTURE_SUFFIX):
            return False
        log.warning("deleting %s: a move between log dirs that did not finish before the broker stopped", child)
        shutil.rmtree(child, ignore_errors=True)
        return True
