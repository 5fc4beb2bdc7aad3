"""zkafka.testing as a user's suite uses it: only the public API (``zkafka.testing``, ``zkafka.images``), the
plugin's fixtures and real clients — nothing imported from this repository's tests."""
from __future__ import annotations

import socket
import uuid

import docker
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zkafka.images import ImageNotFound
from zkafka.testing import ZkafkaCluster, ZkafkaContainer, wait_for

FAST_ISR = {"replica.lag.time.max.ms": "2000", "min.insync.replicas": "2", "default.replication.factor": "3"}


def produce(bootstrap: str, topic: str, values: list[bytes], **config) -> list:
    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **config})
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(60) == 0
    return errors


def consume(bootstrap: str, topic: str, count: int, group: str | None = None) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group or f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_for(lambda: got.extend(m.value() for m in consumer.consume(100, 0.5) if m.error() is None)
                 or len(got) >= count, 60, f"{count} records from {topic}", 0)
    finally:
        consumer.close()
    return got


def create_topic(bootstrap: str, topic: str, partitions: int = 1, replication_factor: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer: its futures die with it
    admin.create_topics([NewTopic(topic, partitions, replication_factor)])[topic].result(30)


# -- ZkafkaContainer and the zkafka fixture ---------------------------------------------------------------
def test_the_zkafka_fixture_serves_confluent_kafka_producer_and_consumer_group(zkafka):
    bootstrap = zkafka.get_bootstrap_server()
    create_topic(bootstrap, "orders", partitions=3)
    values = [f"order-{i}".encode() for i in range(200)]
    assert set(produce(bootstrap, "orders", values)) == {None}
    assert sorted(consume(bootstrap, "orders", 200)) == sorted(values)


def test_the_zkafka_fixture_serves_kafka_python(zkafka):
    from kafka import KafkaConsumer, KafkaProducer

    bootstrap = zkafka.get_bootstrap_server()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(50):
        producer.send("kp-topic", f"kp-{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer("kp-topic", bootstrap_servers=bootstrap, group_id="kp-group", auto_offset_reset="earliest")
    got: list[bytes] = []
    try:
        wait_for(lambda: got.extend(r.value for rs in consumer.poll(500).values() for r in rs) or len(got) >= 50,
                 60, "50 records through kafka-python", 0)
    finally:
        consumer.close()
    assert got == [f"kp-{i}".encode() for i in range(50)]


def test_a_container_with_a_chosen_port_and_broker_properties_is_removed_on_exit():
    with ZkafkaContainer(port=None, properties={"num.partitions": 3}).with_property("log.retention.ms", 60000) as kafka:
        bootstrap = kafka.get_bootstrap_server()
        assert kafka.ready_seconds is not None and kafka.ready_seconds > 0
        assert set(produce(bootstrap, "auto-created", [b"x"])) == {None}
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert len(metadata.topics["auto-created"].partitions) == 3
        assert "_zkafka_readiness" not in metadata.topics
        wrapped = kafka.get_wrapped_container()
    with pytest.raises(docker.errors.NotFound):
        wrapped.reload()
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        port = s.getsockname()[1]
    with ZkafkaContainer(port=port) as kafka:
        assert kafka.get_bootstrap_server().endswith(f":{port}")
        assert set(produce(kafka.get_bootstrap_server(), "chosen", [b"y"])) == {None}


def test_a_missing_image_names_the_build_command():
    with pytest.raises(ImageNotFound, match="zkafka images build"):
        ZkafkaContainer(image="zkafka:no-such-version").start()
    with pytest.raises(ImageNotFound, match="zkafka images build"):
        ZkafkaCluster(brokers=1, zookeepers=1, image="zkafka:no-such-version").start()


# -- ZkafkaCluster's fault helpers -------------------------------------------------------------------------
@pytest.mark.zkafka_cluster(properties=FAST_ISR)
def test_isolate_broker_takes_it_out_of_the_isr_and_heal_brings_it_back(zkafka_cluster):
    cluster = zkafka_cluster
    create_topic(cluster.bootstrap_servers, "iso", replication_factor=3)
    assert cluster.wait_for_isr("iso", 0, 3) == [1, 2, 3]
    follower = next(b for b in cluster.broker_ids if b not in (cluster.leader_of("iso", 0), cluster.controller_id()))
    cluster.isolate_broker(follower)
    assert follower not in cluster.wait_for_isr("iso", 0, 2)
    assert set(produce(cluster.bootstrap_servers, "iso", [b"while-isolated"])) == {None}
    cluster.heal()
    assert cluster.wait_for_isr("iso", 0, 3) == [1, 2, 3]


@pytest.mark.zkafka_cluster(properties=FAST_ISR)
def test_kill_broker_moves_leadership_and_restart_broker_rejoins(zkafka_cluster):
    cluster = zkafka_cluster
    create_topic(cluster.bootstrap_servers, "kill", replication_factor=3)
    cluster.wait_for_isr("kill", 0, 3)
    leader = cluster.leader_of("kill", 0)
    cluster.kill_broker(leader)
    assert leader not in cluster.wait_for_isr("kill", 0, 2)
    assert cluster.leader_of("kill", 0) not in (leader, -1)
    cluster.restart_broker(leader)
    assert cluster.wait_for_isr("kill", 0, 3) == [1, 2, 3]
    running = cluster.leader_of("kill", 0)
    cluster.restart_broker(running)  # a running broker: SIGTERM (controlled shutdown), then started again
    assert cluster.wait_for_isr("kill", 0, 3) == [1, 2, 3]
    assert set(produce(cluster.bootstrap_servers, "kill", [b"after"])) == {None}


@pytest.mark.zkafka_cluster(properties=FAST_ISR)
def test_pause_broker_freezes_it_out_of_the_isr_and_unpause_lets_it_back(zkafka_cluster):
    cluster = zkafka_cluster
    create_topic(cluster.bootstrap_servers, "pause", replication_factor=3)
    cluster.wait_for_isr("pause", 0, 3)
    follower = next(b for b in cluster.broker_ids if b not in (cluster.leader_of("pause", 0), cluster.controller_id()))
    cluster.pause_broker(follower)
    assert cluster.health(follower) is None  # frozen: its HTTP port does not answer
    assert follower not in cluster.wait_for_isr("pause", 0, 2)
    cluster.unpause_broker(follower)
    assert cluster.wait_for_isr("pause", 0, 3) == [1, 2, 3]


@pytest.mark.zkafka_cluster(brokers=2)
def test_controller_id_follows_a_killed_controller(zkafka_cluster):
    cluster = zkafka_cluster
    first = cluster.controller_id()
    assert first in cluster.broker_ids
    cluster.kill_broker(first)
    assert cluster.controller_id() not in (first,)


@pytest.mark.zkafka_cluster(brokers=1, zookeepers=3)
def test_kill_zookeeper_leader_lets_the_ensemble_elect_another_and_the_cluster_serves(zkafka_cluster):
    cluster = zkafka_cluster
    killed = cluster.kill_zookeeper_leader()
    new_leader = wait_for(cluster.zk_leader, 30, "a new ZooKeeper leader", 0.2)
    assert new_leader != killed
    create_topic(cluster.bootstrap_servers, "after-zk-leader")
    assert set(produce(cluster.bootstrap_servers, "after-zk-leader", [b"z"])) == {None}
    assert "after-zk-leader" in AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10).topics
