"""The shared mechanics of Kafka's two sparse segment indexes.

An index file is a flat array of fixed-size big-endian entries, each a (key, value) pair whose keys
are strictly increasing. The entries live in memory as two ``array``s (binary search by ``bisect``,
O(log n)); new entries are appended to memory and written to the file in one ``pwrite`` on
``flush``/``close``/roll, or when enough are pending. Like Kafka's memory-mapped index, the file is
only durable after a flush; recovery rebuilds the indexes of every segment past the recovery point
from the ``.log``, and a file that fails the sanity check is rebuilt too.
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
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._load()
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- loading ------------------------------------------------------------------------------
    def _load(self) -> None:
        size = os.fstat(self._fd).st_size
        entry = self.ENTRY
        if size % entry.size:
            raise CorruptIndexError(f"{self.path}: size {size} is not a multiple of {entry.size}")
        data = os.pread(self._fd, size, 0) if size else b""
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
            os.ftruncate(self._fd, count * self.ENTRY.size)
            self._persisted = count

    def reset(self) -> None:
        self._truncate_entries(0)

    # -- files ---------------------------------------------------------------------------------
    def _write_pending(self) -> None:
        start = self._persisted
        if start == len(self._keys):
            return
        pack = self.ENTRY.pack
        data = b"".join(pack(self._keys[i], self._values[i]) for i in range(start, len(self._keys)))
        os.pwrite(self._fd, data, start * self.ENTRY.size)
        self._persisted = len(self._keys)

    def flush(self, fsync: bool = True) -> None:
        self._write_pending()
        if fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            self._write_pending()
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = Path(path)

    def delete(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.path.unlink(missing_ok=True)
