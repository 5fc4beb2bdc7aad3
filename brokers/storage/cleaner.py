"""LogCleaner: compaction for ``cleanup.policy=compact`` (and ``compact,delete``).

A pass over one log:
1. The dirty section runs from the cleaner checkpoint (first dirty offset) to the first uncleanable
   offset: the active segment's base, the first segment younger than ``min.compaction.lag.ms``, or the
   first unstable offset (the first offset of a transaction still open), whichever is lowest. The active
   segment is never cleaned, nor anything at or past the first unstable offset.
2. An offset map key -> latest offset is built over the dirty section, skipping control batches and
   the batches of aborted transactions.
3. Every segment below the first uncleanable offset is rewritten, in groups that fit one segment,
   keeping a record only if it has a key and no later offset for that key exists in the map, or if it
   lies at or past the first uncleanable offset. Offsets and order never change (gaps appear); a batch
   whose records all survive is copied byte for byte, a partly kept batch is re-encoded with its
   original base offset, last offset delta, timestamps, producer fields and codec.
4. Transactions (``cleaned_transactions.py``): the batches of aborted transactions (known from the
   segments' ``.txnindex``) are removed; committed transactions' records are compacted like any other;
   a marker stays while its transaction has a batch in the log, then until its segment is older than
   the delete horizon. The batch holding an active producer's last sequence (or last marker) stays,
   emptied if need be. Each cleaned segment gets a ``.txnindex`` of the aborted transactions whose
   marker it keeps while their data was still seen.
5. Tombstones (null value) and removable markers are kept while their segment is newer than the delete
   horizon: the last modified time of the last already-clean segment minus ``delete.retention.ms``
   (Kafka's rule), so a consumer that reads the clean section within delete.retention.ms sees the delete.
6. Each group is written as ``.cleaned``, fsynced, and swapped in through ``.swap`` by
   ``Log.replace_segments``; the loader finishes or discards an interrupted swap.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from brokers.model import TopicPartition
from brokers.protocol.record import Record, batch_records, build_batch
from brokers.protocol.record_batch import TIMESTAMP_TYPE_BIT, BatchHeader, read_header
from brokers.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from brokers.storage.cleaned_transactions import (
    BatchRetention,
    CleanedTransactionMetadata,
    LastRecord,
    batch_retention,
)
from brokers.storage.files import CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, offset_file_name
from brokers.storage.log import Log
from brokers.storage.log_loader import open_segment
from brokers.storage.segment import INT32_MAX, LogSegment
from brokers.storage.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn

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
    aborted_batches_removed: int = 0  # batches of aborted transactions whose records went (the header may stay)
    markers_removed: int = 0
    groups: list[tuple[int, int]] = field(default_factory=list)


def dirty_section(log_: Log, first_dirty: int, now_ms: int, unstable: int | None = None) -> tuple[int, int]:
    """(first dirty offset, first uncleanable offset) of a log whose first unstable offset is ``unstable``."""
    first_dirty = max(first_dirty, log_.log_start_offset)
    segments = log_.segments
    uncleanable = segments[-1].base_offset
    if unstable is not None:
        uncleanable = min(uncleanable, unstable)
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
            unstable, _ = candidate.cleaning_view()
            first_dirty, uncleanable = dirty_section(candidate, offsets.get(candidate.topic_partition, 0), now_ms,
                                                     unstable)
            ratio = dirty_ratio(candidate, first_dirty, uncleanable)
            if uncleanable > first_dirty and ratio >= candidate.config.min_cleanable_dirty_ratio and ratio > best_ratio:
                best, best_ratio = candidate, ratio
        return self.clean(best, now_ms) if best is not None else None

    def clean(self, log_: Log, now_ms: int) -> CleanerStats:
        offsets = self.checkpoint.read()
        unstable, last_records = log_.cleaning_view()
        first_dirty, uncleanable = dirty_section(log_, offsets.get(log_.topic_partition, 0), now_ms, unstable)
        stats = CleanerStats(log_.topic_partition, first_uncleanable=uncleanable)
        if uncleanable <= first_dirty:
            return stats
        segments = [s for s in log_.segments if s.base_offset < uncleanable]
        latest = build_offset_map(segments, first_dirty, uncleanable,
                                  log_.collect_aborted_transactions(first_dirty, uncleanable))
        clean_section = [s for s in segments if s.base_offset < first_dirty]
        horizon = clean_section[-1].last_modified_ms - log_.config.delete_retention_ms if clean_section else -1
        walk = _Walk(latest, uncleanable, CleanedTransactionMetadata(), last_records, stats)
        for group in group_segments(segments, log_.config.segment_bytes):
            cleaned = self._clean_group(log_, group, horizon, walk)
            log_.replace_segments(cleaned, group)
            stats.groups.append((group[0].base_offset, len(group)))
        offsets[log_.topic_partition] = uncleanable
        self.checkpoint.write(offsets)
        log.info("cleaned %s: %s", log_.topic_partition, stats)
        return stats

    def _clean_group(self, log_: Log, group: list[LogSegment], horizon: int, walk: _Walk) -> LogSegment:
        directory = log_.directory
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (directory / (offset_file_name(group[0].base_offset, suffix) + CLEANED_SUFFIX)).unlink(missing_ok=True)
        cleaned = open_segment(directory, group[0].base_offset, log_.config, CLEANED_SUFFIX)
        walk.transactions.cleaned_index = cleaned.txn_index
        segments = log_.segments
        stats = walk.stats
        for segment in group:
            # the segment's whole range: the cleaned segment's .txnindex is rebuilt from it
            later = [s.base_offset for s in segments if s.base_offset > segment.base_offset]
            upper = later[0] if later else segment.next_offset
            walk.transactions.add_aborted_transactions(log_.collect_aborted_transactions(segment.base_offset, upper))
            retain_deletes_and_markers = segment.last_modified_ms > horizon
            for header in segment.iter_headers(verify_crc=True):
                data = segment.read_bytes(header.position, header.size)
                kept = walk.clean_batch(data, read_header(data), retain_deletes_and_markers)
                if kept is not None:
                    cleaned.append(kept, [read_header(kept)])
            stats.segments_cleaned += 1
            stats.bytes_before += segment.size
        cleaned.on_roll()
        stats.bytes_after += cleaned.size
        modified = group[-1].last_modified_ms / 1000
        os.utime(cleaned.log_path, (modified, modified))  # Kafka keeps the newest original's mtime
        return cleaned


def build_offset_map(segments: list[LogSegment], first_dirty: int, first_uncleanable: int,
                     aborted: list[AbortedTxn] = ()) -> dict[bytes, int]:
    """key -> last offset, over the records in [first_dirty, first_uncleanable) outside aborted
    transactions (``aborted``: the ``.txnindex`` entries of that range)."""
    latest: dict[bytes, int] = {}
    transactions = CleanedTransactionMetadata(aborted)
    for segment in segments:
        if segment.next_offset <= first_dirty:
            continue
        for header in segment.iter_headers(verify_crc=True):
            if header.last_offset < first_dirty:
                continue
            if header.base_offset >= first_uncleanable:
                break
            data = segment.read_bytes(header.position, header.size)
            records = batch_records(data, read_header(data))
            if header.is_control:
                transactions.on_control_batch(header, records[0].key if records else None)
                continue
            if transactions.on_data_batch(header):
                continue
            for record in records:
                offset = header.base_offset + record.offset_delta
                if record.key is not None and first_dirty <= offset < first_uncleanable:
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


@dataclass
class _Walk:
    """One cleaning pass's walk over the batches below the first uncleanable offset, oldest first."""

    latest: dict[bytes, int]
    first_uncleanable: int
    transactions: CleanedTransactionMetadata
    last_records: dict[int, LastRecord]
    stats: CleanerStats

    def clean_batch(self, data: bytes, header: BatchHeader, retain_deletes_and_markers: bool) -> bytes | bytearray | None:
        """The batch as it goes into the cleaned segment, or None if it goes."""
        records = batch_records(data, header)
        if header.is_control:
            removable = self.transactions.on_control_batch(header, records[0].key if records else None)
            discard = removable and not retain_deletes_and_markers
        else:
            discard = self.transactions.on_data_batch(header)
            self.stats.records_read += len(records)
            self.stats.aborted_batches_removed += discard
        retention = batch_retention(header, discard, self.last_records)
        if retention is BatchRetention.DELETE:
            self.stats.markers_removed += header.is_control
            return None
        if discard:
            kept = []
        elif header.is_control:
            kept = records
        else:
            kept = [r for r in records if self._retain(header, r, retain_deletes_and_markers)]
        if not header.is_control:
            self.stats.records_kept += len(kept)
        if len(kept) == len(records):
            return data
        if not kept and retention is BatchRetention.DELETE_EMPTY:
            return None
        return _rebuild(header, kept)

    def _retain(self, header: BatchHeader, record: Record, retain_deletes: bool) -> bool:
        offset = header.base_offset + record.offset_delta
        if offset >= self.first_uncleanable:
            return True
        if record.key is None or self.latest.get(record.key, offset) > offset:
            return False
        return record.value is not None or retain_deletes


def _rebuild(header: BatchHeader, kept: list[Record]) -> bytearray:
    """The batch re-encoded with ``kept`` only (none: Kafka's empty batch, header fields intact)."""
    return build_batch(kept, base_offset=header.base_offset, base_timestamp=header.base_timestamp,
                       max_timestamp=header.max_timestamp, last_offset_delta=header.last_offset_delta,
                       codec=header.compression, partition_leader_epoch=header.partition_leader_epoch,
                       producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                       base_sequence=header.base_sequence,
                       timestamp_type_log_append=bool(header.attributes & TIMESTAMP_TYPE_BIT),
                       transactional=header.is_transactional, control=header.is_control)
