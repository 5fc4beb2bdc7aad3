"""Loading a partition directory into LogSegments, finishing what a crash interrupted.

Order (Kafka's LogLoader): drop temporary files (``.cleaned``, ``.deleted``, ``.tmp``); complete
compaction swaps (a ``.log.swap`` replaces the segments its offset range covers); open every
``.log``; rebuild indexes that are missing or fail their sanity check; unless the log was shut down
cleanly, recover every segment from the one holding the recovery point on: the first segment that
had to be truncated is the end of the log and every later segment is deleted. A recovered segment's
``.txnindex`` is emptied: the Log rebuilds it with the producer state from ``recovered_from`` on.
"""
from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from brokers.protocol.errors import CorruptRecordError
from brokers.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    base_offset_of,
    fsync_dir,
    offset_file_name,
)
from brokers.storage.index_file import CorruptIndexError
from brokers.storage.log_config import LogConfig
from brokers.storage.segment import LogSegment
from brokers.storage.transaction_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

_KEPT_SWAPS = (LOG_SUFFIX + SWAP_SUFFIX, TXN_INDEX_SUFFIX + SWAP_SUFFIX)  # a .txnindex cannot be rebuilt alone


@dataclass
class LoadResult:
    segments: list[LogSegment]
    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_segments: int = 0
    rebuilt_indexes: list[int] = field(default_factory=list)
    recovered_from: int | None = None  # base offset of the first recovered segment: state to rebuild from

    def note_recovered(self, segment: LogSegment) -> None:
        """A recovered segment's ``.txnindex`` is rebuilt from its markers with the producer state."""
        segment.txn_index.reset()
        if self.recovered_from is None or segment.base_offset < self.recovered_from:
            self.recovered_from = segment.base_offset


def open_segment(directory: Path, base_offset: int, config: LogConfig, suffix: str = "") -> LogSegment:
    return LogSegment(directory, base_offset, index_interval_bytes=config.index_interval_bytes,
                      max_index_size=config.segment_index_bytes, suffix=suffix)


def load_segments(directory: Path, config: LogConfig, recovery_point: int, clean_shutdown: bool) -> LoadResult:
    directory = Path(directory)
    _remove_temporary_files(directory)
    _complete_swaps(directory, config)
    bases = sorted(base_offset_of(p.name) for p in directory.glob("*" + LOG_SUFFIX))
    missing_index = {b for b in bases if not _has_indexes(directory, b)}
    result = LoadResult([open_segment(directory, b, config) for b in bases])
    first_unflushed = len(bases) if clean_shutdown else _segment_holding(bases, recovery_point)
    for segment in result.segments[:first_unflushed]:
        _load_or_rebuild(segment, segment.base_offset in missing_index, result)
    if first_unflushed < len(bases):
        _recover_from(result, first_unflushed)
    return result


def _has_indexes(directory: Path, base_offset: int) -> bool:
    return all((directory / offset_file_name(base_offset, s)).exists() for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX))


def _segment_holding(bases: list[int], offset: int) -> int:
    """Index of the last segment whose base offset is <= ``offset`` (0 if none)."""
    return max(0, bisect_right(bases, offset) - 1)


def _remove_temporary_files(directory: Path) -> None:
    for path in directory.iterdir():
        if path.name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX, ".tmp")):
            path.unlink(missing_ok=True)
        elif path.name.endswith(SWAP_SUFFIX) and not path.name.endswith(_KEPT_SWAPS):
            path.unlink(missing_ok=True)  # offset and time index swaps are rebuilt from their log
        elif path.name.endswith(TXN_INDEX_SUFFIX + SWAP_SUFFIX):
            log_swap = directory / (offset_file_name(base_offset_of(path.name), LOG_SUFFIX) + SWAP_SUFFIX)
            if not log_swap.exists():
                path.unlink(missing_ok=True)


def _complete_swaps(directory: Path, config: LogConfig) -> None:
    """A ``.log.swap`` was fsynced before it was renamed: it replaces every segment it covers."""
    for path in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        swap = open_segment(directory, base_offset_of(path.name), config, SWAP_SUFFIX)
        swap.recover()
        for old in directory.glob("*" + LOG_SUFFIX):
            base = base_offset_of(old.name)
            if swap.base_offset <= base < swap.next_offset:
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    (directory / offset_file_name(base, suffix)).unlink(missing_ok=True)
        swap.change_suffix("")
        swap.close()
        fsync_dir(directory)
        log.info("completed interrupted compaction swap of %s", path.name)


def _load_or_rebuild(segment: LogSegment, index_missing: bool, result: LoadResult) -> None:
    """Trust a flushed segment unless its index is missing or insane; then rebuild it from the log."""
    if not index_missing:
        try:
            segment.load()
            return
        except (CorruptIndexError, CorruptRecordError) as exc:
            log.warning("%s: %s; rebuilding its indexes", segment.log_path, exc)
    result.truncated_bytes += segment.recover()
    result.rebuilt_indexes.append(segment.base_offset)
    result.note_recovered(segment)


def _recover_from(result: LoadResult, start: int) -> None:
    """Recover segments[start:]; the first one cut short (or overlapped by the next) ends the log."""
    segments = result.segments
    for i in range(start, len(segments)):
        cut = segments[i].recover()
        result.note_recovered(segments[i])
        result.recovered_segments += 1
        result.truncated_bytes += cut
        if cut or (i + 1 < len(segments) and segments[i + 1].base_offset < segments[i].next_offset):
            for later in segments[i + 1 :]:
                later.delete()
                result.deleted_segments += 1
            del segments[i + 1 :]
            break
