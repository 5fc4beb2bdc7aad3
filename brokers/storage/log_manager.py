"""LogManager: every partition log under ``log.dirs``, their checkpoints and background tasks.

Per log dir (Kafka's layout): ``.lock`` (flock, one broker per dir), ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks),
``cleaner-offset-checkpoint``, and ``.kafka_cleanshutdown`` after a clean shutdown (deleted on start;
its absence means every segment past the recovery point is scanned and repaired).

JBOD failure (KIP-112): a dir that cannot be created, locked or loaded at start-up starts offline
(Kafka's ``createAndValidateLogDirs``); an I/O error in a dir later takes it offline through the
``LogDirFailureChannel``, and ``handle_log_dir_failure`` drops its logs (their files closed, nothing
written). Offline dirs get no new logs, no checkpoints and no clean-shutdown marker, so the next start
recovers them. While any dir is offline a log that is not new (LeaderAndIsr ``is_new`` false) and not
loaded is not created elsewhere: it may be in the offline dir (KafkaStorageError).

Background tasks run on a ``Scheduler`` thread, never on the event loop: retention every
``log.retention.check.interval.ms``, flushes by ``flush.ms``, checkpoints, and the cleaner.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable

from brokers.config import from_schema, schema_field
from brokers.model import TopicPartition
from brokers.storage.checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpointFile,
    by_topic_partition,
)
from brokers.storage.cleaner import CleanerStats, LogCleaner
from brokers.storage.files import fsync_dir, sync_filesystem
from brokers.storage.log import Log
from brokers.storage.log_config import LONG_MAX, LogConfig
from brokers.storage.log_dir_moves import LogDirMovesMixin
from brokers.storage.log_dir_failure import KafkaStorageError, LogDirFailureChannel
from brokers.storage.scheduler import Scheduler

log = logging.getLogger(__name__)


class LogDirInUseError(RuntimeError):
    pass


@dataclass(frozen=True)
class LogManagerConfig:
    """The log manager's schedule: a view of the broker config (Kafka's ``LogManager.apply(KafkaConfig)``)."""

    retention_check_interval_ms: int = schema_field("log.retention.check.interval.ms")
    flush_check_interval_ms: int = schema_field("log.flush.scheduler.interval.ms")
    flush_offset_checkpoint_interval_ms: int = schema_field("log.flush.offset.checkpoint.interval.ms")
    flush_start_offset_checkpoint_interval_ms: int = schema_field("log.flush.start.offset.checkpoint.interval.ms")
    high_watermark_checkpoint_interval_ms: int = schema_field("replica.high.watermark.checkpoint.interval.ms")
    cleaner_backoff_ms: int = schema_field("log.cleaner.backoff.ms")
    cleaner_enable: bool = schema_field("log.cleaner.enable")
    recovery_threads_per_data_dir: int = schema_field("num.recovery.threads.per.data.dir")

    @classmethod
    def from_broker(cls, config: Any) -> "LogManagerConfig":
        """From a broker config (anything indexable by Kafka's keys)."""
        return from_schema(cls, config)


class _LogDir:
    """One directory of ``log.dirs``: its lock and its checkpoint files."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise LogDirInUseError(f"log dir {self.path} is locked by another process (is a broker running?)") from None
        self.recovery_points = OffsetCheckpointFile(self.path / RECOVERY_POINT_CHECKPOINT)
        self.log_start_offsets = OffsetCheckpointFile(self.path / LOG_START_OFFSET_CHECKPOINT)
        self.high_watermarks = OffsetCheckpointFile(self.path / REPLICATION_OFFSET_CHECKPOINT)
        self.cleaner = LogCleaner(self.path)
        self.checkpoint_order: tuple[int, list[TopicPartition], list[Log]] | None = None  # LogManager's cache

    @property
    def clean_shutdown_file(self) -> Path:
        return self.path / CLEAN_SHUTDOWN_FILE

    def release(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1


class LogManager(LogDirMovesMixin):
    def __init__(self, log_dirs: list[Path], default_config: LogConfig | None = None,
                 manager_config: LogManagerConfig | None = None, *,
                 topic_configs: dict[str, LogConfig] | None = None, clock: Callable[[], float] = time.time,
                 scheduler: Scheduler | None = None, failure_channel: LogDirFailureChannel | None = None):
        if not log_dirs:
            raise ValueError("log.dirs is empty")
        self.default_config = default_config or LogConfig()
        self.manager_config = manager_config or LogManagerConfig()
        self.topic_configs = dict(topic_configs or {})
        self._clock = clock
        self._scheduler = scheduler
        self._lock = threading.RLock()
        # told of each log whose start retention moved, on the scheduler's thread (quiet fetch sessions)
        self.log_start_listener: Callable[[TopicPartition], None] | None = None
        self.failure_channel = failure_channel if failure_channel is not None else LogDirFailureChannel()
        self.log_dirs = [Path(d) for d in log_dirs]  # as configured, online or not
        self._dirs = self._create_and_validate_log_dirs(self.log_dirs)
        self._logs: dict[TopicPartition, tuple[Log, _LogDir]] = {}
        self._layout = 0  # bumped whenever a log is added or removed: the checkpoints' order cache is stale
        self._started = False
        self._init_moves()  # future logs and preferred dirs (AlterReplicaLogDirs: log_dir_moves.py)

    def _create_and_validate_log_dirs(self, paths: list[Path]) -> list[_LogDir]:
        """Kafka's ``createAndValidateLogDirs``: a dir that cannot be created or locked starts offline;
        none usable is fatal. A dir locked by another process is fatal too (LogDirInUseError)."""
        if len(set(p.resolve() for p in paths)) != len(paths):
            raise ValueError(f"duplicate log directory in {[str(p) for p in paths]}")
        usable = []
        for path in paths:
            try:
                usable.append(_LogDir(path))
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(path, "cannot create or lock the log dir", exc)
        if not usable:
            raise RuntimeError(f"none of the log dirs {[str(p) for p in paths]} is usable")
        return usable

    # -- start-up ------------------------------------------------------------------------------
    def startup(self) -> None:
        """Load every partition directory (recovering after an unclean shutdown), then start tasks."""
        for log_dir in list(self._dirs):
            try:
                self._load_dir(log_dir)
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(log_dir.path, "error while loading the log dir", exc)
                self.handle_log_dir_failure(log_dir.path)
        if not self._dirs:
            raise RuntimeError(f"none of the log dirs {[str(p) for p in self.log_dirs]} is usable")
        self._started = True
        if self._scheduler is not None:
            self._schedule_tasks(self._scheduler)

    def _load_dir(self, log_dir: _LogDir) -> None:
        """Every partition directory of ``log_dir``, loaded by ``num.recovery.threads.per.data.dir`` threads;
        one summary line (a line per log only for a log that was recovered and lost bytes)."""
        clean = log_dir.clean_shutdown_file.exists()
        checkpoints = (_read_or_empty(log_dir.recovery_points), _read_or_empty(log_dir.log_start_offsets),
                       _read_or_empty(log_dir.high_watermarks))
        partitions = self._partition_dirs(log_dir)
        started = time.monotonic()
        threads = max(1, min(self.manager_config.recovery_threads_per_data_dir, len(partitions)))
        if threads == 1:
            loaded = [self._load_log(tp, child, clean, checkpoints) for tp, child in partitions]
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
                loaded = list(pool.map(lambda item: self._load_log(*item, clean, checkpoints), partitions))
        for (tp, child), replica in zip(partitions, loaded):
            if tp in self._logs:  # Kafka's "Duplicate log directories" (a move's swap cut short by a crash)
                raise RuntimeError(f"duplicate log directories for {tp}: {self._logs[tp][0].directory} and {child}; "
                                   "delete the one the move was leaving")
            self._logs[tp] = (replica, log_dir)
        self._layout += 1
        recovered = sum(1 for replica in loaded if replica.load_result.recovered_segments)
        log.info("loaded %d logs from %s in %.0f ms with %d thread(s) (%s)", len(loaded), log_dir.path,
                 (time.monotonic() - started) * 1000, threads,
                 "clean shutdown" if clean else f"{recovered} recovered after an unclean shutdown")
        log_dir.clean_shutdown_file.unlink(missing_ok=True)

    @staticmethod
    def _partition_dirs(log_dir: _LogDir) -> list[tuple[TopicPartition, Path]]:
        """The partition directories to load; ``-delete`` ones are removed, others ignored with a warning."""
        found = []
        for child in sorted(log_dir.path.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith("-delete"):
                shutil.rmtree(child, ignore_errors=True)
                continue
            if LogManager._remove_unfinished_moves(child):
                continue
            try:
                found.append((TopicPartition.from_dir_name(child.name), child))
            except ValueError:
                log.warning("ignoring %s: not a partition directory", child)
        return found

    def _load_log(self, tp: TopicPartition, child: Path, clean: bool, checkpoints: tuple[dict, dict, dict]) -> Log:
        recovery, starts, hws = checkpoints
        started = time.monotonic()
        loaded = Log(child, self.config_for(tp.topic), recovery_point=recovery.get(tp, 0),
                     log_start_offset=starts.get(tp, 0), high_watermark=hws.get(tp, 0),
                     clean_shutdown=clean, scheduler=self._scheduler, clock=self._clock,
                     failure_channel=self.failure_channel)
        result = loaded.load_result
        (log.info if result.truncated_bytes else log.debug)(
            "loaded %r in %.0f ms (%s)", loaded, (time.monotonic() - started) * 1000,
            "clean shutdown" if clean else f"recovered {result.recovered_segments} segments, "
            f"truncated {result.truncated_bytes} bytes")
        return loaded

    def _schedule_tasks(self, scheduler: Scheduler) -> None:
        mc = self.manager_config
        scheduler.schedule("log-retention", self.cleanup_logs, mc.retention_check_interval_ms, mc.retention_check_interval_ms)
        scheduler.schedule("log-flusher", self.flush_dirty_logs, mc.flush_check_interval_ms, mc.flush_check_interval_ms)
        scheduler.schedule("recovery-point-checkpoint", self.checkpoint_recovery_points,
                           mc.flush_offset_checkpoint_interval_ms, mc.flush_offset_checkpoint_interval_ms)
        scheduler.schedule("log-start-offset-checkpoint", self.checkpoint_log_start_offsets,
                           mc.flush_start_offset_checkpoint_interval_ms, mc.flush_start_offset_checkpoint_interval_ms)
        scheduler.schedule("high-watermark-checkpoint", self.checkpoint_high_watermarks,
                           mc.high_watermark_checkpoint_interval_ms, mc.high_watermark_checkpoint_interval_ms)
        if mc.cleaner_enable:
            scheduler.schedule("log-cleaner", self.clean_logs, mc.cleaner_backoff_ms, mc.cleaner_backoff_ms)

    # -- logs ----------------------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    def get_log(self, tp: TopicPartition) -> Log | None:
        entry = self._logs.get(tp)
        return entry[0] if entry else None

    def all_logs(self) -> list[Log]:
        return [entry[0] for entry in list(self._logs.values())]

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None, is_new: bool = True) -> Log:
        """The partition's log, created if absent. A ``config`` given (the topic's, as ZooKeeper has it
        when a LeaderAndIsr arrives) becomes the topic's and is applied to an existing log too: a log
        reads its config on every append, roll, retention and cleaning pass. A log that is not ``is_new``
        is not created while a dir is offline (KafkaStorageError): it may live there."""
        found = self.get_or_create_logs({tp: (config, is_new)})[tp]
        if isinstance(found, Exception):
            raise found
        return found

    def get_or_create_logs(self, wanted: dict[TopicPartition, tuple[LogConfig | None, bool]]
                           ) -> dict[TopicPartition, Log | Exception]:
        """``get_or_create_log`` for many partitions (a LeaderAndIsr's new ones): per partition its log or
        the error (OSError, KafkaStorageError) that refused it. A new log goes to the online dir holding the
        fewest; each dir that got new logs is fsynced once, after them (their directory entries are
        durable before the caller goes on, as one at a time, for one fsync instead of one per log)."""
        out: dict[TopicPartition, Log | Exception] = {}
        with self._lock:
            counts = {id(d): 0 for d in self._dirs}
            if len(self._dirs) > 1:
                for _, owner in self._logs.values():
                    if id(owner) in counts:
                        counts[id(owner)] += 1
            grown: dict[int, list[TopicPartition]] = {}
            for tp, (config, is_new) in wanted.items():
                try:
                    out[tp] = self._get_or_create(tp, config, is_new, counts, grown)
                except (OSError, KafkaStorageError) as exc:
                    out[tp] = exc
            for log_dir in self._dirs:
                made = grown.get(id(log_dir))
                if made:
                    try:
                        self.failure_channel.call(log_dir.path, f"syncing {len(made)} new logs", lambda: fsync_dir(log_dir.path))
                    except KafkaStorageError as exc:
                        out.update((tp, exc) for tp in made)
        return out

    def _get_or_create(self, tp: TopicPartition, config: LogConfig | None, is_new: bool, counts: dict[int, int],
                       grown: dict[int, list[TopicPartition]]) -> Log:
        if config is not None:
            self.topic_configs[tp.topic] = config
        entry = self._logs.get(tp)
        if entry:
            if config is not None:
                entry[0].config = config
            return entry[0]
        offline = self.failure_channel.offline_dirs()
        if not is_new and offline:
            raise KafkaStorageError(f"cannot create the log of {tp}: log dirs {[str(d) for d in offline]} "
                                    "are offline")
        online = [d for d in self._dirs if id(d) in counts]
        if not online:
            raise KafkaStorageError(f"cannot create the log of {tp}: no log dir is online")
        log_dir = self._placement(tp, online, counts)
        try:
            created = self.failure_channel.call(
                log_dir.path, f"creating the log of {tp}",
                lambda: Log(log_dir.path / tp.dir_name, self.config_for(tp.topic), scheduler=self._scheduler,
                            clock=self._clock, failure_channel=self.failure_channel))
        except KafkaStorageError:
            del counts[id(log_dir)]  # the dir just went offline: the next new logs go elsewhere
            raise
        self._logs[tp] = (created, log_dir)
        self._layout += 1
        counts[id(log_dir)] += 1
        grown.setdefault(id(log_dir), []).append(tp)
        return created

    def update_topic_config(self, topic: str, config: LogConfig) -> int:
        """A topic's config changed (``/config/changes``): every local log of the topic takes it at once.
        Returns how many logs were reconfigured."""
        with self._lock:
            self.topic_configs[topic] = config
            logs = [entry for tp, (entry, _) in self._logs.items() if tp.topic == topic]
        for entry in logs:
            entry.update_config(config)
        return len(logs)

    def update_default_config(self, default: LogConfig, topic_configs: dict[str, LogConfig]) -> None:
        """The broker's log defaults changed (a dynamic broker config): every topic's config is rebuilt
        by the caller from its overrides over ``default``; topics without overrides take ``default``."""
        with self._lock:
            self.default_config = default
            self.topic_configs = dict(topic_configs)
            logs = [(tp, entry) for tp, (entry, _) in self._logs.items()]
        for tp, entry in logs:
            entry.update_config(self.config_for(tp.topic))

    def delete_log(self, tp: TopicPartition) -> bool:
        """StopReplica(delete): rename the directory to ``<name>.<uuid>-delete`` style and remove it."""
        with self._lock:
            entry = self._logs.pop(tp, None)
            self._layout += entry is not None
        if entry is None:
            return False
        doomed, log_dir = entry
        renamed = log_dir.path / f"{tp.dir_name}.{int(self._clock() * 1000)}-delete"

        def delete() -> None:
            doomed.close()
            os.replace(doomed.directory, renamed)
            fsync_dir(log_dir.path)

        self.failure_channel.call(log_dir.path, f"deleting the log of {tp}", delete)
        shutil.rmtree(renamed, ignore_errors=True)
        return True

    # -- log dir failure (KIP-112) ---------------------------------------------------------------
    def handle_log_dir_failure(self, path: Path) -> list[TopicPartition]:
        """Kafka's ``LogManager.handleLogDirFailure``: forget the dir and its logs (files closed, nothing
        written); return the partitions whose logs were there. Idempotent."""
        path = Path(path)
        with self._lock:
            gone = [d for d in self._dirs if d.path == path]
            self._dirs = [d for d in self._dirs if d.path != path]
            dropped = {tp: entry for tp, (entry, owner) in self._logs.items() if owner.path == path}
            for tp in dropped:
                del self._logs[tp]
            self._layout += 1
        for entry in dropped.values():
            entry.close_handlers()
        for log_dir in gone:
            try:
                log_dir.release()
            except OSError as exc:
                log.warning("releasing the lock of offline log dir %s failed: %s", path, exc)
        if dropped:
            log.error("partitions %s are offline: their log dir %s failed", sorted(map(str, dropped)), path)
        return sorted(dropped)

    @property
    def online_log_dirs(self) -> list[Path]:
        return [d.path for d in self._dirs]

    def offline_log_dirs(self) -> list[Path]:
        return self.failure_channel.offline_dirs()

    def log_dir_of(self, tp: TopicPartition) -> Path | None:
        entry = self._logs.get(tp)
        return entry[1].path if entry else None

    def describe_log_dirs(self) -> list[tuple[Path, str | None, dict[TopicPartition, int]]]:
        """DescribeLogDirs: every configured dir as (path, offline reason or None, {tp: size in bytes})."""
        logs = list(self._logs.items())
        out = []
        for path in self.log_dirs:
            reason = self.failure_channel.reason(path)
            sizes = {} if reason is not None else {tp: entry.size for tp, (entry, owner) in logs if owner.path == path}
            out.append((path, reason, sizes))
        return out

    # -- periodic work -------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """Retention: delete old segments of every log; return how many went. ``log_start_listener``
        hears of every log whose start moved."""
        total = 0
        for entry in self.all_logs():
            count = _or_zero(entry.delete_old_segments)
            if count and self.log_start_listener is not None:
                self.log_start_listener(entry.topic_partition)
            total += count
        return total

    def flush_dirty_logs(self) -> int:
        """The flusher's pass: only logs with a finite ``flush.ms`` can be due (Kafka's default is never), so
        a broker of 10,000 default logs does no per-log work every ``log.flush.scheduler.interval.ms``."""
        now = int(self._clock() * 1000)
        timed = [entry for entry in self.all_logs() if entry.config.flush_ms != LONG_MAX]
        return sum(_or_zero(lambda e=entry: int(e.flush_if_due(now))) for entry in timed)

    def clean_logs(self) -> list[CleanerStats]:
        now = int(self._clock() * 1000)
        results = []
        with self._cleaning_lock:  # no log moves between dirs during a pass; moving logs are not cleaned
            for log_dir in self._dirs:
                logs = [entry for tp, (entry, owner) in list(self._logs.items())
                        if owner is log_dir and not self.moving(tp)]
                try:
                    stats = self.failure_channel.call(log_dir.path, "cleaning logs",
                                                      lambda: log_dir.cleaner.clean_filthiest(logs, now))
                except KafkaStorageError:
                    continue
                if stats is not None:
                    results.append(stats)
        return results

    def _checkpoint(self, attribute: str, offset: str) -> None:
        """Write one checkpoint file (the log dir's ``attribute``) of the logs' ``offset`` in every dir.
        Per-log work is C-level (``map`` of an ``attrgetter``; the file formats only lines that changed): this
        runs every 5 s on the scheduler's thread, and the GIL it holds is the event loop's latency."""
        value = attrgetter(offset)
        for log_dir in self._dirs:
            partitions, logs = self._in_checkpoint_order(log_dir)
            offsets = list(map(value, logs))
            try:
                self.failure_channel.call(log_dir.path, f"writing the {attribute} checkpoint",
                                          lambda: getattr(log_dir, attribute).write_ordered(partitions, offsets))
            except KafkaStorageError as exc:
                log.error("%s", exc)

    def _in_checkpoint_order(self, log_dir: _LogDir) -> tuple[list[TopicPartition], list[Log]]:
        """The dir's partitions sorted as checkpoints list them, and their logs; sorted again only after a log
        was added or removed (the same list objects until then: ``write_ordered`` relies on it)."""
        with self._lock:
            layout = self._layout
            if log_dir.checkpoint_order is None or log_dir.checkpoint_order[0] != layout:
                pairs = sorted(((tp, entry) for tp, (entry, owner) in self._logs.items() if owner is log_dir),
                               key=by_topic_partition)
                log_dir.checkpoint_order = (layout, [tp for tp, _ in pairs], [entry for _, entry in pairs])
            return log_dir.checkpoint_order[1], log_dir.checkpoint_order[2]

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint("recovery_points", "recovery_point")

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoint("log_start_offsets", "log_start_offset")

    def checkpoint_high_watermarks(self) -> None:
        self._checkpoint("high_watermarks", "high_watermark")

    # -- shutdown ------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Flush everything, write every checkpoint and the clean-shutdown marker, release the dirs."""
        if self._scheduler is not None:
            self._scheduler.shutdown()
            self._scheduler.run_pending_once_tasks()
        for entry in self.all_logs():
            _or_zero(entry.flush)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        for entry in self.all_logs():
            entry.close(durable=False)
        for future, _ in list(self._futures.values()):
            future.close(durable=False)  # an unfinished move: deleted at the next start
        for log_dir in self._dirs:
            if self._started and not self.failure_channel.is_offline(log_dir.path):
                try:
                    sync_filesystem(log_dir.path)  # every log's snapshot and checkpoint, before the marker
                    log_dir.clean_shutdown_file.touch()
                    fsync_dir(log_dir.path)
                except OSError as exc:
                    log.error("cannot mark %s cleanly shut down: %s", log_dir.path, exc)
            log_dir.release()
        self._logs.clear()


def _read_or_empty(checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
    """A corrupt checkpoint is treated as missing (Kafka does the same): offsets fall back to 0,
    which only costs a longer recovery scan."""
    try:
        return checkpoint.read()
    except CorruptCheckpointError as exc:
        log.warning("ignoring corrupt checkpoint: %s", exc)
        return {}


def _or_zero(task: Callable[[], Any]) -> Any:
    """A periodic task on one log: a KafkaStorageError (its dir just went offline) counts 0 and the
    pass goes on with the other logs."""
    try:
        return task()
    except KafkaStorageError as exc:
        log.warning("%s", exc)
        return 0
