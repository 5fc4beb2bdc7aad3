"""TransactionIndex: a segment's ``<20-digit base offset>.txnindex``, the aborted transactions whose
ABORT marker lies in that segment (Kafka's TransactionIndex).

File format: a sequence of 34-byte entries, big-endian, nothing else::

    int16 version (0)  int64 producer_id  int64 first_offset  int64 last_offset  int64 last_stable_offset

``first_offset`` is the transaction's first offset on the partition, ``last_offset`` its ABORT marker's
offset and ``last_stable_offset`` the partition's LSO once the marker was written. Invariants:
``last_offset`` strictly increases from entry to entry; the file exists only once the segment holds
an aborted transaction (it is created by the first ``append``); a trailing partial entry (a torn
write) is dropped when the file is read. Thread-safe: the cleaner's thread collects entries while the
event loop appends them, so loading the file, reading and writing hold ``self._lock``. A READ_COMMITTED fetch asks ``collect`` for the entries that
overlap its range, so a consumer can drop the aborted records.
"""
from __future__ import annotations

import os
import struct
import threading
from bisect import bisect_left
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from brokers.storage.files import delete_if_exists

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size
assert ENTRY_SIZE == 34
ENTRY_VERSION = 0
TXN_INDEX_SUFFIX = ".txnindex"


class CorruptTransactionIndexError(Exception):
    pass


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return ENTRY.pack(ENTRY_VERSION, *self)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Whole entries of ``data`` (a trailing partial entry is ignored); raises on an unknown version."""
    out = []
    for offset in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, *fields = ENTRY.unpack_from(data, offset)
        if version != ENTRY_VERSION:
            raise CorruptTransactionIndexError(f"unknown transaction index entry version {version}")
        out.append(AbortedTxn(*fields))
    return out


_last_offset = attrgetter("last_offset")


class TransactionIndex:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._entries: list[AbortedTxn] | None = None  # read from the file on first use
        self._fd = -1
        self._lock = threading.RLock()

    # -- reading -------------------------------------------------------------------------------
    def entries(self) -> list[AbortedTxn]:
        with self._lock:
            return list(self._loaded())

    @property
    def last_offset(self) -> int | None:
        with self._lock:
            entries = self._loaded()
            return entries[-1].last_offset if entries else None

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Entries overlapping [fetch_offset, upper_bound_offset): marker at or after the fetch offset,
        transaction starting before the upper bound."""
        with self._lock:
            entries = self._loaded()  # last_offset strictly increases: the first overlap is found by bisection
            first = bisect_left(entries, fetch_offset, key=_last_offset)
            return [e for e in entries[first:] if e.first_offset < upper_bound_offset]

    def _loaded(self) -> list[AbortedTxn]:
        """The entries, read from the file on first use (under the lock)."""
        if self._entries is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            self._entries = decode_entries(data)
            if len(data) % ENTRY_SIZE:
                self._rewrite()  # cut a torn trailing entry before appending after it
        return self._entries

    # -- writing -------------------------------------------------------------------------------
    def append(self, entry: AbortedTxn) -> None:
        with self._lock:
            entries = self._loaded()
            if entries and entry.last_offset <= entries[-1].last_offset:
                raise ValueError(f"aborted transaction ending at {entry.last_offset} does not follow "
                                 f"the last one at {entries[-1].last_offset} in {self.path.name}")
            fd = self._open()
            os.pwrite(fd, entry.encode(), os.fstat(fd).st_size)
            entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        with self._lock:
            entries = self._loaded()
            kept = [e for e in entries if e.last_offset < offset]
            if len(kept) != len(entries):
                self._entries = kept
                self._rewrite()

    def reset(self) -> None:
        """Forget every entry (the segment is being recovered and will append them again)."""
        self.delete()

    def _rewrite(self) -> None:
        entries = self._entries or []
        if not entries:
            self.delete()
            return
        fd = self._open()
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"".join(e.encode() for e in entries), 0)

    def _open(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    # -- files ---------------------------------------------------------------------------------
    def flush(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)

    def rename_to(self, path: Path) -> None:
        with self._lock:
            if self.path.exists():
                os.replace(self.path, path)
            self.path = Path(path)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def delete(self) -> None:
        with self._lock:
            self.close()
            delete_if_exists(self.path)
            self._entries = []

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path.name}, {len(self.entries())} entries)"
