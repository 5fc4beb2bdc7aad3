"""Log: one partition's ordered LogSegments under ``<log.dir>/<topic>-<partition>``.

Invariants:
- segments are ordered by base offset and cover increasing, non-overlapping offset ranges; the last
  one is the active segment and the only one appended to;
- ``log_start_offset <= high_watermark <= log_end_offset``; ``recovery_point`` is the first offset
  not yet known to be fsynced;
- the leader-epoch cache never names an offset at or past the log end;
- the producer state (producer_state.py) holds exactly the idempotent batches below the log end;
- every aborted transaction whose marker is in the log has one ``.txnindex`` entry, in the segment
  holding its marker; ``last_stable_offset <= high_watermark`` (transactions.py).

Appends validate batch headers and CRCs, assign offsets by rewriting the producer's batch headers in
place, and write the bytes unchanged. A leader append from an idempotent producer is checked against
the producer state first: a retried batch writes nothing and answers its original offsets
(``LogAppendInfo.duplicate``). Reads return file byte ranges (``FileRange``) for ``sendfile``.
All mutations hold ``self._lock``; reads work on a snapshot of the segment list.
A leader append recomputes an implausible batch max_timestamp from the records (``protocol.max_timestamp``).
"""
from __future__ import annotations

import bisect
import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Callable

from brokers.model import TopicPartition
from brokers.protocol.errors import InvalidRecordError, OffsetOutOfRangeError, RecordTooLargeError
from brokers.protocol.control_record import build_marker_batch
from brokers.protocol.max_timestamp import repair_max_timestamps
from brokers.protocol.record_batch import BatchSetInfo, assign_offsets, set_log_append_time, validate_batches
from brokers.storage import transactions
from brokers.storage.files import DELETED_SUFFIX
from brokers.storage.leader_epoch_cache import LeaderEpochCache
from brokers.storage.log_append_info import FetchDataInfo, LogAppendInfo, Scheduler
from brokers.storage.log_config import LogConfig
from brokers.storage.log_dir_failure import LogDirFailureChannel, guarded
from brokers.storage.log_loader import LoadResult, load_segments, open_segment
from brokers.storage.producer_state import BatchMetadata, ProducerStateManager, VerificationGuard
from brokers.storage.record_reads import first_record_at_or_after, require_keys
from brokers.storage.retention import segments_to_delete
from brokers.storage.segment import INT32_MAX, LogSegment
from brokers.storage.transaction_index import AbortedTxn

log = logging.getLogger(__name__)


class Log:
    def __init__(self, directory: Path, config: LogConfig, *, recovery_point: int = 0, log_start_offset: int = 0,
                 high_watermark: int = 0, clean_shutdown: bool = False, scheduler: Scheduler | None = None,
                 clock: Callable[[], float] = time.time, failure_channel: LogDirFailureChannel | None = None,
                 topic_partition: TopicPartition | None = None):
        self.directory = Path(directory)
        self.failure_channel = failure_channel  # None: I/O errors propagate as they are (tools, tests)
        self.log_dir = self.directory.parent  # the ``log.dirs`` entry holding this log
        self.directory.mkdir(parents=True, exist_ok=True)
        # a future log's directory (``<topic>-<partition>.<id>-future``) does not name its partition
        self.topic_partition = topic_partition or TopicPartition.from_dir_name(self.directory.name)
        self.config = config
        self._scheduler = scheduler
        self._clock = clock
        self._lock = threading.RLock()
        self.leader_epoch_cache = LeaderEpochCache(self.directory)
        self.load_result: LoadResult = load_segments(self.directory, config, recovery_point, clean_shutdown)
        self._segments: list[LogSegment] = self.load_result.segments or [open_segment(self.directory, log_start_offset, config)]
        self._reindex()
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        self.recovery_point = min(recovery_point, self.log_end_offset)
        self.high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)
        self._unflushed_messages = 0
        self.retired = False  # replaced by its copy in another log dir: guarded methods refuse (log_dir_moves.py)
        self._last_flush_ms = self.now_ms()
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        if self.load_result.recovered_from is not None:
            self._rebuild_epochs(self.load_result.recovered_from)
        self.producer_state = ProducerStateManager(self.directory)
        self.producer_state.load(self._segments, self.log_end_offset, self.load_result.recovered_from,
                                 transactions.record_completed)
        self.producer_state.on_high_watermark_updated(self.high_watermark)

    def _rebuild_epochs(self, start: int) -> None:
        """The leader epochs of the batches recovery kept from ``start`` on (Kafka's ``LogSegment.recover``):
        an epoch's entry is written without fsync, so a machine crash may have lost it from the checkpoint."""
        for segment in self._segments:
            if segment.next_offset <= start:
                continue
            for header in segment.iter_headers(0):
                if header.last_offset >= start:
                    self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    # -- state ---------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    def _reindex(self) -> None:
        """Publish a new snapshot for readers after the segment list changed (under the lock).

        Readers take ``self._snapshot`` once: one attribute read, so a concurrent roll or retention
        pass never shows them a half-updated list. It holds the segments, their base offsets (for
        bisect) and a running max of the closed segments' max timestamps (for offset_for_timestamp).
        """
        segments = tuple(self._segments)
        running, prefix = -1, []
        for segment in segments[:-1]:
            running = max(running, segment.max_timestamp)
            prefix.append(running)
        self._snapshot = (segments, [s.base_offset for s in segments], prefix)

    def update_config(self, config: LogConfig) -> None:
        """A topic config change applied live: taken between appends, rolls and retention passes (all
        hold the lock), so each of them sees one config throughout."""
        with self._lock:
            self.config = config

    def update_high_watermark(self, offset: int) -> int:
        with self._lock:
            self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return self.high_watermark

    @property
    def first_unstable_offset(self) -> int | None:
        """The producer state's, never below the log start (retention may have removed its start)."""
        first = self.producer_state.first_unstable_offset()
        return None if first is None else max(first, self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """What READ_COMMITTED consumers may read below (KIP-98, KAFKA-5121)."""
        return transactions.last_stable_offset(self.first_unstable_offset, self.high_watermark)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        segments, bases, _ = self._snapshot
        return transactions.collect_aborted(segments, bases, start_offset, upper_bound_offset)

    # -- appending -----------------------------------------------------------------------------
    def start_transaction_verification(self, producer_id: int) -> VerificationGuard:
        """KIP-890: register the guard a producer's first transactional append here must carry after
        the coordinator verified the partition (producer_state.py)."""
        with self._lock:
            return self.producer_state.start_verification(producer_id, self.now_ms())

    @guarded("appending to")
    def append_as_leader(self, buf, leader_epoch: int,
                         verification_guard: VerificationGuard | None = None) -> LogAppendInfo:
        """Validate and append a producer's batches, assigning offsets from the log end.

        ``buf`` must be writable: base offsets and leader epochs are rewritten in place. A bad batch
        rejects the whole set and leaves the log (and ``buf``) unchanged; so does a duplicate of one
        of an idempotent producer's last 5 batches, which answers that batch's offsets instead.
        A batch whose max_timestamp is implausible (-1, or below its base timestamp) gets it recomputed
        from its records, as Kafka's LogValidator does (``protocol.max_timestamp``). With
        ``verification_guard`` (KIP-890 on), a transactional batch opening a transaction needs the
        producer's registered guard, else InvalidTxnStateError.
        """
        info = validate_batches(buf)
        self._check_sizes(info)
        if not self.config.log_append_time:
            info = repair_max_timestamps(buf, info)
        if self.config.compact:
            require_keys(buf, info, self.topic_partition)
        with self._lock:
            producers = None
            for header in info.headers:
                if header.producer_id >= 0:  # idempotent: check sequences before any byte moves
                    producers = self.producer_state
                    duplicate = producers.check_append(info.headers, verification_guard)
                    if duplicate is not None:
                        return self._duplicate_info(duplicate)
                    break
            append_time = -1
            if self.config.log_append_time:
                append_time = self.now_ms()
                info = set_log_append_time(buf, info, append_time)
            first = self.log_end_offset
            headers = assign_offsets(buf, info, first, leader_epoch)
            self._append(buf, headers, info)
            self.leader_epoch_cache.assign(leader_epoch, first)
            if producers is not None:
                producers.update(headers)
            return self._append_info(first, headers, info, append_time)

    @guarded("appending to")
    def append_as_follower(self, buf) -> LogAppendInfo:
        """Append batches that already carry offsets and epochs (replica fetch); offsets must go up."""
        info = validate_batches(buf, producer=False)
        with self._lock:
            expected = self.log_end_offset
            for header in info.headers:
                if header.base_offset < expected:
                    raise InvalidRecordError(f"offset {header.base_offset} is below the log end {expected}")
                expected = header.next_offset
            self._append(buf, info.headers, info)
            for header in info.headers:
                self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            self._update_producers(buf, info.headers)  # unchecked: the leader validated them
            return self._append_info(info.headers[0].base_offset, info.headers, info, -1)

    @guarded("appending a marker to")
    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      leader_epoch: int) -> LogAppendInfo:
        """Write a transaction marker (WriteTxnMarkers) at the log end; an ABORT is indexed in the
        active segment's ``.txnindex``. Raises InvalidProducerEpochError /
        TransactionCoordinatorFencedError (producer_state.check_marker) before writing anything."""
        buf = build_marker_batch(producer_id, producer_epoch, commit, coordinator_epoch, self.now_ms())
        info = validate_batches(buf, producer=False)
        with self._lock:
            self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
            first = self.log_end_offset
            headers = assign_offsets(buf, info, first, leader_epoch)
            self._append(buf, headers, info)
            self.leader_epoch_cache.assign(leader_epoch, first)
            self._update_producers(buf, headers)
            return self._append_info(first, headers, info, -1)

    def _update_producers(self, buf, headers) -> None:
        """Apply appended batches to the producer state; index the transactions their markers aborted."""
        for txn in self.producer_state.update(headers, transactions.buffer_markers(buf)):
            transactions.record_completed(self.active_segment, txn)

    def _append(self, buf, headers, info: BatchSetInfo) -> None:
        self._maybe_roll(info.size, info.max_timestamp, headers[0].base_offset, headers[-1].last_offset)
        self.active_segment.append(buf, headers)
        self._unflushed_messages += info.records_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush()

    def _append_info(self, first: int, headers, info: BatchSetInfo, append_time: int) -> LogAppendInfo:
        return LogAppendInfo(first, headers[-1].last_offset, info.max_timestamp,
                             first + info.shallow_offset_delta_of_max_timestamp, info.records_count, info.size,
                             append_time)

    def _duplicate_info(self, batch: BatchMetadata) -> LogAppendInfo:
        """Kafka answers a duplicate with the original batch's offsets (and, under LogAppendTime, its
        stamped time); nothing is written, so no records or bytes are counted."""
        append_time = batch.timestamp if self.config.log_append_time else -1
        return LogAppendInfo(batch.first_offset, batch.last_offset, batch.timestamp, batch.last_offset, 0, 0,
                             append_time, duplicate=True)

    def _check_sizes(self, info: BatchSetInfo) -> None:
        if info.max_batch_size > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {info.max_batch_size} bytes exceeds max.message.bytes={self.config.max_message_bytes}"
            )
        if info.size > self.config.segment_bytes:
            raise RecordTooLargeError(f"{info.size} bytes exceed segment.bytes={self.config.segment_bytes}")

    # -- rolling -------------------------------------------------------------------------------
    def _maybe_roll(self, incoming_size: int, max_timestamp: int, first_offset: int, last_offset: int) -> None:
        segment = self._segments[-1]
        if segment.size == 0:
            return
        config = self.config
        rolling_based = segment.rolling_based_timestamp
        if rolling_based is not None and rolling_based >= 0 and max_timestamp >= 0:
            waited = max_timestamp - rolling_based
        else:
            waited = self.now_ms() - segment.created_ms
        if (segment.size > config.segment_bytes - incoming_size
                or waited > config.segment_ms - config.segment_jitter_ms
                or segment.offset_index.is_full or segment.time_index.is_full
                or last_offset - segment.base_offset > INT32_MAX):
            self.roll(first_offset)

    @guarded("rolling")
    def roll(self, new_base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end; the old one's flush is handed to the scheduler."""
        with self._lock:
            base = max(self.log_end_offset, new_base_offset or 0)
            old = self.active_segment
            if old.size == 0 and old.base_offset == base:
                return old
            old.on_roll()
            if old.size == 0:
                old.delete()
                self._segments.pop()
            self._segments.append(open_segment(self.directory, base, self.config))
            self._reindex()
            self._snapshot_producers(base, durable=False)
        if self._scheduler is not None:
            self._scheduler.schedule_once(f"flush-{self.topic_partition}", lambda: self.flush(base))
        return self.active_segment

    # -- reading -------------------------------------------------------------------------------
    @guarded("reading")
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> FetchDataInfo:
        """Bytes from the batch holding ``offset`` up to ``max_offset`` (exclusive, e.g. the HW)."""
        segments, bases, _ = self._snapshot
        end = segments[-1].next_offset
        if offset < self.log_start_offset or offset > end:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {end}] of {self.topic_partition}"
            )
        limit = end if max_offset is None else min(max_offset, end)
        if offset >= limit:
            return FetchDataInfo(offset, None)
        index = max(0, bisect.bisect_right(bases, offset) - 1)
        for segment in segments[index:]:
            if segment.base_offset >= limit:
                break
            max_position = None
            if limit < segment.next_offset:
                stop = segment.translate_offset(limit)
                max_position = stop.position if stop is not None else segment.size
            found = segment.read(offset, max_bytes, max_position, min_one_message)
            if found is not None:
                return FetchDataInfo(offset, found if found.size else None)
        return FetchDataInfo(offset, None)

    @guarded("searching")
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= ``timestamp``, or None."""
        segments, _, prefix = self._snapshot
        index = bisect.bisect_left(prefix, timestamp)
        for segment in segments[index:]:
            header = segment.find_offset_by_timestamp(timestamp)
            if header is None:
                continue
            batch = segment.read_bytes(header.position, header.size)
            found = first_record_at_or_after(batch, timestamp)
            if found is not None and found[0] >= self.log_start_offset:
                return found
        return None

    # -- flushing ------------------------------------------------------------------------------
    @guarded("flushing")
    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, up_to); advance the recovery point."""
        with self._lock:
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            if target <= self.recovery_point:
                return
            bases = self._snapshot[1]
            start = max(0, bisect.bisect_right(bases, self.recovery_point) - 1)
            stop = bisect.bisect_left(bases, target)
            dirty = self._segments[start:stop]
            if up_to is None:
                self._unflushed_messages = 0
        for segment in dirty:  # fsync outside the lock: appends go on meanwhile
            segment.flush()
        self.leader_epoch_cache.flush()  # the epochs below the new recovery point are durable before it moves
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)
            self._last_flush_ms = self.now_ms()

    def flush_if_due(self, now_ms: int) -> bool:
        if now_ms - self._last_flush_ms < self.config.flush_ms or self.recovery_point >= self.log_end_offset:
            return False
        self.flush()
        return True

    # -- truncation ----------------------------------------------------------------------------
    @guarded("truncating")
    def truncate_to(self, offset: int) -> bool:
        """Remove every offset >= ``offset`` (follower truncation); True if anything was removed.

        At or past the log end nothing is removed, but epoch entries starting at the log end are: a
        replica that became leader and appended nothing before losing leadership has such an entry,
        and a follower that kept it would send that epoch as its last fetched one forever (KIP-320)."""
        with self._lock:
            if offset >= self.log_end_offset:
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                return False
            if offset < self._segments[0].base_offset:
                self._truncate_fully(offset)
                return True
            while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
                self._segments.pop().delete()
            self.active_segment.truncate_to(offset)
            self._reindex()
            self._after_truncation()
            self.producer_state.truncate(self._segments, self.log_end_offset)
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return True

    @guarded("truncating")
    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete everything and start an empty log at ``new_offset`` (a follower far behind the leader)."""
        with self._lock:
            self._truncate_fully(new_offset)

    def _truncate_fully(self, new_offset: int) -> None:
        for segment in self._segments:
            segment.delete()
        self._segments = [open_segment(self.directory, new_offset, self.config)]
        self._reindex()
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully()
        self.log_start_offset = new_offset
        self._after_truncation()

    def _after_truncation(self) -> None:
        end = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(end)
        self.recovery_point = min(self.recovery_point, end)
        self.high_watermark = min(self.high_watermark, end)
        self.log_start_offset = min(self.log_start_offset, end)

    # -- retention -----------------------------------------------------------------------------
    @guarded("deleting segments of")
    def delete_old_segments(self) -> int:
        """Apply the log start offset, retention.ms and retention.bytes (retention.py); return count."""
        with self._lock:
            count = segments_to_delete(self._segments, self.log_end_offset, self.high_watermark,
                                       self.log_start_offset, self.config, self.now_ms())
            if not count:
                return 0
            doomed = self._segments[:count]
            if count == len(self._segments):
                self.roll()
            del self._segments[:count]
            self._reindex()
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
            for segment in doomed:
                self._delete_segment_files(segment)
            return count

    def _delete_segment_files(self, segment: LogSegment) -> None:
        """Rename to ``.deleted`` now, remove after ``file.delete.delay.ms`` (readers may hold ranges)."""
        segment.change_suffix(DELETED_SUFFIX)
        self._schedule_delete(segment)

    def _schedule_delete(self, segment: LogSegment) -> None:
        if self._scheduler is None or self.config.file_delete_delay_ms == 0:
            segment.delete()
        else:
            self._scheduler.schedule_once(f"delete-{segment.log_path.name}", lambda: self._delete_segment(segment),
                                          self.config.file_delete_delay_ms)

    @guarded("deleting a segment of")
    def _delete_segment(self, segment: LogSegment) -> None:
        segment.delete()

    @guarded("advancing the start of")
    def increment_log_start_offset(self, offset: int) -> None:
        """DeleteRecords: move the log start up to ``offset`` (at most the HW)."""
        with self._lock:
            if offset > self.high_watermark:
                raise OffsetOutOfRangeError(f"log start {offset} would pass the high watermark {self.high_watermark}")
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                self.leader_epoch_cache.truncate_from_start(offset)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """``producer.id.expiration.ms``: forget idle idempotent producers (see producer_state.py)."""
        with self._lock:
            return self.producer_state.remove_expired(now_ms, expiration_ms)

    # -- compaction support --------------------------------------------------------------------
    def cleaning_view(self) -> tuple[int | None, dict]:
        """The first unstable offset and each active producer's ``cleaned_transactions.LastRecord``, read
        together under the lock: the cleaner plans a pass on the scheduler's thread while appends go on."""
        from brokers.storage.cleaned_transactions import last_records_of_active_producers

        with self._lock:
            state = self.producer_state
            return state.first_unstable_offset(), last_records_of_active_producers(state.producers)

    @guarded("replacing segments of")
    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment]) -> None:
        """Swap a cleaned ``.cleaned`` segment in for ``old_segments`` crash-safely (see cleaner.py)."""
        from brokers.storage.files import SWAP_SUFFIX, fsync_dir

        with self._lock:
            new_segment.flush()
            new_segment.change_suffix(SWAP_SUFFIX)
            fsync_dir(self.directory)
            old_ids = {id(s) for s in old_segments}
            for segment in old_segments:
                segment.change_suffix(DELETED_SUFFIX)
            fsync_dir(self.directory)
            new_segment.change_suffix("")
            fsync_dir(self.directory)
            kept = [s for s in self._segments if id(s) not in old_ids]
            self._segments = sorted(kept + [new_segment], key=lambda s: s.base_offset)
            self._reindex()
            for segment in old_segments:
                self._schedule_delete(segment)

    # -- lifecycle -----------------------------------------------------------------------------
    def _snapshot_producers(self, offset: int, durable: bool) -> None:
        """Write the producer-state snapshot at ``offset``: only an optimisation for the next load
        (a missing or corrupt one means scanning more headers), so a failure is logged, not raised."""
        try:
            self.producer_state.take_snapshot(offset, durable=durable)
        except OSError as exc:
            log.warning("%s: cannot write the producer snapshot at %d: %s", self.topic_partition, offset, exc)

    def close(self, durable: bool = True) -> None:
        """Write the producer snapshot and the epoch checkpoint for the next load, close the files.
        ``durable=False``: without fsyncs, the caller syncs the filesystem (LogManager's clean shutdown). An empty
        log without producers has nothing to snapshot (as Kafka, which snapshots only past its last snapshot)."""
        with self._lock:
            if self._segments and self.directory.is_dir():
                if self.log_end_offset > self.log_start_offset or self.producer_state.producers:
                    self._snapshot_producers(self.log_end_offset, durable=durable)
                self.leader_epoch_cache.flush(durable)  # a clean shutdown's load trusts the checkpoint
            for segment in self._segments:
                segment.close()

    def close_handlers(self) -> None:
        """Close every file without writing anything (the log's dir went offline: KIP-112)."""
        with self._lock:
            for segment in self._segments:
                try:
                    segment.close()
                except OSError as exc:
                    log.warning("%s: closing a segment of an offline log failed: %s", self.topic_partition, exc)

    def delete(self) -> None:
        """Remove the partition directory and everything in it."""
        with self._lock:
            for segment in self._segments:
                segment.close()
            self._segments = []
            shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"Log({self.topic_partition}, start={self.log_start_offset}, hw={self.high_watermark}, "
                f"end={self.log_end_offset}, segments={len(self._segments)})")
