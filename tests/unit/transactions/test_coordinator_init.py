"""TransactionCoordinator over in-memory ports (``fakes.World``): InitProducerId (new ids, epoch bumps and
exhaustion, KIP-360 resumes, an ongoing transaction fenced and aborted), AddPartitionsToTxn, KIP-890
verification and the KIP-664 views. Every bad input answers Kafka's code with nothing written."""
from __future__ import annotations

import asyncio

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from tests.unit.transactions.fakes import P, T0, T1, TX, FakeLog, begin, completed, run, wait_for
from transactions.coordinator.metadata import SHORT_MAX
from transactions.coordinator.state import TransactionState as S


# -- InitProducerId ------------------------------------------------------------------------------------------
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


def test_producer_id_allocation_failure_is_answered():
    async def scenario(w):
        async def refuse():
            raise KafkaError("no block", ErrorCode.COORDINATOR_NOT_AVAILABLE)
        w.producer_ids.allocate_producer_id = refuse
        assert await w.coordinator.handle_init_producer_id(None, 60000) == (-1, -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        assert await w.coordinator.handle_init_producer_id(TX, 60000) == (-1, -1, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        assert w.meta(TX) is None and w.log.appends == []
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


def test_fresh_log_is_empty():
    async def scenario(w):
        assert w.coordinator.list_transactions([], []) == (0, [], [])
        assert isinstance(w.log, FakeLog)
    run(scenario)
