"""scripts.tools.kafka_mirror_maker.source_task's decisions without clients: a record's byte count, the progress
offsets an at-least-once commit may write (acknowledged, held back by unacknowledged gap syncs, only forwards),
and what an acknowledgement does (next offset, offset syncs, metrics). ``_Run`` is built without ``__init__``
(no client) around a real ``OffsetSyncWriter`` on a fake producer."""
from __future__ import annotations

from collections import deque

from scripts.tools.kafka_mirror_maker.metrics import FlowMetrics
from scripts.tools.kafka_mirror_maker.offset_sync import PartitionSyncState
from scripts.tools.kafka_mirror_maker.records import OffsetSync
from scripts.tools.kafka_mirror_maker.source_task import _Run, _size, progress_offsets
from scripts.tools.kafka_mirror_maker.sync_writer import OffsetSyncWriter
from tests.unit.scripts.mirror.test_sync_writer import FakeProducer

T0, T1 = ("t", 0), ("t", 1)


class Msg:
    def __init__(self, key=None, value=None, headers=None, topic="a.t", partition=0, offset=0):
        self._key, self._value, self._headers = key, value, headers
        self._topic, self._partition, self._offset = topic, partition, offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        return self._headers

    def topic(self):
        return self._topic

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset


# --- _size ---------------------------------------------------------------------------------------------------------

def test_size_is_key_value_and_header_bytes():
    assert _size(Msg(b"key", b"value!", [("h1", b"ab"), ("header", b"")])) == 3 + 6 + (2 + 2) + (6 + 0)


def test_size_of_null_key_value_headers_and_header_values():
    assert _size(Msg()) == 0
    assert _size(Msg(None, b"v", [("h", None)])) == 1 + 1
    assert _size(Msg(b"", None, [])) == 0


# --- progress_offsets ----------------------------------------------------------------------------------------------

def no_syncs(_tp, offset):
    return offset


def test_progress_is_the_acknowledged_next_offset_of_partitions_that_moved():
    next_offset = {T0: 10, T1: 5, ("u", 0): 3}
    committed = {T0: 10, T1: 2}
    assert progress_offsets(next_offset, committed, no_syncs) == {T1: 5, ("u", 0): 3}


def test_progress_of_a_partition_never_committed_starts_at_offset_0():
    assert progress_offsets({T0: 0}, {}, no_syncs) == {T0: 0}      # -1 < 0: the position is recorded
    assert progress_offsets({T0: 0}, {T0: 0}, no_syncs) == {}


def test_progress_is_held_at_the_oldest_unacknowledged_sync():
    holds = {T0: 7}
    safe = lambda tp, offset: min(offset, holds[tp]) if tp in holds else offset  # noqa: E731
    assert progress_offsets({T0: 20, T1: 9}, {T0: 3}, safe) == {T0: 7, T1: 9}
    assert progress_offsets({T0: 20}, {T0: 7}, safe) == {}                      # held where it is committed


def test_progress_never_goes_backwards():
    safe = lambda tp, offset: 4  # noqa: E731 - a sync older than what was committed
    assert progress_offsets({T0: 20}, {T0: 10}, safe) == {}


def test_progress_keeps_the_partitions_order():
    next_offset = {("z", 0): 1, ("a", 3): 1, ("m", 1): 1}
    assert list(progress_offsets(next_offset, {}, no_syncs)) == list(next_offset)


# --- _Run's bookkeeping with a bare run ----------------------------------------------------------------------------

def bare_run(offset_lag_max: int = 100) -> tuple[_Run, FakeProducer]:
    run = _Run.__new__(_Run)
    producer = FakeProducer()
    run.metrics = FlowMetrics("a", "b")
    run.sync_writer = OffsetSyncWriter(producer, "mm2-offset-syncs.b.internal")
    run.remote = {T0: "a.t", T1: "a.t"}
    run.source_of = {("a.t", 0): T0, ("a.t", 1): T1}
    run.next_offset, run.committed, run.syncs, run.failure = {}, {}, [], None
    run.in_flight = {("a.t", 0): deque(), ("a.t", 1): deque()}
    run.sync_state = {T0: PartitionSyncState(offset_lag_max), T1: PartitionSyncState(offset_lag_max)}
    return run, producer


def send(run: _Run, partition: int, upstream: int, size: int = 10) -> None:
    run.in_flight[("a.t", partition)].append((upstream, 0, size))


def test_acknowledgements_advance_the_next_offset_and_sync_the_first_record_and_gaps():
    run, _ = bare_run()
    for upstream in (5, 6, 7, 9):
        send(run, 0, upstream)
    for upstream, downstream in ((5, 0), (6, 1), (7, 2), (9, 3)):
        run._delivered(None, Msg(partition=0, offset=downstream))
    assert run.next_offset == {T0: 10}
    assert run.syncs == [OffsetSync("t", 0, 5, 0), OffsetSync("t", 0, 9, 3)]   # first, then after the gap at 8
    assert run.metrics.partitions[("a.t", 0)].record_count == 4
    assert run.metrics.partitions[("a.t", 0)].byte_count == 40


def test_a_failed_acknowledgement_is_recorded_and_moves_nothing():
    run, _ = bare_run()
    send(run, 1, 3)
    run._delivered("MSG_TIMED_OUT", Msg(partition=1, offset=-1))
    assert run.failure == "MSG_TIMED_OUT" and run.next_offset == {} and run.syncs == []
    assert run.in_flight[("a.t", 1)] == deque()
    assert ("a.t", 1) not in run.metrics.partitions


def test_commit_offsets_wait_for_the_gap_syncs_to_be_acknowledged():
    run, producer = bare_run()
    for upstream in (0, 1, 5, 6):
        send(run, 0, upstream)
    for downstream in range(4):
        run._delivered(None, Msg(partition=0, offset=downstream))
    run._emit_syncs(frontier=False)                       # syncs (0, 0) and (5, 2) written, not acknowledged
    assert [tp.offset for tp in run._progress_offsets()] == [0]
    producer.ack()
    assert [(tp.topic, tp.partition, tp.offset) for tp in run._progress_offsets()] == [("a.t", 0, 5)]
    producer.ack()
    assert [tp.offset for tp in run._progress_offsets()] == [7]
    run._committed(run._progress_offsets())
    assert run.committed == {T0: 7} and run._progress_offsets() == []


def test_frontier_syncs_cover_the_newest_unsynced_record_once():
    run, _ = bare_run()
    for upstream in (0, 1, 2):
        send(run, 0, upstream)
        run._delivered(None, Msg(partition=0, offset=upstream))
    run._emit_syncs(frontier=True)
    assert run.sync_writer.written == 2 and run.metrics.offset_syncs == 2        # (0, 0) and the frontier (2, 2)
    assert list(run.sync_writer.unacked[T0]) == [0, 2]
    run._emit_syncs(frontier=True)
    assert run.sync_writer.written == 2 and run.syncs == []                       # nothing new: nothing written
