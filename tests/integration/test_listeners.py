"""A broker with two listeners (Kafka's ``listeners`` / ``advertised.listeners``): each socket answers
Metadata and FindCoordinator with the endpoints of the listener the request came in on, which is how a
container advertises one address to its peers and another to the host."""
from __future__ import annotations

import dataclasses

from confluent_kafka import OFFSET_INVALID, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.zookeeper import find_free_base_port


def test_each_listener_advertises_its_own_endpoints(tmp_path):
    spec = ClusterSpec.on_free_ports(1, tick_time=500, session_timeout_ms=6000)
    internal, external = spec.kafka_port_base, find_free_base_port(1)
    spec = dataclasses.replace(spec, properties={
        "listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "advertised.listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://localhost:{external}",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0"})
    cluster = Cluster(tmp_path / "cluster", spec)
    cluster.up(timeout=60)
    try:
        for port, host in ((internal, "127.0.0.1"), (external, "localhost")):
            brokers = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=30).brokers
            assert [(b.id, b.host, b.port) for b in brokers.values()] == [(1, host, port)]
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{external}"})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{external}", "group.id": "via-external"})
        try:  # FindCoordinator through EXTERNAL names localhost:<external>: OffsetFetch reaches the coordinator
            (committed,) = consumer.committed([TopicPartition("t", 0)], timeout=30)
            assert committed.error is None and committed.offset == OFFSET_INVALID
        finally:
            consumer.close()
    finally:
        cluster.down()
