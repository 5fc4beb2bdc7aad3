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

from itertools import compress
from operator import ne
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
        self.write_lines([self._format(entry) + "\n" for entry in entries], durable)

    def write_lines(self, lines: list[str], durable: bool = True) -> None:
        """The entry lines already formatted, each ending in a newline."""
        atomic_write(self.path, f"{self.VERSION}\n{len(lines)}\n{''.join(lines)}".encode(), durable)

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
    return _offset_line(*item)[:-1]


def by_topic_partition(item: tuple[TopicPartition, object]) -> tuple[str, int]:
    """The checkpoints' order of ``(partition, anything)`` pairs: topic, then partition number (tuples compare in C;
    the dataclass's own ``__lt__`` is Python)."""
    return item[0].topic, item[0].partition


def _parse_offset(fields: list[str]) -> tuple[TopicPartition, int]:
    if len(fields) != 3:
        raise ValueError(f"expected 3 fields, got {len(fields)}")
    return TopicPartition(fields[0], int(fields[1])), int(fields[2])


class OffsetCheckpointFile:
    """``<topic> <partition> <offset>`` per line, sorted. A write of what this object last wrote is skipped:
    the file already says it, durably (an idle broker's periodic checkpoints of thousands of partitions cost
    no rewrite and no fsync).

    ``write_ordered`` is the broker's periodic path: the entries come already in file order, as a list of
    partitions that is the *same object* while the set of partitions is unchanged, and their offsets. Then
    only the lines whose offset moved are formatted again (C-level comparisons find them), so a checkpoint of
    10,000 partitions of which one moved costs well under a millisecond of Python instead of ~15 ms: that
    work holds the GIL on the scheduler's thread, and every millisecond of it delays the event loop."""

    def __init__(self, path: Path):
        self._file = CheckpointFile(path, _format_offset, _parse_offset)
        self.path = self._file.path
        self._partitions: list[TopicPartition] | None = None  # as last written
        self._offsets: list[int] = []
        self._lines: list[str] = []

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        ordered = sorted(offsets.items(), key=by_topic_partition)
        self.write_ordered([tp for tp, _ in ordered], [offset for _, offset in ordered])

    def write_ordered(self, partitions: list[TopicPartition], offsets: list[int]) -> None:
        """Write ``offsets[i]`` for ``partitions[i]``; ``partitions`` sorted by (topic, partition)."""
        same_partitions = partitions is self._partitions or partitions == self._partitions
        if same_partitions and offsets == self._offsets:
            return
        if same_partitions:
            lines = list(self._lines)
            for i in compress(range(len(offsets)), map(ne, offsets, self._offsets)):
                lines[i] = _offset_line(partitions[i], offsets[i])
        else:
            lines = [_offset_line(tp, offset) for tp, offset in zip(partitions, offsets)]
        self._file.write_lines(lines)
        self._partitions, self._offsets, self._lines = partitions, list(offsets), lines

    def read(self) -> dict[TopicPartition, int]:
        return dict(self._file.read())


def _offset_line(tp: TopicPartition, offset: int) -> str:
    return f"{tp.topic} {tp.partition} {offset}\n"


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
