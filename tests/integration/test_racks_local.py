"""Rack-aware replica placement on a local cluster: four brokers in three racks (``zkafka cluster up
--racks a,a,b,c``). CreateTopics, CreatePartitions and ``kafka-topics --zookeeper --create`` place
each partition's replicas in distinct racks, as Kafka's ``AdminUtils.assignReplicasToBrokers`` does;
``--disable-rack-aware`` turns it off. (The container tier loses a whole rack: ``test_racks.py``.)
"""
from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.test_console_tools import tool

RACKS = {1: "a", 2: "a", 3: "b", 4: "c"}
TIMEOUT = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("racks") / "cluster", 4, tick_time=500, session_timeout_ms=6000,
                         racks=[RACKS[b] for b in sorted(RACKS)]) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def replica_racks(admin, topic: str, partitions: int) -> dict[int, list[str]]:
    def read():
        meta = admin.list_topics(topic, timeout=10).topics[topic].partitions
        return {p: [RACKS[b] for b in m.replicas] for p, m in meta.items()} if len(meta) == partitions else None
    return wait_for(read, timeout=TIMEOUT, what=f"{topic}'s {partitions} partitions in the metadata")


def test_brokers_advertise_their_racks(admin):
    nodes = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT).nodes
    assert {node.id: node.rack for node in nodes} == RACKS


def test_created_and_added_partitions_span_three_racks(admin):
    topic = f"racked-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 8, 3)])[topic].result(TIMEOUT)
    racks = replica_racks(admin, topic, 8)
    assert all(sorted(r) == ["a", "b", "c"] for r in racks.values()), racks
    admin.create_partitions([NewPartitions(topic, 12)])[topic].result(TIMEOUT)
    racks = replica_racks(admin, topic, 12)
    assert all(sorted(r) == ["a", "b", "c"] for r in racks.values()), racks


def test_two_replicas_never_share_a_rack(admin):
    topic = f"racked2-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 12, 2)])[topic].result(TIMEOUT)
    assert all(len(set(r)) == 2 for r in replica_racks(admin, topic, 12).values())


def test_kafka_topics_zookeeper_mode_is_rack_aware_unless_disabled(cluster, admin):
    aware, unaware = (f"zk-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("aware", "unaware"))
    for topic, flags in ((aware, []), (unaware, ["--disable-rack-aware"])):
        result = tool("kafka-topics", "--zookeeper", cluster.zookeeper_connect, "--create", "--topic", topic,
                      "--partitions", "8", "--replication-factor", "3", *flags)
        assert result.returncode == 0, result.stderr
    assert all(sorted(r) == ["a", "b", "c"] for r in replica_racks(admin, aware, 8).values())
    # rack-unaware round robin over 1..4 puts brokers 1 and 2 (both rack a) together in some partitions
    assert any(len(set(r)) < 3 for r in replica_racks(admin, unaware, 8).values())


def test_reassign_generate_is_rack_aware_unless_disabled(cluster, admin, tmp_path):
    topic = f"moving-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 8, 3)])[topic].result(TIMEOUT)
    replica_racks(admin, topic, 8)
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))

    def proposed(*flags: str) -> list[list[str]]:
        result = tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap_servers, "--generate",
                      "--topics-to-move-json-file", str(topics_file), "--broker-list", "1,2,3,4", *flags)
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout.split("Proposed partition reassignment configuration")[1].strip())
        return [[RACKS[b] for b in p["replicas"]] for p in plan["partitions"]]

    assert all(sorted(r) == ["a", "b", "c"] for r in proposed())
    assert any(len(set(r)) < 3 for r in proposed("--disable-rack-aware"))
