"""The fetcher's side of KIP-227 (brokers.replication.fetch_session_handler): what each request names."""
from __future__ import annotations

from brokers.protocol.errors import ErrorCode
from brokers.replication.fetch_session_handler import FetchSessionHandler

A, B, C = "a", "b", "c"


def established(wanted, session_id=42):
    handler = FetchSessionHandler()
    request = handler.build(wanted)
    assert request.full and request.epoch == 0 and request.session_id == 0 and request.partitions == wanted
    assert handler.handle_response(request, ErrorCode.NONE, session_id)
    assert (handler.session_id, handler.epoch) == (session_id, 1)
    return handler


def test_incremental_names_only_changed_added_and_forgotten_partitions():
    handler = established({A: (1, 0), B: (1, 5)})
    request = handler.build({A: (1, 0), B: (1, 7), C: (1, 0)})
    assert (request.full, request.session_id, request.epoch) == (False, 42, 1)
    assert request.partitions == {B: (1, 7), C: (1, 0)} and request.forgotten == ()
    assert handler.handle_response(request, ErrorCode.NONE, 42) and handler.epoch == 2
    request = handler.build({B: (1, 7), C: (1, 0)})
    assert request.partitions == {} and request.forgotten == (A,)
    handler.handle_response(request, ErrorCode.NONE, 42)
    assert handler.sent == {B: (1, 7), C: (1, 0)} and handler.epoch == 3
    # a partition forgotten then wanted again is added back
    assert handler.build({A: (1, 0), B: (1, 7), C: (1, 0)}).partitions == {A: (1, 0)}


def test_an_idle_round_names_nothing():
    handler = established({A: (1, 0)})
    request = handler.build({A: (1, 0)})
    assert request.partitions == {} and request.forgotten == () and not request.full


def test_session_not_found_starts_over_without_a_session():
    handler = established({A: (1, 0)})
    request = handler.build({A: (1, 0)})
    assert not handler.handle_response(request, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    request = handler.build({A: (1, 0)})
    assert (request.full, request.session_id, request.epoch, request.partitions) == (True, 0, 0, {A: (1, 0)})


def test_invalid_epoch_closes_the_session_in_the_next_full_request():
    handler = established({A: (1, 0)})
    request = handler.build({A: (1, 0)})
    assert not handler.handle_response(request, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    request = handler.build({A: (1, 0)})
    assert (request.full, request.session_id, request.epoch) == (True, 42, 0)
    assert handler.handle_response(request, ErrorCode.NONE, 43) and handler.session_id == 43


def test_no_slot_keeps_fetching_in_full():
    handler = FetchSessionHandler()
    request = handler.build({A: (1, 0)})
    assert handler.handle_response(request, ErrorCode.NONE, 0)
    assert handler.build({A: (1, 0)}).full


def test_a_sessionless_answer_to_an_incremental_request_starts_over():
    handler = established({A: (1, 0)})
    request = handler.build({})
    assert request.forgotten == (A,)
    assert handler.handle_response(request, ErrorCode.NONE, 0)  # the leader closed the emptied session
    assert handler.build({A: (1, 0)}).full and handler.session_id == 0


def test_reset_after_a_lost_answer_closes_the_session():
    handler = established({A: (1, 0)})
    handler.build({A: (1, 1)})
    handler.reset()
    request = handler.build({A: (1, 1)})
    assert (request.full, request.session_id, request.partitions) == (True, 42, {A: (1, 1)})


def test_with_the_changed_keys_only_those_are_compared():
    handler = established({A: (1, 0), B: (1, 5)})
    wanted = {A: (1, 3), B: (1, 6), C: (1, 0)}  # B changed too, but the caller did not say so
    request = handler.build(wanted, changed={A, C})
    assert request.partitions == {A: (1, 3), C: (1, 0)} and request.forgotten == ()
    handler.handle_response(request, ErrorCode.NONE, 42)
    # a changed key no longer wanted is forgotten; an unchanged one is neither named nor forgotten
    request = handler.build({B: (1, 6), C: (1, 0)}, changed={A, C})
    assert request.partitions == {} and request.forgotten == (A,)
    # a key named as changed but equal to what the leader has is not named
    assert handler.build(wanted, changed={C}).partitions == {}
    # a full request names everything wanted, whatever changed says
    handler.reset()
    assert handler.build(wanted, changed=()).partitions == wanted
