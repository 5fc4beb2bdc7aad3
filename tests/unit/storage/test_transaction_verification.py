"""KIP-890's verification guard (Kafka 3.6): a transactional batch that would open a transaction is
appended only with the guard registered before the coordinator was asked, and a marker of the producer
in between voids it."""
from __future__ import annotations

import pytest

from brokers.protocol.errors import InvalidTxnStateError
from brokers.storage.log import Log
from brokers.storage.producer_state import (
    SENTINEL_VERIFICATION_GUARD,
    ProducerStateManager,
    VerificationGuard,
    verification_missing,
)

from .test_transactions import txn


@pytest.fixture
def log(make_log) -> Log:
    return make_log("t-0")


# -- the pure decision -----------------------------------------------------------------------------
GUARD = VerificationGuard(7)


@pytest.mark.parametrize("txn_open, guard, registered, missing", [
    (False, None, None, False),  # verification off
    (True, None, GUARD, False),
    (True, SENTINEL_VERIFICATION_GUARD, None, False),  # already in the transaction
    (True, GUARD, None, False),  # an earlier batch opened it meanwhile
    (False, GUARD, GUARD, False),  # verified and still registered
    (False, GUARD, None, True),  # a marker voided it
    (False, GUARD, VerificationGuard(7), True),  # ... and another verification started since (ABA)
    (False, SENTINEL_VERIFICATION_GUARD, None, True),  # was in a transaction, its marker landed
    (False, SENTINEL_VERIFICATION_GUARD, SENTINEL_VERIFICATION_GUARD, True),
])
def test_verification_missing(txn_open, guard, registered, missing):
    assert verification_missing(txn_open, guard, registered) is missing


# -- the producer state's registry -----------------------------------------------------------------
def test_a_guard_is_shared_until_a_marker_or_the_opening_batch_drops_it(log):
    first = log.start_transaction_verification(7)
    assert first is not SENTINEL_VERIFICATION_GUARD
    assert log.start_transaction_verification(7) is first  # concurrent requests of one transaction
    assert log.start_transaction_verification(8) is not first
    log.append_as_leader(txn(7, 0), 0, first)
    assert log.start_transaction_verification(7) is SENTINEL_VERIFICATION_GUARD  # open here now
    log.append_as_leader(txn(7, 1), 0, first)  # a second in-flight batch of the same transaction
    log.append_marker(7, 0, False, coordinator_epoch=0, leader_epoch=0)
    second = log.start_transaction_verification(7)
    assert second is not first and second is not SENTINEL_VERIFICATION_GUARD


def test_a_marker_during_verification_refuses_the_late_batch(log):
    guard = log.start_transaction_verification(7)
    log.append_marker(7, 0, False, coordinator_epoch=0, leader_epoch=0)  # EndTxn or a fencing abort
    end = log.log_end_offset
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(7, 0), 0, guard)
    assert log.log_end_offset == end
    assert log.producer_state.ongoing_transactions() == {}


def test_a_stale_guard_is_refused_after_a_new_verification_started(log):
    stale = log.start_transaction_verification(7)
    log.append_marker(7, 0, True, coordinator_epoch=0, leader_epoch=0)
    fresh = log.start_transaction_verification(7)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(7, 0), 0, stale)
    assert log.append_as_leader(txn(7, 0), 0, fresh).first_offset == 1
    assert log.producer_state.ongoing_transactions() == {7: 1}


def test_the_sentinel_appends_only_into_a_transaction_still_open(log):
    log.append_as_leader(txn(7, 0), 0, log.start_transaction_verification(7))
    sentinel = log.start_transaction_verification(7)
    assert sentinel is SENTINEL_VERIFICATION_GUARD
    log.append_as_leader(txn(7, 1), 0, sentinel)
    log.append_marker(7, 0, False, coordinator_epoch=0, leader_epoch=0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(7, 2), 0, sentinel)
    assert log.producer_state.ongoing_transactions() == {}


def test_without_a_guard_nothing_is_checked(log):
    assert log.append_as_leader(txn(7, 0), 0).first_offset == 0
    assert log.producer_state.ongoing_transactions() == {7: 0}


def test_reloading_and_full_truncation_forget_pending_verifications(log):
    state = ProducerStateManager()
    guard = state.start_verification(5, 0)
    state.truncate_fully()
    assert state.start_verification(5, 0) is not guard
    guard = log.start_transaction_verification(5)
    log.truncate_fully_and_start_at(0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(5, 0), 0, guard)


def test_an_unused_guard_expires_with_the_producer_ids():
    state = ProducerStateManager()
    guard = state.start_verification(5, 1_000)  # the coordinator refused: no batch, no marker comes
    state.remove_expired(1_999, 1_000)
    assert state.start_verification(5, 1_999) is guard
    state.remove_expired(2_000, 1_000)
    assert state.start_verification(5, 2_000) is not guard
