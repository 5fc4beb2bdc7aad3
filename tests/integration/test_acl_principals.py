"""ACLs for SASL principals end to end: a real ZooKeeper and 2 real brokers whose only listener is
SASL_PLAINTEXT, replicating to each other over it as ``User:admin`` (SCRAM-SHA-512, in ``super.users``),
with ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer`` and
``allow.everyone.if.no.acl.found=false``. ``admin``'s credential is written with ``kafka-configs
--zookeeper``; alice's and bob's through the brokers with ``kafka-configs --bootstrap-server
--command-config admin.properties``; ACLs with ``kafka-acls --command-config admin.properties`` (Kafka's
Java client properties: sasl.jaas.config). Then, with confluent-kafka and kafka-python as alice and bob:
alice (Read+Write on her topic, Read on her group) produces and consumes in that group; bob's produce is
TOPIC_AUTHORIZATION_FAILED and writes nothing, and Metadata hides the topic from him; bob with Read on
the topic but no group ACL cannot join the group (GROUP_AUTHORIZATION_FAILED); a prefixed ACL grants bob
Write live, and a Deny for alice overrides her Allow live (the brokers are never restarted)."""
from __future__ import annotations

import time
import uuid

import kafka
import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, ClusterSpec
from scripts.tools import kafka_acls
from scripts.tools.kafka_configs import command as kafka_configs
from tests.integration.conditions import wait_for
from tests.integration.scram_users import ADMIN_JAAS

SCRAM = "SCRAM-SHA-512"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PROPERTIES = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": SCRAM,
    "sasl.mechanism.inter.broker.protocol": SCRAM,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": ADMIN_JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "false",
    "super.users": "User:admin",
    "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "2",
    "group.initial.rebalance.delay.ms": "0", "replica.fetch.backoff.ms": "200",
}
TIMEOUT = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec.on_free_ports(2, tick_time=500, session_timeout_ms=6000, properties=PROPERTIES)
    cluster = Cluster(tmp_path_factory.mktemp("acl-principals") / "cluster", spec)
    cluster.up(timeout=60)
    try:
        assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                                   "--entity-name", "admin", "--add-config", f"{SCRAM}=[password=admin-secret]"]) == 0
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def admin_properties(cluster, tmp_path_factory):
    """Kafka's client properties for User:admin (the tools' --command-config)."""
    path = tmp_path_factory.mktemp("client") / "admin.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.jaas.config={ADMIN_JAAS}\n")
    return str(path)


@pytest.fixture(scope="module")
def users(cluster, admin_properties):
    """alice and bob, made through the brokers as admin (AlterUserScramCredentials needs Alter on the
    cluster: admin is a super user)."""
    for user in ("alice", "bob"):
        assert kafka_configs.main(["--bootstrap-server", cluster.bootstrap_servers, "--command-config",
                                   admin_properties, "--alter", "--entity-type", "users", "--entity-name", user,
                                   "--add-config", f"{SCRAM}=[iterations=4096,password={PASSWORDS[user]}]"]) == 0
    wait_for(lambda: AdminClient(confluent(cluster, "admin")).list_topics(timeout=5).brokers, TIMEOUT,
             "admin's client to authenticate")
    return ("alice", "bob")


def confluent(cluster: Cluster, user: str, **extra) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": SCRAM, "sasl.username": user, "sasl.password": PASSWORDS[user], **extra}


def python_client(cluster: Cluster, user: str) -> dict:
    return dict(bootstrap_servers=cluster.bootstrap_servers.split(","), security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=SCRAM, sasl_plain_username=user, sasl_plain_password=PASSWORDS[user])


def acls(cluster: Cluster, admin_properties: str, *args: str) -> None:
    """``kafka-acls --bootstrap-server ... --command-config admin.properties <args>`` (in process)."""
    lines: list[str] = []
    assert kafka_acls.main(["--bootstrap-server", cluster.bootstrap_servers, "--command-config", admin_properties,
                            *args], out=lines.append) == 0, lines


def scenario(cluster: Cluster, admin_properties: str) -> tuple[str, str]:
    """A fresh topic T (RF 2) and group G, with alice's Read+Write on T and Read on G."""
    topic, group = f"payments-{uuid.uuid4().hex[:6]}", f"readers-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(confluent(cluster, "admin"))  # kept while its future runs
    admin.create_topics([NewTopic(topic, 1, 2)])[topic].result(TIMEOUT)
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--operation", "Write", "--topic", topic)
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", group)
    return topic, group


def produce_one(cluster: Cluster, user: str, topic: str, value: bytes = b"v") -> KafkaError | None:
    """One record as ``user``; its delivery error (None: written)."""
    producer = Producer(confluent(cluster, user, acks="all", **{"message.timeout.ms": 10000, "retries": 0}))
    outcome: list = []
    producer.produce(topic, value, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(TIMEOUT)
    return outcome[0] if outcome else KafkaError(KafkaError._MSG_TIMED_OUT)


def refused(error: KafkaError | None) -> bool:
    return error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def assert_kafka_python_refused(cluster: Cluster, user: str, topic: str, value: bytes) -> None:
    """kafka-python's produce as ``user`` fails with TopicAuthorizationFailedError."""
    producer = kafka.KafkaProducer(retries=0, max_block_ms=10000, **python_client(cluster, user))
    try:
        with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
            producer.send(topic, value).get(timeout=TIMEOUT)
    finally:
        producer.close()


def end_offset(cluster: Cluster, topic: str) -> int:
    """The topic's end offset as admin (a super user sees everything)."""
    consumer = Consumer(confluent(cluster, "admin", **{"group.id": "watermarks"}))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)[1]
    finally:
        consumer.close()


def visible(cluster: Cluster, user: str) -> set[str]:
    return set(AdminClient(confluent(cluster, user)).list_topics(timeout=TIMEOUT).topics)


def consume(cluster: Cluster, user: str, topic: str, group: str, count: int,
            timeout: float = TIMEOUT) -> tuple[list[bytes], KafkaError | None]:
    """Up to ``count`` values read as ``user`` in ``group``, and the first error polled (if any)."""
    consumer = Consumer(confluent(cluster, user, **{"group.id": group, "auto.offset.reset": "earliest",
                                                    "session.timeout.ms": 6000}))
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return values, message.error()
            values.append(message.value())
        return values, None
    finally:
        consumer.close()


def test_alice_produces_and_consumes_in_her_group(cluster, admin_properties, users):
    topic, group = scenario(cluster, admin_properties)
    wait_for(lambda: produce_one(cluster, "alice", topic, b"first") is None, TIMEOUT, "alice's produce to be allowed")
    for i in range(4):
        assert produce_one(cluster, "alice", topic, b"alice %d" % i) is None
    values, error = consume(cluster, "alice", topic, group, 5)
    assert error is None and values == [b"first"] + [b"alice %d" % i for i in range(4)]
    assert topic in visible(cluster, "alice")

    producer = kafka.KafkaProducer(acks="all", **python_client(cluster, "alice"))
    try:
        for i in range(2):
            producer.send(topic, b"python %d" % i).get(timeout=TIMEOUT)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                                   **python_client(cluster, "alice"))
    try:  # kafka-python in the same group resumes at the offset confluent-kafka committed (OffsetFetch: Read on G)
        got: list[bytes] = []

        def read_new() -> bool:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
            return len(got) >= 2
        wait_for(read_new, TIMEOUT, "kafka-python to read alice's two new records", interval=0)
        assert got == [b"python 0", b"python 1"]
    finally:
        consumer.close()


def test_bob_cannot_produce_to_or_see_alices_topic(cluster, admin_properties, users):
    topic, _group = scenario(cluster, admin_properties)
    wait_for(lambda: produce_one(cluster, "alice", topic) is None, TIMEOUT, "alice's produce to be allowed")
    before = end_offset(cluster, topic)

    error = produce_one(cluster, "bob", topic, b"bob was here")
    assert refused(error), error
    assert_kafka_python_refused(cluster, "bob", topic, b"bob was here too")
    assert end_offset(cluster, topic) == before  # nothing written
    assert topic not in visible(cluster, "bob")  # Metadata leaves out what bob may not describe
    assert topic in visible(cluster, "alice") and topic in visible(cluster, "admin")


def test_bob_with_read_but_no_group_acl_cannot_join_the_group(cluster, admin_properties, users):
    topic, group = scenario(cluster, admin_properties)
    wait_for(lambda: produce_one(cluster, "alice", topic) is None, TIMEOUT, "alice's produce to be allowed")
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic)
    wait_for(lambda: topic in visible(cluster, "bob"), TIMEOUT, "bob's Read on the topic (implies Describe)")

    def group_refused() -> bool:
        values, error = consume(cluster, "bob", topic, group, 1, timeout=10)
        assert values == [], "bob read without Read on the group"
        return error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    wait_for(group_refused, 60, "bob's consumer to get GROUP_AUTHORIZATION_FAILED", interval=0)

    consumer = kafka.KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", **python_client(cluster, "bob"))
    try:
        with pytest.raises(kafka.errors.GroupAuthorizationFailedError):
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                assert not consumer.poll(timeout_ms=1000), "bob read without Read on the group"
    finally:
        consumer.close()


def test_a_prefixed_acl_grants_bob_write_live(cluster, admin_properties, users):
    topic, _group = scenario(cluster, admin_properties)
    pids = {b: cluster.broker_pid(b) for b in cluster.broker_ids}
    assert refused(produce_one(cluster, "bob", topic))
    before = end_offset(cluster, topic)
    prefix = topic[:len("payments-") + 2]
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic",
         prefix, "--resource-pattern-type", "prefixed")
    wait_for(lambda: produce_one(cluster, "bob", topic, b"bob's") is None, TIMEOUT, "bob's Write under the prefix")
    assert end_offset(cluster, topic) == before + 1
    assert topic in visible(cluster, "bob")  # Write implies Describe
    assert {b: cluster.broker_pid(b) for b in cluster.broker_ids} == pids  # live: no broker restarted
    acls(cluster, admin_properties, "--remove", "--allow-principal", "User:bob", "--operation", "Write", "--topic",
         prefix, "--resource-pattern-type", "prefixed", "--force")
    wait_for(lambda: refused(produce_one(cluster, "bob", topic)), TIMEOUT, "bob's Write to go with the prefixed ACL")


def test_a_deny_overrides_alices_allow_live(cluster, admin_properties, users):
    topic, group = scenario(cluster, admin_properties)
    pids = {b: cluster.broker_pid(b) for b in cluster.broker_ids}
    wait_for(lambda: produce_one(cluster, "alice", topic, b"allowed") is None, TIMEOUT, "alice's produce to be allowed")
    before = end_offset(cluster, topic)
    acls(cluster, admin_properties, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", topic)
    wait_for(lambda: refused(produce_one(cluster, "alice", topic, b"denied")), TIMEOUT,
             "alice's Deny to override her Allow")
    assert_kafka_python_refused(cluster, "alice", topic, b"denied too")
    assert end_offset(cluster, topic) == before  # nothing written since the Deny
    values, error = consume(cluster, "alice", topic, group, 1)  # the Deny is for Write: Read still allowed
    assert error is None and values == [b"allowed"]
    assert {b: cluster.broker_pid(b) for b in cluster.broker_ids} == pids
