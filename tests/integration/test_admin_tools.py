"""kafka-delete-records, kafka-get-offsets, kafka-broker-api-versions and kafka-cluster against a real cluster (a
real ZooKeeper, 3 broker processes), run as an operator runs them (their console scripts) and their output
parsed the way a script would.

DeleteRecords end to end: the tool's low watermarks; every replica's log start moves (the segments wholly
below it are deleted by retention on all three brokers, and a new leader after a failover answers the same
earliest offset); confluent-kafka and kafka-python consumers asking below the log start get
OFFSET_OUT_OF_RANGE and reset to it."""
from __future__ import annotations

import json
import re
import signal
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.test_console_tools import tool

TIMEOUT = 60
SEGMENT_BYTES = 4096


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("admin-tools") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000,
                         properties={"log.retention.check.interval.ms": "500", "log.segment.delete.delay.ms": "0",
                                     "replica.fetch.backoff.ms": "200"}) as c:
        yield c


def create(cluster, partitions: int = 2, **config: str) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 3, config=config)])[topic].result(TIMEOUT)
    wait_for(lambda: all(p.leader >= 0 and len(p.isrs) == 3 for p in
                         admin.list_topics(topic, timeout=10).topics[topic].partitions.values()) and
             len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == partitions,
             timeout=TIMEOUT, what=f"{topic}'s partitions with their ISR of 3")
    return topic


def produce(cluster, topic: str, counts: dict[int, int]) -> None:
    """Acknowledged (acks=all) records, in batches well below the topics' 4 KiB segments."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                         "batch.size": 1024})
    failures = []
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, key=b"k%d" % i, value=b"v%05d" % i + b"." * 100, partition=partition,
                             on_delivery=lambda err, _: err and failures.append(err))
    assert producer.flush(TIMEOUT) == 0 and not failures, failures[:3]


def delete_records(cluster, tmp_path: Path, partitions: list[dict]):
    path = tmp_path / f"offsets-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps({"partitions": partitions, "version": 1}))
    return tool("kafka-delete-records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file", str(path))


def get_offsets(cluster, topic: str, *args: str):
    return tool("kafka-get-offsets", "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic, *args)


def parsed_offsets(stdout: str) -> dict[int, int | None]:
    out = {}
    for line in stdout.splitlines():
        _, partition, offset = line.rsplit(":", 2)
        out[int(partition)] = int(offset) if offset else None
    return out


def low_watermarks(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    assert lines[:2] == ["Executing records delete operation", "Records delete operation completed:"], stdout
    result = {}
    for line in lines[2:]:
        match = re.fullmatch(r"partition: (\S+)\t(low_watermark|error): (.*)", line)
        assert match, line
        result[match[1]] = match[3] if match[2] == "low_watermark" else "error: " + match[3]
    return result


def segment_bases(cluster, broker_id: int, topic: str, partition: int) -> list[int]:
    directory = cluster.log_dir(broker_id) / f"{topic}-{partition}"
    return sorted(int(p.stem) for p in directory.glob("*.log"))


def test_delete_records_moves_every_replicas_log_start(cluster, tmp_path):
    topic = create(cluster, **{"segment.bytes": str(SEGMENT_BYTES)})
    produce(cluster, topic, {0: 300, 1: 100})
    done = delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 200},
                                              {"topic": topic, "partition": 1, "offset": -1}])
    assert done.returncode == 0, done.stderr
    assert low_watermarks(done.stdout) == {f"{topic}-0": "200", f"{topic}-1": "100"}
    earliest = get_offsets(cluster, topic, "--time", "-2")
    assert (earliest.returncode, parsed_offsets(earliest.stdout)) == (0, {0: 200, 1: 100}), earliest.stderr
    latest = get_offsets(cluster, topic, "--time", "-1")
    assert parsed_offsets(latest.stdout) == {0: 300, 1: 100}
    # retention deletes the segments wholly below the log start, on the leader and both followers
    wait_for(lambda: all(segment_bases(cluster, b, topic, 0)[0] > 0 and segment_bases(cluster, b, topic, 0)[0] <= 200
                         for b in cluster.broker_ids), timeout=TIMEOUT, what="segments below 200 deleted everywhere")


def test_a_new_leader_answers_the_same_log_start(cluster, tmp_path):
    topic = create(cluster, partitions=1)
    produce(cluster, topic, {0: 50})
    assert low_watermarks(delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 30}]).stdout) \
        == {f"{topic}-0": "30"}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    cluster.signal_broker(leader, signal.SIGSTOP)
    try:
        wait_for(lambda: admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader not in (leader, -1),
                 timeout=TIMEOUT, what="a new leader")
        assert parsed_offsets(get_offsets(cluster, topic, "--time", "-2").stdout) == {0: 30}
    finally:
        cluster.signal_broker(leader, signal.SIGCONT)
    cluster.wait_until_ready(TIMEOUT)  # its session expired while stopped: registered again before the next test
    wait_for(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].isrs) == 3,
             timeout=TIMEOUT, what="the stopped broker back in the ISR")


def test_consumers_below_the_log_start_reset_to_it(cluster, tmp_path):
    """confluent-kafka's consumer below the tool's log start; kafka-python's admin moves it again (its own
    DeleteRecords request) and its consumer, seeking to 0, resets to it."""
    topic = create(cluster, partitions=1)
    produce(cluster, topic, {0: 40})
    assert low_watermarks(delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 25}]).stdout) \
        == {f"{topic}-0": "25"}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 3)])  # below the log start: OFFSET_OUT_OF_RANGE, then reset
        seen = []
        wait_for(lambda: seen.extend(m.offset() for m in consumer.consume(50, 1) if not m.error()) or len(seen) >= 15,
                 timeout=TIMEOUT, what="confluent-kafka's records")
        assert seen == list(range(25, 40))
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)  # kafka-python's DeleteRecords too
    try:
        (answer,) = admin.delete_records({KpTopicPartition(topic, 0): 28}, timeout_ms=30000).values()
        assert answer["low_watermark"] == 28, answer
    finally:
        admin.close()
    kp = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                       enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        kp.assign([KpTopicPartition(topic, 0)])
        kp.seek(KpTopicPartition(topic, 0), 0)
        offsets = []
        wait_for(lambda: offsets.extend(r.offset for rs in kp.poll(1000).values() for r in rs) or len(offsets) >= 12,
                 timeout=TIMEOUT, what="kafka-python's records")
        assert offsets == list(range(28, 40))
    finally:
        kp.close()


def test_delete_records_errors(cluster, tmp_path):
    topic = create(cluster, partitions=1)
    produce(cluster, topic, {0: 10})
    done = delete_records(cluster, tmp_path, [{"topic": topic, "partition": 0, "offset": 11}])
    assert done.returncode == 0
    (outcome,) = low_watermarks(done.stdout).values()
    assert outcome.startswith("error: org.apache.kafka.common.errors.OffsetOutOfRange"), outcome
    compacted = create(cluster, partitions=1, **{"cleanup.policy": "compact"})
    produce(cluster, compacted, {0: 3})
    (outcome,) = low_watermarks(delete_records(cluster, tmp_path, [
        {"topic": compacted, "partition": 0, "offset": 1}]).stdout).values()
    assert outcome.startswith("error: org.apache.kafka.common.errors.PolicyViolation"), outcome
    bad = tmp_path / "bad.json"
    for text, message in [("{", "not JSON"), ('{"version": 2, "partitions": []}', "Not supported version"),
                          (json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 1}] * 2}),
                           "duplicate topic partitions")]:
        bad.write_text(text)
        result = tool("kafka-delete-records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file",
                      str(bad))
        assert result.returncode == 1 and message in result.stderr and len(result.stderr.splitlines()) == 1, result
    unknown = tool("kafka-delete-records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file",
                   str(bad), "--no-such-flag")
    assert unknown.returncode == 1 and len(unknown.stderr.splitlines()) == 1, unknown


def test_get_offsets_by_time_and_errors(cluster):
    topic = create(cluster, partitions=2)
    produce(cluster, topic, {0: 5})
    by_time = get_offsets(cluster, topic, "--time", "0", "--partitions", "0,1")
    assert parsed_offsets(by_time.stdout) == {0: 0, 1: None}  # partition 1 has no record at or after time 0
    future = get_offsets(cluster, topic, "--time", str(2**62))
    assert parsed_offsets(future.stdout) == {0: None, 1: None}
    missing = get_offsets(cluster, topic, "--partitions", "0,7")
    assert parsed_offsets(missing.stdout) == {0: 5} and "Error: partition 7 does not exist" in missing.stderr
    nope = get_offsets(cluster, "no-such-topic")
    assert (nope.returncode, nope.stderr.strip()) == (1, "Topic no-such-topic does not exist")
    bad = get_offsets(cluster, topic, "--partitions", "a,b")
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1 and "numeric partition ids" in bad.stderr


def test_broker_api_versions_prints_every_brokers_table(cluster):
    done = tool("kafka-broker-api-versions", "--bootstrap-server", cluster.bootstrap_servers)
    assert done.returncode == 0, done.stderr
    blocks = re.findall(r"^(\S+:\d+) \(id: (\d+) rack: (\S+)\) -> \(\n((?:\t.*\n)+)\)$", done.stdout, re.M)
    assert [int(b[1]) for b in blocks] == sorted(cluster.broker_ids)
    for _, _, rack, body in blocks:
        apis = dict(re.fullmatch(r"\t(\w+)\((\d+)\): (.*?),?", line).group(1, 3) for line in body.splitlines())
        assert rack == "null"
        assert apis["Produce"] == "0 to 9 [usable: 9]" and apis["DeleteRecords"] == "0 to 2 [usable: 2]"
        assert apis["DescribeCluster"] == "0 [usable: 0]" and apis["LeaderAndIsr"] == "UNSUPPORTED"
        assert len(apis) >= 55


def test_kafka_cluster_cluster_id(cluster, zk_cluster_id):
    done = tool("kafka-cluster", "cluster-id", "--bootstrap-server", cluster.bootstrap_servers)
    assert (done.returncode, done.stdout) == (0, f"Cluster ID: {zk_cluster_id}\n"), done.stderr
    missing = tool("kafka-cluster", "cluster-id")
    assert (missing.returncode, missing.stderr) == (1, "Please specify --bootstrap-server.\n")


@pytest.fixture
def zk_cluster_id(cluster):
    from tests.integration.znodes import connected_zk
    with connected_zk(cluster) as client:
        data, _ = client.get("/cluster/id")
    return json.loads(data)["id"]
