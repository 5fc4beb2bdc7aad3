"""The ACL authorizer end to end (real ZooKeeper, 3 real brokers with
``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` and
``allow.everyone.if.no.acl.found=false``, real clients). Over PLAINTEXT every client, and every
broker's replica fetcher, is ``User:ANONYMOUS``: the test first grants it All on the cluster by writing
Kafka's znodes directly (as ``kafka-acls --authorizer-properties zookeeper.connect=...`` does), which
keeps replication (ClusterAction) and the admin APIs (Alter/Describe on the cluster) working; topic and
group ACLs are then granted and revoked per test, through confluent-kafka, kafka-python and kafka-acls,
and every change must apply live on all brokers."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
ANONYMOUS = "User:ANONYMOUS"
TIMEOUT = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("acls") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                     "allow.everyone.if.no.acl.found": "false",
                                     "offsets.topic.replication.factor": "1",
                                     "replica.fetch.backoff.ms": "200"}) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster):
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(timeout=15)
    try:  # Kafka's layout, written from outside the brokers, announced with a literal change notification
        zk.create("/kafka-acl/Cluster/kafka-cluster", json.dumps({"version": 1, "acls": [
            {"principal": ANONYMOUS, "permissionType": "Allow", "operation": "All", "host": "*"}]}).encode(),
            makepath=True)
        zk.create("/kafka-acl-changes/acl_changes_", b"Cluster:kafka-cluster", sequence=True, makepath=True)
    finally:
        zk.stop()
        zk.close()
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    anything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                AclPermissionType.ANY)

    def described() -> bool:
        try:
            client.describe_acls(anything).result(TIMEOUT)
            return True
        except KafkaException:
            return False
    wait_for(described, TIMEOUT, "the cluster ACL to apply (DescribeAcls needs Describe on the cluster)")

    def applied_on_every_broker() -> bool:
        """DescribeAcls syncs the ACLs of the broker it reaches first; CreateTopics goes to the controller, whose
        watch may not have fired yet. DescribeConfigs of a broker is answered by that broker from the ACLs it
        holds (it needs DescribeConfigs on the cluster), so each answering proves each has the grant."""
        try:
            for broker in cluster.broker_ids:  # librdkafka sends one broker resource per request
                resource = ConfigResource(ResourceType.BROKER, str(broker))
                client.describe_configs([resource])[resource].result(TIMEOUT)
            return True
        except KafkaException:
            return False
    wait_for(applied_on_every_broker, TIMEOUT, "every broker to hold the cluster ACL")
    return client


def binding(name: str, operation: AclOperation, permission=AclPermissionType.ALLOW,
            pattern=ResourcePatternType.LITERAL, restype=ResourceType.TOPIC) -> AclBinding:
    return AclBinding(restype, name, pattern, ANONYMOUS, "*", operation, permission)


def grant(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        future.result(TIMEOUT)


def revoke(admin: AdminClient, *bindings: AclBinding) -> None:
    filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation,
                                b.permission_type) for b in bindings]
    for future in admin.delete_acls(filters).values():
        future.result(TIMEOUT)


def new_topic(admin: AdminClient, cluster: Cluster, prefix: str) -> str:
    name = f"{prefix}{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(name, 1, 3)])[name].result(TIMEOUT)
    return name


def visible_topics(cluster: Cluster) -> set[str]:
    return set(AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10).topics)


def produce_one(cluster: Cluster, topic: str) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 10000, "retries": 0})
    outcome: list = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(TIMEOUT)
    return outcome[0] if outcome else KafkaError(KafkaError._MSG_TIMED_OUT)


def high_watermark(cluster: Cluster, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused"})
    try:
        from confluent_kafka import TopicPartition
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_a_topic_without_describe_is_left_out_of_metadata_until_granted(admin, cluster):
    topic = new_topic(admin, cluster, "hidden-")  # Create comes from the cluster grant
    assert topic not in visible_topics(cluster)
    grant(admin, binding(topic, AclOperation.DESCRIBE))
    wait_for(lambda: topic in visible_topics(cluster), TIMEOUT, f"{topic} to become visible")
    revoke(admin, binding(topic, AclOperation.DESCRIBE))
    wait_for(lambda: topic not in visible_topics(cluster), TIMEOUT, f"{topic} to disappear again")


def test_describe_topics_answers_the_authorized_operations_from_the_acls(admin, cluster):
    """librdkafka's describe_topics(include_authorized_operations) asks Metadata v10+ for the topic's operations
    bit field: with Read and AlterConfigs granted, Read, AlterConfigs and what they imply (Describe,
    DescribeConfigs); the topic has no other ACL and allow.everyone.if.no.acl.found is false."""
    topic = new_topic(admin, cluster, "ops-")
    grant(admin, binding(topic, AclOperation.READ), binding(topic, AclOperation.ALTER_CONFIGS))

    def operations():
        try:
            description = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic]
            return set(description.result(TIMEOUT).authorized_operations)
        except KafkaException:
            return None
    expected = {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS}
    wait_for(lambda: operations() == expected, TIMEOUT, f"{topic}'s authorized operations")


def test_deny_write_rejects_produce_live_and_writes_nothing_then_removal_restores_it(admin, cluster):
    topic = new_topic(admin, cluster, "orders-")
    grant(admin, binding(topic, AclOperation.WRITE), binding(topic, AclOperation.READ))  # Read implies Describe
    wait_for(lambda: produce_one(cluster, topic) is None, TIMEOUT, "produce to be allowed")
    before = high_watermark(cluster, topic)
    assert before >= 1

    grant(admin, binding(topic, AclOperation.WRITE, AclPermissionType.DENY))  # deny wins over the allow

    def denied() -> bool:
        error = produce_one(cluster, topic)
        return error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    wait_for(denied, TIMEOUT, "produce to fail with TOPIC_AUTHORIZATION_FAILED")
    assert high_watermark(cluster, topic) == before  # nothing was written

    revoke(admin, binding(topic, AclOperation.WRITE, AclPermissionType.DENY))
    wait_for(lambda: produce_one(cluster, topic) is None, TIMEOUT, "produce to be allowed again")
    assert high_watermark(cluster, topic) > before


def test_prefixed_acls_and_group_read_for_consumers(admin, cluster):
    prefix = f"pfx{uuid.uuid4().hex[:4]}-"
    topic = new_topic(admin, cluster, prefix)
    group = f"{prefix}group"
    grant(admin, *(binding(prefix, op, pattern=ResourcePatternType.PREFIXED)
                   for op in (AclOperation.READ, AclOperation.WRITE)))
    wait_for(lambda: produce_one(cluster, topic) is None, TIMEOUT, "produce under the prefixed ACL")

    def consume(timeout: float = 8.0) -> tuple[bytes | None, KafkaError | None]:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                             "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
        consumer.subscribe([topic])
        try:
            msg = consumer.poll(timeout)
            if msg is None:
                return None, None
            return (None, msg.error()) if msg.error() else (msg.value(), None)
        finally:
            consumer.close()

    def refused() -> bool:  # no ACL on the group: the consumer may not join it, and never reads
        value, error = consume()
        assert value is None, "a consumer read without Read on its group"
        return error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    wait_for(refused, 60, "the consumer to be refused with GROUP_AUTHORIZATION_FAILED", interval=0)
    grant(admin, binding(group, AclOperation.READ, restype=ResourceType.GROUP))
    wait_for(lambda: consume()[0] == b"v", 60, "the consumer to read once it may join the group")


def test_describe_and_delete_acls_through_confluent_kafka(admin, cluster):
    name = f"acl-{uuid.uuid4().hex[:6]}"
    grant(admin, binding(name, AclOperation.ALTER_CONFIGS), binding(name, AclOperation.DELETE,
                                                                  pattern=ResourcePatternType.PREFIXED))
    flt = AclBindingFilter(ResourceType.TOPIC, name, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    found = admin.describe_acls(flt).result(TIMEOUT)
    assert {(b.name, b.resource_pattern_type, b.operation) for b in found} == {
        (name, ResourcePatternType.LITERAL, AclOperation.ALTER_CONFIGS),
        (name, ResourcePatternType.PREFIXED, AclOperation.DELETE)}
    deleted = admin.delete_acls([flt])[flt].result(TIMEOUT)
    assert len(deleted) == 2
    assert admin.describe_acls(flt).result(TIMEOUT) == []


def test_kafka_python_acl_api(admin, cluster):
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient
    from kafka.admin import ResourcePattern, ResourcePatternFilter
    from kafka.admin import ResourceType as KpResourceType
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        name = f"kp-{uuid.uuid4().hex[:6]}"
        acl = ACL("User:carol", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))
        result = client.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        flt = ACLFilter("User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(KpResourceType.TOPIC, name, ACLResourcePatternType.LITERAL))
        acls, error = client.describe_acls(flt)
        assert [(a.principal, a.operation) for a in acls] == [("User:carol", ACLOperation.READ)]
        ((_, deleted, _),) = client.delete_acls([flt])
        assert len(deleted) == 1
        assert client.describe_acls(flt)[0] == []
    finally:
        client.close()


def tool(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "kafka-acls"), *args], capture_output=True, text=True, timeout=90, input=stdin)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_kafka_acls_round_trip_in_kafkas_znodes(admin, cluster, zk):
    name = f"tool-{uuid.uuid4().hex[:6]}"
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    added = tool(*bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
                 "--topic", name)
    assert added.returncode == 0, added.stderr
    resource = f"`ResourcePattern(resourceType=TOPIC, name={name}, patternType=LITERAL)`"
    assert f"Adding ACLs for resource {resource}: " in added.stdout
    assert f"Current ACLs for resource {resource}: " in added.stdout
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in added.stdout
    data, _ = zk.get(f"/kafka-acl/Topic/{name}")
    assert sorted(a["operation"] for a in json.loads(data)["acls"]) == ["Read", "Write"]
    changes = [zk.get(f"/kafka-acl-changes/{c}")[0] for c in zk.get_children("/kafka-acl-changes")]
    assert f"TOPIC:{name}".encode() in changes

    prefixed = tool(*bootstrap, "--add", "--deny-principal", "User:bob", "--operation", "Describe", "--topic", name,
                    "--resource-pattern-type", "prefixed")
    assert prefixed.returncode == 0, prefixed.stderr
    assert zk.exists(f"/kafka-acl-extended/prefixed/Topic/{name}")

    listed = tool(*bootstrap, "--list", "--topic", name)
    assert listed.returncode == 0 and "operation=WRITE" in listed.stdout and "permissionType=DENY" in listed.stdout

    removed = tool(*bootstrap, "--remove", "--topic", name, "--force")
    assert removed.returncode == 0, removed.stderr
    assert zk.exists(f"/kafka-acl/Topic/{name}") is None
    assert f"name={name}, patternType=LITERAL" not in tool(*bootstrap, "--list", "--topic", name).stdout

    consumer = tool(*bootstrap, "--add", "--consumer", "--allow-principal", "User:dave", "--topic", name,
                    "--group", f"{name}-g")
    assert consumer.returncode == 0, consumer.stderr
    assert [a["operation"] for a in json.loads(zk.get(f"/kafka-acl/Group/{name}-g")[0])["acls"]] == ["Read"]
    assert sorted(a["operation"] for a in json.loads(zk.get(f"/kafka-acl/Topic/{name}")[0])["acls"]) == [
        "Describe", "Read"]

    bad = tool(*bootstrap, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--cluster")
    assert bad.returncode == 2 and "--operation" in bad.stderr


def test_read_without_write_cannot_produce_with_either_client(admin, cluster):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    topic = new_topic(admin, cluster, "read-only-")
    grant(admin, binding(topic, AclOperation.READ))  # visible (Read implies Describe), but not writable
    wait_for(lambda: topic in visible_topics(cluster), TIMEOUT, f"{topic} to become visible")
    error = produce_one(cluster, topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=0, max_block_ms=10000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"v").get(timeout=TIMEOUT)
    finally:
        producer.close()
    assert high_watermark(cluster, topic) == 0


def test_super_users_need_no_acls(make_cluster):
    cluster, _ = make_cluster(1, properties={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                             "super.users": f"User:admin;{ANONYMOUS}"})
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    client.create_topics([NewTopic("su", 1, 1)])["su"].result(TIMEOUT)
    wait_for(lambda: produce_one(cluster, "su") is None, TIMEOUT, "a super user's produce")
    assert "su" in visible_topics(cluster)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "su-group",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["su"])
    try:
        def poll() -> list | None:
            msg = consumer.poll(1.0)
            return None if msg is None or msg.error() else [msg]
        (msg,) = wait_for(poll, 60, "a super user's consumer to read")
        assert msg.error() is None and msg.value() == b"v"
    finally:
        consumer.close()


def test_a_transactional_producer_needs_the_transactional_id_kafka_acls_grants(admin, cluster, zk):
    """Without Write on its TransactionalId a transactional producer is refused (User:ANONYMOUS holds All on the
    cluster here, IdempotentWrite included); ``kafka-acls --producer --transactional-id --idempotent`` writes
    Kafka's grants (Write and Describe on the id, IdempotentWrite on the cluster) and the producer commits."""
    topic = new_topic(admin, cluster, "txn-acl-")
    txn_id = f"txn-acl-{uuid.uuid4().hex[:6]}"

    def init(what: str) -> KafkaError | None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id})
        try:
            producer.init_transactions(TIMEOUT)
        except KafkaException as exc:
            return exc.args[0]
        producer.begin_transaction()
        producer.produce(topic, what.encode())
        producer.commit_transaction(TIMEOUT)
        return None

    refused = init("refused")
    assert refused is not None and refused.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, refused
    added = tool("--bootstrap-server", cluster.bootstrap_servers, "--add", "--allow-principal", ANONYMOUS,
                 "--producer", "--topic", topic, "--transactional-id", txn_id, "--idempotent")
    assert added.returncode == 0, added.stderr
    assert f"`ResourcePattern(resourceType=TRANSACTIONAL_ID, name={txn_id}, patternType=LITERAL)`" in added.stdout
    assert sorted(a["operation"] for a in json.loads(zk.get(f"/kafka-acl/TransactionalId/{txn_id}")[0])["acls"]) == [
        "Describe", "Write"]
    cluster_acls = json.loads(zk.get("/kafka-acl/Cluster/kafka-cluster")[0])["acls"]
    assert {"principal": ANONYMOUS, "permissionType": "Allow", "operation": "IdempotentWrite", "host": "*"} in \
        cluster_acls
    wait_for(lambda: init("committed") is None, TIMEOUT, "the transactional producer to be allowed")
