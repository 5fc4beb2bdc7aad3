"""TransactionCoordinator over in-memory ports: InitProducerId, AddPartitionsToTxn, EndTxn with their errors,
markers and completion, loading and failover, a deposed coordinator, the abort scan, expiration, epoch exhaustion,
KIP-890 verification and the KIP-664 views. Every bad input answers Kafka's code with nothing written."""
from __future__ import annotations

import asyncio

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from tests.unit.transactions.fakes import PARTITIONS, FakeLog, World, run, wait_for
from transactions.coordinator.metadata import SHORT_MAX
from transactions.coordinator.placement import partition_for
from transactions.coordinator.state import TransactionState as S

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
TX = "tx-1"
P = partition_for(TX, PARTITIONS)


async def begin(w: World, txn_id: str = TX, partitions=(T0,)):
    """InitProducerId then AddPartitionsToTxn: an Ongoing transaction; its (producer id, epoch)."""
    pid, epoch, error = await w.coordinator.handle_init_producer_id(txn_id, 60000)
    assert error == ErrorCode.NONE
    assert await w.coordinator.handle_add_partitions_to_transaction(txn_id, pid, epoch, set(partitions)) == 0
    return pid, epoch


def completed(w: World, txn_id: str = TX):
    return lambda: (m := w.meta(txn_id)) is not None and m.pending_state is None and m.state in (
        S.COMPLETE_COMMIT, S.COMPLETE_ABORT)


# -- InitProducerId ----------------------------------------------------------------------------------------
def test_idempotent_producer_gets_a_new_id_and_nothing_is_written():
    async def scenario(w):
        assert await w.coordinator.handle_init_producer_id(None, 60000) == (1000, 0, ErrorCode.NONE)
        assert await w.coordinator.handle_init_producer_id(None, 60000, (1000, 0)) == (1001, 0, ErrorCode.NONE)
        assert w.log.appends == []
    run(scenario)


def test_bad_init_requests_write_nothing():
    async def scenario(w):
        assert await w.coordinator.handle_init_producer_id("", 60000) == (-1, -1, ErrorCode.INVALID_REQUEST)
        assert await w.coordinator.handle_init_producer_id(TX, 900001) == (-1, -1, ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        assert await w.coordinator.handle_init_producer_id(TX, 0) == (-1, -1, ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        assert w.log.appends == [] and w.meta(TX) is None and w.producer_ids.next == 1000
    run(scenario)


def test_new_transactional_id_then_epoch_bumps():
    async def scenario(w):
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1000, 0, ErrorCode.NONE)
        assert await w.coordinator.handle_init_producer_id(TX, 30000) == (1000, 1, ErrorCode.NONE)
        assert w.log.states(TX) == ["Empty", "Empty"] and w.log.appends == [(P, 5), (P, 5)]
        (_, last), = [d for d in w.log.decoded(P)][-1:]
        assert (last.producer_id, last.producer_epoch, last.txn_timeout_ms) == (1000, 1, 30000)
    run(scenario)


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


def test_epoch_exhaustion_rotates_the_producer_id():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id(TX, 60000)
        w.meta(TX).producer_epoch = SHORT_MAX - 2
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1000, SHORT_MAX - 1, ErrorCode.NONE)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1001, 0, ErrorCode.NONE)
        m = w.meta(TX)
        assert (m.producer_id, m.last_producer_id, m.last_producer_epoch) == (1001, 1000, -1)
    run(scenario)


def test_fencing_at_the_last_epoch_then_a_new_producer_id():
    async def scenario(w):
        pid, _ = await begin(w)
        w.meta(TX).producer_epoch = SHORT_MAX - 1
        assert (await w.coordinator.handle_init_producer_id(TX, 60000)).error == ErrorCode.CONCURRENT_TRANSACTIONS
        await wait_for(completed(w))
        assert w.markers.sent[0].producer_epoch == SHORT_MAX  # the fence takes the epoch kept for it
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (1001, 0, ErrorCode.NONE)
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


def test_kip_360_resume_with_the_exhausted_epoch_records_the_last_epoch():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id(TX, 60000)
        w.meta(TX).producer_epoch = SHORT_MAX - 1
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (1000, SHORT_MAX - 1)) == (1001, 0, 0)
        m = w.meta(TX)
        assert (m.last_producer_id, m.last_producer_epoch) == (1000, SHORT_MAX - 1)
        # a retry of that call (its answer was lost) is recognised through the last producer id
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (1000, SHORT_MAX - 1)) == (1001, 0, 0)
    run(scenario)


def test_kip_360_resume():
    async def scenario(w):
        await w.coordinator.handle_init_producer_id(TX, 60000)  # (1000, 0)
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (1000, 0)) == (1000, 1, ErrorCode.NONE)
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (1000, 0)) == (1000, 1, ErrorCode.NONE)  # retry
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (1000, 7)) == (-1, -1, ErrorCode.PRODUCER_FENCED)
        assert await w.coordinator.handle_init_producer_id(TX, 60000, (999, 1)) == (-1, -1, ErrorCode.PRODUCER_FENCED)
        assert w.log.states(TX) == ["Empty"] * 3
    run(scenario)


def test_init_aborts_an_ongoing_transaction_and_asks_to_retry():
    async def scenario(w):
        pid, epoch = await begin(w)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (-1, -1, ErrorCode.CONCURRENT_TRANSACTIONS)
        await wait_for(completed(w))
        assert w.log.states(TX) == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"]
        (marker,) = w.markers.sent
        assert (marker.commit, marker.producer_id, marker.producer_epoch, marker.partitions, marker.coordinator_epoch
                ) == (False, pid, epoch + 1, {T0}, 5)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (pid, epoch + 2, ErrorCode.NONE)
        # the zombie is fenced
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T1}) == ErrorCode.PRODUCER_FENCED
    run(scenario)


def test_init_while_markers_are_pending_is_concurrent():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.NONE
        assert w.meta(TX).state == S.PREPARE_COMMIT and w.meta(TX).pending_state == S.COMPLETE_COMMIT
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (-1, -1, ErrorCode.CONCURRENT_TRANSACTIONS)
        assert await w.coordinator.handle_end_transaction(TX, pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T1}) == \
            ErrorCode.CONCURRENT_TRANSACTIONS
        w.markers.gate.set()
        await wait_for(completed(w))
        assert w.log.states(TX) == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    run(scenario)


# -- AddPartitionsToTxn --------------------------------------------------------------------------------------
def test_add_partitions_errors_write_nothing():
    async def scenario(w):
        add = w.coordinator.handle_add_partitions_to_transaction
        assert await add("unknown", 1000, 0, {T0}) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert await add("", 1000, 0, {T0}) == ErrorCode.INVALID_REQUEST
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        appended = len(w.log.appends)
        assert await add(TX, pid + 1, epoch, {T0}) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        assert await add(TX, pid, epoch + 1, {T0}) == ErrorCode.PRODUCER_FENCED
        assert len(w.log.appends) == appended and w.meta(TX).state == S.EMPTY
    run(scenario)


def test_add_partitions_grows_the_transaction_and_a_known_subset_writes_nothing():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=(T0,))
        w.clock.advance_ms(10)
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T1}) == ErrorCode.NONE
        appended = len(w.log.appends)
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0, T1}) == ErrorCode.NONE
        assert len(w.log.appends) == appended
        m = w.meta(TX)
        assert m.topic_partitions == {T0, T1} and m.txn_start_timestamp == w.clock.ms() - 10
    run(scenario)


def test_add_offsets_partition_is_an_ordinary_partition():
    async def scenario(w):
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        offsets = TopicPartition("__consumer_offsets", 7)
        assert await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {offsets}) == 0
        assert w.meta(TX).topic_partitions == {offsets}
    run(scenario)


# -- EndTxn ---------------------------------------------------------------------------------------------------
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


def test_resignation_while_markers_are_sent_writes_no_completion():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.markers.gate = asyncio.Event()
        await w.coordinator.handle_end_transaction(TX, pid, epoch, True)
        w.coordinator.on_resigned(P)
        w.markers.gate.set()
        await asyncio.sleep(0)
        assert w.log.states(TX)[-1] == "PrepareCommit" and w.coordinator.state.cache.get(P) is None
    run(scenario)


# -- loading and failover --------------------------------------------------------------------------------------
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


# -- timers ---------------------------------------------------------------------------------------------------------
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


def test_timers_run_on_startup():
    async def scenario(w):
        pid, epoch = await begin(w)
        w.clock.advance_ms(60001)
        await w.coordinator.startup()
        await wait_for(completed(w))
        assert w.coordinator.counters["aborts_by_timeout"] == 1
    run(scenario, abort_timed_out_transactions_interval_ms=5)


# -- KIP-890 and the views -----------------------------------------------------------------------------------
def test_verify_partition():
    async def scenario(w):
        verify = w.coordinator.verify_partition
        assert await verify("unknown", 1, 0, T0) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        pid, epoch, _ = await w.coordinator.handle_init_producer_id(TX, 60000)
        assert await verify(TX, pid, epoch, T0) == ErrorCode.INVALID_TXN_STATE  # no transaction
        await w.coordinator.handle_add_partitions_to_transaction(TX, pid, epoch, {T0})
        assert await verify(TX, pid, epoch, T0) == ErrorCode.NONE
        assert await verify(TX, pid, epoch, T1) == ErrorCode.INVALID_TXN_STATE
        assert await verify(TX, pid, epoch - 1, T0) == ErrorCode.PRODUCER_FENCED
        assert await verify(TX, pid + 1, epoch, T0) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        w.coordinator.on_resigned(P)
        assert await verify(TX, pid, epoch, T0) == ErrorCode.NOT_COORDINATOR
    run(scenario)


def test_describe_list_and_describe_transactions():
    async def scenario(w):
        pid, epoch = await begin(w, partitions=(T0, T1))
        await w.coordinator.handle_init_producer_id("tx-idle", 60000)
        d = w.coordinator.describe()
        (ongoing,) = d["partitions"][P]["ongoing"]
        assert (ongoing["transactional_id"], ongoing["producer_id"], ongoing["state"], ongoing["partitions"]) == (
            TX, pid, "Ongoing", ["t-0", "t-1"])
        assert ongoing["start_ms"] == w.clock.ms() and d["partitions"][P]["coordinator_epoch"] == 5
        assert set(d["counters"]) >= {"markers_written", "aborts_by_timeout"}
        error, unknown, listed = w.coordinator.list_transactions([], [])
        assert error == 0 and unknown == [] and sorted(listed) == [(TX, pid, "Ongoing"), ("tx-idle", 1001, "Empty")]
        assert w.coordinator.list_transactions(["Ongoing", "Bogus"], []) == (0, ["Bogus"], [(TX, pid, "Ongoing")])
        assert w.coordinator.list_transactions([], [1001]) == (0, [], [("tx-idle", 1001, "Empty")])
        a, b, c = w.coordinator.describe_transactions([TX, "unknown", ""])
        assert (a["error_code"], a["transaction_state"], a["producer_epoch"], a["topics"]) == (0, "Ongoing", epoch,
                                                                                              {"t": [0, 1]})
        assert (b["error_code"], c["error_code"]) == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, ErrorCode.INVALID_REQUEST)
        w.coordinator.on_resigned(P)
        assert w.coordinator.describe_transactions([TX])[0]["error_code"] == ErrorCode.NOT_COORDINATOR
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


def test_fresh_log_is_empty():
    async def scenario(w):
        assert w.coordinator.list_transactions([], []) == (0, [], [])
        assert isinstance(w.log, FakeLog)
    run(scenario)


def test_producer_id_allocation_failure_is_answered():
    async def scenario(w):
        from brokers.protocol.errors import KafkaError

        async def refuse():
            raise KafkaError("no block", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        w.producer_ids.allocate_producer_id = refuse
        assert await w.coordinator.handle_init_producer_id(None, 60000) == (-1, -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (-1, -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        assert w.meta(TX) is None and w.log.appends == []
    run(scenario)
