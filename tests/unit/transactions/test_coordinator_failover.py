"""TransactionCoordinator over in-memory ports (``fakes.World``): elections and resignations of
``__transaction_state`` partitions, loading (in progress, failed and retried, cancelled), a successor completing
the transactions its predecessor left prepared, and an election racing the broker's shutdown."""
from __future__ import annotations

import asyncio

from brokers.protocol.errors import ErrorCode, KafkaError
from tests.unit.transactions.fakes import P, T0, T1, TX, World, begin, completed, run, wait_for
from transactions.coordinator.state import TransactionState as S


# -- elections and resignations ------------------------------------------------------------------------------
def test_not_coordinator_and_loading():
    async def scenario(w):
        w.coordinator.on_resigned(P)
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.NOT_COORDINATOR
        w.log.read_gate = asyncio.Event()
        loading = asyncio.create_task(w.coordinator.on_elected(P, 6))
        await wait_for(lambda: P in w.coordinator.state.loading)
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert await w.coordinator.handle_end_transaction(TX, 1, 0, True) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        w.log.read_gate.set()
        await loading
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1000, 0, ErrorCode.NONE)
        assert w.log.appends == [(P, 6)]  # the new coordinator epoch
    run(scenario)


def test_repeated_election_at_the_same_epoch_keeps_the_cache():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        meta = w.meta(TX)
        await w.coordinator.on_elected(P, 5)
        assert w.meta(TX) is meta
        w.markers.gate.set()
        await wait_for(completed(w))
        assert w.log.states(TX)[-1] == "CompleteCommit" and len(w.markers.sent) == 1
    run(scenario)


def test_reelection_during_an_append_answers_not_coordinator():
    async def scenario(w):
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        w.log.gate = asyncio.Event()
        adding = asyncio.create_task(w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0}))
        await wait_for(lambda: len(w.log.appends) == 2)
        w.coordinator.on_resigned(P)
        await w.coordinator.on_elected(P, 6)
        reloaded = w.meta(TX)
        w.log.gate.set()
        assert await adding == ErrorCode.NOT_COORDINATOR
        assert w.meta(TX) is reloaded and (reloaded.state, reloaded.pending_state) == (S.EMPTY, None)
    run(scenario)


def test_resignation_while_markers_are_sent_writes_no_completion():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        completions = set(w.coordinator._completions[P])
        assert completions and w.log.states(TX)[-1] == "PrepareCommit"
        appended = len(w.log.appends)
        w.coordinator.on_resigned(P)
        w.markers.gate.set()
        await asyncio.gather(*completions, return_exceptions=True)  # whatever they were going to do is done
        assert all(task.done() for task in completions) and not w.coordinator._completions.get(P)
        assert len(w.log.appends) == appended and w.log.states(TX)[-1] == "PrepareCommit"
        assert w.coordinator.counters["transactions_committed"] == 0 and w.coordinator.state.cache.get(P) is None
    run(scenario)


# -- loading and failover ------------------------------------------------------------------------------------
def test_failover_completes_a_prepared_commit_from_the_log():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=(T0, T1))
        w.markers.gate = asyncio.Event()  # the first coordinator dies before its markers leave
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        assert w.log.states(TX)[-1] == "PrepareCommit"
        successor = World(log=w.log)
        try:
            await successor.coordinator.on_elected(P, 6)
            await wait_for(completed(successor))
            (marker,) = successor.markers.sent
            assert (marker.commit, marker.partitions, marker.coordinator_epoch, marker.producer_epoch) == (
                True, {T0, T1}, 6, epoch)
            assert w.log.states(TX)[-1] == "CompleteCommit" and w.log.appends[-1] == (P, 6)
            assert successor.meta(TX).state == S.COMPLETE_COMMIT
        finally:
            w.markers.gate.set()
            await successor.coordinator.shutdown()
    run(scenario)


def test_failover_completes_a_prepared_abort_and_keeps_ongoing_ones():
    async def scenario(w):
        pid, epoch = await begin(w, "tx-a")
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction("tx-a", pid, epoch, False)
        pid_b, epoch_b = await begin(w, "tx-b")
        successor = World(log=w.log)
        try:
            await successor.elect_all(epoch=6)
            await wait_for(completed(successor, "tx-a"))
            assert successor.markers.sent[0].commit is False
            b = successor.meta("tx-b")
            assert (b.state, b.producer_id, b.producer_epoch, b.topic_partitions) == (S.ONGOING, pid_b, epoch_b, {T0})
        finally:
            w.markers.gate.set()
            await successor.coordinator.shutdown()
    run(scenario)


def test_a_failed_load_is_retried_and_never_installs_an_empty_cache():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=(T0, T1))
        w.markers.gate = asyncio.Event()  # the first coordinator dies before its markers leave
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        successor = World(log=w.log, load_retry_backoff_ms=1)
        try:
            w.log.read_failures = [OSError(5, "Input/output error"),
                                   KafkaError("not hosted yet", ErrorCode.NOT_LEADER_OR_FOLLOWER)]
            reads = w.log.reads
            loading = asyncio.create_task(successor.coordinator.on_elected(P, 6))
            await wait_for(lambda: w.log.reads >= reads + 2)
            # still loading, never "no such transactional id": no new producer id, no lost PrepareCommit
            assert (await successor.coordinator.handle_init_producer_id(TX, 60000)).error == \
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await loading
            assert w.log.reads == reads + 3 and successor.producer_ids.next == 1000
            await wait_for(completed(successor))
            assert successor.markers.sent[0].partitions == {T0, T1} and w.log.states(TX)[-1] == "CompleteCommit"
        finally:
            w.markers.gate.set()
            await successor.coordinator.shutdown()
    run(scenario)


def test_a_load_retrying_after_errors_stops_when_the_partition_is_resigned():
    async def scenario(w):
        w.coordinator.on_resigned(P)
        w.log.read_failures = [OSError(5, "Input/output error")] * 1000
        reads = w.log.reads
        loading = asyncio.create_task(w.coordinator.on_elected(P, 6))
        await wait_for(lambda: w.log.reads == reads + 1)  # failed once, now waiting out its 10 s backoff
        w.coordinator.on_resigned(P)
        await asyncio.wait_for(loading, 1)
        assert P not in w.coordinator.state.loading and P not in w.coordinator.state.cache
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.NOT_COORDINATOR
    run(scenario, load_retry_backoff_ms=10_000)


def test_a_cancelled_load_leaves_the_partition_unknown_not_loading():
    async def scenario(w):
        w.coordinator.on_resigned(P)
        w.log.read_gate = asyncio.Event()
        loading = asyncio.create_task(w.coordinator.on_elected(P, 6))
        await wait_for(lambda: P in w.coordinator.state.loading)
        loading.cancel()
        await asyncio.gather(loading, return_exceptions=True)
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.NOT_COORDINATOR
    run(scenario)


def test_load_applies_tombstones_and_the_last_record_wins():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id("tx-a", 60000)
        await w.coordinator.handle_init_producer_id("tx-a", 60000)
        await w.coordinator.handle_init_producer_id("tx-b", 60000)
        w.clock.advance_ms(w.coordinator.config.transactional_id_expiration_ms + 1)
        await w.coordinator.handle_init_producer_id("tx-a", 60000)  # tx-a is fresh again, tx-b expires
        assert await w.coordinator.remove_expired_transactional_ids() == 1
        successor = World(log=w.log)
        await successor.elect_all(epoch=6)
        assert successor.meta("tx-b") is None and successor.meta("tx-a").producer_epoch == 2
        await successor.coordinator.shutdown()
    run(scenario)


def test_list_while_loading():
    async def scenario(w):
        w.log.read_gate = asyncio.Event()
        loading = asyncio.create_task(w.coordinator.on_elected(0, 9))
        await wait_for(lambda: w.coordinator.state.loading)
        assert w.coordinator.list_transactions([], [])[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert w.coordinator.describe()["loading"] == [0]
        w.log.read_gate.set()
        await loading
    run(scenario)


def test_an_election_after_shutdown_starts_nothing():
    async def main():
        w = World()
        await w.elect_all()
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)  # PrepareCommit in the log
        await w.coordinator.startup()
        await w.coordinator.shutdown()
        reads = w.log.reads
        await w.coordinator.on_elected(P, 6)  # a LeaderAndIsr racing the broker's shutdown
        assert w.log.reads == reads and w.coordinator.state.cache == {} and w.coordinator.state.loading == {}
        assert not any(w.coordinator._completions.values()) and w.coordinator._timers == []
        await w.coordinator.startup()  # and the timers stay stopped
        assert w.coordinator._timers == []
    asyncio.run(asyncio.wait_for(main(), 5))
