"""Idempotent producer state: Kafka 2.8's sequence/epoch decisions, duplicates, and the state's life
across appends, reopen (clean and unclean), truncation and follower appends."""
from __future__ import annotations

import os

import pytest

from brokers.protocol.errors import (
    ErrorCode,
    InvalidProducerEpochError,
    InvalidRecordError,
    KafkaError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import iter_batches, read_header
from brokers.storage.log import Log, LogAppendInfo
from brokers.storage.log_config import LogConfig
from brokers.storage.producer_snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot, encode_snapshot
from brokers.storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateManager,
    decrement_sequence,
    in_sequence,
    increment_sequence,
    snapshot_batch,
    snapshot_entries,
)
from brokers.storage.segment import INT32_MAX

from .conftest import batch, read_all

PID = 4242


def idem(n: int = 1, *, seq: int, epoch: int = 0, pid: int = PID, base_offset: int = 0, ts: int = 1_000,
         transactional: bool = False) -> bytearray:
    """A batch of ``n`` records from idempotent producer ``pid``/``epoch`` starting at sequence ``seq``."""
    records = [Record(i, i, None, b"p%d-e%d-s%d-%d" % (pid, epoch, seq, i)) for i in range(n)]
    return build_batch(records, base_offset=base_offset, base_timestamp=ts, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, transactional=transactional)


class Producer:
    """Drives a bare ProducerStateManager as a leader Log would: check, then apply at the log end."""

    def __init__(self) -> None:
        self.state = ProducerStateManager()
        self.end = 0

    def send(self, n: int = 1, **kw) -> BatchMetadata | None:
        header = read_header(idem(n, base_offset=self.end, **kw))
        duplicate = self.state.check_append([header])
        if duplicate is None:
            self.state.update([header])
            self.end = header.next_offset
        return duplicate

    def batches(self, pid: int = PID) -> list[BatchMetadata]:
        return list(self.state.last_entry(pid).batches)


def fill(producer: Producer, count: int, n: int = 2, epoch: int = 0) -> int:
    """``count`` in-order batches of ``n`` records from sequence 0; return the next sequence."""
    seq = 0
    for _ in range(count):
        assert producer.send(n, seq=seq, epoch=epoch) is None
        seq += n
    return seq


# -- sequence arithmetic ---------------------------------------------------------------------------
@pytest.mark.parametrize("seq, inc, expected", [(0, 0, 0), (5, 3, 8), (INT32_MAX - 2, 2, INT32_MAX),
                                                (INT32_MAX, 1, 0), (INT32_MAX - 1, 4, 2)])
def test_increment_and_decrement_wrap_at_int32_max(seq, inc, expected):
    assert increment_sequence(seq, inc) == expected
    assert decrement_sequence(expected, inc) == seq


def test_in_sequence_wraps_from_int32_max_to_zero():
    assert in_sequence(4, 5) and in_sequence(INT32_MAX, 0) and in_sequence(-1, 0)
    assert not in_sequence(4, 6) and not in_sequence(4, 4) and not in_sequence(INT32_MAX - 1, 0)


# -- the pure decisions ----------------------------------------------------------------------------
@pytest.mark.parametrize("seq", [0, 1, 17, INT32_MAX])
def test_unknown_producer_may_start_at_any_sequence(seq):
    """KIP-360 (Kafka 2.5+): no UNKNOWN_PRODUCER_ID; the state may have been lost to retention."""
    p = Producer()
    assert p.send(3, seq=seq, epoch=2) is None
    entry = p.state.last_entry(PID)
    assert entry.epoch == 2
    assert p.batches() == [BatchMetadata(seq, increment_sequence(seq, 2), 0, 2, 1_002)]


def test_in_order_batches_are_accepted_and_the_last_five_retained():
    p = Producer()
    next_seq = fill(p, 8, n=3)
    assert next_seq == 24
    assert [b.first_seq for b in p.batches()] == [9, 12, 15, 18, 21]
    assert [(b.first_offset, b.last_offset) for b in p.batches()] == [(9, 11), (12, 14), (15, 17), (18, 20), (21, 23)]
    assert len(p.batches()) == NUM_BATCHES_TO_RETAIN


@pytest.mark.parametrize("which", range(NUM_BATCHES_TO_RETAIN))
def test_a_duplicate_of_each_of_the_last_five_answers_the_original(which):
    p = Producer()
    fill(p, 7)
    retained = p.batches()
    original = retained[which]
    duplicate = p.send(2, seq=original.first_seq)
    assert duplicate == original
    assert p.batches() == retained and p.end == 14  # nothing applied


def test_a_duplicate_older_than_the_retained_five_is_out_of_order():
    p = Producer()
    fill(p, 6)  # sequences 0..11; the batch at sequence 0 has been evicted
    with pytest.raises(OutOfOrderSequenceError) as caught:
        p.send(2, seq=0)
    assert caught.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45


@pytest.mark.parametrize("seq", [11, 13, 100, 0, 9])
def test_a_gap_or_a_rewind_is_out_of_order(seq):
    p = Producer()
    fill(p, 5, n=2)  # next expected sequence is 10; 9 overlaps the last batch without matching it
    with pytest.raises(OutOfOrderSequenceError):
        p.send(1, seq=seq)
    assert p.end == 10


def test_same_first_sequence_with_another_length_is_not_a_duplicate():
    p = Producer()
    fill(p, 3, n=2)
    with pytest.raises(OutOfOrderSequenceError):
        p.send(3, seq=4)  # the retained batch is 4..5, this is 4..6


def test_epoch_bump_must_restart_at_sequence_zero():
    p = Producer()
    fill(p, 3)
    with pytest.raises(OutOfOrderSequenceError):
        p.send(1, seq=6, epoch=1)
    assert p.send(2, seq=0, epoch=1) is None
    entry = p.state.last_entry(PID)
    assert entry.epoch == 1 and [b.first_seq for b in entry.batches] == [0]  # older epoch's batches dropped


def test_older_epoch_is_fenced_even_in_sequence_and_as_a_retry():
    p = Producer()
    fill(p, 2, epoch=3)
    for seq in (4, 2, 0):
        with pytest.raises(InvalidProducerEpochError) as caught:
            p.send(2, seq=seq, epoch=2)
        assert caught.value.code == ErrorCode.INVALID_PRODUCER_EPOCH == 47


def test_retry_from_before_an_epoch_bump_is_fenced_not_a_duplicate():
    p = Producer()
    fill(p, 2, epoch=0)
    assert p.send(1, seq=0, epoch=1) is None
    with pytest.raises(InvalidProducerEpochError):
        p.send(2, seq=0, epoch=0)


def test_sequence_wraps_past_int32_max():
    p = Producer()
    assert p.send(3, seq=INT32_MAX - 1) is None  # sequences MAX-1, MAX, 0
    assert p.batches()[-1].last_seq == 0
    with pytest.raises(OutOfOrderSequenceError):
        p.send(1, seq=0)
    assert p.send(3, seq=INT32_MAX - 1) == p.batches()[0]  # a retry of the wrapping batch
    assert p.send(2, seq=1) is None
    q = Producer()
    assert q.send(1, seq=INT32_MAX) is None
    assert q.send(1, seq=0) is None  # INT32_MAX is followed by 0
    assert q.send(1, seq=INT32_MAX) == q.batches()[0]
    with pytest.raises(OutOfOrderSequenceError):
        q.send(1, seq=2)


def test_non_idempotent_batches_are_ignored():
    state = ProducerStateManager()
    headers = [read_header(batch([b"a", b"b"])), read_header(build_batch([Record(0, 0, None, b"x")],
                                                                         base_timestamp=1, producer_id=-1))]
    assert state.check_append(headers) is None
    state.update(headers)
    assert state.producers == {}


def test_batches_of_one_append_are_checked_against_each_other():
    state = ProducerStateManager()
    state.update([read_header(idem(2, seq=0))])
    ok = [read_header(idem(2, seq=2, base_offset=2)), read_header(idem(1, seq=4, base_offset=4))]
    assert state.check_append(ok) is None
    gap = [read_header(idem(2, seq=2, base_offset=2)), read_header(idem(1, seq=5, base_offset=4))]
    with pytest.raises(OutOfOrderSequenceError):
        state.check_append(gap)
    assert [b.last_seq for b in state.last_entry(PID).batches] == [1]  # checking changed nothing


def test_an_unknown_producer_is_unchecked_for_its_whole_first_append():
    """Kafka's checkSequence skips the sequence check while the stored epoch is NO_PRODUCER_EPOCH."""
    headers = [read_header(idem(2, seq=10)), read_header(idem(1, seq=40, base_offset=2))]
    assert ProducerStateManager().check_append(headers) is None


def test_producers_are_independent():
    p = Producer()
    assert p.send(2, seq=0, pid=1) is None
    assert p.send(2, seq=50, pid=2) is None
    assert p.send(1, seq=2, pid=1) is None
    assert p.send(2, seq=0, pid=1) == BatchMetadata(0, 1, 0, 1, 1_001)
    with pytest.raises(OutOfOrderSequenceError):
        p.send(1, seq=0, pid=2)


def test_idle_producers_expire_by_their_last_batch_timestamp():
    p = Producer()
    p.send(1, seq=0, pid=1, ts=1_000)
    p.send(1, seq=0, pid=2, ts=5_000)
    assert p.state.remove_expired(now_ms=6_000, expiration_ms=5_000) == 1
    assert set(p.state.producers) == {2}
    assert p.send(1, seq=9, pid=1) is None  # forgotten: any sequence again


def test_log_expires_idle_producers(make_log):
    log = make_log()
    produce(log, 1, seq=0)
    assert log.remove_expired_producers(now_ms=1_000 + 86_400_000, expiration_ms=86_400_000) == 1
    assert log.producer_state.producers == {}


def test_a_producer_batch_without_a_sequence_is_invalid():
    with pytest.raises(InvalidRecordError):
        ProducerStateManager().check_append([read_header(idem(1, seq=-1))])


def test_transactional_batches_are_treated_like_idempotent_ones():
    p = Producer()
    assert p.send(2, seq=0, transactional=True) is None
    assert p.send(2, seq=0, transactional=True) is not None
    with pytest.raises(OutOfOrderSequenceError):
        p.send(1, seq=5, transactional=True)


def test_error_classes_carry_kafkas_codes():
    assert issubclass(OutOfOrderSequenceError, KafkaError)
    assert UnknownProducerIdError("x").code == ErrorCode.UNKNOWN_PRODUCER_ID == 59
    assert ErrorCode.DUPLICATE_SEQUENCE_NUMBER == 46


# -- snapshot format -------------------------------------------------------------------------------
def test_snapshot_round_trips_every_retained_batch_in_kafkas_layout():
    p = Producer()
    fill(p, 7, n=3)
    p.send(1, seq=9, pid=8, epoch=4)
    data = encode_snapshot(snapshot_entries(p.state.producers.values()))
    assert data[:2] == b"\x00\x01" and len(data) == 10 + 6 * 46
    entries = decode_snapshot(data)
    assert [(e.producer_id, e.epoch) for e in entries] == [(PID, 0)] * 5 + [(8, 4)]
    assert [snapshot_batch(e) for e in entries if e.producer_id == PID] == p.batches()
    assert {(e.coordinator_epoch, e.current_txn_first_offset) for e in entries} == {(-1, -1)}


def test_an_entry_without_batches_keeps_only_the_epoch():
    (row,) = decode_snapshot(encode_snapshot(snapshot_entries([ProducerStateEntry(5, 3)])))
    assert (row.producer_id, row.epoch, snapshot_batch(row), row.coordinator_epoch,
            row.current_txn_first_offset) == (5, 3, None, -1, -1)


def test_load_starts_from_the_snapshot(tmp_path):
    """A snapshot at the log end is trusted: its producers are known without any batch in the log."""
    config = LogConfig()
    log = Log(tmp_path / "t-0", config)
    log.append_as_leader(batch([b"a", b"b"]), 0)
    log.close()
    state = ProducerStateManager()
    state.update([read_header(idem(3, seq=40, pid=99, epoch=2))])
    (tmp_path / "t-0" / f"{2:020d}.snapshot").write_bytes(encode_snapshot(snapshot_entries(state.producers.values())))
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=True)
    assert reopened.producer_state.last_entry(99).epoch == 2
    assert reopened.append_as_leader(idem(3, seq=40, pid=99, epoch=2), 0).duplicate
    assert reopened.append_as_leader(idem(1, seq=43, pid=99, epoch=2), 0).first_offset == 2
    reopened.close()


@pytest.mark.parametrize("damage", ["crc", "short", "version", "count"])
def test_a_damaged_snapshot_is_rejected(damage):
    p = Producer()
    fill(p, 2)
    data = bytearray(encode_snapshot(snapshot_entries(p.state.producers.values())))
    if damage == "crc":
        data[-1] ^= 1
    elif damage == "short":
        data = data[:5]
    elif damage == "version":
        data[1] = 2
    else:
        data = data[:-46]
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))


# -- through the Log ------------------------------------------------------------------------------
def directory_bytes(log: Log):
    return {p.name: p.read_bytes() for p in sorted(log.directory.iterdir())}


def produce(log: Log, n: int = 1, *, seq: int, epoch: int = 0, pid: int = PID, leader_epoch: int = 0) -> LogAppendInfo:
    return log.append_as_leader(idem(n, seq=seq, epoch=epoch, pid=pid), leader_epoch)


def produce_many(log: Log, count: int, n: int = 2, pid: int = PID) -> list[LogAppendInfo]:
    return [produce(log, n, seq=i * n, pid=pid) for i in range(count)]


def test_log_append_info_keeps_its_field_order_with_duplicate_last():
    assert LogAppendInfo._fields[-2:] == ("log_append_time", "duplicate")
    assert LogAppendInfo(0, 0, 0, 0, 1, 1).duplicate is False


def test_duplicate_append_writes_nothing_and_answers_the_original_offsets(make_log):
    log = make_log()
    infos = produce_many(log, 4, n=3)
    before, end = directory_bytes(log), log.log_end_offset
    retry = idem(3, seq=3)
    untouched = bytes(retry)
    info = log.append_as_leader(retry, leader_epoch=5)
    assert info.duplicate is True
    assert (info.first_offset, info.last_offset) == (infos[1].first_offset, infos[1].last_offset) == (3, 5)
    assert (info.records_count, info.valid_bytes, info.log_append_time) == (0, 0, -1)
    assert log.log_end_offset == end and directory_bytes(log) == before and bytes(retry) == untouched
    assert log.leader_epoch_cache.latest_epoch == 0
    assert [r.offset for r in read_all(log)] == list(range(12))


def test_duplicate_under_log_append_time_answers_the_stamped_time(make_log):
    times = iter([100.0, 200.0])
    log = make_log(clock=lambda: next(times), message_timestamp_type="LogAppendTime")
    first = produce(log, 2, seq=0)
    assert first.log_append_time == 200_000
    info = produce(log, 2, seq=0)
    assert info.duplicate and info.log_append_time == first.log_append_time


def test_rejected_sequence_leaves_log_and_state_unchanged(make_log):
    log = make_log()
    produce_many(log, 2)
    before = directory_bytes(log), log.log_end_offset
    for seq, epoch in [(7, 0), (3, 1)]:  # a gap; a new epoch not starting at 0
        with pytest.raises(KafkaError) as caught:
            produce(log, 1, seq=seq, epoch=epoch)
        assert caught.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert (directory_bytes(log), log.log_end_offset) == before
    assert produce(log, 1, seq=4).first_offset == 4


def test_fenced_epoch_is_rejected_by_the_log(make_log):
    log = make_log()
    produce(log, 1, seq=0, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 1, seq=1, epoch=2)
    assert log.log_end_offset == 1


def test_non_idempotent_appends_leave_no_state(make_log):
    log = make_log()
    log.append_as_leader(batch([b"a", b"b"]), 0)
    log.append_as_leader(batch([b"a", b"b"]), 0)  # the same bytes again are simply written again
    assert log.log_end_offset == 4 and log.producer_state.producers == {}


def check_state_survived(log: Log, infos: list[LogAppendInfo], n: int = 2) -> None:
    """Every one of the last five batches is still recognised and the sequence continues."""
    end = log.log_end_offset
    count = len(infos)
    for i in range(max(0, count - NUM_BATCHES_TO_RETAIN), count):
        info = produce(log, n, seq=i * n)
        assert info.duplicate and (info.first_offset, info.last_offset) == (infos[i].first_offset, infos[i].last_offset)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, n, seq=count * n + 1)
    assert log.log_end_offset == end
    assert produce(log, n, seq=count * n).first_offset == end


@pytest.mark.parametrize("segment_bytes", [1 << 20, 400])
def test_state_survives_a_clean_reopen(tmp_path, segment_bytes):
    config = LogConfig(segment_bytes=segment_bytes)
    log = Log(tmp_path / "t-0", config)
    infos = produce_many(log, 9)
    log.close()
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*" + SNAPSHOT_SUFFIX))[-1] == f"{18:020d}.snapshot"
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=True)
    check_state_survived(reopened, infos)
    reopened.close()


@pytest.mark.parametrize("snapshots", ["none", "rolls", "corrupt"])
def test_state_survives_an_unclean_reopen(tmp_path, snapshots):
    config = LogConfig(segment_bytes=400 if snapshots != "none" else 1 << 20)
    log = Log(tmp_path / "t-0", config)
    infos = produce_many(log, 9)
    log.flush()  # no close: the broker died; roll snapshots (if any) are behind the log end
    files = sorted((tmp_path / "t-0").glob("*" + SNAPSHOT_SUFFIX))
    assert bool(files) == (snapshots != "none")
    if snapshots == "corrupt":
        for path in files:
            path.write_bytes(b"\x00\x01garbage")
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=False)
    check_state_survived(reopened, infos)
    reopened.close()
    log.close()


def test_snapshot_past_a_torn_tail_is_discarded(tmp_path):
    config = LogConfig()
    log = Log(tmp_path / "t-0", config)
    infos = produce_many(log, 6)
    log.close()  # snapshot at 12
    segment = tmp_path / "t-0" / f"{0:020d}.log"
    os.truncate(segment, segment.stat().st_size - 5)  # the last batch is torn
    reopened = Log(tmp_path / "t-0", config, clean_shutdown=False)
    assert reopened.log_end_offset == 10
    assert reopened.producer_state.snapshot_offsets() == []
    check_state_survived(reopened, infos[:5])
    reopened.close()


def test_truncate_to_forgets_removed_batches(make_log):
    log = make_log(segment_bytes=400)
    infos = produce_many(log, 9)
    log.roll()  # a snapshot at 18, soon past the end
    assert log.truncate_to(infos[6].first_offset)  # batches 6, 7, 8 are gone
    assert all(o <= log.log_end_offset for o in log.producer_state.snapshot_offsets())
    assert [b.first_seq for b in log.producer_state.last_entry(PID).batches] == [2, 4, 6, 8, 10]
    check_state_survived(log, infos[:6])


def test_truncation_that_spares_every_producer_batch_keeps_the_state(make_log):
    log = make_log()
    infos = produce_many(log, 3)
    log.append_as_leader(batch([b"x", b"y"]), 0)
    entry = log.producer_state.last_entry(PID)
    assert log.truncate_to(infos[-1].last_offset + 1)
    assert log.producer_state.last_entry(PID) is entry
    check_state_survived(log, infos)


def test_truncate_fully_forgets_every_producer(make_log):
    log = make_log()
    produce_many(log, 3)
    log.close()
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {} and log.producer_state.snapshot_offsets() == []
    assert produce(log, 1, seq=77).first_offset == 100  # unknown producer again: any sequence


def test_follower_appends_update_the_state_unchecked_and_a_new_leader_continues(make_log):
    leader, follower = make_log("t-0"), make_log("t-1", segment_bytes=400)
    for i in range(7):
        produce(leader, 2, seq=i * 2)
    produce(leader, 1, seq=0, pid=9, epoch=5)
    data = leader.read(0, 1 << 20).records.read()
    follower.append_as_follower(bytearray(data))
    assert follower.producer_state.last_entry(9).epoch == 5
    # a stale epoch from the leader is applied, not refused: the leader decided
    follower.append_as_follower(idem(1, seq=0, pid=9, epoch=4, base_offset=follower.log_end_offset))
    assert follower.producer_state.last_entry(9).epoch == 4
    retry = produce(follower, 2, seq=10, leader_epoch=1)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (10, 11)
    assert produce(follower, 2, seq=14, leader_epoch=1).first_offset == follower.log_end_offset - 2
    assert [h.producer_id for h in iter_batches(follower.read(0, 1 << 20).records.read())][:8] == [PID] * 7 + [9]


def test_retention_keeps_producers(make_log):
    log = make_log(segment_bytes=400, retention_ms=0)
    infos = produce_many(log, 9)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    check_state_survived(log, infos)


def test_roll_and_close_keep_the_two_newest_snapshots(make_log):
    log = make_log(segment_bytes=300)
    produce_many(log, 12)
    offsets = log.producer_state.snapshot_offsets()
    assert len(offsets) == 2 and offsets[-1] == log.active_segment.base_offset
    log.close()
    assert log.producer_state.snapshot_offsets() == [offsets[-1], 24]
