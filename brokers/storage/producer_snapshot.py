"""Producer-state snapshots: the ``<20-digit offset>.snapshot`` files of a partition directory (Kafka's
``ProducerStateManager`` snapshot format version 1).

File format (big-endian)::

    int16 version (1)  uint32 CRC32C of the rest  int32 count
    count x 46-byte entry: int64 producer_id  int16 epoch  int32 last_sequence  int64 last_offset
                           int32 offset_delta  int64 timestamp  int32 coordinator_epoch
                           int64 current_txn_first_offset (-1: none)

A snapshot at offset N holds the producer state of every batch below N. An entry with last_offset -1
records a producer without a retained batch (its epoch, coordinator epoch and open transaction only).
Invariants: the CRC covers the count and the entries; the file is written whole (a temporary file
renamed over it), so a reader sees the old or the new one; the directory keeps the newest
``SNAPSHOTS_TO_KEEP``.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Callable, Iterable, NamedTuple


from brokers.protocol.record_batch import crc32c
from brokers.storage.files import atomic_write, base_offset_of, offset_file_name

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
SNAPSHOTS_TO_KEEP = 2
_SNAPSHOT_HEAD = struct.Struct(">hIi")  # version, crc, entry count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_FROM = 6  # the CRC covers the count and the entries


class CorruptSnapshotError(Exception):
    pass


class SnapshotEntry(NamedTuple):
    """One 46-byte entry, Kafka's fields (``last_offset`` -1 when the producer has no retained batch)."""

    producer_id: int
    epoch: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    body = [_SNAPSHOT_ENTRY.pack(*entry) for entry in entries]
    rest = struct.pack(">i", len(body)) + b"".join(body)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(rest)) + rest


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    """The entries, in file order; CorruptSnapshotError if anything is off."""
    if len(data) < _SNAPSHOT_HEAD.size:
        raise CorruptSnapshotError(f"{len(data)} bytes are too few for a snapshot")
    version, crc, count = _SNAPSHOT_HEAD.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unknown snapshot version {version}")
    if crc32c(data[_CRC_FROM:]) != crc:
        raise CorruptSnapshotError("CRC mismatch")
    if count < 0 or len(data) != _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size:
        raise CorruptSnapshotError(f"{len(data)} bytes do not hold {count} entries")
    return [SnapshotEntry(*fields) for fields in _SNAPSHOT_ENTRY.iter_unpack(data[_SNAPSHOT_HEAD.size:])]


class ProducerSnapshotFiles:
    """The snapshot files of one partition directory (none at all when ``directory`` is None)."""

    def __init__(self, directory: Path | None):
        self.directory = Path(directory) if directory is not None else None

    def files(self) -> list[tuple[int, Path]]:
        """(offset, path) of every snapshot, oldest first."""
        if self.directory is None:
            return []
        found = []
        for path in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            try:
                found.append((base_offset_of(path.name), path))
            except ValueError:
                continue
        return sorted(found)

    def write(self, offset: int, entries: Iterable[SnapshotEntry], durable: bool) -> None:
        """Write ``<offset>.snapshot`` unless the newest snapshot is already there; keep the newest
        SNAPSHOTS_TO_KEEP. ``durable`` fsyncs the file and the directory."""
        if self.directory is None:
            return
        files = self.files()
        if files and files[-1][0] == offset:
            return
        path = self.directory / offset_file_name(offset, SNAPSHOT_SUFFIX)
        data = encode_snapshot(entries)
        if durable:
            atomic_write(path, data)
        else:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        for stale_offset, stale in files[:len(files) - (SNAPSHOTS_TO_KEEP - 1)]:  # the directory listed once
            if stale_offset != offset:
                stale.unlink(missing_ok=True)

    def read_latest(self, at_most: int, on_corrupt: Callable[[Path, Exception], None]) -> tuple[int, list[SnapshotEntry]]:
        """(offset, entries) of the newest readable snapshot at or below ``at_most``, deleting the
        unreadable ones on the way (``on_corrupt`` hears of each); (0, []) when there is none."""
        for offset, path in reversed(self.files()):
            if offset > at_most:
                continue
            try:
                return offset, decode_snapshot(path.read_bytes())
            except (OSError, CorruptSnapshotError) as exc:
                on_corrupt(path, exc)
                path.unlink(missing_ok=True)
        return 0, []

    def delete(self, doomed: Callable[[int], bool]) -> None:
        for offset, path in self.files():
            if doomed(offset):
                path.unlink(missing_ok=True)
