"""Fetch with sessions (KIP-227) through the real handler: full, incremental, forgotten, errors, long poll."""
from __future__ import annotations

import asyncio

import pytest

from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.model import TopicPartition
from brokers.protocol.record import iter_records
from brokers.replication.fetch_session import FetchSessionCache
from brokers.server.handlers.fetch import handle_fetch
from tests.unit.server.test_handlers import FETCH, World, batch, partitions_of, produce, run
from tests.unit.server.test_handlers import fetch as sessionless_fetch


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    w.context.fetch_sessions = FetchSessionCache()
    yield w
    w.log_manager.shutdown()


def request(partitions, session_id, epoch, forgotten=(), max_wait=0, min_bytes=1):
    topics: dict[str, list] = {}
    for topic, partition, offset in partitions:
        topics.setdefault(topic, []).append(dict(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
                                                 current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1))
    return dict(replica_id=-1, max_wait=max_wait, min_bytes=min_bytes, max_bytes=1 << 22, isolation_level=0,
                session_id=session_id, session_epoch=epoch, rack_id="",
                forgotten_topics_data=[dict(topic=t, partitions=list(ps)) for t, ps in forgotten],
                topics=[dict(topic=name, partitions=parts) for name, parts in topics.items()])


async def fetch(world, partitions, session_id, epoch, version=12, replica_id=-1, **kwargs):
    fields = dict(request(partitions, session_id, epoch, **kwargs), replica_id=replica_id)
    body = codec.build(codec.request_class(FETCH, version), **fields)
    segments = await handle_fetch(world.context, RequestHeader(FETCH, version, 7, "tests", 0), body)
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    return codec.decode_response(FETCH, version, frame[4:])[1]


def offsets(p):
    return [r.offset for r in iter_records(p.records)]


@pytest.mark.parametrize("version", [7, 11, 12])
def test_full_then_incremental(world, version):
    run(produce(world, "t", 0, batch([1, 2])))
    full = run(fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, 0, version))
    assert full.error_code == 0 and full.session_id != 0
    assert set(partitions_of(full)) == {("t", 0), ("u", 0)} and offsets(partitions_of(full)[("t", 0)]) == [0, 1]
    session = full.session_id
    # the consumer moved on in t-0: only that partition is named; nothing new anywhere: nothing answered
    nothing = run(fetch(world, [("t", 0, 2)], session, 1, version))
    assert (nothing.error_code, nothing.session_id, nothing.responses) == (0, session, ())
    run(produce(world, "u", 0, batch([3])))
    got = partitions_of(run(fetch(world, [], session, 2, version)))
    assert list(got) == [("u", 0)] and offsets(got[("u", 0)]) == [0] and got[("u", 0)].high_watermark == 1
    # u-0 is not named again, so its cached fetch offset (0) is read again: the client must name it
    got = partitions_of(run(fetch(world, [("u", 0, 1)], session, 3, version)))
    assert got == {}


def test_forgotten_partitions_are_no_longer_read(world):
    session = run(fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, 0)).session_id
    assert run(fetch(world, [], session, 1, forgotten=[("u", [0])])).responses == ()
    run(produce(world, "u", 0, batch([3])))
    assert run(fetch(world, [], session, 2)).responses == ()
    got = partitions_of(run(fetch(world, [("u", 0, 0)], session, 3)))  # added back: answered again
    assert list(got) == [("u", 0)] and offsets(got[("u", 0)]) == [0]


def test_forgetting_every_partition_answers_sessionless(world):
    session = run(fetch(world, [("t", 0, 0)], 0, 0)).session_id
    body = run(fetch(world, [], session, 1, forgotten=[("t", [0])]))
    assert (body.error_code, body.session_id, body.responses) == (0, 0, ())
    assert world.context.fetch_sessions.sessions == {}


def test_errors_are_always_answered(world):
    session = run(fetch(world, [("t", 0, 0), ("t", 7, 0)], 0, 0)).session_id
    for epoch in (1, 2):
        got = partitions_of(run(fetch(world, [], session, epoch)))
        assert list(got) == [("t", 7)] and got[("t", 7)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_session_errors(world):
    session = run(fetch(world, [("t", 0, 0)], 0, 0)).session_id
    unknown = run(fetch(world, [("t", 0, 0)], session + 1, 1))
    assert (unknown.error_code, unknown.session_id, unknown.responses) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, ())
    wrong = run(fetch(world, [("t", 0, 0)], session, 4))
    assert (wrong.error_code, wrong.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, ())
    assert run(fetch(world, [], session, 1)).error_code == 0  # the session is still there at its epoch


def test_sessionless_requests_are_answered_in_full(world):
    body = run(fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, -1))
    assert body.session_id == 0 and set(partitions_of(body)) == {("t", 0), ("u", 0)}
    assert world.context.fetch_sessions.sessions == {}
    assert run(sessionless_fetch(world, [("t", 0, 0, 1000)], version=6)).responses  # v4-6: no session fields


def test_without_a_cache_full_requests_get_no_session(world):
    world.context.fetch_sessions = None
    body = run(fetch(world, [("t", 0, 0)], 0, 0))
    assert body.session_id == 0 and list(partitions_of(body)) == [("t", 0)]


@pytest.mark.parametrize("quiet", [False, True])
def test_incremental_long_poll_waits_for_data_in_any_session_partition(world, quiet):
    """``quiet``: the partitions went quiet first (the fetch reads none and waits through the session)."""
    async def scenario():
        if quiet:
            session, _ = await asyncio.to_thread(quiet_world, world)
            epoch = 2
        else:
            session, epoch = (await fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, 0)).session_id, 1
        waiting = asyncio.ensure_future(fetch(world, [], session, epoch, max_wait=30_000))
        await asyncio.sleep(0)
        assert not waiting.done()
        await produce(world, "u", 0, batch([1, 2]))
        return await asyncio.wait_for(waiting, timeout=5)

    got = partitions_of(run(scenario()))
    assert list(got) == [("u", 0)] and offsets(got[("u", 0)]) == [0, 1]


def test_the_partitions_answered_are_read_last_next_time(world):
    session = run(fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, 0)).session_id
    run(produce(world, "t", 0, batch([1])))
    assert list(partitions_of(run(fetch(world, [], session, 1)))) == [("t", 0)]  # t-0 answered: read last now
    run(produce(world, "t", 0, batch([2])))
    run(produce(world, "u", 0, batch([3])))
    body = run(fetch(world, [("t", 0, 1)], session, 2))
    assert [(t.topic, [p.partition_index for p in t.partitions]) for t in body.responses] == [("u", [0]), ("t", [0])]


# -- quiet partitions: an idle partition costs an incremental fetch nothing --------------------------


def quiet_world(world):
    """A session on t-0 and u-0 whose second (incremental) fetch found nothing: both quiet."""
    session_id = run(fetch(world, [("t", 0, 0), ("u", 0, 0)], 0, 0)).session_id
    assert run(fetch(world, [], session_id, 1)).responses == ()
    session = world.context.fetch_sessions.sessions[session_id]
    assert session.fetch_list() == [] and set(session.quiet) == {("t", 0), ("u", 0)}
    return session_id, session


def partition(world, topic, index=0):
    return world.replica_manager.partitions[TopicPartition(topic, index)]


def test_a_partition_with_nothing_to_answer_is_not_read_again_until_it_changes(world):
    session_id, session = quiet_world(world)
    assert run(fetch(world, [], session_id, 2)).responses == ()
    run(produce(world, "u", 0, batch([1])))
    assert list(session.awake) == [("u", 0)] and set(session.quiet) == {("t", 0)}
    got = partitions_of(run(fetch(world, [], session_id, 3)))
    assert list(got) == [("u", 0)] and offsets(got[("u", 0)]) == [0] and got[("u", 0)].high_watermark == 1
    # named with its new offset, it is read and found at its end: quiet again
    assert run(fetch(world, [("u", 0, 1)], session_id, 4)).responses == ()
    assert set(session.quiet) == {("t", 0), ("u", 0)}


def lead_with_follower_in_isr(world, now_ms):
    """t-0 led by this broker (1) with follower 2 in the ISR, so appends wait for it to reach the HW."""
    led = partition(world, "t")
    led.make_leader(led.leader_epoch + 1, (1, 2), (1, 2), led.zk_version, led.controller_epoch, now_ms)
    return led


def test_a_consumer_quiet_partition_wakes_at_the_high_watermark_not_at_the_append(world):
    led = lead_with_follower_in_isr(world, world.replica_manager.clock())
    session_id = run(fetch(world, [("t", 0, 0)], 0, 0)).session_id
    assert run(fetch(world, [], session_id, 1)).responses == ()
    session = world.context.fetch_sessions.sessions[session_id]
    run(produce(world, "t", 0, batch([1])))  # acks=1: written, not yet on follower 2
    assert (led.log.log_end_offset, led.log.high_watermark) == (1, 0) and ("t", 0) in session.quiet
    run(fetch(world, [("t", 0, 1)], 0, -1, replica_id=2))  # follower 2 has it: the HW moves
    assert led.log.high_watermark == 1 and list(session.awake) == [("t", 0)]
    got = partitions_of(run(fetch(world, [], session_id, 2)))
    assert offsets(got[("t", 0)]) == [0]


@pytest.mark.parametrize("fetched_at_50_s", [True, False])
def test_a_quiet_follower_is_caught_up_as_of_the_sessions_last_read(world, fetched_at_50_s):
    """Skipped fetches are recorded when the partition changes: a follower that kept fetching stays in
    sync after an append into a long-idle partition; one that stopped at 2 s is out of sync (lag 30 s)."""
    clock = [1_000]
    world.replica_manager.clock = lambda: clock[0]
    led = lead_with_follower_in_isr(world, 1_000)
    session_id = run(fetch(world, [("t", 0, 0)], 0, 0, replica_id=2)).session_id
    clock[0] = 2_000
    assert run(fetch(world, [], session_id, 1, replica_id=2)).responses == ()
    assert ("t", 0) in world.context.fetch_sessions.sessions[session_id].quiet
    if fetched_at_50_s:
        clock[0] = 50_000
        assert run(fetch(world, [], session_id, 2, replica_id=2)).responses == ()  # t-0 not read
    clock[0] = 60_000
    run(produce(world, "t", 0, batch([1])))
    assert led.followers[2].last_caught_up_time_ms == (50_000 if fetched_at_50_s else 2_000)
    assert led.isr_to_shrink(60_000) == (None if fetched_at_50_s else (1,))


def test_sessions_that_forget_a_quiet_partition_or_close_leave_it(world):
    session_id, _ = quiet_world(world)
    t0, u0 = partition(world, "t"), partition(world, "u")
    assert (t0.quiet_sessions(), u0.quiet_sessions()) == (1, 1)
    assert run(fetch(world, [], session_id, 2, forgotten=[("u", [0])])).responses == ()
    assert (t0.quiet_sessions(), u0.quiet_sessions()) == (1, 0)
    run(fetch(world, [("t", 0, 0)], session_id, 0))  # a full request naming the session closes it
    assert (t0.quiet_sessions(), u0.quiet_sessions()) == (0, 0)


def test_a_quiet_partition_is_answered_when_retention_moves_its_log_start(world):
    session_id, session = quiet_world(world)
    u0 = partition(world, "u")
    run(produce(world, "u", 0, batch([1])))
    run(produce(world, "u", 0, batch([2])))
    assert run(fetch(world, [("u", 0, 2)], session_id, 2)).responses != ()  # answered the new offsets
    assert run(fetch(world, [], session_id, 3)).responses == () and ("u", 0) in session.quiet
    u0.log.increment_log_start_offset(1)
    u0.notify_log_start_moved()  # what the replica manager does when the log manager's retention says so
    got = partitions_of(run(fetch(world, [], session_id, 4)))
    assert got[("u", 0)].log_start_offset == 1 and got[("u", 0)].records in (None, b"")


def test_a_follower_partition_with_its_hw_below_the_end_is_still_read_so_time_can_move_the_hw(world):
    """Follower 3 is out of the ISR but was caught up within replica.lag.time.max.ms: it holds the HW (Kafka's
    rule). Once the lag time passes the HW moves without any append, when a follower's fetch is recorded: so
    follower 2's session keeps reading the partition while HW < LEO, though 2 is at the end."""
    clock = [1_000]
    world.replica_manager.clock = lambda: clock[0]
    led = partition(world, "t")
    led.make_leader(led.leader_epoch + 1, (1, 2), (1, 2, 3), led.zk_version, led.controller_epoch, 1_000)
    run(produce(world, "t", 0, batch([1])))
    session_id = run(fetch(world, [("t", 0, 0)], 0, 0, replica_id=2)).session_id
    answered = partitions_of(run(fetch(world, [("t", 0, 1)], session_id, 1, replica_id=2)))
    assert led.log.high_watermark == 0 and answered == {}  # follower 2 at the end; 3 holds the HW
    assert ("t", 0) not in world.context.fetch_sessions.sessions[session_id].quiet
    clock[0] = 40_000  # follower 3 has not been caught up for 39 s (lag 30 s): it no longer counts
    got = partitions_of(run(fetch(world, [], session_id, 2, replica_id=2)))
    assert led.log.high_watermark == 1 and got[("t", 0)].high_watermark == 1
