"""The KIP-227 session cache (brokers.replication.fetch_session), decision by decision."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from brokers.protocol.errors import ErrorCode
from brokers.protocol.fetch_response import FetchPartitionData
from brokers.replication.fetch_session import (
    EVICTION_MS, INT32_MAX, CachedPartition, FetchSessionCache, next_epoch,
)


def wanted(partition, offset=0, max_bytes=1000):
    return SimpleNamespace(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes,
                           log_start_offset=0, current_leader_epoch=1, last_fetched_epoch=1)


def data(partition, hw=0, records=None, error=0, lso=None, log_start=0, diverging=None):
    return FetchPartitionData(partition, error, hw, hw if lso is None else lso, log_start, records,
                              diverging_epoch=diverging)


def make_session(cache, topics=None, privileged=False, now=0, answered=None):
    topics = [("t", [wanted(0), wanted(1)])] if topics is None else topics
    answered = answered or [(topic, [data(w.partition) for w in ws]) for topic, ws in topics]
    context = cache.new_context(0, 0, topics, [], privileged, now)
    assert context.kind == "full"
    return cache.create(topics, answered, privileged, now)


def indexes(topics):
    return {(topic, d.partition_index) for topic, ds in topics for d in ds}


def test_next_epoch():
    assert (next_epoch(0), next_epoch(5), next_epoch(INT32_MAX), next_epoch(-1)) == (1, 6, 1, -1)


def test_sessionless_requests_make_no_session():
    cache = FetchSessionCache(rng=random.Random(1))
    context = cache.new_context(0, -1, [("t", [wanted(0)])], [], False, 0)
    assert context.kind == "sessionless" and not context.incremental and cache.sessions == {}
    answer = [("t", [data(0)])]
    assert cache.respond(context, answer) is answer  # answered in full


def test_full_request_makes_a_session_at_epoch_1():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache)
    assert session_id != 0 and cache.sessions[session_id].epoch == 1
    assert [(t, p.partition) for t, p in cache.sessions[session_id].fetch_list()] == [("t", 0), ("t", 1)]


def test_full_request_with_a_session_id_closes_it_and_final_epoch_closes_without_new():
    cache = FetchSessionCache(rng=random.Random(1))
    old = make_session(cache)
    assert cache.new_context(old, 0, [("t", [wanted(0)])], [], False, 0).kind == "full"
    assert old not in cache.sessions
    other = make_session(cache)
    assert cache.new_context(other, -1, [("t", [wanted(0)])], [], False, 0).kind == "sessionless"
    assert cache.sessions == {}


def test_no_session_for_zero_slots_or_no_partitions():
    assert make_session(FetchSessionCache(max_slots=0)) == 0
    cache = FetchSessionCache()
    assert cache.create([], [], False, 0) == 0 and cache.sessions == {}


def test_unknown_session_and_wrong_epoch():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache)
    assert cache.new_context(session_id + 1, 1, [], [], False, 0).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    for epoch in (2, 7):
        context = cache.new_context(session_id, epoch, [], [], False, 0)
        assert (context.kind, context.error) == ("error", ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    assert cache.sessions[session_id].epoch == 1  # errors do not move the epoch


def test_incremental_moves_the_epoch_and_a_repeated_epoch_is_refused():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache)
    assert cache.new_context(session_id, 1, [], [], False, 5).incremental
    assert cache.sessions[session_id].epoch == 2 and cache.sessions[session_id].last_used_ms == 5
    assert cache.new_context(session_id, 1, [], [], False, 6).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_incremental_adds_updates_and_forgets():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache)
    context = cache.new_context(session_id, 1, [("t", [wanted(1, offset=9, max_bytes=5)]), ("u", [wanted(3)])],
                                [("t", [0]), ("nope", [1])], False, 0)
    session = context.session
    assert [(t, p.partition, p.fetch_offset, p.partition_max_bytes) for t, p in session.fetch_list()] == [
        ("t", 1, 9, 5), ("u", 3, 0, 1000)]
    context = cache.new_context(session_id, 2, [], [("t", [1])], False, 0)
    assert [(t, p.partition) for t, p in context.session.fetch_list()] == [("u", 3)]
    assert list(context.session.partitions) == [("u", 3)]


def test_forgetting_every_partition_closes_the_session():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache)
    context = cache.new_context(session_id, 1, [], [("t", [0, 1])], False, 0)
    assert context.kind == "sessionless" and session_id not in cache.sessions


def test_incremental_response_omits_unchanged_partitions():
    cache = FetchSessionCache(rng=random.Random(1))
    topics = [("t", [wanted(0), wanted(1), wanted(2), wanted(3), wanted(4), wanted(5)])]
    session_id = make_session(cache, topics, answered=[("t", [data(i, hw=10) for i in range(6)])])
    context = cache.new_context(session_id, 1, [], [], False, 0)
    read = [("t", [data(0, hw=10), data(1, hw=10, records=b"x"), data(2, hw=11),
                   data(3, hw=10, error=ErrorCode.NOT_LEADER_OR_FOLLOWER), data(4, hw=10, log_start=3),
                   data(5, hw=10, diverging=(1, 4))]), ("u", [])]
    assert indexes(cache.respond(context, read)) == {("t", 1), ("t", 2), ("t", 3), ("t", 4), ("t", 5)}
    # the next round: only what changed since; the errored partition is sent again when its error is gone
    context = cache.new_context(session_id, 2, [], [], False, 0)
    read = [("t", [data(0, hw=10), data(1, hw=10), data(2, hw=11), data(3, hw=10), data(4, hw=10, log_start=3),
                   data(5, hw=10)])]
    assert indexes(cache.respond(context, read)) == {("t", 3)}
    context = cache.new_context(session_id, 3, [], [], False, 0)
    assert cache.respond(context, read) == []  # nothing changed: no topics at all


def test_last_stable_offset_change_is_answered():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache, [("t", [wanted(0)])], answered=[("t", [data(0, hw=10, lso=8)])])
    context = cache.new_context(session_id, 1, [], [], False, 0)
    assert indexes(cache.respond(context, [("t", [data(0, hw=10, lso=9)])])) == {("t", 0)}


def test_a_partition_added_later_is_answered_once_even_without_data():
    cache = FetchSessionCache(rng=random.Random(1))
    session_id = make_session(cache, [("t", [wanted(0)])])
    context = cache.new_context(session_id, 1, [("t", [wanted(7)])], [], False, 0)
    read = [("t", [data(0), data(7)])]
    assert indexes(cache.respond(context, read)) == {("t", 7)}
    context = cache.new_context(session_id, 2, [], [], False, 0)
    assert cache.respond(context, read) == []


def test_must_respond_with_file_range_records():
    cached = CachedPartition(wanted(0))
    cached.must_respond(data(0, hw=5))
    assert cached.must_respond(data(0, hw=5, records=SimpleNamespace(size=10)))
    assert not cached.must_respond(data(0, hw=5, records=SimpleNamespace(size=0)))


def test_eviction_takes_a_free_slot_first_then_a_stale_session():
    cache = FetchSessionCache(max_slots=2, rng=random.Random(1))
    make_session(cache, now=0)
    second = make_session(cache, now=10)
    assert make_session(cache, now=EVICTION_MS - 1) == 0  # none stale, none evictable: no session
    third = make_session(cache, now=EVICTION_MS + 1)  # the least recently used (first) is stale
    assert third and set(cache.sessions) == {second, third} and cache.evictions == 1


def test_a_follower_evicts_a_smaller_consumer_session_at_once_but_not_a_follower():
    cache = FetchSessionCache(max_slots=1, rng=random.Random(1))
    consumer = make_session(cache, now=0)
    follower = make_session(cache, [("t", [wanted(0), wanted(1), wanted(2)])], privileged=True, now=1)
    assert follower and set(cache.sessions) == {follower}
    assert make_session(cache, privileged=True, now=2) == 0  # a follower's session is evictable only once old
    assert make_session(cache, now=3) == 0  # nor by a consumer
    assert consumer not in cache.sessions


def test_old_sessions_are_evicted_by_value():
    cache = FetchSessionCache(max_slots=2, rng=random.Random(1))
    small = make_session(cache, [("t", [wanted(0)])], now=0)
    big = make_session(cache, [("t", [wanted(0), wanted(1), wanted(2)])], now=0)
    now = EVICTION_MS + 10
    cache.new_context(small, 1, [], [], False, now)  # both used recently: none stale, both old enough
    cache.new_context(big, 1, [], [], False, now)
    assert make_session(cache, [], now=now + 1) == 0  # worth less than either: no session
    newcomer = make_session(cache, [("t", [wanted(0), wanted(1)])], now=now + 2)
    assert newcomer and small not in cache.sessions and big in cache.sessions


@pytest.mark.parametrize("epoch", [1, 5])
def test_incremental_needs_a_known_session(epoch):
    cache = FetchSessionCache()
    assert cache.new_context(12345, epoch, [], [], True, 0).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_answered_partitions_move_to_the_end_of_the_fetch_order():
    cache = FetchSessionCache(rng=random.Random(1))
    topics = [("t", [wanted(0), wanted(1)]), ("u", [wanted(0)])]
    session_id = make_session(cache, topics)
    context = cache.new_context(session_id, 1, [], [], False, 0)
    answer = cache.respond(context, [("t", [data(0, records=b"x"), data(1)]), ("u", [data(0)])])
    assert indexes(answer) == {("t", 0)}
    assert [(t, p.partition) for t, p in context.session.fetch_list()] == [("t", 1), ("u", 0), ("t", 0)]
