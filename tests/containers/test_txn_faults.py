"""Transactions against a cluster in Docker containers: a transactional consume-transform-produce copier (Kafka's
``transactions_test``, short form) keeps copying while the leader of its output partition is killed. Output must
equal input exactly once, in order, as a read_committed consumer sees it.

The copier is ``scripts/demo/txn_copier.py`` run as a process under ``CopierSupervisor``: the broker killed may also
be the copier group's coordinator, and librdkafka 2.16 then can block for ever in ``send_offsets_to_transaction``
(it keeps the dead broker cached as the group coordinator, decommissions it when Metadata stops naming it, and its
coordinator request is never re-triggered nor timed out: confluentinc/librdkafka#5511, #5456). A copier stuck there
is replaced with the same ``transactional.id``, as a supervisor would, at most once for the one kill; exactly-once
must hold through that too."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from zkafka.testing.cluster import SESSION_TIMEOUT_MS, ZkafkaCluster
from tests.containers.test_faults import PROPERTIES, create_topic, leader_of
from tests.integration.conditions import wait_for
from tests.integration.txn_support import CopierSupervisor

TXN_PROPERTIES = {**PROPERTIES, "transaction.state.log.num.partitions": "3",
                  "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2"}
SEED = 6000
PER_TRANSACTION = 750
RATE = 400  # records/s: the kill lands while the copy is under way


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
    copiers = CopierSupervisor(cluster.bootstrap_servers, "txn-in", "txn-out", "copier", "copier-0",
                               "--records-per-txn", str(PER_TRANSACTION), "--transaction-timeout-ms", "60000",
                               "--rate", str(RATE), "--exit-when-done")
    try:
        copiers.copier()
        copiers.supervised(lambda e: e["event"] == "committed" and copiers.committed() >= 2, 120,
                           "the copier under way")
        victim = leader_of(cluster, "txn-out", 0)
        copiers.bounces += 1
        cluster.kill_broker(victim)
        survivors = [b for b in cluster.broker_ids if b != victim]
        wait_for(lambda: leader_of(cluster, "txn-out", 0, survivors) not in (-1, victim),
                 SESSION_TIMEOUT_MS / 1000 + 30, "a new leader for the output partition")
        copiers.supervised(lambda e: e["event"] == "done", 240, "the copier to copy everything")
        assert copiers.copiers[-1].exit_code() == 0
    finally:
        copiers.close()
    assert read_committed(cluster, "txn-out") == list(range(SEED))  # every record once, in order
