"""BrokerTransactions: the coordinator follows ``__transaction_state`` leadership with the partition's leader
epoch, and KIP-890 verification asks the local coordinator directly and a remote one over the control plane,
its answer turned into the Produce error."""
from __future__ import annotations

import asyncio

import pytest

from brokers.app import transaction_wiring
from brokers.app.transaction_wiring import BrokerTransactions, produce_error
from brokers.config import BrokerConfig
from brokers.control import (
    LeaderAndIsrRequest,
    PartitionState,
    UpdateMetadataRequest,
    VerifyTransactionRequest,
    VerifyTransactionResponse,
    decode,
    encode,
)
from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager
from brokers.model import TRANSACTION_STATE_TOPIC

BROKERS = tuple(BrokerInfo(i, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + i),), http_port=8080 + i) for i in (1, 2))
DATA = TopicPartition("orders", 0)


class FakeCoordinator:
    """Records elections; ``verify_partition`` answers from ``answers`` (NONE by default)."""

    def __init__(self, broker_id, config, log, markers, producer_ids):
        self.broker_id = broker_id
        self.calls: list[tuple] = []
        self.answers: dict[str, ErrorCode] = {}

    def partition_for(self, transactional_id: str) -> int:
        return int(transactional_id[-1])

    async def on_elected(self, partition, coordinator_epoch):
        self.calls.append(("elected", partition, coordinator_epoch))

    def on_resigned(self, partition):
        self.calls.append(("resigned", partition))

    async def verify_partition(self, transactional_id, producer_id, producer_epoch, tp):
        self.calls.append(("verify", transactional_id, producer_id, producer_epoch, tp))
        return self.answers.get(transactional_id, ErrorCode.NONE)

    async def startup(self):
        self.calls.append(("startup",))

    async def shutdown(self):
        self.calls.append(("shutdown",))


@pytest.fixture
def brokers(tmp_path, monkeypatch):
    """Two brokers' BrokerTransactions (ids 1 and 2) over fake coordinators; broker 1 leads __transaction_state-0,
    broker 2 leads partition 1; remote verification goes through the control messages' encoding."""
    monkeypatch.setattr(transaction_wiring, "TransactionCoordinator", FakeCoordinator)
    made: dict[int, BrokerTransactions] = {}
    managers = []
    posted = []

    async def post_control(broker, request, timeout_s, secret, ssl_context):
        posted.append((broker.id, secret))
        if broker.id not in made:
            raise ConnectionError("refused")
        answer = await made[broker.id].serve_verify(decode(type(request), encode(request)))
        return decode(VerifyTransactionResponse, encode(answer))
    monkeypatch.setattr(transaction_wiring, "post_control", post_control)

    def build(broker_id: int, verification: bool = True) -> BrokerTransactions:
        log_manager = LogManager([tmp_path / str(broker_id)])
        log_manager.startup()
        managers.append(log_manager)

        async def topic_config(topic):
            return LogConfig()
        rm = ReplicaManager(broker_id, log_manager, topic_config, lambda: 100)
        cache = MetadataCache(broker_id)
        cache.update(UpdateMetadataRequest(9, 1, 100, tuple(
            PartitionState(TRANSACTION_STATE_TOPIC, p, 1, leader, 3, (1, 2), 0, (1, 2)) for p, leader in
            ((0, 1), (1, 2))), BROKERS))
        config = BrokerConfig.from_properties({"zookeeper.connect": "z:2181", "broker.id": str(broker_id),
                                               "transaction.partition.verification.enable": str(verification).lower()})
        loop_tasks = []
        txn = BrokerTransactions(broker_id, config, rm, cache, None, listener="PLAINTEXT", ssl_context=None, sasl=None,
                                 control_secret=lambda: b"secret", http_tls=None,
                                 spawn=lambda coro: loop_tasks.append(asyncio.ensure_future(coro)))
        txn.tasks = loop_tasks
        made[broker_id] = txn
        return txn

    yield build, posted
    for manager in managers:
        manager.shutdown()


def test_produce_errors():
    assert produce_error(ErrorCode.NONE) == ErrorCode.NONE
    for code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                 ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT):
        assert produce_error(code) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_error(ErrorCode.PRODUCER_FENCED) == ErrorCode.INVALID_PRODUCER_EPOCH
    for code in (ErrorCode.INVALID_TXN_STATE, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
        assert produce_error(code) == code


def test_the_coordinator_follows_transaction_state_leadership_with_the_leader_epoch(brokers):
    build, _ = brokers

    async def scenario():
        txn = build(1)
        await txn.startup()
        rm = txn.replica_manager

        async def state(topic, leader, epoch):
            item = PartitionState(topic, 2, 1, leader, epoch, (1, 2), 0, (1, 2))
            await rm.become_leader_or_follower(LeaderAndIsrRequest(9, 1, 100, (item,), BROKERS))
            await asyncio.gather(*txn.tasks)
        await state(TRANSACTION_STATE_TOPIC, 1, 7)
        await state("orders", 1, 8)  # not the coordinator's business
        await state(TRANSACTION_STATE_TOPIC, 2, 9)
        await state(TRANSACTION_STATE_TOPIC, 1, 11)
        assert txn.coordinator.calls == [("startup",), ("elected", 2, 7), ("resigned", 2), ("elected", 2, 11)]
        del txn.coordinator.calls[:]
        item = PartitionState(TRANSACTION_STATE_TOPIC, 2, 1, 1, 12, (1, 2), 0, (1, 2))
        await rm.become_leader_or_follower(LeaderAndIsrRequest(9, 1, 100, (item,), BROKERS))
        item = PartitionState(TRANSACTION_STATE_TOPIC, 2, 1, 2, 13, (1, 2), 0, (1, 2))
        await rm.become_leader_or_follower(LeaderAndIsrRequest(9, 1, 100, (item,), BROKERS))
        await asyncio.gather(*txn.tasks)  # elected at 12, resigned before the election ran: no stale load
        assert txn.coordinator.calls == [("resigned", 2)]
        await txn.shutdown()
        assert txn.coordinator.calls[-1] == ("shutdown",)
        await rm.shutdown()
    asyncio.run(scenario())


def test_verification_asks_the_local_coordinator_directly(brokers):
    build, posted = brokers

    async def scenario():
        txn = build(1)
        txn.coordinator.answers["t0"] = ErrorCode.INVALID_TXN_STATE
        assert await txn.verify_transaction("t0", 4000, 2, DATA) == ErrorCode.INVALID_TXN_STATE
        assert txn.coordinator.calls == [("verify", "t0", 4000, 2, DATA)] and posted == []
    asyncio.run(scenario())


def test_verification_asks_a_remote_coordinator_over_the_control_plane(brokers):
    build, posted = brokers

    async def scenario():
        local, remote = build(1), build(2)
        assert await local.verify_transaction("t1", 4000, 2, DATA) == ErrorCode.NONE
        remote.coordinator.answers["t1"] = ErrorCode.PRODUCER_FENCED
        assert await local.verify_transaction("t1", 4000, 1, DATA) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert posted == [(2, b"secret"), (2, b"secret")] and local.coordinator.calls == []
        assert remote.coordinator.calls[0] == ("verify", "t1", 4000, 2, DATA)
    asyncio.run(scenario())


def test_an_unreachable_or_unknown_coordinator_is_retriable_for_the_producer(brokers):
    build, _ = brokers

    async def scenario():
        local = build(1)  # broker 2 has no server: connection refused
        assert await local.verify_transaction("t1", 4000, 2, DATA) == ErrorCode.NOT_ENOUGH_REPLICAS
        assert await local.verify_transaction("t5", 4000, 2, DATA) == ErrorCode.NOT_ENOUGH_REPLICAS  # no leader
    asyncio.run(scenario())


def test_verification_is_off_when_disabled(brokers):
    build, _ = brokers
    assert build(1, verification=False).verify_transaction is None
    assert build(2).verify_transaction is not None


def test_serve_verify_answers_with_the_coordinators_code(brokers):
    build, _ = brokers

    async def scenario():
        txn = build(2)
        txn.coordinator.answers["x"] = ErrorCode.NOT_COORDINATOR
        answer = await txn.serve_verify(VerifyTransactionRequest("x", 1, 0, "orders", 3))
        assert answer == VerifyTransactionResponse(int(ErrorCode.NOT_COORDINATOR))
        assert txn.coordinator.calls == [("verify", "x", 1, 0, TopicPartition("orders", 3))]
    asyncio.run(scenario())
