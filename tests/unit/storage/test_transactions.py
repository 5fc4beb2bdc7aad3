"""Transactions in the log (KIP-98): producer state transitions, the LSO (KAFKA-5121), markers, the
.txnindex, and their rebuild after a crash or a truncation."""
from __future__ import annotations

import os
import struct
import time

import pytest

from brokers.protocol.control_record import build_marker_batch
from brokers.protocol.errors import InvalidProducerEpochError, InvalidTxnStateError, TransactionCoordinatorFencedError
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import iter_batches
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.producer_state import ProducerStateManager
from brokers.storage.transaction_index import AbortedTxn
from brokers.storage.transactions import last_stable_offset

from .conftest import batch


NOW = int(time.time() * 1000)  # markers are stamped with the clock: data near it keeps segments from rolling


def txn(pid: int, seq: int, n: int = 1, epoch: int = 0, transactional: bool = True) -> bytearray:
    records = [Record(i, i, None, b"%d-%d" % (pid, seq + i)) for i in range(n)]
    return build_batch(records, base_timestamp=NOW, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       transactional=transactional)


def hw_at_end(log: Log) -> None:
    log.update_high_watermark(log.log_end_offset)


@pytest.fixture
def log(make_log) -> Log:
    return make_log("t-0")


def test_a_transactional_batch_opens_a_transaction_that_holds_the_lso(log):
    log.append_as_leader(batch([b"plain"], ts=NOW), 0)  # offset 0
    log.append_as_leader(txn(7, 0, n=2), 0)  # 1-2
    log.append_as_leader(txn(7, 2), 0)  # 3: same transaction
    hw_at_end(log)
    assert log.producer_state.ongoing_transactions() == {7: 1}
    assert log.producer_state.last_entry(7).current_txn_first_offset == 1
    assert log.first_unstable_offset == 1
    assert log.last_stable_offset == 1
    assert log.high_watermark == 4


def test_commit_holds_the_lso_until_the_marker_is_below_the_hw(log):
    log.append_as_leader(txn(7, 0), 0)  # 0
    log.update_high_watermark(1)
    info = log.append_marker(7, 0, True, coordinator_epoch=3, leader_epoch=0)  # 1
    assert (info.first_offset, info.last_offset) == (1, 1)
    assert log.producer_state.ongoing_transactions() == {}
    assert log.producer_state.last_entry(7).coordinator_epoch == 3
    assert log.first_unstable_offset == 0  # KAFKA-5121: the marker is not replicated yet
    assert log.last_stable_offset == 0
    log.update_high_watermark(2)
    assert log.first_unstable_offset is None
    assert log.last_stable_offset == 2
    assert not log.active_segment.txn_index.path.exists()  # commits are not indexed


def test_abort_writes_one_txnindex_entry_in_kafkas_bytes(log):
    log.append_as_leader(batch([b"a"], ts=NOW), 0)  # 0
    log.append_as_leader(txn(9, 0, n=3), 0)  # 1-3
    log.append_marker(9, 0, False, 0, 0)  # 4
    path = log.active_segment.txn_index.path
    assert path.name == "00000000000000000000.txnindex"
    assert path.read_bytes() == bytes.fromhex(
        "0000" "0000000000000009" "0000000000000001" "0000000000000004" "0000000000000005")
    assert log.collect_aborted_transactions(0, 5) == [AbortedTxn(9, 1, 4, 5)]


def test_the_index_lso_is_the_next_open_transaction(log):
    log.append_as_leader(txn(1, 0), 0)  # 0
    log.append_as_leader(txn(2, 0), 0)  # 1
    log.append_marker(1, 0, False, 0, 0)  # 2
    assert log.active_segment.txn_index.entries() == [AbortedTxn(1, 0, 2, 1)]
    hw_at_end(log)
    assert log.last_stable_offset == 1  # pid 2 still open
    log.append_marker(2, 0, True, 0, 0)
    hw_at_end(log)
    assert log.last_stable_offset == log.log_end_offset == 4


def test_a_non_transactional_batch_inside_a_transaction_is_invalid_txn_state(log):
    log.append_as_leader(txn(7, 0), 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(7, 1, transactional=False), 0)
    assert log.log_end_offset == 1
    log.append_marker(7, 0, True, 0, 0)
    log.append_as_leader(txn(7, 1, transactional=False), 0)  # after the marker it may
    assert log.log_end_offset == 3


def test_markers_from_an_older_producer_or_coordinator_epoch_are_refused(log):
    log.append_as_leader(txn(7, 0, epoch=2), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(7, 1, False, 5, 0)
    log.append_marker(7, 3, False, 5, 0)  # a bumped epoch (the coordinator fenced the producer)
    assert log.producer_state.last_entry(7).epoch == 3
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_marker(7, 3, True, 4, 0)
    assert log.log_end_offset == 2


def test_an_empty_transaction_marker_starts_at_itself(log):
    log.append_marker(5, 0, False, 0, 0)
    assert log.active_segment.txn_index.entries() == [AbortedTxn(5, 0, 0, 1)]


def test_the_snapshot_carries_the_open_transaction_and_coordinator_epoch(tmp_path):
    config = LogConfig()
    log = Log(tmp_path / "t-0", config)
    log.append_as_leader(txn(7, 0), 0)
    log.append_marker(7, 0, True, 4, 0)
    log.append_as_leader(txn(7, 1), 0)  # 2: a second transaction stays open
    log.close()
    assert log.producer_state.snapshot_offsets() == [3]
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=True, high_watermark=3)
    try:
        entry = reopened.producer_state.last_entry(7)
        assert (entry.current_txn_first_offset, entry.coordinator_epoch) == (2, 4)
        assert reopened.last_stable_offset == 2
        with pytest.raises(TransactionCoordinatorFencedError):
            reopened.append_marker(7, 0, True, 3, 0)
    finally:
        reopened.close()


def _crash(log: Log) -> None:
    """A kill -9: file descriptors go, nothing is flushed or snapshotted."""
    for segment in log.segments:
        os.close(segment.fileno())
        segment._fd = -1


def test_an_unclean_reopen_rebuilds_the_producer_state_lso_and_txnindex(tmp_path):
    config = LogConfig(segment_bytes=300)
    log = Log(tmp_path / "t-0", config)
    for seq in range(3):
        log.append_as_leader(batch([b"x" * 50], ts=NOW), 0)
        log.append_as_leader(txn(1, seq), 0)
        log.append_marker(1, 0, seq != 1, 0, 0)  # abort the second transaction only
    log.append_as_leader(txn(2, 0), 0)  # left open
    expected = [e for s in log.segments for e in s.txn_index.entries()]
    assert expected == [AbortedTxn(1, 4, 5, 6)]
    index_files = sorted(p.name for p in (tmp_path / "t-0").glob("*.txnindex"))
    end = log.log_end_offset
    assert len(log.segments) > 2
    _crash(log)
    for path in (tmp_path / "t-0").glob("*.txnindex"):
        path.unlink()
    for path in (tmp_path / "t-0").glob("*.snapshot"):
        path.unlink()
    with open(log.active_segment.log_path, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09torn")  # a torn write
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=False, recovery_point=0, high_watermark=end)
    try:
        assert reopened.log_end_offset == end
        assert sorted(p.name for p in (tmp_path / "t-0").glob("*.txnindex")) == index_files
        assert [e for s in reopened.segments for e in s.txn_index.entries()] == expected
        assert reopened.producer_state.ongoing_transactions() == {2: end - 1}
        assert reopened.last_stable_offset == end - 1
        assert reopened.collect_aborted_transactions(0, end) == expected
    finally:
        reopened.close()


def test_truncation_drops_index_entries_and_reopens_the_transaction(log):
    log.append_as_leader(txn(1, 0), 0)  # 0
    log.append_marker(1, 0, False, 0, 0)  # 1
    log.append_as_leader(txn(2, 0), 0)  # 2
    log.append_marker(2, 0, False, 0, 0)  # 3
    assert len(log.active_segment.txn_index.entries()) == 2
    log.truncate_to(3)
    assert log.active_segment.txn_index.entries() == [AbortedTxn(1, 0, 1, 2)]
    assert log.producer_state.ongoing_transactions() == {2: 2}
    log.truncate_to(1)
    assert not log.active_segment.txn_index.path.exists()
    assert log.producer_state.ongoing_transactions() == {1: 0}


def _at(buf: bytearray, offset: int) -> bytearray:
    """A leader's batch as a follower fetches it: base offset and leader epoch assigned."""
    struct.pack_into(">q", buf, 0, offset)
    struct.pack_into(">i", buf, 12, 1)
    return buf


def test_a_truncation_removing_a_marker_after_a_restart_reopens_its_transaction(tmp_path):
    """The snapshot records no marker offsets: a follower truncating a marker away after a restart
    must still see the transaction open again (LSO held, read_committed stopped before it), and the new
    leader's ABORT is indexed with the transaction's real first offset."""
    log = Log(tmp_path / "t-0", LogConfig())
    log.append_as_follower(_at(txn(7, 0, n=2), 0))  # 0-1
    log.append_as_follower(_at(build_marker_batch(7, 0, False, 5, NOW), 2))  # ABORT at 2
    log.close()
    reopened = Log(tmp_path / "t-0", LogConfig(), clean_shutdown=True, high_watermark=3)
    try:
        assert reopened.producer_state.ongoing_transactions() == {}
        assert reopened.truncate_to(2)
        assert reopened.producer_state.ongoing_transactions() == {7: 0}
        reopened.update_high_watermark(2)
        assert (reopened.high_watermark, reopened.last_stable_offset) == (2, 0)
        reopened.append_as_follower(_at(build_marker_batch(7, 0, False, 6, NOW), 2))
        assert reopened.active_segment.txn_index.entries() == [AbortedTxn(7, 0, 2, 3)]
    finally:
        reopened.close()


def test_a_truncation_without_producers_never_rebuilds_the_state(log, monkeypatch):
    for _ in range(3):
        log.append_as_leader(batch([b"plain"], ts=NOW), 0)
    log.roll()
    log.append_as_leader(batch([b"more"], ts=NOW), 0)
    monkeypatch.setattr(log.producer_state, "load", lambda *a, **k: pytest.fail("rebuilt the producer state"))
    assert log.truncate_to(1)
    assert log.log_end_offset == 1 and log.producer_state.producers == {}


def test_follower_appends_index_aborts(make_log):
    leader, follower = make_log("a-0"), make_log("b-0")
    leader.append_as_leader(txn(3, 0, n=2), 0)
    leader.append_marker(3, 0, False, 0, 0)
    data = bytearray(leader.read(0, 1 << 20).records.read())
    assert [h.is_control for h in iter_batches(data)] == [False, True]
    follower.append_as_follower(data)
    assert follower.active_segment.txn_index.entries() == [AbortedTxn(3, 0, 2, 3)]
    assert follower.producer_state.ongoing_transactions() == {}


def test_collect_spans_segments_until_a_marker_passes_the_upper_bound(make_log):
    log = make_log("t-0", segment_bytes=200)
    for pid in range(1, 5):
        log.append_as_leader(txn(pid, 0), 0)
        log.append_marker(pid, 0, False, 0, 0)
        log.roll()
    aborted = log.collect_aborted_transactions(0, 100)
    assert [a.producer_id for a in aborted] == [1, 2, 3, 4]
    assert [a.producer_id for a in log.collect_aborted_transactions(2, 4)] == [2]
    assert [a.producer_id for a in log.collect_aborted_transactions(3, 5)] == [2, 3]


def test_retention_and_the_cleaner_keep_the_index_with_its_segment(make_log, tmp_path):
    now = [NOW / 1000]
    log = make_log("t-0", clock=lambda: now[0], retention_ms=1000)
    log.append_as_leader(txn(1, 0), 0)
    log.append_marker(1, 0, False, 0, 0)
    log.roll()
    hw_at_end(log)
    assert (tmp_path / "t-0" / "00000000000000000000.txnindex").exists()
    now[0] += 2  # past retention.ms for the marker stamped with this clock
    assert log.delete_old_segments() == 1
    assert not list((tmp_path / "t-0").glob("*.txnindex*"))


def test_lso_is_the_hw_without_transactions():
    assert last_stable_offset(None, 9) == 9
    assert last_stable_offset(4, 9) == 4
    assert last_stable_offset(12, 9) == 9
    assert ProducerStateManager().first_unstable_offset() is None


def test_expiration_keeps_a_producer_with_an_open_transaction(log):
    log.append_as_leader(txn(1, 0), 0)
    assert log.remove_expired_producers(10**14, 1) == 0
    log.append_marker(1, 0, True, 0, 0)
    assert log.remove_expired_producers(10**14, 1) == 1


def test_marker_bytes_match_build_marker_batch(log):
    log.append_marker(1, 2, True, 3, leader_epoch=0)
    data = log.read(0, 1 << 20).records.read()
    expected = build_marker_batch(1, 2, True, 3, 0)
    assert data[61:] == expected[61:]  # the one control record, byte for byte


def test_the_cleaner_carries_the_index_into_the_cleaned_segment(make_log, tmp_path):
    from brokers.storage.cleaner import LogCleaner

    log = make_log("c-0", cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, segment_bytes=300)
    keyed = [Record(0, 0, b"k", b"v%d" % i) for i in range(1)]
    for i in range(3):
        log.append_as_leader(build_batch(keyed, base_timestamp=NOW, producer_id=1, producer_epoch=0,
                                         base_sequence=i, transactional=True), 0)
        log.append_marker(1, 0, i != 1, 0, 0)
        log.roll()
    hw_at_end(log)
    before = [e for s in log.segments for e in s.txn_index.entries()]
    assert before == [AbortedTxn(1, 2, 3, 4)]
    stats = LogCleaner(tmp_path).clean(log, NOW + 10**9)
    assert stats.groups
    assert [e for s in log.segments for e in s.txn_index.entries()] == before
    assert [p.name for p in (tmp_path / "c-0").glob("*.txnindex*")] == ["00000000000000000000.txnindex"]


def test_the_first_unstable_offset_never_falls_below_the_log_start(log):
    log.append_as_leader(txn(1, 0), 0)  # 0: left open
    log.append_as_leader(batch([b"a", b"b"], ts=NOW), 0)  # 1-2
    hw_at_end(log)
    log.increment_log_start_offset(2)
    assert log.producer_state.first_unstable_offset() == 0
    assert log.first_unstable_offset == log.last_stable_offset == 2


def test_an_interrupted_swap_keeps_its_txnindex_and_drops_the_replaced_ones(tmp_path):
    """The cleaner's .txnindex.swap goes with its .log.swap; an orphan one (no .log.swap) is removed."""
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=200)
    log = Log(directory, config)
    for pid in (1, 2):
        log.append_as_leader(txn(pid, 0), 0)
        log.append_marker(pid, 0, False, 0, 0)
        log.roll()
    log.close()
    first, second = sorted(directory.glob("*.log"))[:2]
    entries = [AbortedTxn(1, 0, 1, 2), AbortedTxn(2, 2, 3, 4)]
    (directory / (first.name + ".swap")).write_bytes(first.read_bytes() + second.read_bytes())
    (directory / "00000000000000000000.txnindex.swap").write_bytes(b"".join(e.encode() for e in entries))
    (directory / "00000000000000000099.txnindex.swap").write_bytes(entries[0].encode())  # orphan
    first.rename(directory / (first.name + ".deleted"))  # crash mid-swap
    reopened = Log(directory, config, clean_shutdown=True)
    try:
        assert reopened.segments[0].txn_index.entries() == entries
        assert sorted(p.name for p in directory.glob("*.txnindex*")) == ["00000000000000000000.txnindex"]
        assert reopened.collect_aborted_transactions(0, 10) == entries
    finally:
        reopened.close()
