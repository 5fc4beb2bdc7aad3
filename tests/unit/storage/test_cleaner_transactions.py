"""Compaction of transactional logs (Kafka 2.8's LogCleaner with KIP-98): aborted transactions' records go,
committed ones are compacted like any other, nothing at or past the first unstable offset is touched, markers
stay while their transaction has a batch in the log and go one pass later once past the delete horizon, an
active producer's last batch stays (emptied), and cleaned segments carry a ``.txnindex``.

Logs are written as a leader writes them: transactional batches with ``append_as_leader`` and markers with
``append_marker``, the high watermark following the log end."""
from __future__ import annotations


import pytest

from brokers.protocol.control_record import parse_marker
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import read_header
from brokers.storage.cleaned_transactions import (
    BatchRetention,
    CleanedTransactionMetadata,
    LastRecord,
    batch_retention,
)
from brokers.storage.cleaner import LogCleaner
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.transaction_index import AbortedTxn

from .conftest import read_all


def compacted_log(tmp_path, **overrides) -> Log:
    config = dict(segment_bytes=600, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, index_interval_bytes=64)
    config.update(overrides)
    return Log(tmp_path / "c-0", LogConfig(**config))


class Producer:
    """An idempotent producer writing to one partition: each ``send`` is one batch."""

    def __init__(self, log: Log, producer_id: int, epoch: int = 0):
        self.log, self.producer_id, self.epoch, self.sequence = log, producer_id, epoch, 0

    def send(self, *pairs, transactional: bool = True) -> int:
        records = [Record(i, i, key, value) for i, (key, value) in enumerate(pairs)]
        batch = build_batch(records, base_timestamp=1000, producer_id=self.producer_id, producer_epoch=self.epoch,
                            base_sequence=self.sequence, transactional=transactional)
        self.sequence += len(pairs)
        info = self.log.append_as_leader(batch, 0)
        self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset

    def end(self, commit: bool, coordinator_epoch: int = 0) -> int:
        info = self.log.append_marker(self.producer_id, self.epoch, commit, coordinator_epoch, 0)
        self.log.update_high_watermark(self.log.log_end_offset)
        return info.first_offset


def filler(log: Log, count: int, keys: int = 5, tag: bytes = b"f") -> None:
    """Plain (non-idempotent) single-record batches over ``keys`` keys, enough to roll segments."""
    for i in range(count):
        log.append_as_leader(build_batch([Record(0, 0, b"x%d" % (i % keys), tag + b"%d" % i)], base_timestamp=1000), 0)
    log.update_high_watermark(log.log_end_offset)


def headers(log: Log):
    return [(segment, h) for segment in log.segments for h in segment.iter_headers()]


def markers(log: Log) -> list[tuple[int, int, bool]]:
    """(offset, producer id, commit) of every marker in the log."""
    found = []
    for segment, h in headers(log):
        if h.is_control and h.records_count:
            data = segment.read_bytes(h.position, h.size)
            found.append((h.base_offset, h.producer_id, parse_marker(data, read_header(data)).commit))
    return found


def values(log: Log) -> dict[bytes, list[bytes]]:
    out: dict[bytes, list[bytes]] = {}
    for r in read_all(log):
        out.setdefault(r.key, []).append(r.value)
    return out


def txn_index_entries(log: Log) -> list[AbortedTxn]:
    return [e for segment in log.segments for e in segment.txn_index.entries()]


def write_history(tmp_path, delete_retention_ms: int = 0):
    """An aborted transaction (producer 1: a, b), a committed one whose key survives (producer 2: c) and a
    committed one whose key is overwritten later (producer 3: e), each producer writing again in the
    uncleanable tail, so none of the cleaned batches is a producer's last."""
    log = compacted_log(tmp_path, delete_retention_ms=delete_retention_ms)
    p1, p2, p3 = Producer(log, 1), Producer(log, 2), Producer(log, 3)
    offsets = {"a": p1.send((b"a", b"aborted")), "b": p1.send((b"b", b"aborted"))}
    offsets["abort"] = p1.end(False, coordinator_epoch=7)
    offsets["c"] = p2.send((b"c", b"committed"))
    offsets["commit-c"] = p2.end(True)
    offsets["e"] = p3.send((b"e", b"old"))
    offsets["commit-e"] = p3.end(True)
    filler(log, 12)
    log.append_as_leader(build_batch([Record(0, 0, b"e", b"new")], base_timestamp=1000), 0)
    filler(log, 12)
    for producer in (p1, p2, p3):
        producer.send((b"tail-%d" % producer.producer_id, b"v"))
        producer.end(True, coordinator_epoch=7)
    filler(log, 12)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None and len(log.segments) > 4
    return log, offsets


@pytest.fixture
def history(tmp_path):
    log, offsets = write_history(tmp_path)
    yield log, offsets
    log.close()


def aborted_by_1(offsets) -> AbortedTxn:
    """Producer 1's aborted transaction: nothing else was open when its marker went in, so the LSO then
    was the offset after the marker."""
    return AbortedTxn(1, offsets["a"], offsets["abort"], offsets["abort"] + 1)


def test_aborted_records_go_and_their_marker_stays_indexed(tmp_path, history):
    log, offsets = history
    assert txn_index_entries(log) == [aborted_by_1(offsets)]
    stats = LogCleaner(tmp_path).clean(log, now_ms=0)
    seen = values(log)
    assert b"a" not in seen and b"b" not in seen
    assert seen[b"c"] == [b"committed"] and seen[b"e"] == [b"new"]
    assert stats.aborted_batches_removed == 2 and stats.markers_removed == 0
    # the first pass has no clean section (no delete horizon) and saw the aborted batches: every marker stays
    assert [(o, p, c) for o, p, c in markers(log) if o < offsets["commit-e"] + 1] == [
        (offsets["abort"], 1, False), (offsets["commit-c"], 2, True), (offsets["commit-e"], 3, True)]
    # the cleaned segment keeping the ABORT marker indexes the transaction, for READ_COMMITTED fetches
    assert txn_index_entries(log) == [aborted_by_1(offsets)]
    assert log.collect_aborted_transactions(0, offsets["abort"]) == txn_index_entries(log)


def test_markers_go_one_pass_after_their_data_once_past_the_delete_horizon(tmp_path, history):
    log, offsets = history
    cleaner = LogCleaner(tmp_path)
    cleaner.clean(log, now_ms=0)
    filler(log, 14)  # new dirty data, so that the first pass's segments are the clean section
    stats = cleaner.clean(log, now_ms=0)
    left = {o for o, _, _ in markers(log)}
    assert offsets["abort"] not in left  # its records went in the first pass
    assert offsets["commit-e"] not in left  # "e" was overwritten: no batch of that transaction is left
    assert offsets["commit-c"] in left  # "c" is still there
    assert stats.markers_removed == 2
    assert txn_index_entries(log) == []  # no segment holds the ABORT marker any more
    assert values(log)[b"c"] == [b"committed"] and values(log)[b"e"] == [b"new"]


def test_markers_stay_while_their_segment_is_newer_than_the_delete_horizon(tmp_path):
    log, offsets = write_history(tmp_path, delete_retention_ms=10**13)
    cleaner = LogCleaner(tmp_path)
    cleaner.clean(log, now_ms=0)
    filler(log, 14)
    cleaner.clean(log, now_ms=0)
    assert {offsets["abort"], offsets["commit-c"], offsets["commit-e"]} <= {o for o, _, _ in markers(log)}
    assert b"a" not in values(log)
    log.close()


def test_nothing_at_or_past_the_first_unstable_offset_is_cleaned(tmp_path):
    log = compacted_log(tmp_path)
    filler(log, 10)
    open_txn = Producer(log, 9)
    start = open_txn.send((b"x0", b"in-transaction"))
    filler(log, 30)  # overwrites x0..x4 several times, over several segments
    assert log.first_unstable_offset == start and log.active_segment.base_offset > start + 10
    tail = [(r.offset, r.key, r.value) for r in read_all(log, start=start)]
    stats = LogCleaner(tmp_path).clean(log, now_ms=0)
    assert stats.first_uncleanable == start
    assert [(r.offset, r.key, r.value) for r in read_all(log, start=start)] == tail
    below = [r for r in read_all(log) if r.offset < start]
    assert sorted(r.key for r in below) == [b"x0", b"x1", b"x2", b"x3", b"x4"]  # the last of each key below it

    open_txn.end(True)
    filler(log, 10)
    stats = LogCleaner(tmp_path).clean(log, now_ms=0)
    assert stats.first_uncleanable == log.active_segment.base_offset
    assert b"in-transaction" not in values(log)[b"x0"]  # committed, then overwritten: compacted away


def test_an_active_producers_last_batch_stays_empty_so_its_state_survives(tmp_path):
    log = compacted_log(tmp_path)
    producer = Producer(log, 5, epoch=2)
    producer.send((b"k", b"v0"), transactional=False)
    last = producer.send((b"k", b"v1"), (b"j", b"v1"), transactional=False)  # sequences 1-2, its last batch
    filler(log, 20, keys=1)
    log.append_as_leader(build_batch([Record(0, 0, b"k", b"v2"), Record(1, 0, b"j", b"v2")], base_timestamp=1), 0)
    filler(log, 10, keys=1)
    LogCleaner(tmp_path).clean(log, now_ms=0)
    kept = [h for _, h in headers(log) if h.producer_id == 5 and not h.is_control]
    assert [(h.base_offset, h.records_count, h.base_sequence, h.last_offset_delta) for h in kept] == [(last, 0, 1, 1)]
    assert b"v1" not in values(log)[b"k"] + values(log)[b"j"]
    log.close()
    for snapshot in (tmp_path / "c-0").glob("*.snapshot"):
        snapshot.unlink()
    reopened = Log(tmp_path / "c-0", log.config)
    entry = reopened.producer_state.last_entry(5)
    assert (entry.epoch, entry.last_seq) == (2, 2)  # rebuilt from the emptied batch
    reopened.close()


def test_a_producers_last_aborted_batch_stays_empty_and_its_marker_indexed(tmp_path):
    log = compacted_log(tmp_path)
    producer = Producer(log, 6)
    first = producer.send((b"q", b"aborted"))
    marker = producer.end(False)
    filler(log, 30)
    LogCleaner(tmp_path).clean(log, now_ms=0)
    kept = [h for _, h in headers(log) if h.producer_id == 6]
    assert [(h.base_offset, h.records_count, h.is_control) for h in kept] == [(first, 0, False), (marker, 1, True)]
    assert b"q" not in values(log)
    assert txn_index_entries(log) == [AbortedTxn(6, first, marker, marker + 1)]
    log.close()


def test_the_cleaned_txnindex_survives_a_restart(tmp_path, history):
    log, offsets = history
    LogCleaner(tmp_path).clean(log, now_ms=0)
    log.close()
    reopened = Log(tmp_path / "c-0", log.config, clean_shutdown=True)
    assert reopened.collect_aborted_transactions(0, reopened.log_end_offset) == [aborted_by_1(offsets)]
    assert not list((tmp_path / "c-0").glob("*.cleaned")) and not list((tmp_path / "c-0").glob("*.swap"))
    reopened.close()
    # recovery rebuilds the index from the batches: the aborted data is gone, the marker still ends it
    recovered = Log(tmp_path / "c-0", log.config, clean_shutdown=False)
    (entry,) = recovered.collect_aborted_transactions(0, recovered.log_end_offset)
    assert (entry.producer_id, entry.last_offset) == (1, offsets["abort"])
    recovered.close()


# -- the decisions, driven directly ---------------------------------------------------------------
def header(base, last_delta=0, pid=1, epoch=0, transactional=True, control=False):
    records = [Record(0, 0, b"\x00\x00\x00\x01" if control else b"k", b"v")]
    batch = build_batch(records, base_offset=base, base_timestamp=0, last_offset_delta=last_delta, producer_id=pid,
                        producer_epoch=epoch, base_sequence=-1 if control else 0, transactional=transactional,
                        control=control)
    return read_header(batch)


ABORT_KEY, COMMIT_KEY = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"


class Index(list):
    def append(self, entry):
        super().append(entry)


def test_transaction_walk_decisions():
    walk = CleanedTransactionMetadata([AbortedTxn(1, 10, 13, 10), AbortedTxn(2, 11, 14, 11)])
    walk.cleaned_index = index = Index()
    assert walk.on_data_batch(header(5, pid=1)) is False  # before its aborted transaction starts: committed
    assert walk.on_control_batch(header(6, pid=1, control=True), COMMIT_KEY) is False  # saw its data
    assert walk.on_control_batch(header(7, pid=1, control=True), COMMIT_KEY) is True  # saw nothing since
    assert walk.on_data_batch(header(8, pid=3, transactional=False)) is False
    assert walk.on_data_batch(header(10, pid=1)) is True
    assert walk.on_data_batch(header(12, pid=3)) is False  # another producer's transaction
    assert walk.on_control_batch(header(13, pid=1, control=True), ABORT_KEY) is False  # its data was seen
    assert index == [AbortedTxn(1, 10, 13, 10)]
    assert walk.on_control_batch(header(14, pid=2, control=True), ABORT_KEY) is True  # its data is gone
    assert walk.on_control_batch(header(15, pid=2, control=True), None) is True  # an emptied control batch
    assert walk.on_control_batch(header(16, pid=2, control=True), b"\x00\x00\x00\x02") is False  # not a marker
    assert index == [AbortedTxn(1, 10, 13, 10)]


def test_an_aborted_transaction_named_by_two_segments_counts_once():
    walk = CleanedTransactionMetadata([AbortedTxn(1, 10, 20, 10)])
    assert walk.on_data_batch(header(10, pid=1)) is True
    walk.add_aborted_transactions([AbortedTxn(1, 10, 20, 10)])  # the next segment's range names it again
    assert walk.on_control_batch(header(20, pid=1, control=True), ABORT_KEY) is False
    assert walk.on_data_batch(header(21, pid=1)) is False  # a later transaction of that producer committed


@pytest.mark.parametrize("batch, discard, last, expected", [
    (header(5, pid=1), False, {}, BatchRetention.DELETE_EMPTY),
    (header(5, pid=1), True, {}, BatchRetention.DELETE),
    (header(5, 2, pid=1), True, {1: LastRecord(7, 0)}, BatchRetention.RETAIN_EMPTY),  # holds the last sequence
    (header(5, pid=1), True, {1: LastRecord(7, 0)}, BatchRetention.DELETE),
    (header(8, pid=1, control=True), True, {1: LastRecord(None, 0)}, BatchRetention.RETAIN_EMPTY),  # last epoch
    (header(8, pid=1, epoch=1, control=True), True, {1: LastRecord(None, 0)}, BatchRetention.DELETE),
    (header(8, pid=1, control=True), True, {1: LastRecord(7, 0)}, BatchRetention.DELETE),
])
def test_batch_retention(batch, discard, last, expected):
    assert batch_retention(batch, discard, last) is expected
