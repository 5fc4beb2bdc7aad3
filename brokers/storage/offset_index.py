"""OffsetIndex: the ``.index`` file of a segment.

Entry (8 bytes, big-endian): int32 relative offset (offset - base offset), int32 byte position of a
batch in the ``.log``. Sparse: one entry whenever more than ``index.interval.bytes`` were appended
since the last one, recording the batch's last offset and the position where it starts. A lookup
finds the largest entry <= the target and the caller scans batches forward from its position.
Sanity (Kafka's): whole entries only, relative offsets strictly increasing and >= 0, positions
increasing and inside the log.
"""
from __future__ import annotations

import struct

from brokers.storage.index_file import CorruptIndexError, IndexFile


class OffsetIndex(IndexFile):
    ENTRY = struct.Struct(">ii")
    KEY_TYPECODE = "q"

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry <= target, or (base_offset, 0)."""
        n = self._floor_index(target_offset - self.base_offset)
        if n < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[n], self._values[n]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._keys[-1] if self._keys else self.base_offset

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        self._truncate_entries(self._floor_index(offset - self.base_offset - 1) + 1)

    def sanity_check(self, log_size: int) -> None:
        keys, values = self._keys, self._values
        if keys and keys[0] < 0:
            raise CorruptIndexError(f"{self.path}: negative relative offset {keys[0]}")
        if not self._strictly_increasing():
            raise CorruptIndexError(f"{self.path}: entries do not increase")
        if values and values[-1] >= log_size:
            raise CorruptIndexError(f"{self.path}: position {values[-1]} is past the log end {log_size}")
