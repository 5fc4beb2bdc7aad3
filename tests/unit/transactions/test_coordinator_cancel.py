"""A client request whose connection closes while the coordinator writes ``__transaction_state``: the listener
cancels the request's task, but the transition it prepared must still be resolved (written and applied, or
dropped), as in Kafka, whose append callback runs whether or not anyone waits for the answer. Before the fix a
cancelled InitProducerId left its pending state set for ever: every later InitProducerId of the id answered
CONCURRENT_TRANSACTIONS until its partition moved (the soak's seed 1590159789)."""
from __future__ import annotations

import asyncio

from brokers.protocol.errors import ErrorCode
from tests.unit.transactions.fakes import T0, TX, begin, completed, run, wait_for
from transactions.coordinator.state import TransactionState as S


async def _cancel_while_appending(w, call) -> None:
    """Start ``call()`` with appends held, cancel it once its append began, then let the append finish."""
    w.log.gate = asyncio.Event()
    appends = len(w.log.appends)
    task = asyncio.ensure_future(call())
    await wait_for(lambda: len(w.log.appends) > appends)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    w.log.gate.set()
    w.log.gate = None


def test_a_cancelled_init_producer_id_still_completes_its_epoch_bump():
    async def scenario(w):
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1000, 0, ErrorCode.NONE)
        await _cancel_while_appending(w, lambda: w.coordinator.handle_init_producer_id(TX, 60000))
        await wait_for(lambda: w.meta(TX).pending_state is None)
        assert (w.meta(TX).state, w.meta(TX).producer_epoch) == (S.EMPTY, 1)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1000, 2, ErrorCode.NONE)
    run(scenario)


def test_a_cancelled_fencing_init_producer_id_still_aborts_the_ongoing_transaction():
    async def scenario(w):
        pid, epoch = await begin(w)
        await _cancel_while_appending(w, lambda: w.coordinator.handle_init_producer_id(TX, 60000))
        await wait_for(completed(w))
        assert w.meta(TX).state == S.COMPLETE_ABORT and w.markers.sent[-1].producer_epoch == epoch + 1
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (pid, epoch + 2, ErrorCode.NONE)
    run(scenario)


def test_a_cancelled_end_txn_still_sends_its_markers_and_completes():
    async def scenario(w):
        pid, epoch = await begin(w)
        await _cancel_while_appending(w, lambda: w.coordinator.handle_end_transaction(TX, pid, epoch, True))
        await wait_for(completed(w))
        assert w.meta(TX).state == S.COMPLETE_COMMIT and w.markers.sent[-1].partitions == frozenset({T0})
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (pid, epoch + 1, ErrorCode.NONE)
    run(scenario)


def test_a_cancelled_add_partitions_still_resolves_its_pending_state():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=())
        await _cancel_while_appending(
            w, lambda: w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0}))
        await wait_for(lambda: w.meta(TX).pending_state is None)
        assert w.meta(TX).state == S.ONGOING and T0 in w.meta(TX).topic_partitions
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, False) == ErrorCode.NONE
        await wait_for(completed(w))
    run(scenario)
