"""Checkpoint files (checkpoints.py): Kafka's exact text format, round trips, corruption, atomicity."""
from __future__ import annotations

import os

import pytest

from brokers.model import TopicPartition
from brokers.storage import files
from brokers.storage.checkpoints import (
    CheckpointFile,
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


# -- exact format ---------------------------------------------------------------------------------


def test_offset_checkpoint_writes_kafkas_exact_text(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    # Given out of order: entries are written sorted by (topic, partition).
    OffsetCheckpointFile(path).write({tp("topic", 1): 20, tp("topic", 0): 10})
    assert path.read_bytes() == b"0\n2\ntopic 0 10\ntopic 1 20\n"


def test_an_offset_checkpoint_is_rewritten_only_when_an_offset_changed(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({tp("a", 0): 1, tp("b", 10): 2, tp("b", 9): 3})
    inode = path.stat().st_ino  # atomic_write renames a new file in: a rewrite is a new inode
    checkpoint.write({tp("b", 9): 3, tp("a", 0): 1, tp("b", 10): 2})  # the same offsets
    assert path.stat().st_ino == inode
    checkpoint.write({tp("a", 0): 1, tp("b", 10): 2, tp("b", 9): 4})
    assert path.stat().st_ino != inode and path.read_bytes() == b"0\n3\na 0 1\nb 9 4\nb 10 2\n"


def test_an_ordered_write_formats_again_only_what_moved_and_matches_a_whole_write(tmp_path, monkeypatch):
    from brokers.storage import checkpoints

    path = tmp_path / "replication-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    partitions = [tp("a", 0), tp("a", 1), tp("b", 0)]
    checkpoint.write_ordered(partitions, [5, 6, 7])
    assert path.read_bytes() == b"0\n3\na 0 5\na 1 6\nb 0 7\n"
    formatted = []
    real_line = checkpoints._offset_line
    monkeypatch.setattr(checkpoints, "_offset_line", lambda p, o: formatted.append(p) or real_line(p, o))
    inode = path.stat().st_ino
    checkpoint.write_ordered(partitions, [5, 6, 7])  # the same list and offsets: no write at all
    assert path.stat().st_ino == inode and formatted == []
    checkpoint.write_ordered(partitions, [5, 9, 7])  # one offset moved: one line formatted again
    assert formatted == [tp("a", 1)] and path.read_bytes() == b"0\n3\na 0 5\na 1 9\nb 0 7\n"
    grown = [tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)]  # another list: every line formatted
    checkpoint.write_ordered(grown, [5, 9, 1, 7])
    assert formatted[1:] == grown
    assert checkpoint.read() == {tp("a", 0): 5, tp("a", 1): 9, tp("a", 2): 1, tp("b", 0): 7}
    OffsetCheckpointFile(tmp_path / "whole").write(checkpoint.read())
    assert (tmp_path / "whole").read_bytes() == path.read_bytes()


def test_offset_checkpoint_reads_kafkas_exact_text(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n2\ntopic 0 10\ntopic 1 20\n")
    assert OffsetCheckpointFile(path).read() == {tp("topic", 0): 10, tp("topic", 1): 20}


def test_leader_epoch_checkpoint_writes_kafkas_exact_text(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write([(3, 0), (5, 1200)])
    assert path.read_bytes() == b"0\n2\n3 0\n5 1200\n"


def test_leader_epoch_checkpoint_reads_kafkas_exact_text_in_file_order(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n2\n3 0\n5 1200\n")
    assert LeaderEpochCheckpointFile(path).read() == [(3, 0), (5, 1200)]


def test_empty_checkpoint_is_version_and_zero_count(tmp_path):
    path = tmp_path / "cp"
    OffsetCheckpointFile(path).write({})
    assert path.read_bytes() == b"0\n0\n"
    assert OffsetCheckpointFile(path).read() == {}
    LeaderEpochCheckpointFile(path).write([])
    assert path.read_bytes() == b"0\n0\n"
    assert LeaderEpochCheckpointFile(path).read() == []


def test_offset_checkpoint_sorts_by_topic_then_partition_numerically(tmp_path):
    path = tmp_path / "cp"
    OffsetCheckpointFile(path).write({tp("b", 0): 1, tp("a", 10): 2, tp("a", 2): 3})
    assert path.read_text().splitlines() == ["0", "3", "a 2 3", "a 10 2", "b 0 1"]


# -- round trips ----------------------------------------------------------------------------------


def test_offset_checkpoint_round_trip_with_dashes_dots_and_underscores(tmp_path):
    path = tmp_path / "cp"
    offsets = {
        tp("my-topic", 3): 42,
        tp("my.dotted.topic", 0): 0,
        tp("a-b.c_d-9", 12): 2**62,
        tp("__consumer_offsets", 49): 7,
        tp("x", 0): -1,
    }
    OffsetCheckpointFile(path).write(offsets)
    assert OffsetCheckpointFile(path).read() == offsets


def test_offset_checkpoint_overwrite_replaces_previous_content(tmp_path):
    path = tmp_path / "cp"
    cp = OffsetCheckpointFile(path)
    cp.write({tp("t", 0): 1, tp("t", 1): 2})
    cp.write({tp("u", 5): 9})
    assert cp.read() == {tp("u", 5): 9}
    assert path.read_text() == "0\n1\nu 5 9\n"


def test_leader_epoch_checkpoint_round_trip(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    entries = [(0, 0), (1, 100), (7, 12345), (2**31 - 1, 2**62)]
    LeaderEpochCheckpointFile(path).write(iter(entries))  # any iterable
    assert LeaderEpochCheckpointFile(path).read() == entries


def test_generic_checkpoint_file_uses_given_formatter_and_parser(tmp_path):
    path = tmp_path / "cp"
    cp = CheckpointFile(path, lambda e: f"{e[0]}:{e[1]}", lambda fields: fields[0])
    cp.write([("a", 1), ("b", 2)])
    assert path.read_text() == "0\n2\na:1\nb:2\n"
    assert cp.read() == ["a:1", "b:2"]


def test_trailing_blank_lines_are_tolerated(tmp_path):
    path = tmp_path / "cp"
    path.write_text("0\n2\ntopic 0 10\ntopic 1 20\n\n\n")
    assert OffsetCheckpointFile(path).read() == {tp("topic", 0): 10, tp("topic", 1): 20}


def test_missing_file_reads_empty(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "absent").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "absent").read() == []
    assert not (tmp_path / "absent").exists()


# -- corruption -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",  # no version line
        "0\n",  # no count line
        "1\n0\n",  # unknown version
        "-1\n1\ntopic 0 10\n",  # unknown version
        "x\n1\ntopic 0 10\n",  # non-numeric version
        "0\nx\ntopic 0 10\n",  # non-numeric count
        "0\n2\ntopic 0 10\n",  # fewer entries than the count
        "0\n1\ntopic 0 10\ntopic 1 20\n",  # more entries than the count
        "0\n-1\n",  # negative count
        "0\n1\ntopic zero 10\n",  # non-numeric partition
        "0\n1\ntopic 0 ten\n",  # non-numeric offset
        "0\n1\ntopic 0 1.5\n",  # not an integer
        "0\n1\ntopic 0\n",  # too few fields
        "0\n1\ntopic 0 10 11\n",  # too many fields
        "0\n1\nmy topic 0 10\n",  # a space in the topic: too many fields
    ],
)
def test_corrupt_offset_checkpoint_raises(tmp_path, text):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        OffsetCheckpointFile(path).read()


@pytest.mark.parametrize(
    "text",
    [
        "1\n1\n3 0\n",  # unknown version
        "0\n2\n3 0\n",  # wrong count
        "0\n1\n3\n",  # one field
        "0\n1\n3 0 7\n",  # three fields
        "0\n1\nthree 0\n",  # non-numeric epoch
        "0\n1\n3 zero\n",  # non-numeric offset
    ],
)
def test_corrupt_leader_epoch_checkpoint_raises(tmp_path, text):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        LeaderEpochCheckpointFile(path).read()


def test_corrupt_checkpoint_error_names_the_file(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("7\n0\n")
    with pytest.raises(CorruptCheckpointError, match="replication-offset-checkpoint"):
        OffsetCheckpointFile(path).read()


def test_binary_garbage_is_a_corrupt_checkpoint(tmp_path):
    """A checkpoint torn into non-UTF-8 garbage must be reported as corrupt (LogManager treats a
    CorruptCheckpointError as a missing checkpoint), not leak a UnicodeDecodeError."""
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_bytes(b"0\n1\n\xff\xfe\x80garbage 0 1\n")
    with pytest.raises(CorruptCheckpointError):
        OffsetCheckpointFile(path).read()


# -- atomicity ------------------------------------------------------------------------------------


def test_write_leaves_no_tmp_file(tmp_path):
    path = tmp_path / "cp"
    OffsetCheckpointFile(path).write({tp("t", 0): 1})
    LeaderEpochCheckpointFile(tmp_path / "le").write([(1, 0)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp", "le"]


def test_crash_before_rename_keeps_old_content(tmp_path, monkeypatch):
    path = tmp_path / "cp"
    cp = OffsetCheckpointFile(path)
    cp.write({tp("topic", 0): 10})
    old = path.read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        cp.write({tp("topic", 0): 99, tp("other", 1): 5})
    monkeypatch.undo()

    assert path.read_bytes() == old
    assert cp.read() == {tp("topic", 0): 10}
    # The new content only ever went to the side file.
    assert (tmp_path / "cp.tmp").read_text() == "0\n2\nother 1 5\ntopic 0 99\n"


def test_write_after_failed_write_succeeds_and_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "leader-epoch-checkpoint"
    cp = LeaderEpochCheckpointFile(path)
    cp.write([(1, 0)])
    real_replace = os.replace
    monkeypatch.setattr(files.os, "replace", lambda s, d: (_ for _ in ()).throw(OSError("boom")))
    with pytest.raises(OSError):
        cp.write([(1, 0), (2, 50)])
    assert cp.read() == [(1, 0)]
    monkeypatch.setattr(files.os, "replace", real_replace)
    cp.write([(1, 0), (2, 50)])
    assert cp.read() == [(1, 0), (2, 50)]
    assert not (tmp_path / "leader-epoch-checkpoint.tmp").exists()
