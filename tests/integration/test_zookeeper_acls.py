"""``zookeeper.set.acl=true``: brokers authenticate to a real ZooKeeper with digest credentials and
give every znode they create Kafka's secure ACLs, so a client without the credentials can read the cluster
state (outside ``/config/users``) but cannot change it; the cluster itself works as before."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from brokers.zk.paths import ControlPlaneSecretZNode
from scripts.local.cluster import Cluster, ClusterSpec
from tests.integration.conditions import wait_for

CREDENTIALS = "kafka:zk-secret"


CHROOT = "/kafka"  # its root's ACL is ZooKeeper's own (world may delete children): Kafka's docs say use a chroot


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec.on_free_ports(3, tick_time=500, session_timeout_ms=6000, properties={
        "zookeeper.set.acl": "true", "zookeeper.digest.credentials": CREDENTIALS})
    spec.properties["zookeeper.connect"] = f"127.0.0.1:{spec.zookeeper_port}{CHROOT}"
    cluster = Cluster(tmp_path_factory.mktemp("zk-acls"), spec)
    cluster.up(timeout=90)
    yield cluster
    cluster.down()


def client(cluster: Cluster, credentials: str | None = None) -> KazooClient:
    zk = KazooClient(hosts=cluster.zookeeper_connect + CHROOT, auth_data=[("digest", credentials)] if credentials else None)
    zk.start(timeout=15)
    return zk


def test_the_cluster_works_with_secure_acls(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("secured", 3, 3)])["secured"].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for n in range(30):
        producer.produce("secured", value=b"v%d" % n)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["secured"])
    seen = set()
    wait_for(lambda: (msg := consumer.poll(0.5)) is not None and not msg.error() and seen.add(msg.value())
             or len(seen) == 30, 60, "the 30 records consumed")
    consumer.close()


def test_a_client_without_credentials_cannot_change_cluster_state(cluster):
    zk = client(cluster)
    try:
        assert zk.exists("/controller") and zk.get("/brokers/topics")  # world-readable
        acls, _ = zk.get_acls("/brokers/topics")  # ZooKeeper shows a digest id's hash only to its owner
        assert {(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acls} == {("digest", "kafka", 31),
                                                                               ("world", "anyone", 1)}
        with pytest.raises(NoAuthError):
            zk.delete("/controller")
        with pytest.raises(NoAuthError):
            zk.create("/brokers/topics/forged", b'{"version":3,"partitions":{"0":[1]}}')
        with pytest.raises(NoAuthError):
            zk.set("/controller_epoch", b"99")
        with pytest.raises(NoAuthError):  # secrets live there: not even readable
            zk.get_children("/config/users")
        with pytest.raises(NoAuthError):  # nor the key the brokers sign control requests with
            zk.get(ControlPlaneSecretZNode.PATH)
    finally:
        zk.stop()
        zk.close()


def test_the_brokers_identity_can(cluster):
    zk = client(cluster, CREDENTIALS)
    try:
        zk.create("/admin/delete_topics/nonexistent-topic")  # the controller drops the marker: no such topic
        wait_for(lambda: not zk.exists("/admin/delete_topics/nonexistent-topic"), 30, "the controller to act on it")
        assert zk.get_children("/config/users") == []
        assert len(ControlPlaneSecretZNode.decode(zk.get(ControlPlaneSecretZNode.PATH)[0])) == 32
    finally:
        zk.stop()
        zk.close()
