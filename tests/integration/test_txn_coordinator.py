"""The transaction coordinator end to end on a real 3-broker cluster with confluent-kafka (KIP-98): a
transactional producer commits one transaction over two partitions and aborts another; a read_committed
consumer sees only the committed records, a read_uncommitted one all of them; FindCoordinator key type 1 names
the leader of the transactional id's ``__transaction_state`` partition; and after the coordinator's broker is
killed -9 the producer finds the new coordinator and carries on. Partition leaders other than the
coordinator verify each transaction's first batch with it over the control plane (KIP-890 part 1)."""
from __future__ import annotations

import signal
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection
from transactions.coordinator.placement import partition_for

TXN_PARTITIONS = 3
TOPIC_PARTITIONS = 2
PRODUCE, FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN = 0, 10, 22, 24


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("txn") / "cluster", 3, tick_time=500, session_timeout_ms=4000,
                         properties={"transaction.state.log.num.partitions": str(TXN_PARTITIONS),
                                     "offsets.topic.num.partitions": "3", "replica.fetch.backoff.ms": "200",
                                     "group.initial.rebalance.delay.ms": "0"}) as c:
        yield c


def create_topic(cluster: Cluster, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, TOPIC_PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(30)


def transactional_producer(cluster: Cluster, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 30000, "linger.ms": 5})
    producer.init_transactions(60)
    return producer


def run_transaction(producer: Producer, topic: str, values: list[str], commit: bool) -> list[int]:
    """One transaction of ``values`` spread over the partitions; how many offsets it took on each (its records
    and its marker)."""
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(topic, value.encode(), partition=i % TOPIC_PARTITIONS)
    assert producer.flush(60) == 0  # on the brokers before the end: an abort must have something to abort
    if commit:
        producer.commit_transaction(60)
    else:
        producer.abort_transaction(60)
    return [len(values[p::TOPIC_PARTITIONS]) + 1 for p in range(TOPIC_PARTITIONS)]


def total(*offsets: list[int]) -> list[int]:
    return [sum(column) for column in zip(*offsets)]


def wait_for_markers(cluster: Cluster, topic: str, at_least: list[int]) -> list[int]:
    """The partitions' log end offsets once each holds at least ``at_least`` (every record and marker; a new
    coordinator may write a completed transaction's markers again, so there may be more)."""
    def reached() -> list[int] | None:
        ends = log_end_offsets(cluster, topic)
        return ends if all(e >= x for e, x in zip(ends, at_least)) else None
    return wait_for(reached, 30, f"{topic}'s records and markers ({at_least})")


def log_end_offsets(cluster: Cluster, topic: str) -> list[int]:
    """Each partition's high watermark as a read_uncommitted consumer sees it (markers included)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "watermarks",
                         "isolation.level": "read_uncommitted"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(TOPIC_PARTITIONS)]
    finally:
        consumer.close()


def read_all(cluster: Cluster, topic: str, isolation: str, ends: list[int]) -> list[str]:
    """Every value a consumer at ``isolation`` reads from the start until its position reaches ``ends``."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{isolation}",
                         "isolation.level": isolation, "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(TOPIC_PARTITIONS)])
    values: list[str] = []

    def caught_up() -> bool:
        for message in consumer.consume(100, timeout=0.2):
            assert message.error() is None, message.error()
            values.append(message.value().decode())
        positions = consumer.position([TopicPartition(topic, p) for p in range(TOPIC_PARTITIONS)])
        return all(tp.offset >= end for tp, end in zip(positions, ends))
    try:
        wait_for(caught_up, 60, f"a {isolation} consumer to reach {ends}", interval=0)
    finally:
        consumer.close()
    return values


def txn_state_leader(cluster: Cluster, partition: int) -> int:
    """The leader of ``__transaction_state-<partition>`` in the first live broker's metadata cache, -1 if none."""
    for broker in cluster.broker_ids:
        state = ((cluster.health(broker) or {}).get("metadata", {}).get("partitions", {})
                 .get(f"__transaction_state-{partition}"))
        if state is not None:
            return state["leader"]
    return -1


def find_coordinator(cluster: Cluster, broker: int, transactional_id: str):
    with RawConnection("127.0.0.1", cluster.kafka_port(broker)) as raw:
        return raw.request(FIND_COORDINATOR, 3, key=transactional_id, key_type=1)


def partition_leader(cluster: Cluster, topic: str, partition: int) -> int:
    health = next(h for h in map(cluster.health, cluster.broker_ids) if h)
    return health["metadata"]["partitions"][f"{topic}-{partition}"]["leader"]


def raw_call(cluster: Cluster, broker: int, api_key: int, version: int, **fields):
    with RawConnection("127.0.0.1", cluster.kafka_port(broker)) as raw:
        return raw.request(api_key, version, **fields)


def transactional_produce(cluster: Cluster, broker: int, transactional_id: str, topic: str, partition: int,
                          producer_id: int, producer_epoch: int, sequence: int) -> int:
    batch = build_batch([Record(0, 0, None, b"raw")], base_timestamp=int(time.time() * 1000), producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=sequence, transactional=True)
    answer = raw_call(cluster, broker, PRODUCE, 8, transactional_id=transactional_id, acks=-1, timeout=10000,
                      topic_data=[dict(name=topic, partition_data=[dict(index=partition, records=bytes(batch))])])
    return int(answer.responses[0].partition_responses[0].error_code)


def test_committed_records_are_visible_to_read_committed_and_aborted_ones_only_to_read_uncommitted(cluster):
    topic = "txn-out"
    create_topic(cluster, topic)
    producer = transactional_producer(cluster, "copier-1")
    committed = [f"c{i}" for i in range(10)]
    aborted = [f"a{i}" for i in range(6)]
    expected_ends = total(run_transaction(producer, topic, committed[:5], commit=True),
                          run_transaction(producer, topic, aborted, commit=False),
                          run_transaction(producer, topic, committed[5:], commit=True))
    ends = wait_for_markers(cluster, topic, expected_ends)
    assert sorted(read_all(cluster, topic, "read_committed", ends)) == sorted(committed)
    assert sorted(read_all(cluster, topic, "read_uncommitted", ends)) == sorted(committed + aborted)


def test_find_coordinator_names_the_leader_of_the_ids_transaction_state_partition(cluster):
    partition = partition_for("copier-1", TXN_PARTITIONS)
    leader = wait_for(lambda: max(txn_state_leader(cluster, partition), 0), 30, "__transaction_state's leader")
    for broker in cluster.broker_ids:
        answer = find_coordinator(cluster, broker, "copier-1")
        assert (int(answer.error_code), answer.node_id, answer.port) == (0, leader, cluster.kafka_port(leader))


def test_a_leader_asks_the_coordinator_on_another_broker_before_a_transactions_first_batch(cluster):
    """KIP-890 part 1 over the control plane: the leader of a partition refuses a transactional batch the
    coordinator (another broker) says is outside the transaction, and takes it once it has been added."""
    topic, transactional_id = "txn-verify", "verify-1"
    create_topic(cluster, topic)

    def found():
        answer = find_coordinator(cluster, cluster.broker_ids[0], transactional_id)
        return answer.node_id if int(answer.error_code) == 0 else None
    coordinator = wait_for(found, 30, "the transaction coordinator")

    def initialized():
        answer = raw_call(cluster, coordinator, INIT_PRODUCER_ID, 1, transactional_id=transactional_id,
                          transaction_timeout=30000)
        return answer if int(answer.error_code) == 0 else None
    init = wait_for(initialized, 30, "InitProducerId")
    pid, epoch = init.producer_id, init.producer_epoch
    partition = next(p for p in range(TOPIC_PARTITIONS) if partition_leader(cluster, topic, p) != coordinator)
    leader = partition_leader(cluster, topic, partition)
    refused = transactional_produce(cluster, leader, transactional_id, topic, partition, pid, epoch, 0)
    assert refused == ErrorCode.INVALID_TXN_STATE
    added = raw_call(cluster, coordinator, ADD_PARTITIONS_TO_TXN, 1, v3_and_below_transactional_id=transactional_id,
                     v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                     v3_and_below_topics=[dict(name=topic, partitions=[partition])])
    assert int(added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code) == 0
    assert transactional_produce(cluster, leader, transactional_id, topic, partition, pid, epoch, 0) == 0


def test_the_producer_carries_on_after_its_coordinator_is_killed(cluster):
    topic, transactional_id = "txn-failover", "failover-1"
    create_topic(cluster, topic)
    producer = transactional_producer(cluster, transactional_id)
    before = run_transaction(producer, topic, ["before0", "before1"], commit=True)
    partition = partition_for(transactional_id, TXN_PARTITIONS)
    old = txn_state_leader(cluster, partition)
    assert old > 0
    cluster.signal_broker(old, signal.SIGKILL)
    wait_for(lambda: txn_state_leader(cluster, partition) not in (-1, old), 30, "a new transaction coordinator")
    started = time.monotonic()
    ends = total(before, run_transaction(producer, topic, ["after0", "after1", "after2", "after3"], commit=True))
    assert time.monotonic() - started < 60
    survivor = next(b for b in cluster.broker_ids if b != old)
    assert find_coordinator(cluster, survivor, transactional_id).node_id == txn_state_leader(cluster, partition)
    assert sorted(read_all(cluster, topic, "read_committed", wait_for_markers(cluster, topic, ends))) == sorted(
        ["before0", "before1", "after0", "after1", "after2", "after3"])
