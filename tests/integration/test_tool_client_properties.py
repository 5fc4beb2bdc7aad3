"""Every admin and console tool on a secured cluster, through its client properties file: the cluster of
``test_acl_principals`` (2 real brokers whose only listener is SASL_PLAINTEXT with SCRAM-SHA-512, an ACL
authorizer with ``allow.everyone.if.no.acl.found=false``, ``User:admin`` a super user), and the tools run
as the operator runs them (their console scripts, in subprocesses) with Kafka's flags: ``kafka-topics``,
``kafka-consumer-groups`` and ``kafka-reassign-partitions`` ``--command-config``, the console producer's
``--producer.config`` and the console consumer's ``--consumer.config``. Without the file none of them
could even connect (the listener speaks SASL only). Refused credentials are one clear error, exit 1, and
a missing file exits 2 naming the flag."""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.conditions import wait_for
from tests.integration.scram_users import ADMIN_JAAS
from tests.integration.test_acl_principals import (PASSWORDS, SCRAM, acls, admin_properties,  # noqa: F401 (fixtures)
                                                   cluster, confluent, users)
from tests.integration.test_console_tools import tool

TIMEOUT = 30
WRONG_JAAS = ADMIN_JAAS.replace('password="admin-secret"', 'password="wrong"')
AUTH_FAILED = "SASL SCRAM-SHA-512 authentication with"


@pytest.fixture(scope="module")
def wrong_properties(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("wrong") / "wrong.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.jaas.config={WRONG_JAAS}\n")
    return str(path)


def topics(cluster, properties: str, *args: str):
    return tool("kafka-topics", "--bootstrap-server", cluster.bootstrap_servers, "--command-config", properties, *args)


def create(cluster, properties: str, partitions: int = 1, replicas: int = 2) -> str:
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    done = topics(cluster, properties, "--create", "--topic", topic, "--partitions", str(partitions),
                  "--replication-factor", str(replicas))
    assert (done.returncode, done.stdout) == (0, f"Created topic {topic}.\n"), done.stderr
    return topic


def test_kafka_topics_create_list_describe(cluster, admin_properties):
    topic = create(cluster, admin_properties, partitions=2)
    listed = topics(cluster, admin_properties, "--list")
    assert listed.returncode == 0 and topic in listed.stdout.split("\n"), listed.stderr
    described = topics(cluster, admin_properties, "--describe", "--topic", topic)
    lines = described.stdout.splitlines()
    assert described.returncode == 0 and lines[0] == (f"Topic: {topic}\tPartitionCount: 2\tReplicationFactor: 2\t"
                                                      f"Configs: "), described.stderr
    assert [line.split("\t")[2] for line in lines[1:]] == ["Partition: 0", "Partition: 1"]


def test_console_producer_then_consumer_round_trip(cluster, admin_properties, tmp_path):
    """--producer.config / --consumer.config; the consumer's file has a wrong password that
    --consumer-property overrides (Kafka's precedence); without the override it is refused."""
    topic = create(cluster, admin_properties)
    produced = tool("kafka-console-producer", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
                    "--producer.config", admin_properties, "--property", "parse.key=true", stdin="k1\tone\nk2\ttwo\n")
    assert produced.returncode == 0, produced.stderr
    consumer_file = tmp_path / "consumer.properties"
    consumer_file.write_text(Path(admin_properties).read_text().replace("admin-secret", "wrong"))
    consumed = tool("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
                    "--consumer.config", str(consumer_file), "--consumer-property", "sasl.password=admin-secret",
                    "--from-beginning", "--max-messages", "2", "--property", "print.key=true", timeout=60)
    assert (consumed.returncode, consumed.stdout) == (0, "k1\tone\nk2\ttwo\n"), consumed.stderr
    refused = tool("kafka-console-consumer", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
                   "--consumer.config", str(consumer_file), "--max-messages", "1")
    assert refused.returncode == 1 and AUTH_FAILED in refused.stderr, refused.stderr


def test_kafka_consumer_groups_list_and_describe(cluster, admin_properties):
    topic, group = create(cluster, admin_properties), f"readers-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(confluent(cluster, "admin", **{"group.id": group, "enable.auto.commit": False}))
    try:  # a committed offset, as admin (the group then exists, Empty once the consumer left)
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    common = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", admin_properties]
    listed = wait_for(lambda: (r := tool("kafka-consumer-groups", *common, "--list")).returncode == 0
                      and group in r.stdout.split("\n") and r, TIMEOUT, "the group in --list")
    assert listed.stderr == ""
    described = tool("kafka-consumer-groups", *common, "--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    row = next(line.split() for line in described.stdout.splitlines() if line.startswith(group))
    assert row[:6] == [group, topic, "0", "0", "0", "0"], described.stdout


def test_kafka_reassign_partitions_throttled_move_list_and_verify(cluster, admin_properties, tmp_path):
    """--command-config reaches both clients: the kio one (Metadata, AlterPartitionReassignments,
    ListPartitionReassignments to the controller) and confluent-kafka's (the throttles set by --execute
    --throttle and cleared by --verify)."""
    topic = create(cluster, admin_properties, replicas=1)
    common = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", admin_properties]
    listed = tool("kafka-reassign-partitions", *common, "--list")
    assert listed.returncode == 0, listed.stderr
    current = topics(cluster, admin_properties, "--describe", "--topic", topic).stdout
    source = int(current.splitlines()[1].split("Replicas: ")[1].split("\t")[0])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [3 - source]}]}))
    executed = tool("kafka-reassign-partitions", *common, "--execute", "--reassignment-json-file", str(plan),
                    "--throttle", "50000000")
    assert executed.returncode == 0 and "The inter-broker throttle limit was set to 50000000 B/s" in executed.stdout, \
        executed.stderr + executed.stdout
    completed = f"Reassignment of partition {topic}-0 is completed."
    verified = wait_for(lambda: completed in (r := tool("kafka-reassign-partitions", *common, "--verify",
                                                        "--reassignment-json-file", str(plan))).stdout and r,
                        TIMEOUT, "the move to complete")
    assert verified.returncode == 0, verified.stderr
    assert "Clearing broker-level throttles on brokers 1,2" in verified.stdout, verified.stdout
    assert "No partition reassignments found." in tool("kafka-reassign-partitions", *common, "--list").stdout


def test_delete_records_needs_delete_on_the_topic(cluster, admin_properties, users, tmp_path):
    """kafka-delete-records as alice: TopicAuthorizationException until she is granted Delete on the topic;
    kafka-get-offsets, kafka-broker-api-versions and kafka-cluster through the admin's file."""
    topic = create(cluster, admin_properties)
    producer = Producer(confluent(cluster, "admin", acks="all"))
    for i in range(10):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(TIMEOUT) == 0
    alice = tmp_path / "alice.properties"
    alice.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.jaas.config="
                     f"{ADMIN_JAAS.replace('admin', 'alice')}\n")
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 4}], "version": 1}))
    delete = ["kafka-delete-records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file",
              str(offsets), "--command-config", str(alice)]
    # Describe first: without it her client cannot even see the topic's leader (librdkafka: UNKNOWN_TOPIC)
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:alice", "--operation", "Describe",
         "--topic", topic)
    denied = wait_for(lambda: "TopicAuthorization" in (r := tool(*delete)).stdout and r, TIMEOUT,
                      "alice to see the topic and be refused the delete")
    assert denied.returncode == 0 and "\terror: org.apache.kafka.common.errors.TopicAuthorizationException" in denied.stdout, \
        denied.stdout + denied.stderr
    acls(cluster, admin_properties, "--add", "--allow-principal", "User:alice", "--operation", "Delete",
         "--topic", topic)
    wait_for(lambda: f"partition: {topic}-0\tlow_watermark: 4" in tool(*delete).stdout, TIMEOUT,
             "alice's delete to be allowed")
    common = ["--bootstrap-server", cluster.bootstrap_servers, "--command-config", admin_properties]
    earliest = tool("kafka-get-offsets", *common, "--topic", topic, "--time", "-2")
    assert (earliest.returncode, earliest.stdout) == (0, f"{topic}:0:4\n"), earliest.stderr
    versions = tool("kafka-broker-api-versions", *common)
    assert versions.returncode == 0 and versions.stdout.count(" -> (") == 2, versions.stderr
    cluster_id = tool("kafka-cluster", "cluster-id", "--bootstrap-server", cluster.bootstrap_servers,
                      "--config", admin_properties)
    assert cluster_id.returncode == 0 and cluster_id.stdout.startswith("Cluster ID: "), cluster_id.stderr


@pytest.mark.parametrize("name, flag, args", [
    ("kafka-topics", "--command-config", ["--list"]),
    ("kafka-consumer-groups", "--command-config", ["--list"]),
    ("kafka-reassign-partitions", "--command-config", ["--list"]),
    ("kafka-console-producer", "--producer.config", ["--topic", "t"]),
    ("kafka-acls", "--command-config", ["--list"]),
    ("kafka-configs", "--command-config", ["--describe", "--entity-type", "brokers", "--entity-default"]),
    ("kafka-leader-election", "--admin.config", ["--election-type", "preferred", "--all-topic-partitions"]),
    ("kafka-get-offsets", "--command-config", ["--topic", "t"]),
    ("kafka-broker-api-versions", "--command-config", []),
])
def test_refused_credentials_are_one_clear_error(cluster, wrong_properties, name, flag, args):
    """One line on stderr, exit 1, at once (librdkafka alone would retry until its request timed out and
    then report a transport failure)."""
    done = tool(name, "--bootstrap-server", cluster.bootstrap_servers, flag, wrong_properties, *args, stdin="v\n",
                timeout=20)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Error") and done.stderr.count("\n") == 1, done.stderr
    assert f": {AUTH_FAILED} 127.0.0.1:" in done.stderr and "Authentication failed" in done.stderr, done.stderr


@pytest.mark.parametrize("name, flag, args", [
    ("kafka-topics", "--command-config", ["--list"]),
    ("kafka-consumer-groups", "--command-config", ["--list"]),
    ("kafka-reassign-partitions", "--command-config", ["--list"]),
    ("kafka-console-producer", "--producer.config", ["--topic", "t"]),
    ("kafka-console-consumer", "--consumer.config", ["--topic", "t"]),
    ("kafka-acls", "--command-config", ["--list"]),
    ("kafka-leader-election", "--admin.config", ["--election-type", "preferred", "--all-topic-partitions"]),
])
def test_a_missing_file_exits_2_naming_the_flag(name, flag, args, tmp_path):
    missing = tmp_path / "missing.properties"
    done = tool(name, "--bootstrap-server", "127.0.0.1:1", flag, str(missing), *args)
    assert done.returncode == 2, done.stderr
    assert f"argument {flag}: cannot read {missing}: No such file or directory" in done.stderr, done.stderr


# -- the perf tools (kafka-producer-perf-test, kafka-consumer-perf-test) ----------------------------------

def perf_produce(cluster, topic: str, properties: str, records: int, *props: str):
    return tool("kafka-producer-perf-test", "--topic", topic, "--num-records", str(records), "--record-size", "50",
                "--throughput", "-1", "--producer.config", properties, "--producer-props",
                f"bootstrap.servers={cluster.bootstrap_servers}", *props)


def perf_consume(cluster, topic: str, properties: str, messages: int, *args: str):
    return tool("kafka-consumer-perf-test", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
                "--messages", str(messages), "--consumer.config", properties, "--hide-header", *args, timeout=60)


def test_perf_tools_through_their_config_files(cluster, admin_properties):
    """The producer's final line counts every record (written: the consumer reads them all back)."""
    topic = create(cluster, admin_properties, partitions=2)
    produced = perf_produce(cluster, topic, admin_properties, 2000, "acks=all")
    assert produced.returncode == 0 and produced.stdout.startswith("2000 records sent, "), produced.stderr
    consumed = perf_consume(cluster, topic, admin_properties, 2000)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.count("\n") == 1 and consumed.stdout.split(", ")[4] == "2000", consumed.stdout


def test_perf_tools_without_acls_fail_each_record_and_stop_the_consumer(cluster, admin_properties, users, tmp_path):
    """bob has no ACL on the topic: each record fails (one line each, Kafka's count still printed), exit 1;
    the consumer stops at the authorization failure, one line, exit 1."""
    topic = create(cluster, admin_properties)
    bob = tmp_path / "bob.properties"
    bob.write_text(Path(admin_properties).read_text().replace('username="admin" password="admin-secret"',
                                                              f'username="bob" password="{PASSWORDS["bob"]}"'))
    produced = perf_produce(cluster, topic, str(bob), 5, "message.timeout.ms=10000")
    failures = [line for line in produced.stderr.splitlines() if line.startswith("org.apache.kafka.common.errors.")]
    assert produced.returncode == 1 and len(failures) == 5, produced.stderr
    assert all("TopicAuthorization" in line for line in failures), failures
    assert produced.stdout.startswith("5 records sent, "), produced.stdout
    consumed = perf_consume(cluster, topic, str(bob), 1, "--timeout", "20000")
    assert consumed.returncode == 1 and consumed.stdout == "", consumed.stdout
    assert re.match(r"org\.apache\.kafka\.common\.errors\.\w*AuthorizationException: ",
                    consumed.stderr.splitlines()[-1]), consumed.stderr


@pytest.mark.parametrize("name", ["kafka-producer-perf-test", "kafka-consumer-perf-test"])
def test_perf_tools_refused_credentials_are_one_clear_error(cluster, wrong_properties, name):
    done = (perf_produce(cluster, "t", wrong_properties, 1) if name == "kafka-producer-perf-test"
            else perf_consume(cluster, "t", wrong_properties, 1))
    assert done.returncode == 1 and done.stderr.startswith("Error") and done.stderr.count("\n") == 1, done.stderr
    assert f": {AUTH_FAILED} 127.0.0.1:" in done.stderr, done.stderr


# -- kafka-log-dirs and the verifiable tools ------------------------------------------------------------

def test_kafka_log_dirs_needs_describe_on_the_cluster(cluster, admin_properties, users, tmp_path):
    """As admin (a super user) every dir of both brokers; as alice (no Describe on the cluster) the brokers
    answer no dir at all, as Kafka 2.8's DescribeLogDirs does."""
    topic = create(cluster, admin_properties)
    common = ["--describe", "--bootstrap-server", cluster.bootstrap_servers, "--topic-list", topic]
    as_admin = tool("kafka-log-dirs", *common, "--command-config", admin_properties)
    assert as_admin.returncode == 0, as_admin.stderr
    report = json.loads(as_admin.stdout.splitlines()[2])
    assert [len(b["logDirs"]) for b in report["brokers"]] == [1, 1]
    assert sorted(p["partition"] for b in report["brokers"] for d in b["logDirs"] for p in d["partitions"]) == \
        [f"{topic}-0", f"{topic}-0"]
    alice = tmp_path / "alice.properties"
    alice.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={SCRAM}\nsasl.jaas.config="
                     f"{ADMIN_JAAS.replace('admin', 'alice')}\n")
    as_alice = tool("kafka-log-dirs", *common, "--command-config", str(alice))
    assert as_alice.returncode == 0, as_alice.stderr
    assert [b["logDirs"] for b in json.loads(as_alice.stdout.splitlines()[2])["brokers"]] == [[], []]


def test_verifiable_tools_through_their_config_files(cluster, admin_properties):
    topic = create(cluster, admin_properties)
    produced = tool("kafka-verifiable-producer", "--topic", topic, "--bootstrap-server", cluster.bootstrap_servers,
                    "--max-messages", "20", "--acks", "-1", "--producer.config", admin_properties)
    events = [json.loads(line) for line in produced.stdout.splitlines()]
    assert produced.returncode == 0, produced.stderr
    assert sorted(e["offset"] for e in events if e["name"] == "producer_send_success") == list(range(20))
    consumed = tool("kafka-verifiable-consumer", "--topic", topic, "--group-id", f"v-{topic}", "--bootstrap-server",
                    cluster.bootstrap_servers, "--max-messages", "20", "--reset-policy", "earliest",
                    "--consumer.config", admin_properties)
    assert consumed.returncode == 0, consumed.stderr
    counts = [json.loads(line)["count"] for line in consumed.stdout.splitlines()
              if json.loads(line)["name"] == "records_consumed"]
    assert sum(counts) == 20
