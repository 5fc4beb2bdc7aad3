"""Transactions with unmodified clients against a real 3-broker cluster (``__transaction_state`` with 4
partitions, RF 3, min ISR 2): confluent-kafka (librdkafka), aiokafka 0.14 (v0 of every transaction API) and
kafka-python 3.0.

With each client's own producer, one ``transactional.id``, three transactions on a 1-partition output topic:

1. produce + ``send_offsets_to_transaction`` + commit. While it is open the LSO stays at the transaction's
   first offset although its records are below the high watermark, and the group's offset is not in
   ZooKeeper (``/consumers/<group>/offsets/<topic>/<partition>``); after the commit it is, and LSO == HW.
2. the same, aborted: the group's offset in ZooKeeper stays the first transaction's.
3. a committed transaction ending with a sentinel record.

Then the client's own consumers: read_committed sees 1 and 3 and never 2, read_uncommitted sees all three
(the control records are never returned); the committed offset in ZooKeeper is the third transaction's.
"""
from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.structs import OffsetAndMetadata

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.txn_support import create_topics, end_offsets, seed, stable
from tests.integration.znodes import committed_offset

TXN_PROPERTIES = {"transaction.state.log.num.partitions": "4", "transaction.state.log.replication.factor": "3",
                  "transaction.state.log.min.isr": "2", "offsets.topic.num.partitions": "4",
                  "group.initial.rebalance.delay.ms": "0"}
SENTINEL = b"end"
TIMEOUT = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn-clients") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000, properties=TXN_PROPERTIES) as c:
        yield c


# -- each client's transactional producer and consumer --------------------------------------------
class ConfluentClient:
    def __init__(self, bootstrap: str, transactional_id: str):
        self.bootstrap = bootstrap
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
        self.producer.init_transactions(TIMEOUT)

    def transaction(self, topic, values, offsets_topic, offset, group, before_end, commit: bool) -> None:
        meta = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        try:
            self.producer.begin_transaction()
            for v in values:
                self.producer.produce(topic, v, partition=0)
            self.producer.send_offsets_to_transaction([TopicPartition(offsets_topic, 0, offset)],
                                                      meta.consumer_group_metadata(), TIMEOUT)
            assert self.producer.flush(TIMEOUT) == 0
            before_end()
            (self.producer.commit_transaction if commit else self.producer.abort_transaction)(TIMEOUT)
        finally:
            meta.close()

    def read(self, topic: str, isolation: str) -> list[bytes]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"r-{uuid.uuid4().hex}",
                             "isolation.level": isolation, "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, -2)])
        values: list[bytes] = []
        try:
            wait_for(lambda: _collect(values, [m.value() for m in consumer.consume(100, 0.2) if m.error() is None]),
                     TIMEOUT, f"the sentinel under {isolation}", 0)
        finally:
            consumer.close()
        return values

    def close(self) -> None:
        self.producer.flush(10)


class KafkaPythonClient:
    def __init__(self, bootstrap: str, transactional_id: str):
        self.bootstrap = bootstrap
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
        self.producer.init_transactions()

    def transaction(self, topic, values, offsets_topic, offset, group, before_end, commit: bool) -> None:
        self.producer.begin_transaction()
        for v in values:
            self.producer.send(topic, v, partition=0)
        offsets = {KpTopicPartition(offsets_topic, 0): OffsetAndMetadata(offset, "", -1)}
        self.producer.send_offsets_to_transaction(offsets, group)
        self.producer.flush(TIMEOUT)
        before_end()
        (self.producer.commit_transaction if commit else self.producer.abort_transaction)()

    def read(self, topic: str, isolation: str) -> list[bytes]:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, isolation_level=isolation, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        consumer.assign([KpTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        try:
            wait_for(lambda: _collect(values, [r.value for rs in consumer.poll(200).values() for r in rs]),
                     TIMEOUT, f"the sentinel under {isolation}", 0)
        finally:
            consumer.close()
        return values

    def close(self) -> None:
        self.producer.close(10)


class AioKafkaClient:
    """aiokafka speaks v0 of InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit."""

    def __init__(self, bootstrap: str, transactional_id: str):
        self.bootstrap = bootstrap
        self.loop = asyncio.new_event_loop()
        self.producer = self.loop.run_until_complete(self._start(transactional_id))

    async def _start(self, transactional_id: str) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=transactional_id)
        await producer.start()  # InitProducerId
        return producer

    def transaction(self, topic, values, offsets_topic, offset, group, before_end, commit: bool) -> None:
        async def run() -> None:
            await self.producer.begin_transaction()
            for v in values:
                await self.producer.send_and_wait(topic, v, partition=0)
            await self.producer.send_offsets_to_transaction({AioTopicPartition(offsets_topic, 0): offset}, group)
            before_end()
            await (self.producer.commit_transaction() if commit else self.producer.abort_transaction())

        self.loop.run_until_complete(run())

    def read(self, topic: str, isolation: str) -> list[bytes]:
        async def run() -> list[bytes]:
            consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, isolation_level=isolation,
                                        enable_auto_commit=False, auto_offset_reset="earliest")
            await consumer.start()
            values: list[bytes] = []
            try:
                consumer.assign([AioTopicPartition(topic, 0)])
                await consumer.seek_to_beginning()
                async with asyncio.timeout(TIMEOUT):
                    while not _collect(values, [r.value for rs in (await consumer.getmany(timeout_ms=200)).values()
                                                for r in rs]):
                        pass
            finally:
                await consumer.stop()
            return values

        return self.loop.run_until_complete(run())

    def close(self) -> None:
        self.loop.run_until_complete(self.producer.stop())
        self.loop.close()


def _collect(values: list[bytes], batch: list[bytes]) -> bool:
    values.extend(batch)
    return SENTINEL in values


CLIENTS = {"confluent-kafka": ConfluentClient, "kafka-python": KafkaPythonClient, "aiokafka": AioKafkaClient}


# -- the test -----------------------------------------------------------------------------------
def zk_offset(zk, group: str, topic: str) -> int | None:
    return committed_offset(zk, group, topic, 0)


@pytest.mark.parametrize("client_name", list(CLIENTS))
def test_transactions_commit_abort_and_isolation(cluster, zk, client_name):
    bootstrap = cluster.bootstrap_servers
    suffix = f"{client_name}-{uuid.uuid4().hex[:8]}"
    source, out, group = f"txn-in-{suffix}", f"txn-out-{suffix}", f"txn-group-{suffix}"
    create_topics(bootstrap, [source, out])
    seed(bootstrap, source, 10)
    committed = [f"committed-{i}".encode() for i in range(5)]
    aborted = [f"aborted-{i}".encode() for i in range(5)]
    last = [b"committed-last", SENTINEL]

    client = CLIENTS[client_name](bootstrap, f"txn-{suffix}")
    try:
        def while_open(offset_before: int | None, lso_before: int):
            def check() -> None:
                # the records are written (below the HW) but the LSO holds at the transaction's first offset
                wait_for(lambda: end_offsets(bootstrap, out)[0] >= lso_before + len(committed), TIMEOUT,
                         "the open transaction's records below the high watermark")
                assert end_offsets(bootstrap, out, committed=True) == {0: lso_before}
                assert zk_offset(zk, group, source) == offset_before, "transactional offsets visible before commit"
            return check

        client.transaction(out, committed, source, 5, group, while_open(None, 0), commit=True)
        wait_for(lambda: zk_offset(zk, group, source) == 5, TIMEOUT, "offset 5 in ZooKeeper after the commit")
        ends = wait_for(lambda: stable(bootstrap, out), TIMEOUT, "LSO == high watermark after the commit")
        assert ends[0] == len(committed) + 1  # the records and the COMMIT marker

        client.transaction(out, aborted, source, 9, group, while_open(5, ends[0]), commit=False)
        ends = wait_for(lambda: stable(bootstrap, out), TIMEOUT, "LSO == high watermark after the abort")
        assert ends[0] == 2 * len(committed) + 2
        assert zk_offset(zk, group, source) == 5, "an aborted transaction's offsets reached ZooKeeper"

        client.transaction(out, last, source, 10, group, lambda: None, commit=True)
        wait_for(lambda: zk_offset(zk, group, source) == 10, TIMEOUT, "offset 10 in ZooKeeper after the commit")

        assert client.read(out, "read_committed") == committed + last
        assert client.read(out, "read_uncommitted") == committed + aborted + last
    finally:
        client.close()
