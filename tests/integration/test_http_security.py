"""The HTTP side of security, end to end: ZooKeeper + 2 brokers with the ACL authorizer
(``allow.everyone.if.no.acl.found=false``), a SASL_PLAINTEXT listener (replication as ``User:admin``, a
super user) and ``http.authentication.method=BASIC``. Users admin, alice and bob are SCRAM users made
with ``kafka-configs --zookeeper``; the same passwords open the HTTP API. ACLs are granted through the
Kafka protocol (confluent-kafka's AdminClient, as admin) and must apply to the REST proxy and the admin
API live. The control plane takes only requests signed by a broker: not even a super user's password
opens it."""
from __future__ import annotations

import itertools

import pytest
import requests
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from brokers.control import UpdateMetadataRequest, encode
from brokers.security.control_auth import HEADER, sign
from scripts.local.cluster import Cluster, ClusterSpec
from tests.integration.conditions import wait_for
from tests.integration.scram_users import ADMIN_JAAS, add_scram_users

PROPERTIES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": ADMIN_JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
    "super.users": "User:admin",
    "http.authentication.method": "BASIC",
    "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "2",
    "replica.fetch.backoff.ms": "200",
}
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
ADMIN, ALICE, BOB = (("admin", "admin-secret"), ("alice", "alice-secret"), ("bob", "bob-secret"))
_TOPICS = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec.on_free_ports(2, tick_time=500, session_timeout_ms=6000, properties=PROPERTIES)
    cluster = Cluster(tmp_path_factory.mktemp("http-security") / "cluster", spec)
    cluster.up(timeout=60)
    try:
        add_scram_users(cluster, USERS)
        yield cluster
    finally:
        cluster.down()


def admin_client(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin", "sasl.password": "admin-secret"})


def grant(cluster: Cluster, principal: str, operation: AclOperation, topic: str,
          resource_type: ResourceType = ResourceType.TOPIC) -> None:
    binding = AclBinding(resource_type, topic, ResourcePatternType.LITERAL, principal, "*", operation,
                         AclPermissionType.ALLOW)
    client = admin_client(cluster)  # referenced until the futures are done: a collected client fails them
    for future in client.create_acls([binding]).values():
        future.result(30)


def url(cluster: Cluster, broker_id: int, path: str) -> str:
    return f"http://127.0.0.1:{cluster.http_port(broker_id)}{path}"


def partition_rows(cluster: Cluster, topic: str) -> list[dict]:
    response = requests.get(url(cluster, 1, "/api/v1/partitions"), params={"topic": topic}, auth=ADMIN, timeout=10)
    return response.json().get("partitions", []) if response.status_code == 200 else []


@pytest.fixture
def topic(cluster):
    """Two partitions, one led by each broker (a request to either broker is forwarded for one of them)."""
    name = f"ledger-{next(_TOPICS)}"
    client = admin_client(cluster)
    client.create_topics([NewTopic(name, 2, 2)])[name].result(30)
    wait_for(lambda: {r["leader"] for r in partition_rows(cluster, name)} == {1, 2}
             and all(r["high_watermark"] is not None for r in partition_rows(cluster, name)), 30,
             f"{name}: one leader per broker")
    return name


def produce(cluster: Cluster, broker_id: int, topic: str, partition: int, auth, values=("a", "b")):
    return requests.post(url(cluster, broker_id, f"/api/v1/topics/{topic}/partitions/{partition}/records"),
                         json={"records": [{"value": v} for v in values]}, auth=auth, timeout=30)


def read(cluster: Cluster, broker_id: int, topic: str, partition: int, auth):
    return requests.get(url(cluster, broker_id, f"/api/v1/topics/{topic}/partitions/{partition}/records"),
                        params={"offset": 0}, auth=auth, timeout=30)


def high_watermarks(cluster: Cluster, topic: str) -> list[int]:
    return [r["high_watermark"] for r in sorted(partition_rows(cluster, topic), key=lambda r: r["partition"])]


def test_without_credentials_only_the_probes_answer(cluster):
    for path in ("/api/v1/topics", "/api/v1/overview", "/metrics", "/", "/api/v1/local/partitions"):
        response = requests.get(url(cluster, 1, path), timeout=10)
        assert response.status_code == 401, path
        assert response.headers["WWW-Authenticate"].startswith("Basic realm=")
    assert requests.get(url(cluster, 1, "/healthz"), timeout=10).status_code == 200
    assert requests.get(url(cluster, 1, "/readyz"), timeout=10).status_code == 200


@pytest.mark.parametrize("auth", [("alice", "wrong"), ("mallory", "alice-secret"), ("", "")])
def test_a_wrong_password_or_unknown_user_is_refused_with_the_generic_message(cluster, auth):
    response = requests.get(url(cluster, 2, "/api/v1/topics"), auth=auth, timeout=10)
    assert response.status_code == 401
    assert response.json() == {"error_code": 401, "message": "Authentication failed: Invalid username or password"}
    wait_for(lambda: "Failed authentication with 127.0.0.1" in cluster.tail(2, 200), 10, "the failure logged")
    assert "wrong" not in cluster.tail(2, 200)  # never the password


def test_produce_needs_write_and_a_refusal_writes_nothing_on_either_broker(cluster, topic):
    for broker_id in (1, 2):  # partition 0 is led by one of them: the other forwards
        for partition in (0, 1):
            response = produce(cluster, broker_id, topic, partition, BOB)
            assert response.status_code == 403, response.text
            assert response.json()["kafka_error"] == "TOPIC_AUTHORIZATION_FAILED"
    assert high_watermarks(cluster, topic) == [0, 0]
    grant(cluster, "User:alice", AclOperation.WRITE, topic)
    wait_for(lambda: produce(cluster, 1, topic, 0, ALICE).status_code == 200, 20, "alice's Write to apply")
    assert produce(cluster, 2, topic, 0, ALICE).status_code == 200
    assert produce(cluster, 1, topic, 1, ALICE).status_code == 200  # forwarded with alice's credentials
    assert high_watermarks(cluster, topic) == [4, 2]
    assert produce(cluster, 1, topic, 0, BOB).status_code == 403  # bob still may not
    assert read(cluster, 1, topic, 0, ALICE).status_code == 403  # Write is not Read
    grant(cluster, "User:alice", AclOperation.READ, topic)
    wait_for(lambda: read(cluster, 2, topic, 0, ALICE).status_code == 200, 20, "alice's Read to apply")
    assert [r["value"] for r in read(cluster, 2, topic, 0, ALICE).json()["records"]] == ["a", "b", "a", "b"]


def test_topics_the_caller_may_not_describe_are_not_listed(cluster, topic):
    def names(auth) -> set[str]:
        response = requests.get(url(cluster, 2, "/api/v1/topics"), auth=auth, timeout=10)
        assert response.status_code == 200
        return {row["name"] for row in response.json()["topics"]}

    assert topic in names(ADMIN)
    assert topic not in names(BOB)
    detail = requests.get(url(cluster, 2, f"/api/v1/topics/{topic}"), auth=BOB, timeout=10)
    assert (detail.status_code, detail.json()["kafka_error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    assert requests.get(url(cluster, 2, "/api/v1/partitions"), params={"topic": topic}, auth=BOB,
                        timeout=10).status_code == 403
    grant(cluster, "User:bob", AclOperation.DESCRIBE, topic)
    wait_for(lambda: topic in names(BOB), 20, "bob's Describe to apply")
    overview = requests.get(url(cluster, 1, "/api/v1/overview"), auth=BOB, timeout=10).json()
    assert {row["topic"] for row in overview["partitions"]} == {topic}  # only what bob may describe
    assert requests.get(url(cluster, 1, f"/api/v1/topics/{topic}"), auth=BOB, timeout=10).status_code == 200
    assert produce(cluster, 1, topic, 0, BOB).status_code == 403  # Describe is not Write


def test_the_fan_out_between_brokers_is_signed_but_a_user_needs_cluster_describe(cluster, topic):
    admin_view = requests.get(url(cluster, 1, "/api/v1/overview"), auth=ADMIN, timeout=10).json()
    rows = [r for r in admin_view["partitions"] if r["topic"] == topic]
    assert all(r["high_watermark"] == 0 for r in rows)  # broker 2's facts came over the signed fan-out
    assert requests.get(url(cluster, 2, "/api/v1/local/partitions"), auth=BOB, timeout=10).status_code == 403
    assert requests.get(url(cluster, 2, "/api/v1/local/partitions"), auth=ADMIN, timeout=10).status_code == 200
    assert requests.get(url(cluster, 2, "/metrics"), auth=BOB, timeout=10).status_code == 403
    assert requests.get(url(cluster, 2, "/metrics"), auth=ADMIN, timeout=10).status_code == 200


def test_only_a_brokers_signature_opens_the_control_plane(cluster):
    body = encode(UpdateMetadataRequest(1, 999, -1, (), ()))
    path = "/control/v1/update-metadata"
    headers = {"Content-Type": "application/msgpack"}
    for extra in ({}, {HEADER: sign(b"not the cluster's secret, though long", "POST", path, body)},
                  {HEADER: "t=1,sig=00"}):
        for auth in (None, ADMIN):  # a super user's password is not a broker's signature
            response = requests.post(url(cluster, 1, path), data=body, headers={**headers, **extra}, auth=auth,
                                     timeout=10)
            assert response.status_code == 401, (extra, auth, response.text)
    assert cluster.health(1)["controller_epoch_seen"] < 999
    wait_for(lambda: "only brokers of this cluster may call the control plane" in cluster.tail(1, 300)
             or "broker signature" in cluster.tail(1, 300), 10, "the refusal logged")


def test_a_changed_password_counts_on_every_broker_without_restart(cluster):
    add_scram_users(cluster, {"carol": "carol-1"})
    for broker_id in (1, 2):  # both brokers cache carol's credential now
        wait_for(lambda b=broker_id: requests.get(url(cluster, b, "/api/v1/cluster"), auth=("carol", "carol-1"),
                                                  timeout=10).status_code == 200, 20, "carol's first password")
    add_scram_users(cluster, {"carol": "carol-2"})  # the users notification drops the cached credential
    for broker_id in (1, 2):
        wait_for(lambda b=broker_id: requests.get(url(cluster, b, "/api/v1/cluster"), auth=("carol", "carol-2"),
                                                  timeout=10).status_code == 200, 20, "carol's new password")
        assert requests.get(url(cluster, broker_id, "/api/v1/cluster"), auth=("carol", "carol-1"),
                            timeout=10).status_code == 401
