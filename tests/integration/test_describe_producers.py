"""DescribeProducers (61 v0) against a real one-broker cluster: an unmodified confluent-kafka idempotent producer
writes five records, and the partition leader lists its producer id with the sequence of the last record."""
from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.protocol.errors import ErrorCode
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

DESCRIBE_PRODUCERS = 61
TOPIC = "described"
TIMEOUT = 30


def describe(port: int, partitions: list[int]):
    with RawConnection("127.0.0.1", port, client_id="describe-producers") as connection:
        response = connection.request(DESCRIBE_PRODUCERS, 0,
                                      topics=[dict(name=TOPIC, partition_indexes=partitions)])
    (topic,) = response.topics
    return {p.partition_index: p for p in topic.partitions}


def test_an_idempotent_producer_is_listed_by_its_partition_leader(make_cluster):
    cluster, _ = make_cluster(1)
    (broker,) = cluster.broker_ids
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(TIMEOUT)
    port = cluster.kafka_port(broker)
    wait_for(lambda: describe(port, [0])[0].error_code == ErrorCode.NONE, TIMEOUT, f"broker {broker} to lead {TOPIC}-0")
    assert describe(port, [0])[0].active_producers == ()

    before_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5})
    delivered = []
    for i in range(5):
        producer.produce(TOPIC, value=b"record-%d" % i, partition=0,
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(TIMEOUT) == 0 and delivered == [None] * 5

    answers = describe(port, [0, 7])
    assert answers[7].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answers[0].error_code == ErrorCode.NONE
    (state,) = answers[0].active_producers
    assert state.producer_id >= 0 and state.producer_epoch == 0
    assert state.last_sequence == 4  # sequences 0..4, however librdkafka batched them
    assert state.last_timestamp >= before_ms
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)  # never transactional
