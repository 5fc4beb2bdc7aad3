"""LogSegment: one ``<base offset>.log`` with its ``.index``, ``.timeindex`` and (once it holds an
aborted transaction's marker) ``.txnindex``.

The ``.log`` is a plain concatenation of RecordBatch v2 batches exactly as on the wire, offsets
increasing, every offset >= ``base_offset`` and ``last offset - base_offset`` within int32. Bytes are
written with ``pwrite`` at the tracked end; nothing is fsynced until ``flush``. The two indexes are
sparse: one entry per ``index.interval.bytes`` appended (see offset_index.py, time_index.py).

``recover`` re-reads the ``.log`` from the start, checks every batch (v2 magic, length, CRC32C,
offsets increasing), rebuilds both indexes, and truncates the file at the first batch that fails:
a torn write is cut off, never served.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from brokers.protocol.errors import CorruptRecordError
from brokers.protocol.record_batch import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, batch_size_at, check_crc, read_header
from brokers.storage.files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    offset_file_name,
)
from brokers.storage.index_file import CorruptIndexError
from brokers.storage.offset_index import OffsetIndex
from brokers.storage.time_index import TimeIndex
from brokers.storage.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

INT32_MAX = 2**31 - 1
_SCAN_CHUNK = 1 << 20
_HEADER_SCAN_CHUNK = 8192


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes ``[position, position + size)`` of a segment's ``.log``, ready for ``sendfile``."""

    segment: "LogSegment"
    position: int
    size: int
    first_offset: int

    def fileno(self) -> int:
        return self.segment.fileno()

    def read(self) -> bytes:
        return self.segment.read_bytes(self.position, self.size)


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_size: int = 10485760, created_ms: int | None = None, suffix: str = ""):
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        self.log_path = self.directory / (offset_file_name(base_offset, LOG_SUFFIX) + suffix)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.created_ms = created_ms if created_ms is not None else int(time.time() * 1000)
        index_path = self.directory / (offset_file_name(base_offset, INDEX_SUFFIX) + suffix)
        time_path = self.directory / (offset_file_name(base_offset, TIME_INDEX_SUFFIX) + suffix)
        self.offset_index, bad_offset_index = _open_index(OffsetIndex, index_path, base_offset, max_index_size)
        self.time_index, bad_time_index = _open_index(TimeIndex, time_path, base_offset, max_index_size)
        self._index_damaged = bad_offset_index or bad_time_index
        self.txn_index = TransactionIndex(self.directory / (offset_file_name(base_offset, TXN_INDEX_SUFFIX) + suffix))
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.rolling_based_timestamp: int | None = None
        self.next_offset = base_offset
        self._bytes_since_last_index_entry = 0

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> None:
        """Trust the files: check the indexes' sanity, then read the tail after the last index entry
        for the next offset and max timestamp. Raises CorruptIndexError / CorruptRecordError when the
        files cannot be trusted (the loader then calls ``recover``)."""
        if self.size == 0:
            return
        if self._index_damaged:
            raise CorruptIndexError(f"{self.log_path}: an index file was not whole entries")
        self.offset_index.sanity_check(self.size)
        _, position = self.offset_index.lookup(2**62)
        self.max_timestamp = self.time_index.max_timestamp
        if self.max_timestamp >= 0:
            _, self.offset_of_max_timestamp = self.time_index.lookup(self.max_timestamp)
        for header in self.iter_headers(position):
            self._observe(header)
        self.time_index.sanity_check(self.next_offset)
        first = next(self.iter_headers(0), None)
        self.rolling_based_timestamp = first.max_timestamp if first else None

    def _observe(self, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        self.next_offset = header.last_offset + 1

    # -- appending -----------------------------------------------------------------------------
    def append(self, buf, headers: Sequence[BatchHeader]) -> None:
        """Write ``buf`` (whole batches whose final offsets are in ``headers``) at the end.

        ``headers[i].position`` is relative to ``buf``; their offsets are the assigned ones.
        """
        if headers[-1].last_offset - self.base_offset > INT32_MAX:
            raise CorruptRecordError(f"offset {headers[-1].last_offset} does not fit segment {self.base_offset}")
        start = self.size
        written = os.pwrite(self._fd, buf, start)
        if written != len(buf):
            written += _pwrite_rest(self._fd, memoryview(buf)[written:], start + written)
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = headers[0].max_timestamp
        index_batch = self._index_batch
        for header in headers:
            index_batch(header, start + header.position)
        self.size = start + len(buf)

    # -- reading -------------------------------------------------------------------------------
    def iter_headers(self, position: int = 0, end: int | None = None, *, verify_crc: bool = False) -> Iterator[BatchHeader]:
        """Headers of the batches from ``position`` (a batch start) to ``end`` (default: the size).

        With ``verify_crc`` whole batches are read (recovery, cleaning); without, only headers are
        (lookups), in small reads that skip over the batch bodies.
        """
        end = self.size if end is None else end
        if verify_crc:
            return scan_batches(self._fd, position, end, verify_crc=True)
        return scan_headers(self._fd, position, end)

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset``, found from the index then scanning."""
        _, position = self.offset_index.lookup(offset)
        for header in self.iter_headers(max(position, start_position)):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, offset: int, max_bytes: int, max_position: int | None = None,
             min_one_message: bool = True) -> FileRange | None:
        """Up to ``max_bytes`` from the batch holding ``offset``; at least that batch if min_one_message."""
        header = self.translate_offset(offset)
        if header is None:
            return None
        limit = self.size if max_position is None else max_position
        if header.position >= limit:
            return FileRange(self, header.position, 0, header.base_offset)
        size = min(limit - header.position, max_bytes)
        if min_one_message and size < header.size:
            size = min(header.size, limit - header.position)
        return FileRange(self, header.position, size, header.base_offset)

    def read_bytes(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def find_offset_by_timestamp(self, timestamp: int) -> BatchHeader | None:
        """The first batch with max_timestamp >= ``timestamp``, starting from the time index."""
        _, offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(offset)
        for header in self.iter_headers(position):
            if header.max_timestamp >= timestamp:
                return header
        return None

    # -- recovery and truncation ---------------------------------------------------------------
    def recover(self) -> int:
        """Rebuild the indexes from the ``.log``; truncate at the first bad batch. Return bytes cut."""
        self.offset_index.reset()
        self.time_index.reset()
        self._index_damaged = False
        self.max_timestamp = self.offset_of_max_timestamp = -1
        self.rolling_based_timestamp = None
        self.next_offset = self.base_offset
        self._bytes_since_last_index_entry = 0
        valid_end = 0
        try:
            for header in self.iter_headers(0, verify_crc=True):
                if header.base_offset < self.next_offset or header.last_offset - self.base_offset > INT32_MAX:
                    break
                if self.rolling_based_timestamp is None:
                    self.rolling_based_timestamp = header.max_timestamp
                self._index_batch(header, header.position)
                valid_end = header.end
        except CorruptRecordError:
            pass
        cut = self.size - valid_end
        if cut:
            self._truncate_file(valid_end)
        return cut

    def _index_batch(self, header: BatchHeader, position: int) -> None:
        """Track the batch at file ``position``; add index entries every ``index.interval.bytes``."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        self.next_offset = header.last_offset + 1
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the bytes removed."""
        header = self.translate_offset(offset)
        if header is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - header.position
        self._truncate_file(header.position)
        self._reload_after_truncate()
        return removed

    def _reload_after_truncate(self) -> None:
        self.max_timestamp = self.time_index.max_timestamp
        self.offset_of_max_timestamp = self.time_index.lookup(self.max_timestamp)[1] if self.max_timestamp >= 0 else -1
        self.next_offset = self.base_offset
        _, position = self.offset_index.lookup(2**62)
        for header in self.iter_headers(position):
            self._observe(header)
        self._bytes_since_last_index_entry = self.size - position
        if self.size == 0:
            self.rolling_based_timestamp = None

    def _truncate_file(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self.size = size

    # -- files ---------------------------------------------------------------------------------
    def fileno(self) -> int:
        return self._fd

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log_path).st_mtime * 1000)

    @property
    def largest_timestamp(self) -> int:
        """Largest record timestamp, or the file's mtime when no batch carries one (retention)."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def on_roll(self) -> None:
        """Write a final time-index entry and push pending index entries to their files."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.offset_index.flush(fsync=False)
        self.time_index.flush(fsync=False)

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self._close_log()

    def _close_log(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def change_suffix(self, new_suffix: str) -> None:
        """Rename the segment's files from the current suffix ('' / '.cleaned' / '.swap' / '.deleted')."""
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.rename_to(Path(str(index.path)[: len(str(index.path)) - len(self.suffix)] + new_suffix))
        new_log = Path(str(self.log_path)[: len(str(self.log_path)) - len(self.suffix)] + new_suffix)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.suffix = new_suffix

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self._close_log()
        self.log_path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"


def _open_index(cls, path: Path, base_offset: int, max_index_size: int):
    """Open an index -> (index, damaged); a file that is not whole entries is emptied for a rebuild."""
    try:
        return cls(path, base_offset, max_index_size), False
    except CorruptIndexError:
        path.unlink(missing_ok=True)
        return cls(path, base_offset, max_index_size), True


def _pwrite_rest(fd: int, view: memoryview, position: int) -> int:
    total = 0
    while view:
        n = os.pwrite(fd, view, position)
        view, position, total = view[n:], position + n, total + n
    return total


def scan_batches(fd: int, position: int, end: int, *, verify_crc: bool = False) -> Iterator[BatchHeader]:
    """Headers of the batches in bytes [position, end) of a ``.log`` file, read in large chunks.

    Positions in the yielded headers are file positions. Raises CorruptRecordError at the first
    batch that is malformed, cut short, or (with ``verify_crc``) fails its CRC.
    """
    while position < end:
        chunk = os.pread(fd, min(_SCAN_CHUNK, end - position), position)
        at = 0
        while (size := batch_size_at(chunk, at)) is not None and at + size <= len(chunk):
            header = read_header(chunk, at, position + at)
            if verify_crc:
                check_crc(chunk, header, at)
            yield header
            at += size
        if at == 0:  # the first batch is larger than a chunk, or cut short by the end
            chunk = _read_whole_batch(fd, position, end)
            header = read_header(chunk, 0, position)
            if verify_crc:
                check_crc(chunk, header, 0)
            yield header
            at = header.size
        position += at


def scan_headers(fd: int, position: int, end: int, chunk_size: int = _HEADER_SCAN_CHUNK) -> Iterator[BatchHeader]:
    """Headers only, from ``position`` to ``end``: small reads, batch bodies skipped, no CRC."""
    while position < end:
        chunk = os.pread(fd, min(chunk_size, end - position), position)
        at = 0
        while len(chunk) - at >= HEADER_SIZE:
            header = read_header(chunk, at, position + at, room=end - position - at)
            yield header
            at += header.size
        if at == 0:  # fewer than 61 bytes left before ``end``
            read_header(chunk, 0, position, room=end - position)  # raises: cut short
        position += at


def _read_whole_batch(fd: int, position: int, end: int) -> bytes:
    size = batch_size_at(os.pread(fd, LOG_OVERHEAD, position))
    if size is None or size < LOG_OVERHEAD or position + size > end:
        raise CorruptRecordError(f"batch at position {position} is cut short by the end of the file at {end}")
    return os.pread(fd, size, position)
