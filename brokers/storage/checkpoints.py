"""Kafka's text checkpoint files, read and written atomically.

Format (CheckpointFile.scala): line 1 the format version (0), line 2 the number of entries N, then N
space-separated entry lines. Written to ``<name>.tmp``, fsynced, renamed over the old file.

- ``OffsetCheckpointFile``: ``<topic> <partition> <offset>`` per line; used for
  ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint`` in each log dir.
- ``LeaderEpochCheckpointFile``: ``<epoch> <start offset>`` per line, ``leader-epoch-checkpoint`` in
  each partition dir.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Generic, Iterable, TypeVar

from brokers.model import TopicPartition
from brokers.storage.files import atomic_write

T = TypeVar("T")

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class CorruptCheckpointError(ValueError):
    pass


class CheckpointFile(Generic[T]):
    VERSION = 0

    def __init__(self, path: Path, format_entry: Callable[[T], str], parse_entry: Callable[[list[str]], T]):
        self.path = Path(path)
        self._format = format_entry
        self._parse = parse_entry

    def write(self, entries: Iterable[T], durable: bool = True) -> None:
        lines = [self._format(entry) for entry in entries]
        text = f"{self.VERSION}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
        atomic_write(self.path, text.encode(), durable)

    def read(self) -> list[T]:
        """Entries in file order; a missing file is empty; a malformed one raises CorruptCheckpointError."""
        try:
            text = self.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError:
            raise CorruptCheckpointError(f"{self.path}: not a text file") from None
        lines = text.splitlines()
        try:
            version, count = int(lines[0]), int(lines[1])
        except (IndexError, ValueError):
            raise CorruptCheckpointError(f"{self.path}: missing version or entry count") from None
        if version != self.VERSION:
            raise CorruptCheckpointError(f"{self.path}: unknown checkpoint version {version}")
        body = [line for line in lines[2:] if line.strip()]
        if len(body) != count:
            raise CorruptCheckpointError(f"{self.path}: expected {count} entries, found {len(body)}")
        try:
            return [self._parse(line.split()) for line in body]
        except (ValueError, IndexError) as exc:
            raise CorruptCheckpointError(f"{self.path}: malformed entry ({exc})") from None


def _format_offset(item: tuple[TopicPartition, int]) -> str:
    tp, offset = item
    return f"{tp.topic} {tp.partition} {offset}"


def _by_topic_partition(item: tuple[TopicPartition, int]) -> tuple[str, int]:
    return item[0].topic, item[0].partition


def _parse_offset(fields: list[str]) -> tuple[TopicPartition, int]:
    if len(fields) != 3:
        raise ValueError(f"expected 3 fields, got {len(fields)}")
    return TopicPartition(fields[0], int(fields[1])), int(fields[2])


class OffsetCheckpointFile:
    """``<topic> <partition> <offset>`` per line, sorted; a dict in memory. A write of what this object
    last wrote is skipped: the file already says it, durably (an idle broker's periodic checkpoints of
    thousands of partitions cost no rewrite and no fsync)."""

    def __init__(self, path: Path):
        self._file = CheckpointFile(path, _format_offset, _parse_offset)
        self.path = self._file.path
        self._written: dict[TopicPartition, int] | None = None

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        if offsets == self._written:
            return
        self._file.write(sorted(offsets.items(), key=_by_topic_partition))
        self._written = dict(offsets)

    def read(self) -> dict[TopicPartition, int]:
        return dict(self._file.read())


def _parse_epoch(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError(f"expected 2 fields, got {len(fields)}")
    return int(fields[0]), int(fields[1])


class LeaderEpochCheckpointFile:
    """``<epoch> <start offset>`` per line, in epoch order."""

    def __init__(self, path: Path):
        self._file = CheckpointFile(path, lambda e: f"{e[0]} {e[1]}", _parse_epoch)
        self.path = self._file.path

    def write(self, entries: Iterable[tuple[int, int]], durable: bool = True) -> None:
        self._file.write(entries, durable)

    def read(self) -> list[tuple[int, int]]:
        return self._file.read()


META_PROPERTIES = "meta.properties"


def read_meta_properties(log_dir: Path) -> dict[str, str]:
    """``meta.properties`` of a log dir (``version``, ``broker.id``, ``cluster.id``); empty if absent."""
    try:
        text = (Path(log_dir) / META_PROPERTIES).read_text()
    except FileNotFoundError:
        return {}
    entries = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            entries[key.strip()] = value.strip()
    return entries


def write_meta_properties(log_dir: Path, broker_id: int, cluster_id: str) -> None:
    text = f"#\nversion=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n"
    atomic_write(Path(log_dir) / META_PROPERTIES, text.encode())
