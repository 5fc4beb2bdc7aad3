"""Transactions against a cluster in Docker containers: a transactional consume-transform-produce copier (Kafka's
``transactions_test``, short form) keeps copying while the leader of its output partition is killed. Output must
equal input exactly once, in order, as a read_committed consumer sees it."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from zkafka.testing.cluster import SESSION_TIMEOUT_MS, ZkafkaCluster
from tests.containers.test_faults import PROPERTIES, create_topic, leader_of
from tests.integration.conditions import wait_for

TXN_PROPERTIES = {**PROPERTIES, "transaction.state.log.num.partitions": "3",
                  "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2"}
SEED = 6000
PER_TRANSACTION = 750


class Copier(threading.Thread):
    """Copies ``source`` to ``sink`` in transactions of at most PER_TRANSACTION records, committing the consumer's
    offsets inside each one; a transaction that fails is aborted and the consumer rewound to the committed offsets."""

    def __init__(self, cluster: ZkafkaCluster, source: str, sink: str):
        super().__init__(daemon=True)
        self.source, self.sink = source, sink
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "copier",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "isolation.level": "read_committed"})
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "copier-0",
                                  "transaction.timeout.ms": 60000, "linger.ms": 5})
        self.committed_transactions, self.aborts, self.errors = 0, 0, []
        self.committed_up_to = 0  # the input offset below which every record is copied and committed
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.producer.init_transactions(120)
            self.consumer.subscribe([self.source])
            while not self.done.is_set():
                batch = [m for m in self.consumer.consume(PER_TRANSACTION, timeout=1.0) if m.error() is None]
                if batch:
                    self._copy(batch)
        except Exception as exc:  # reported by the test: a copier that died must fail it with its reason
            self.errors.append(repr(exc))

    def _copy(self, batch) -> None:
        self.producer.begin_transaction()
        try:
            for m in batch:
                self.producer.produce(self.sink, m.value(), partition=0)
            self.producer.send_offsets_to_transaction(self.consumer.position(self.consumer.assignment()),
                                                      self.consumer.consumer_group_metadata(), 60)
            self._commit()
            self.committed_transactions += 1
            self.committed_up_to = batch[-1].offset() + 1
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if not error.txn_requires_abort():
                raise
            self.producer.abort_transaction(120)
            self.aborts += 1
            self._rewind()

    def _commit(self) -> None:
        """commit_transaction, retried while its error is retriable (a timeout while the output leader is killed):
        the outcome of an EndTxn that timed out is unknown, so the commit is repeated, never aborted."""
        while True:
            try:
                self.producer.commit_transaction(120)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise

    def _rewind(self) -> None:
        for tp in self.consumer.committed(self.consumer.assignment(), timeout=60):
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))


def end_offset(cluster: ZkafkaCluster, topic: str, isolation_level: str) -> int:
    """Partition 0's end for ``isolation_level``: the last stable offset (read_committed) or the high watermark."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"ends-{topic}",
                         "isolation.level": isolation_level})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    finally:
        consumer.close()


def read_committed(cluster: ZkafkaCluster, topic: str) -> list[int]:
    """Every committed value of partition 0, once no transaction is open on it (the last commit's marker lands after
    commit_transaction returns: the coordinator answers EndTxn once PrepareCommit is written)."""
    end = wait_for(lambda: (lso := end_offset(cluster, topic, "read_committed")) == end_offset(
        cluster, topic, "read_uncommitted") and lso, 60, f"{topic}: its last stable offset up to its high watermark",
        interval=0.5)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"verify-{topic}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values, at, deadline = [], -1, time.monotonic() + 120
        while at < end:  # the end-of-partition event's offset: past the markers too, which carry no values
            assert time.monotonic() < deadline, f"could not read {topic} to its last stable offset {end} (at {at})"
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is None:
                    values.append(int(m.value()))
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    at = m.offset()
        return values
    finally:
        consumer.close()


def test_transactional_copy_through_a_killed_output_leader_is_exactly_once(make_container_cluster):
    cluster = make_container_cluster(properties=TXN_PROPERTIES)
    create_topic(cluster, "txn-in", 1)
    create_topic(cluster, "txn-out", 1)
    seed = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True})
    for i in range(SEED):
        seed.produce("txn-in", str(i).encode(), partition=0)
    assert seed.flush(60) == 0
    copier = Copier(cluster, "txn-in", "txn-out")
    copier.start()
    wait_for(lambda: copier.committed_transactions >= 2 or copier.errors, 120, "the copier under way")
    victim = leader_of(cluster, "txn-out", 0)
    cluster.kill_broker(victim)
    survivors = [b for b in cluster.broker_ids if b != victim]
    wait_for(lambda: leader_of(cluster, "txn-out", 0, survivors) not in (-1, victim),
             SESSION_TIMEOUT_MS / 1000 + 30, "a new leader for the output partition")
    wait_for(lambda: copier.errors or copier.committed_up_to >= SEED, 240, "the copier to copy everything")
    copier.done.set()
    copier.join(60)
    assert not copier.errors, copier.errors
    assert read_committed(cluster, "txn-out") == list(range(SEED))  # every record once, in order
