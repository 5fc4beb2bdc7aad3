"""TimeIndex: the ``.timeindex`` file of a segment.

Entry (12 bytes, big-endian): int64 timestamp, int32 relative offset. An entry is only appended when
its timestamp is above the last entry's, so timestamps and offsets both increase. It records the
largest timestamp seen so far in the segment and the (shallow, batch-last) offset it belongs to.
A lookup finds the largest entry whose timestamp is <= the target.
"""
from __future__ import annotations

import struct

from brokers.storage.index_file import CorruptIndexError, IndexFile


class TimeIndex(IndexFile):
    ENTRY = struct.Struct(">qi")
    KEY_TYPECODE = "q"

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp < 0 or (self._keys and timestamp <= self._keys[-1]):
            return
        relative = offset - self.base_offset
        if self._values and relative < self._values[-1]:
            return
        self._append(timestamp, relative)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, or (-1, base_offset)."""
        n = self._floor_index(target_timestamp)
        if n < 0:
            return -1, self.base_offset
        return self._keys[n], self.base_offset + self._values[n]

    @property
    def max_timestamp(self) -> int:
        return self._keys[-1] if self._keys else -1

    def truncate_to(self, offset: int) -> None:
        """Remove entries pointing at offsets >= ``offset``."""
        relative = offset - self.base_offset
        count = len(self._values)
        while count and self._values[count - 1] >= relative:
            count -= 1
        self._truncate_entries(count)

    def sanity_check(self, next_offset: int) -> None:
        values = self._values
        if not self._strictly_increasing():
            raise CorruptIndexError(f"{self.path}: entries do not increase")
        if values and (values[0] < 0 or self.base_offset + values[-1] >= next_offset):
            raise CorruptIndexError(f"{self.path}: offset {self.base_offset + values[-1]} is past the segment")
