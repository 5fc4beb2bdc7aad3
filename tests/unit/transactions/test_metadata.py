"""TransactionMetadata's pure transitions: prepare (pending state, legal moves), complete, epoch bumps and
exhaustion, KIP-360's expected epochs, fencing."""
import itertools

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from transactions.coordinator.metadata import (
    NO_PRODUCER_EPOCH, SHORT_MAX, IllegalTransitionError, TransactionMetadata, is_epoch_exhausted,
)
from transactions.coordinator.state import TransactionState as S

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def meta(state=S.EMPTY, epoch=0, partitions=(), start=-1, **kw):
    return TransactionMetadata("tx", 1000, producer_epoch=epoch, txn_timeout_ms=60000, state=state,
                               topic_partitions=set(partitions), txn_start_timestamp=start,
                               txn_last_update_timestamp=5, **kw)


def test_epoch_exhaustion_at_short_max_minus_one():
    assert not is_epoch_exhausted(SHORT_MAX - 2)
    assert is_epoch_exhausted(SHORT_MAX - 1) and is_epoch_exhausted(SHORT_MAX)


def test_init_bumps_the_epoch_and_completes():
    m = meta(epoch=3)
    transit = m.prepare_increment_producer_epoch(30000, None, now_ms=10)
    assert m.pending_state == S.EMPTY and m.producer_epoch == 3  # nothing applied before the write
    assert (transit.producer_epoch, transit.last_producer_epoch, transit.txn_timeout_ms) == (4, NO_PRODUCER_EPOCH, 30000)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.txn_timeout_ms, m.pending_state, m.txn_last_update_timestamp) == (4, 30000, None, 10)


def test_a_new_producer_starts_at_epoch_zero():
    m = meta(epoch=NO_PRODUCER_EPOCH)
    transit = m.prepare_increment_producer_epoch(60000, None, now_ms=1)
    m.complete_transition_to(transit)
    assert m.producer_epoch == 0


@pytest.mark.parametrize("expected, result", [
    (5, (6, 5)),  # the current epoch: bumped, the last epoch remembered
    (4, (5, 4)),  # the previous epoch: a retry of a bump that succeeded, answered the current epoch again
    (3, ErrorCode.PRODUCER_FENCED),
    (7, ErrorCode.PRODUCER_FENCED),
])
def test_kip_360_expected_epoch(expected, result):
    m = meta(epoch=5, last_producer_epoch=4)
    transit = m.prepare_increment_producer_epoch(60000, expected, now_ms=1)
    if isinstance(result, ErrorCode):
        assert transit == result and m.pending_state is None
    else:
        assert (transit.producer_epoch, transit.last_producer_epoch) == result


def test_increment_of_an_exhausted_epoch_is_a_bug():
    with pytest.raises(IllegalTransitionError):
        meta(epoch=SHORT_MAX - 1).prepare_increment_producer_epoch(60000, None, 1)


def test_producer_id_rotation():
    m = meta(epoch=SHORT_MAX - 1)
    transit = m.prepare_producer_id_rotation(2000, 60000, now_ms=9, record_last_epoch=True)
    assert (transit.producer_id, transit.producer_epoch, transit.last_producer_id, transit.last_producer_epoch) == (
        2000, 0, 1000, SHORT_MAX - 1)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_id) == (2000, 0, 1000)
    m2 = meta(epoch=SHORT_MAX - 1)
    assert m2.prepare_producer_id_rotation(2001, 60000, 9, record_last_epoch=False).last_producer_epoch == -1
    with pytest.raises(IllegalTransitionError):
        meta(state=S.ONGOING, partitions=[T0]).prepare_producer_id_rotation(3000, 60000, 9, True)


def test_add_partitions_starts_a_transaction_then_grows_it():
    m = meta()
    transit = m.prepare_add_partitions(frozenset({T0}), now_ms=100)
    assert (transit.txn_state, transit.txn_start_timestamp, transit.topic_partitions) == (S.ONGOING, 100, {T0})
    m.complete_transition_to(transit)
    transit = m.prepare_add_partitions(frozenset({T1, T2}), now_ms=200)
    assert transit.txn_start_timestamp == 100 and transit.topic_partitions == {T0, T1, T2}
    m.complete_transition_to(transit)
    assert (m.state, m.topic_partitions, m.txn_start_timestamp, m.txn_last_update_timestamp) == (
        S.ONGOING, {T0, T1, T2}, 100, 200)


@pytest.mark.parametrize("final", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_end_then_complete(final):
    m = meta(state=S.ONGOING, partitions=[T0, T2], start=100)
    m.complete_transition_to(m.prepare_abort_or_commit(final, now_ms=300))
    assert m.state == final and m.topic_partitions == {T0, T2}
    transit = m.prepare_complete(now_ms=400)
    assert transit.txn_state == (S.COMPLETE_COMMIT if final == S.PREPARE_COMMIT else S.COMPLETE_ABORT)
    assert transit.topic_partitions == frozenset() and transit.txn_start_timestamp == 100
    m.complete_transition_to(transit)
    assert (m.state, m.topic_partitions, m.txn_last_update_timestamp) == (transit.txn_state, set(), 400)


def test_fence_bumps_the_epoch_once_even_after_a_failed_fence():
    m = meta(state=S.ONGOING, epoch=7, partitions=[T0], start=1)
    transit = m.prepare_fence_producer_epoch()
    assert (transit.txn_state, transit.producer_epoch, m.pending_state) == (S.PREPARE_EPOCH_FENCE, 8, S.PREPARE_EPOCH_FENCE)
    with pytest.raises(IllegalTransitionError):  # never written: it becomes PrepareAbort
        m.complete_transition_to(transit)
    m2 = meta(state=S.ONGOING, epoch=8, partitions=[T0], start=1, has_failed_epoch_fence=True)
    assert m2.prepare_fence_producer_epoch().producer_epoch == 8
    with pytest.raises(IllegalTransitionError):
        meta(state=S.ONGOING, epoch=SHORT_MAX, partitions=[T0]).prepare_fence_producer_epoch()


def test_dead_is_prepared_but_never_completed():
    m = meta(state=S.COMPLETE_COMMIT, start=3)
    transit = m.prepare_dead()
    assert m.pending_state == S.DEAD
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(transit)


def test_one_pending_transition_at_a_time():
    m = meta()
    m.prepare_add_partitions(frozenset({T0}), 1)
    assert m.pending_transition_in_progress
    with pytest.raises(IllegalTransitionError):
        m.prepare_add_partitions(frozenset({T1}), 2)


PREPARES = {
    S.EMPTY: lambda m: m.prepare_increment_producer_epoch(60000, None, 1),
    S.ONGOING: lambda m: m.prepare_add_partitions(frozenset({T0}), 1),
    S.PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, 1),
    S.PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, 1),
    S.DEAD: lambda m: m.prepare_dead(),
    S.PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_producer_epoch(),
}


@pytest.mark.parametrize("current, target", list(itertools.product(S, PREPARES)))
def test_prepare_follows_the_table(current, target):
    from transactions.coordinator.state import is_valid_transition
    m = meta(state=current, partitions=[T0] if current != S.EMPTY else [], start=1)
    if is_valid_transition(current, target):
        assert PREPARES[target](m).txn_state == target and m.pending_state == target
    else:
        with pytest.raises(IllegalTransitionError):
            PREPARES[target](m)
        assert m.pending_state is None


def test_complete_refuses_a_transition_that_is_not_pending_or_disagrees():
    m = meta(state=S.ONGOING, partitions=[T0], start=1)
    transit = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2)
    m.pending_state = S.PREPARE_ABORT
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(transit)
    m.pending_state = S.PREPARE_COMMIT
    m.producer_epoch = 9  # the epoch moved under it
    with pytest.raises(IllegalTransitionError):
        m.complete_transition_to(transit)
