"""The shared mechanics of Kafka's two sparse segment indexes.

An index file is a flat array of fixed-size big-endian entries, each a (key, value) pair whose keys
are strictly increasing. The entries live in memory as two ``array``s (binary search by ``bisect``,
O(log n)); new entries are appended to memory and written to the file in one ``pwrite`` on
``flush``/``close``/roll, or when enough are pending. Like Kafka's memory-mapped index, the file is
only durable after a flush; recovery rebuilds the indexes of every segment past the recovery point
from the ``.log``, and a file that fails the sanity check is rebuilt too.

No file descriptor is held between those writes: the file is opened for each one (they are rare: a flush, a
roll, every ``_PENDING_FLUSH_ENTRIES`` entries, a truncation). A segment then costs one open file (its
``.log``), not three, which is what lets a broker host ten thousand partition replicas under a 20,000 open-file
limit (Kafka gets the same from memory-mapping its indexes and closing their files).
"""
from __future__ import annotations

import operator
import os
import struct
from array import array
from bisect import bisect_right
from itertools import islice
from pathlib import Path

_PENDING_FLUSH_ENTRIES = 4096


class CorruptIndexError(Exception):
    pass


class IndexFile:
    ENTRY: struct.Struct
    KEY_TYPECODE = "q"

    def __init__(self, path: Path, base_offset: int, max_index_size: int):
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.ENTRY.size)
        self._keys = array(self.KEY_TYPECODE)
        self._values = array("q")
        self._persisted = 0  # entries already in the file
        self.closed = False
        fd = self._open()
        try:
            self._load(fd)
        finally:
            os.close(fd)

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    # -- loading ------------------------------------------------------------------------------
    def _load(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        entry = self.ENTRY
        if size % entry.size:
            raise CorruptIndexError(f"{self.path}: size {size} is not a multiple of {entry.size}")
        data = os.pread(fd, size, 0) if size else b""
        for key, value in entry.iter_unpack(data):
            self._keys.append(key)
            self._values.append(value)
        self._persisted = len(self._keys)

    # -- entries -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    def entry(self, n: int) -> tuple[int, int]:
        return self._keys[n], self._values[n]

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def _strictly_increasing(self) -> bool:
        """Keys strictly and values weakly increasing (C-speed: one ``map`` over the arrays)."""
        keys, values = self._keys, self._values
        return all(map(operator.lt, keys, islice(keys, 1, None))) and all(
            map(operator.le, values, islice(values, 1, None))
        )

    def _floor_index(self, key: int) -> int:
        """Index of the largest entry whose key is <= ``key``, or -1."""
        return bisect_right(self._keys, key) - 1

    def _append(self, key: int, value: int) -> None:
        keys = self._keys
        count = len(keys)
        if count >= self.max_entries:
            raise CorruptIndexError(f"{self.path}: index is full ({self.max_entries} entries)")
        if count and key <= keys[-1]:
            raise CorruptIndexError(f"{self.path}: key {key} is not above the last key {keys[-1]}")
        keys.append(key)
        self._values.append(value)
        if count + 1 - self._persisted >= _PENDING_FLUSH_ENTRIES:
            self._write_pending()

    def _truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries."""
        if count >= len(self._keys):
            return
        del self._keys[count:]
        del self._values[count:]
        if self._persisted > count:
            os.truncate(self.path, count * self.ENTRY.size)
            self._persisted = count

    def reset(self) -> None:
        self._truncate_entries(0)

    # -- files ---------------------------------------------------------------------------------
    def _write_pending(self, fsync: bool = False) -> None:
        start = self._persisted
        if self.closed or (start == len(self._keys) and not fsync):
            return  # closed or deleted: nothing is written (a late flush must not create the file again)
        pack = self.ENTRY.pack
        data = b"".join(pack(self._keys[i], self._values[i]) for i in range(start, len(self._keys)))
        fd = self._open()
        try:
            if data:
                os.pwrite(fd, data, start * self.ENTRY.size)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self._keys)

    def flush(self, fsync: bool = True) -> None:
        self._write_pending(fsync)

    def close(self) -> None:
        if not self.closed:
            self._write_pending()
            self.closed = True

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = Path(path)

    def delete(self) -> None:
        self.closed = True
        self.path.unlink(missing_ok=True)
