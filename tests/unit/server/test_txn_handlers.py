"""The transactional data plane on the wire: Fetch READ_COMMITTED (LSO, aborted transactions) at v3,
v4, v5, v11 and v12, ListOffsets isolation levels, WriteTxnMarkers (v0 and v1) and Produce's
transactional checks (TransactionalId authorization, KIP-890 verification, client control batches)."""
from __future__ import annotations

import asyncio
import struct
import time

import pytest

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.control_record import build_marker_batch
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader, parse_request_header
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import iter_batches
from brokers.security import acls as acl
from brokers.server.handlers.fetch import handle_fetch
from brokers.server.handlers.list_offsets import handle_list_offsets
from brokers.server.handlers.produce import handle_produce
from brokers.server.handlers.write_txn_markers import handle_write_txn_markers
from tests.unit.server.test_handlers import FETCH, PRODUCE, World, batch, only_partition, produce, run

LIST_OFFSETS, WRITE_TXN_MARKERS = 2, 27
TP = TopicPartition("t", 0)
NOW = int(time.time() * 1000)  # markers carry the broker's clock: data near it keeps the segment from rolling


def txn_batch(pid: int, seq: int, values, epoch: int = 0) -> bytes:
    return bytes(build_batch([Record(i, 0, None, v) for i, v in enumerate(values)], base_timestamp=NOW,
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True))


async def produce_txn(world, records, transactional_id="tx", version=7):
    response = await world.call(handle_produce, PRODUCE, version, transactional_id=transactional_id, acks=-1,
                                timeout=1000, topic_data=[dict(name="t", partition_data=[dict(index=0, records=records)])])
    return only_partition(response)


async def write_markers(world, pid, commit, partitions=(("t", 0),), epoch=0, coordinator_epoch=0, version=1):
    topics = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    response = await world.call(handle_write_txn_markers, WRITE_TXN_MARKERS, version, markers=[dict(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[dict(name=t, partition_indexes=i) for t, i in topics.items()])])
    (marker,) = response.markers
    assert marker.producer_id == pid
    return {(t.name, p.partition_index): p.error_code for t in marker.topics for p in t.partitions}


@pytest.fixture
def world(tmp_path):
    """t-0 led here with ISR [1]: the HW follows every append. Offsets: 0 plain, 1-2 pid 7 (aborted,
    marker 3), 4 pid 8 (committed, marker 5), 6 plain, 7 pid 9 (open)."""
    w = World(tmp_path)

    async def setup():
        assert only_partition(await produce(w, "t", 0, batch([0], ts=NOW))).error_code == 0
        assert (await produce_txn(w, txn_batch(7, 0, [b"a1", b"a2"]))).error_code == 0
        assert await write_markers(w, 7, False) == {("t", 0): ErrorCode.NONE}
        assert (await produce_txn(w, txn_batch(8, 0, [b"c1"]))).error_code == 0
        assert await write_markers(w, 8, True) == {("t", 0): ErrorCode.NONE}
        assert only_partition(await produce(w, "t", 0, batch([6], ts=NOW))).error_code == 0
        assert (await produce_txn(w, txn_batch(9, 0, [b"o1"]))).error_code == 0
    run(setup())
    yield w
    w.log_manager.shutdown()


async def fetch(world, version, isolation_level, fetch_offset=0, partition_max_bytes=1 << 20):
    segments = await world.call(
        handle_fetch, FETCH, version, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20,
        isolation_level=isolation_level, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[dict(topic="t", partitions=[dict(
            partition=0, current_leader_epoch=-1, fetch_offset=fetch_offset, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=partition_max_bytes)])])
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    correlation_id, body = codec.decode_response(FETCH, version, frame[4:])
    (topic,) = body.responses
    (partition,) = topic.partitions
    return partition


def test_the_log_state_behind_the_wire(world):
    log = world.log()
    assert (log.log_end_offset, log.high_watermark, log.last_stable_offset) == (8, 8, 7)
    assert [tuple(a) for a in log.active_segment.txn_index.entries()] == [(7, 1, 3, 4)]


@pytest.mark.parametrize("version", [4, 5, 11, 12])
def test_read_committed_stops_at_the_lso_and_lists_aborted_transactions(world, version):
    p = run(fetch(world, version, 1))
    assert p.error_code == 0 and (p.high_watermark, p.last_stable_offset) == (8, 7)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(7, 1)]
    batches = list(iter_batches(p.records))
    assert batches[-1].next_offset == 7  # nothing at or past the LSO
    assert [b.is_control for b in batches] == [False, False, True, False, True, False]


@pytest.mark.parametrize("version", [4, 12])
def test_read_uncommitted_reads_to_the_hw_with_null_aborted_transactions(world, version):
    p = run(fetch(world, version, 0))
    assert (p.high_watermark, p.last_stable_offset) == (8, 7)  # the LSO is sent at both levels
    assert p.aborted_transactions is None
    assert list(iter_batches(p.records))[-1].next_offset == 8


def test_read_committed_past_the_aborted_range_gets_an_empty_list(world):
    p = run(fetch(world, 5, 1, fetch_offset=4))
    assert list(p.aborted_transactions) == []
    at_lso = run(fetch(world, 5, 1, fetch_offset=7))
    assert at_lso.records in (None, b"") and list(at_lso.aborted_transactions) == []


def test_fetch_v3_is_read_uncommitted_and_drops_markers(world):
    p = run(fetch(world, 3, 1))
    assert p.error_code == 0 and p.high_watermark == 8
    raw = p.records
    # magic 1 messages: every data record up to the HW (the open transaction's too), no markers
    offsets = []
    pos = 0
    while pos + 12 <= len(raw):
        offset, size = struct.unpack_from(">qi", raw, pos)
        offsets.append(offset)
        pos += 12 + size
    assert offsets == [0, 1, 2, 4, 6, 7]


def test_the_lso_moves_when_the_open_transaction_commits(world):
    assert run(write_markers(world, 9, True)) == {("t", 0): ErrorCode.NONE}
    p = run(fetch(world, 12, 1))
    assert (p.high_watermark, p.last_stable_offset) == (9, 9)
    assert list(iter_batches(p.records))[-1].next_offset == 9


async def list_latest(world, version, isolation_level, timestamp=-1):
    response = await world.call(handle_list_offsets, LIST_OFFSETS, version, replica_id=-1,
                                isolation_level=isolation_level,
                                topics=[dict(name="t", partitions=[dict(partition_index=0, timestamp=timestamp,
                                                                        current_leader_epoch=-1)])])
    (topic,) = response.topics
    (partition,) = topic.partitions
    return partition


@pytest.mark.parametrize("version", [2, 5])
def test_list_offsets_latest_is_the_lso_under_read_committed(world, version):
    assert run(list_latest(world, version, 1)).offset == 7
    assert run(list_latest(world, version, 0)).offset == 8


def test_list_offsets_by_time_never_answers_at_or_after_the_lso(world):
    world.log().update_high_watermark(8)
    assert run(list_latest(world, 5, 0, timestamp=1000)).offset == 0
    log = world.log()
    original = log.offset_for_timestamp
    log.offset_for_timestamp = lambda t: (7, 1000)  # the open transaction's record
    try:
        assert run(list_latest(world, 5, 1, timestamp=1000)).offset == -1
        assert run(list_latest(world, 5, 0, timestamp=1000)).offset == 7
    finally:
        log.offset_for_timestamp = original


# -- WriteTxnMarkers --------------------------------------------------------------------------------------
def test_write_txn_markers_errors_per_partition(world):
    errors = run(write_markers(world, 9, False, partitions=(("t", 0), ("t", 1), ("nope", 0))))
    assert errors == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER,
                      ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert world.log().last_stable_offset == 9


def test_write_txn_markers_fencing(world):
    assert run(write_markers(world, 9, False, coordinator_epoch=5)) == {("t", 0): ErrorCode.NONE}
    assert run(write_markers(world, 9, True, coordinator_epoch=4)) == {("t", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert run(produce_txn(world, txn_batch(9, 0, [b"x"], epoch=2))).error_code == 0
    assert run(write_markers(world, 9, True, epoch=1, coordinator_epoch=5)) == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert world.log().log_end_offset == 10


def test_write_txn_markers_needs_cluster_action(world):
    world.context.authorized_on_cluster = lambda operation: operation != acl.CLUSTER_ACTION
    assert run(write_markers(world, 9, True, partitions=(("t", 0), ("t", 1)))) == {
        ("t", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ("t", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    assert world.log().log_end_offset == 8


def test_write_txn_markers_v0_legacy_layout(world):
    body = codec.build(codec.request_class(WRITE_TXN_MARKERS, 0), markers=[dict(
        producer_id=9, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
        topics=[dict(name="t", partition_indexes=[0])])])
    framed = codec.encode_request(WRITE_TXN_MARKERS, 0, 5, "coordinator", body)
    header = RequestHeader(WRITE_TXN_MARKERS, 0, 5, "coordinator", 0)
    request = codec.decode_request(parse_request_header(framed[4:], False), framed[4:])
    response = run(handle_write_txn_markers(world.context, header, request))
    wire = codec.encode_response(WRITE_TXN_MARKERS, 0, 5, response)
    # response header v0, then markers [producer 9, topics [t, partitions [0, NONE]]]
    assert wire[4:] == struct.pack(">iiqih", 5, 1, 9, 1, 1) + b"t" + struct.pack(">iih", 1, 0, 0)
    assert world.log().last_stable_offset == 9


class FakeGroupCoordinator:
    def __init__(self):
        self.calls = []

    async def complete_transaction(self, offsets_partition, producer_id, producer_epoch, commit, coordinator_epoch):
        self.calls.append((offsets_partition, producer_id, producer_epoch, commit, coordinator_epoch))
        return ErrorCode.TRANSACTION_COORDINATOR_FENCED if coordinator_epoch < 4 else ErrorCode.NONE


def test_consumer_offsets_partitions_go_to_the_group_coordinator(world, monkeypatch):
    import brokers.server.handlers.write_txn_markers as module

    world.context.group_coordinator = FakeGroupCoordinator()
    monkeypatch.setattr(module, "leader_for", lambda context, topic, index: None)
    errors = run(write_markers(world, 9, True, partitions=(("__consumer_offsets", 3),), epoch=2, coordinator_epoch=4))
    assert errors == {("__consumer_offsets", 3): ErrorCode.NONE}
    errors = run(write_markers(world, 9, True, partitions=(("__consumer_offsets", 3),), epoch=2, coordinator_epoch=3))
    assert errors == {("__consumer_offsets", 3): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
    assert world.context.group_coordinator.calls == [(3, 9, 2, True, 4), (3, 9, 2, True, 3)]


# -- Produce ----------------------------------------------------------------------------------------------
def test_transactional_batches_need_write_on_the_transactional_id(world):
    world.context.authorized = lambda op, resource_type, name: not (resource_type == acl.TRANSACTIONAL_ID)
    assert run(produce_txn(world, txn_batch(9, 1, [b"x"]))).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert run(produce_txn(world, txn_batch(9, 1, [b"x"]), transactional_id=None, version=7)).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert world.log().log_end_offset == 8


def test_client_control_batches_are_invalid_record(world):
    marker = bytes(build_marker_batch(9, 0, True, 0, 1000))
    assert run(produce_txn(world, marker)).error_code == ErrorCode.INVALID_RECORD


def test_a_plain_batch_inside_an_open_transaction_is_invalid_txn_state(world):
    plain = bytes(build_batch([Record(0, 0, None, b"x")], base_timestamp=1000, producer_id=9, producer_epoch=0,
                              base_sequence=1))
    assert only_partition(run(produce(world, "t", 0, plain))).error_code == ErrorCode.INVALID_TXN_STATE


def test_kip_890_verifies_only_the_first_transactional_batch_on_a_partition(world):
    calls = []

    async def verify(transactional_id, producer_id, producer_epoch, tp):
        calls.append((transactional_id, producer_id, producer_epoch, tp))
        return ErrorCode.INVALID_TXN_STATE if producer_id == 11 else ErrorCode.NONE

    world.context.verify_transaction = verify
    assert run(produce_txn(world, txn_batch(9, 1, [b"x"]))).error_code == 0  # pid 9 is in a transaction here
    assert calls == []
    assert run(produce_txn(world, txn_batch(10, 0, [b"y"]))).error_code == 0
    assert calls == [("tx", 10, 0, TP)]
    assert run(produce_txn(world, txn_batch(11, 0, [b"z"]))).error_code == ErrorCode.INVALID_TXN_STATE
    assert world.log().log_end_offset == 10
    assert 11 not in world.log().producer_state.ongoing_transactions()


@pytest.mark.parametrize("commit", [False, True])
def test_kip_890_a_marker_landing_during_verification_refuses_the_late_batch(world, commit):
    """The coordinator answers "in the transaction", but the producer's transaction ends (EndTxn, or a
    fencing abort at the same epoch) and its marker lands here before the answer is used: the batch
    must not open a transaction no coordinator knows about (it would hold the LSO forever)."""
    async def scenario():
        async def verify(transactional_id, producer_id, producer_epoch, tp):
            assert await write_markers(world, 20, commit) == {("t", 0): ErrorCode.NONE}
            return ErrorCode.NONE

        world.context.verify_transaction = verify
        return await produce_txn(world, txn_batch(20, 0, [b"late"]))

    end = world.log().log_end_offset + 1  # the marker
    assert run(scenario()).error_code == ErrorCode.INVALID_TXN_STATE
    log = world.log()
    assert log.log_end_offset == end
    assert 20 not in log.producer_state.ongoing_transactions()
    assert log.last_stable_offset == 7  # only pid 9's transaction holds it, as before


def test_kip_890_a_partition_not_led_here_is_refused_before_asking_the_coordinator(world):
    calls = []

    async def verify(*args):
        calls.append(args)
        return ErrorCode.NONE

    world.context.verify_transaction = verify
    response = run(world.call(handle_produce, PRODUCE, 7, transactional_id="tx", acks=-1, timeout=1000, topic_data=[
        dict(name="t", partition_data=[dict(index=1, records=txn_batch(21, 0, [b"x"]))])]))
    assert only_partition(response).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert calls == []


def test_a_parked_read_committed_fetch_wakes_when_the_transaction_commits(world):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        parked = asyncio.ensure_future(fetch_parked(world, fetch_offset=7))
        await asyncio.sleep(0.2)
        assert not parked.done()  # offset 7 is the LSO: nothing to read yet
        assert await write_markers(world, 9, True) == {("t", 0): ErrorCode.NONE}
        p = await asyncio.wait_for(parked, 5)
        assert loop.time() - started < 5  # woken by the HW passing the marker, not by the deadline
        assert p.last_stable_offset == 9
        assert [b.base_offset for b in iter_batches(p.records)] == [7, 8]
    run(scenario())


async def fetch_parked(world, fetch_offset):
    segments = await world.call(
        handle_fetch, FETCH, 11, replica_id=-1, max_wait=10_000, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[dict(topic="t", partitions=[dict(partition=0, current_leader_epoch=-1, fetch_offset=fetch_offset,
                                                 log_start_offset=-1, partition_max_bytes=1 << 20)])])
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    _, body = codec.decode_response(FETCH, 11, frame[4:])
    return body.responses[0].partitions[0]


def test_a_failing_group_coordinator_answers_unknown_server_error(world, monkeypatch):
    import brokers.server.handlers.write_txn_markers as module

    class Broken:
        async def complete_transaction(self, *args):
            raise RuntimeError("boom")

    world.context.group_coordinator = Broken()
    original = module.leader_for
    monkeypatch.setattr(module, "leader_for", lambda context, topic, index: (
        None if topic == "__consumer_offsets" else original(context, topic, index)))
    errors = run(write_markers(world, 9, True, partitions=(("__consumer_offsets", 3), ("t", 0))))
    assert errors == {("__consumer_offsets", 3): ErrorCode.UNKNOWN_SERVER_ERROR, ("t", 0): ErrorCode.NONE}


def test_aborted_transactions_are_bounded_by_the_bytes_read(world):
    """Only transactions starting before the offset after the read's bytes are named (Kafka's upper bound)."""
    first_batch = run(fetch(world, 11, 1, partition_max_bytes=1))  # the one whole batch at offset 0
    assert [b.base_offset for b in iter_batches(first_batch.records)] == [0]
    assert list(first_batch.aborted_transactions) == []
    two = len(first_batch.records) + 1  # reaches into pid 7's batch: it is sent (partly) and named
    p = run(fetch(world, 11, 1, partition_max_bytes=two))
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(7, 1)]
