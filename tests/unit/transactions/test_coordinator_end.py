"""TransactionCoordinator over in-memory ports (``fakes.World``): EndTxn (Prepare*, the markers, Complete*)
with its errors, markers retried or refused as fenced, failed appends rolled back, and the timers (the abort
scan of timed-out transactions, the expiration of idle transactional ids)."""
from __future__ import annotations

import asyncio

from brokers.protocol.errors import ErrorCode
from tests.unit.transactions.fakes import P, T0, T1, TX, begin, completed, run, wait_for
from transactions.coordinator.state import TransactionState as S


# -- EndTxn --------------------------------------------------------------------------------------------------
def test_commit_writes_prepare_then_markers_then_complete():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=(T0, T1))
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.NONE
        await wait_for(completed(w))
        assert w.log.states(TX) == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
        (marker,) = w.markers.sent
        assert (marker.transactional_id, marker.commit, marker.partitions, marker.coordinator_epoch) == (
            TX, True, {T0, T1}, 5)
        assert w.meta(TX).topic_partitions == set()
        assert w.coordinator.counters["markers_written"] == 2
        assert w.coordinator.counters["transactions_committed"] == 1
        # a retried commit is answered NONE; an abort now is not a transaction
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.NONE
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
        assert len(w.log.states(TX)) == 4
        # the next transaction of the same producer
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T1}) == 0
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, False) == 0
        await wait_for(completed(w))
        assert w.log.states(TX)[-2:] == ["PrepareAbort", "CompleteAbort"] and w.markers.sent[-1].partitions == {T1}
    run(scenario)


def test_bad_end_txn_requests_write_nothing():
    async def scenario(w):
        end = w.coordinator.handle_end_transaction
        assert await end("unknown", 1000, 0, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert await end("", 1000, 0, True) == ErrorCode.INVALID_REQUEST
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        appended = len(w.log.appends)
        assert await end(TX, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # Empty: no transaction
        assert await end(TX, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
        assert await end(TX, pid, epoch + 1, True) == ErrorCode.PRODUCER_FENCED
        assert await end(TX, pid, epoch - 1, True) == ErrorCode.PRODUCER_FENCED
        assert await end(TX, pid + 5, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert len(w.log.appends) == appended and w.markers.sent == []
    run(scenario)


def test_end_txn_the_other_way_while_prepared_is_invalid():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        w.meta(TX).pending_state = None  # as if between the Prepare write and the completion's preparation
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
        w.markers.gate.set()
    run(scenario)


def test_markers_are_retried_until_sent():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.fail_times = 2
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        await wait_for(completed(w))
        assert len(w.markers.sent) == 1 and w.log.states(TX)[-1] == "CompleteCommit"
    run(scenario)


def test_markers_refused_as_fenced_write_no_completion():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.fenced = True  # a newer coordinator (or producer epoch) owns the transaction now
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.NONE
        await wait_for(lambda: w.markers.fenced and not w.coordinator._completions.get(P))
        assert w.log.states(TX)[-1] == "PrepareCommit"
        assert w.coordinator.counters["markers_written"] == 0 and w.coordinator.counters["transactions_committed"] == 0
        # as in Kafka, the transaction stays prepared here until the partition moves to its new owner
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    run(scenario)


# -- failed appends ------------------------------------------------------------------------------------------
def test_deposed_coordinator_changes_nothing():
    async def scenario(w):
        pid, epoch = await begin(w)
        other_pid, other_epoch, _ = await w.coordinator.handle_init_producer_id("tx-2", 60000)
        before = (w.meta(TX).state, w.meta(TX).producer_epoch, set(w.meta(TX).topic_partitions))
        written = {p: list(r) for p, r in w.log.records.items()}
        w.log.fail_with = ErrorCode.NOT_COORDINATOR
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.NOT_COORDINATOR
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T1}) == ErrorCode.NOT_COORDINATOR
        assert await w.coordinator.handle_init_producer_id("tx-2", 60000) == (-1, -1, ErrorCode.NOT_COORDINATOR)
        m = w.meta(TX)
        assert (m.state, m.producer_epoch, set(m.topic_partitions), m.pending_state) == (*before, None)
        m2 = w.meta("tx-2")
        assert (m2.state, m2.producer_id, m2.producer_epoch, m2.pending_state) == (S.EMPTY, other_pid, other_epoch, None)
        assert w.log.records == written and w.markers.sent == []
    run(scenario)


def test_unavailable_log_maps_to_coordinator_not_available_and_rolls_back():
    async def scenario(w):
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        for refused, answered in [(ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                  (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                  (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
                                  (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR)]:
            w.log.fail_with = refused
            assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0}) == answered
            assert (w.meta(TX).state, w.meta(TX).pending_state, w.meta(TX).topic_partitions) == (S.EMPTY, None, set())
        w.log.fail_with = None
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0}) == ErrorCode.NONE
    run(scenario)


def test_failed_epoch_fence_is_not_bumped_twice():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
        m = w.meta(TX)
        assert (m.state, m.pending_state, m.producer_epoch, m.has_failed_epoch_fence) == (S.ONGOING, None, epoch + 1,
                                                                                          True)
        w.log.fail_with = None
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.CONCURRENT_TRANSACTIONS
        await wait_for(completed(w))
        assert w.markers.sent[0].producer_epoch == epoch + 1 and not w.meta(TX).has_failed_epoch_fence
    run(scenario)


# -- timers --------------------------------------------------------------------------------------------------
def test_abort_scan_fences_and_aborts_timed_out_transactions():
    async def scenario(w):
        pid, epoch = await begin(w)
        await w.coordinator.handle_init_producer_id("tx-young", 60000)
        assert await w.coordinator.abort_timed_out_transactions() == 0
        w.clock.advance_ms(60001)
        assert await w.coordinator.abort_timed_out_transactions() == 1
        await wait_for(completed(w))
        assert w.log.states(TX)[-2:] == ["PrepareAbort", "CompleteAbort"]
        assert w.markers.sent[0].producer_epoch == epoch + 1 and w.meta(TX).producer_epoch == epoch + 1
        assert w.coordinator.counters["aborts_by_timeout"] == 1
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
        assert await w.coordinator.abort_timed_out_transactions() == 0
    run(scenario)


def test_abort_scan_skips_a_transaction_its_producer_ended_while_the_scan_awaited():
    async def scenario(w):
        producers = {txn_id: await begin(w, txn_id) for txn_id in ("tx-a", "tx-b", "tx-c")}
        w.clock.advance_ms(60001)
        first, second, third = [t.transactional_id for t in w.coordinator.state.timed_out_transactions(w.clock.ms())]
        append, hooked = w.log.append, []

        async def append_ending_the_second(partition, coordinator_epoch, records):
            if not hooked:  # the scan's first abort: meanwhile the second one's producer commits it
                hooked.append(True)
                assert await w.coordinator.handle_end_transaction(second, *producers[second], True) == 0
                await wait_for(completed(w, second))
            await append(partition, coordinator_epoch, records)
        w.log.append = append_ending_the_second
        assert await w.coordinator.abort_timed_out_transactions() == 2
        await wait_for(lambda: all(completed(w, t)() for t in producers))
        assert [w.meta(t).state for t in (first, second, third)] == [S.COMPLETE_ABORT, S.COMPLETE_COMMIT,
                                                                      S.COMPLETE_ABORT]
    run(scenario)


def test_expiration_writes_tombstones_for_idle_ids_only():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id("idle", 60000)
        pid, epoch = await begin(w, "busy")
        w.clock.advance_ms(w.coordinator.config.transactional_id_expiration_ms + 1)
        assert await w.coordinator.remove_expired_transactional_ids() == 1
        assert w.meta("idle") is None and w.log.states("idle")[-1] is None
        assert w.meta("busy").state == S.ONGOING
        assert w.coordinator.describe()["counters"]["expired_transactional_ids"] == 1
    run(scenario)


def test_failed_tombstone_append_keeps_the_id():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id("idle", 60000)
        w.clock.advance_ms(w.coordinator.config.transactional_id_expiration_ms + 1)
        w.log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await w.coordinator.remove_expired_transactional_ids() == 0
        assert w.meta("idle").pending_state is None and w.meta("idle").state == S.EMPTY
    run(scenario)


def test_timers_run_on_startup():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.clock.advance_ms(60001)
        await w.coordinator.startup()
        await wait_for(completed(w))
        assert w.coordinator.counters["aborts_by_timeout"] == 1
    run(scenario, abort_timed_out_transactions_interval_ms=5)
