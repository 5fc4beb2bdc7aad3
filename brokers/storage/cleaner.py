"""LogCleaner: compaction for ``cleanup.policy=compact`` (and ``compact,delete``).

A pass over one log:
1. The dirty section runs from the cleaner checkpoint (first dirty offset) to the first uncleanable
   offset: the active segment's base, or the first segment younger than ``min.compaction.lag.ms``.
   The active segment is never cleaned.
2. An offset map key -> latest offset is built over the dirty section.
3. Every segment below the first uncleanable offset is rewritten, in groups that fit one segment,
   keeping a record only if it has a key and no later offset for that key exists in the map.
   Offsets and order never change (gaps appear); a batch whose records all survive is copied byte
   for byte, a partly kept batch is re-encoded with its original base offset, last offset delta,
   timestamps, producer fields and codec.
4. Tombstones (null value) are kept while their segment is newer than the delete horizon: the last
   modified time of the last already-clean segment minus ``delete.retention.ms`` (Kafka's rule), so
   a consumer that reads the clean section within delete.retention.ms sees the delete.
5. Each group is written as ``.cleaned``, fsynced, and swapped in through ``.swap`` by
   ``Log.replace_segments``; the loader finishes or discards an interrupted swap.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from brokers.model import TopicPartition
from brokers.protocol.record import batch_records, build_batch
from brokers.protocol.record_batch import TIMESTAMP_TYPE_BIT, BatchHeader, read_header
from brokers.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from brokers.storage.files import CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, offset_file_name
from brokers.storage.transaction_index import TXN_INDEX_SUFFIX
from brokers.storage.log import Log
from brokers.storage.log_loader import open_segment
from brokers.storage.segment import INT32_MAX, LogSegment

log = logging.getLogger(__name__)


@dataclass
class CleanerStats:
    topic_partition: TopicPartition | None = None
    segments_cleaned: int = 0
    records_read: int = 0
    records_kept: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    first_uncleanable: int = 0
    groups: list[tuple[int, int]] = field(default_factory=list)


def dirty_section(log_: Log, first_dirty: int, now_ms: int) -> tuple[int, int]:
    """(first dirty offset, first uncleanable offset) of a log."""
    first_dirty = max(first_dirty, log_.log_start_offset)
    segments = log_.segments
    uncleanable = segments[-1].base_offset
    lag = log_.config.min_compaction_lag_ms
    if lag > 0:
        for segment in segments[:-1]:
            if segment.base_offset >= first_dirty and now_ms - segment.largest_timestamp < lag:
                uncleanable = min(uncleanable, segment.base_offset)
                break
    return first_dirty, max(first_dirty, uncleanable)


def dirty_ratio(log_: Log, first_dirty: int, first_uncleanable: int) -> float:
    clean = dirty = 0
    for segment in log_.segments:
        if segment.base_offset < first_dirty:
            clean += segment.size
        elif segment.base_offset < first_uncleanable:
            dirty += segment.size
    return dirty / (clean + dirty) if clean + dirty else 0.0


class LogCleaner:
    """Cleans the filthiest compacted log per pass; first dirty offsets in ``cleaner-offset-checkpoint``."""

    def __init__(self, log_dir: Path):
        self.checkpoint = OffsetCheckpointFile(Path(log_dir) / CLEANER_OFFSET_CHECKPOINT)

    def clean_filthiest(self, logs: list[Log], now_ms: int) -> CleanerStats | None:
        offsets = self.checkpoint.read()
        best, best_ratio = None, -1.0
        for candidate in logs:
            if not candidate.config.compact:
                continue
            first_dirty, uncleanable = dirty_section(candidate, offsets.get(candidate.topic_partition, 0), now_ms)
            ratio = dirty_ratio(candidate, first_dirty, uncleanable)
            if uncleanable > first_dirty and ratio >= candidate.config.min_cleanable_dirty_ratio and ratio > best_ratio:
                best, best_ratio = candidate, ratio
        return self.clean(best, now_ms) if best is not None else None

    def clean(self, log_: Log, now_ms: int) -> CleanerStats:
        offsets = self.checkpoint.read()
        first_dirty, uncleanable = dirty_section(log_, offsets.get(log_.topic_partition, 0), now_ms)
        stats = CleanerStats(log_.topic_partition, first_uncleanable=uncleanable)
        if uncleanable <= first_dirty:
            return stats
        segments = [s for s in log_.segments if s.base_offset < uncleanable]
        latest = build_offset_map(segments, first_dirty)
        clean_section = [s for s in segments if s.base_offset < first_dirty]
        horizon = clean_section[-1].last_modified_ms - log_.config.delete_retention_ms if clean_section else -1
        for group in group_segments(segments, log_.config.segment_bytes):
            cleaned = self._clean_group(log_, group, latest, horizon, stats)
            log_.replace_segments(cleaned, group)
            stats.groups.append((group[0].base_offset, len(group)))
        offsets[log_.topic_partition] = uncleanable
        self.checkpoint.write(offsets)
        log.info("cleaned %s: %s", log_.topic_partition, stats)
        return stats

    def _clean_group(self, log_: Log, group: list[LogSegment], latest: dict[bytes, int], horizon: int,
                     stats: CleanerStats) -> LogSegment:
        directory = log_.directory
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (directory / (offset_file_name(group[0].base_offset, suffix) + CLEANED_SUFFIX)).unlink(missing_ok=True)
        cleaned = open_segment(directory, group[0].base_offset, log_.config, CLEANED_SUFFIX)
        for segment in group:
            retain_deletes = segment.last_modified_ms > horizon
            for header in segment.iter_headers(verify_crc=True):
                data = segment.read_bytes(header.position, header.size)
                kept = _clean_batch(data, read_header(data), latest, retain_deletes, stats)
                if kept is not None:
                    cleaned.append(kept, [read_header(kept)])
            for aborted in segment.txn_index.entries():  # markers are kept, so are their index entries
                cleaned.txn_index.append(aborted)
            stats.segments_cleaned += 1
            stats.bytes_before += segment.size
        cleaned.on_roll()
        stats.bytes_after += cleaned.size
        modified = group[-1].last_modified_ms / 1000
        os.utime(cleaned.log_path, (modified, modified))  # Kafka keeps the newest original's mtime
        return cleaned


def build_offset_map(segments: list[LogSegment], first_dirty: int) -> dict[bytes, int]:
    """key -> last offset, over the records at or after ``first_dirty``."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        if segment.next_offset <= first_dirty:
            continue
        for header in segment.iter_headers(verify_crc=True):
            if header.last_offset < first_dirty or header.is_control:
                continue
            data = segment.read_bytes(header.position, header.size)
            for record in batch_records(data, read_header(data)):
                offset = header.base_offset + record.offset_delta
                if record.key is not None and offset >= first_dirty:
                    latest[record.key] = offset
    return latest


def group_segments(segments: list[LogSegment], max_size: int) -> list[list[LogSegment]]:
    """Consecutive segments whose total size fits one segment and whose offsets fit int32."""
    groups: list[list[LogSegment]] = []
    for segment in segments:
        current = groups[-1] if groups else None
        if (current and sum(s.size for s in current) + segment.size <= max_size
                and segment.next_offset - current[0].base_offset <= INT32_MAX):
            current.append(segment)
        else:
            groups.append([segment])
    return groups


def _clean_batch(data: bytes, header: BatchHeader, latest: dict[bytes, int], retain_deletes: bool,
                 stats: CleanerStats) -> bytes | bytearray | None:
    if header.is_control:
        return data
    records = batch_records(data, header)
    stats.records_read += len(records)
    kept = []
    for record in records:
        offset = header.base_offset + record.offset_delta
        if record.key is None or latest.get(record.key, offset) > offset:
            continue
        if record.value is None and not retain_deletes:
            continue
        kept.append(record)
    stats.records_kept += len(kept)
    if len(kept) == len(records):
        return data
    if not kept:
        return None
    return build_batch(kept, base_offset=header.base_offset, base_timestamp=header.base_timestamp,
                       max_timestamp=header.max_timestamp, last_offset_delta=header.last_offset_delta,
                       codec=header.compression, partition_leader_epoch=header.partition_leader_epoch,
                       producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                       base_sequence=header.base_sequence,
                       timestamp_type_log_append=bool(header.attributes & TIMESTAMP_TYPE_BIT),
                       transactional=header.is_transactional)
