"""ReplicaTransactionLog: leader appends with acks=all semantics and loads of ``__transaction_state`` over a
real ReplicaManager and logs on disk."""
from __future__ import annotations

import asyncio

import pytest

from brokers.app.transaction_log import ReplicaTransactionLog
from brokers.control import LeaderAndIsrRequest, PartitionState, StopReplicaPartition, StopReplicaRequest
from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record import Record, build_batch
from brokers.replication.replica_manager import ReplicaManager
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager
from brokers.model import TRANSACTION_STATE_TOPIC

TP = TopicPartition(TRANSACTION_STATE_TOPIC, 3)
MIN_ISR = [2]


def batch(*pairs: tuple[bytes, bytes | None]) -> bytes:
    return bytes(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(pairs)], base_timestamp=1000))


@pytest.fixture
def setup(tmp_path):
    log_manager = LogManager([tmp_path])
    log_manager.startup()

    async def config(topic):
        return LogConfig(min_insync_replicas=MIN_ISR[0])

    rm = ReplicaManager(1, log_manager, config, lambda: 100)
    MIN_ISR[0] = 2
    yield rm, ReplicaTransactionLog(rm, {"request.timeout.ms": 300})
    log_manager.shutdown()


async def lead(rm: ReplicaManager, leader_epoch: int, isr=(1, 2), replicas=(1, 2), leader=1) -> None:
    state = PartitionState(TP.topic, TP.partition, 1, leader, leader_epoch, tuple(isr), 0, tuple(replicas))
    response = await rm.become_leader_or_follower(LeaderAndIsrRequest(9, 1, 100, (state,), ()))
    assert response.partition_errors[0][2] == 0


def code_of(coro) -> ErrorCode:
    async def run():
        try:
            await coro
        except KafkaError as exc:
            return exc.code
        return ErrorCode.NONE
    return run()


def test_leader_epoch_only_while_leading(setup):
    rm, txn_log = setup

    async def scenario():
        assert txn_log.leader_epoch(TP.partition) is None
        await lead(rm, 4)
        assert txn_log.leader_epoch(TP.partition) == 4
        assert txn_log.leader_epoch(TP.partition + 1) is None
        await lead(rm, 5, leader=2)
        assert txn_log.leader_epoch(TP.partition) is None
    asyncio.run(scenario())


def test_append_returns_once_the_high_watermark_passes_it(setup):
    rm, txn_log = setup

    async def scenario():
        await lead(rm, 2)
        partition = rm.partitions[TP]
        append = asyncio.ensure_future(txn_log.append(TP.partition, 2, batch((b"k1", b"v1"), (b"k2", b"v2"))))
        await asyncio.sleep(0.02)
        assert not append.done()  # the follower has not fetched it yet
        rm.record_follower_fetch(partition, 2, 2)
        await asyncio.wait_for(append, 1)
        assert partition.log.high_watermark == 2
    asyncio.run(scenario())


def test_append_at_another_epoch_or_not_leading_is_not_coordinator(setup):
    rm, txn_log = setup

    async def scenario():
        assert await code_of(txn_log.append(TP.partition, 0, batch((b"k", b"v")))) == ErrorCode.NOT_COORDINATOR
        await lead(rm, 3)
        assert await code_of(txn_log.append(TP.partition, 2, batch((b"k", b"v")))) == ErrorCode.NOT_COORDINATOR
        assert rm.partitions[TP].log.log_end_offset == 0  # nothing was appended
    asyncio.run(scenario())


def test_leadership_lost_while_waiting_is_not_coordinator(setup):
    rm, txn_log = setup

    async def scenario():
        await lead(rm, 1)
        append = asyncio.ensure_future(code_of(txn_log.append(TP.partition, 1, batch((b"k", b"v")))))
        await asyncio.sleep(0.02)
        await lead(rm, 2, leader=2)
        assert await asyncio.wait_for(append, 1) == ErrorCode.NOT_COORDINATOR
    asyncio.run(scenario())


def test_a_new_epoch_of_the_same_leader_fences_the_old_one(setup):
    rm, txn_log = setup

    async def scenario():
        await lead(rm, 1)
        append = asyncio.ensure_future(code_of(txn_log.append(TP.partition, 1, batch((b"k", b"v")))))
        await asyncio.sleep(0.02)
        await lead(rm, 2)  # stays leader, new epoch: the parked append completes but at an old epoch
        rm.record_follower_fetch(rm.partitions[TP], 2, 1)
        assert await asyncio.wait_for(append, 1) == ErrorCode.NOT_COORDINATOR
    asyncio.run(scenario())


def test_min_isr_is_checked_before_the_append(setup):
    rm, txn_log = setup

    async def scenario():
        await lead(rm, 1, isr=(1,))
        assert await code_of(txn_log.append(TP.partition, 1, batch((b"k", b"v")))) == ErrorCode.NOT_ENOUGH_REPLICAS
        assert rm.partitions[TP].log.log_end_offset == 0
    asyncio.run(scenario())


def test_append_times_out_after_the_request_timeout(setup):
    rm, txn_log = setup

    async def scenario():
        await lead(rm, 1)
        assert await code_of(txn_log.append(TP.partition, 1, batch((b"k", b"v")))) == ErrorCode.REQUEST_TIMED_OUT
    asyncio.run(scenario())


def test_read_returns_every_record_from_log_start_to_log_end(setup):
    rm, txn_log = setup

    async def scenario():
        assert await code_of(txn_log.read(TP.partition)) == ErrorCode.NOT_LEADER_OR_FOLLOWER  # not hosted here
        MIN_ISR[0] = 1
        await lead(rm, 1, isr=(1,), replicas=(1,))
        await txn_log.append(TP.partition, 1, batch((b"a", b"1"), (b"b", b"2")))
        await txn_log.append(TP.partition, 1, batch((b"a", None)))
        await txn_log.append(TP.partition, 1, batch(*((b"k%d" % i, b"x" * 100) for i in range(50))))
        records = await txn_log.read(TP.partition)
        assert records[:3] == [(b"a", b"1"), (b"b", b"2"), (b"a", None)]
        assert records[3:] == [(b"k%d" % i, b"x" * 100) for i in range(50)]
    asyncio.run(scenario())


def test_read_of_a_follower_replica_reads_its_local_log(setup):
    rm, txn_log = setup

    async def scenario():
        MIN_ISR[0] = 1
        await lead(rm, 1, isr=(1,), replicas=(1, 2))
        await txn_log.append(TP.partition, 1, batch((b"a", b"1")))
        await rm.stop_replicas(StopReplicaRequest(9, 1, 100, (StopReplicaPartition(TP.topic, TP.partition, 2,
                                                                                   False),)))
        assert txn_log.leader_epoch(TP.partition) is None
        assert await txn_log.read(TP.partition) == [(b"a", b"1")]
    asyncio.run(scenario())


def test_read_stops_before_a_corrupt_batch_and_keeps_what_came_before(setup):
    rm, txn_log = setup

    async def scenario():
        MIN_ISR[0] = 1
        await lead(rm, 1, isr=(1,), replicas=(1,))
        first, second = batch((b"a", b"1"), (b"b", b"2")), batch((b"c", b"3"))
        for records in (first, second, batch((b"d", b"4"))):
            await txn_log.append(TP.partition, 1, records)
        segment = rm.partitions[TP].log.segments[0]
        with open(segment.log_path, "r+b") as f:  # a flipped bit in the second batch's record: its CRC fails
            f.seek(len(first) + len(second) - 2)
            byte = f.read(1)
            f.seek(len(first) + len(second) - 2)
            f.write(bytes([byte[0] ^ 0x01]))
        assert await txn_log.read(TP.partition) == [(b"a", b"1"), (b"b", b"2")]
    asyncio.run(scenario())


def test_an_io_error_while_reading_is_raised_for_the_coordinator_to_retry(setup, monkeypatch):
    rm, txn_log = setup

    async def scenario():
        MIN_ISR[0] = 1
        await lead(rm, 1, isr=(1,), replicas=(1,))
        await txn_log.append(TP.partition, 1, batch((b"a", b"1")))
        log = rm.partitions[TP].log

        def failing_read(*args, **kwargs):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(log, "read", failing_read)
        with pytest.raises(OSError):
            await txn_log.read(TP.partition)
    asyncio.run(scenario())
