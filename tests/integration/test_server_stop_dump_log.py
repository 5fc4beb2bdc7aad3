"""kafka-server-stop and kafka-dump-log on a real 2-broker cluster, run as the installed console scripts.

kafka-server-stop stops every zkafka broker of the machine without ``--config`` -- other people's test clusters
included -- so this module only ever runs it with ``--config`` naming its own cluster: first one broker's
server.properties (the other keeps running), then the cluster's directory (the rest), then once more (nothing
left: ``No kafka server to stop``, exit 1). SIGTERM is a controlled shutdown: each broker's log says so and it
leaves ``.kafka_cleanshutdown``. kafka-dump-log then reads the stopped brokers' segments: records with keys and
headers, a committed transaction's marker, the ``__transaction_state`` records through
``--transaction-log-decoder``, the indexes checked against the log -- every line parsed as a script parses
Kafka's.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
PROPERTIES = {"transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "2",
              "transaction.state.log.min.isr": "1", "offsets.topic.num.partitions": "1"}
BATCH = re.compile(r"baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) "
                   r"producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (\d+) isTransactional: (\w+) "
                   r"isControl: (\w+) position: (\d+) CreateTime: (\d+) size: (\d+) magic: 2 compresscodec: (\w+) "
                   r"crc: (\d+) isvalid: true$")
RECORD = re.compile(r"\| offset: (\d+) isValid: true crc: null keySize: (-?\d+) valueSize: (-?\d+) CreateTime: (\d+) "
                    r"baseOffset: \d+ lastOffset: \d+ baseSequence: -?\d+ lastSequence: -?\d+ producerEpoch: -?\d+ "
                    r"partitionLeaderEpoch: \d+ batchSize: \d+ magic: 2 compressType: \w+ position: \d+ "
                    r"sequence: (-?\d+) headerKeys: \[(.*?)\](.*)$")


def tool(name: str, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def produce(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # an index entry per batch: every entry is checked against the log
    admin.create_topics([NewTopic("dumped", 1, 2, config={"index.interval.bytes": "1"})])["dumped"].result(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 50,
                      "enable.idempotence": True, "compression.type": "lz4"})
    for n in range(10):
        plain.produce("dumped", key=b"k%d" % n, value=b"value-%d" % n, headers=[("h", b"x")] if n % 2 else None)
    assert plain.flush(30) == 0
    txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "dump-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce("dumped", key=b"t", value=b"in-txn")
    txn.commit_transaction(30)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """(cluster, {step: CompletedProcess}, {broker: alive after step 1}) once kafka-server-stop stopped it all."""
    with running_cluster(tmp_path_factory.mktemp("stop-dump") / "cluster", 2, tick_time=500,
                         session_timeout_ms=6000, properties=PROPERTIES) as cluster:
        produce(cluster)
        results = {"one": tool("kafka-server-stop", "--config", str(cluster.broker_dir(1) / "server.properties"))}
        wait_for(lambda: cluster.broker_pid(1) is None, 60, "broker 1 to stop")
        survivors = {b: cluster.broker_pid(b) is not None for b in cluster.broker_ids}
        results["rest"] = tool("kafka-server-stop", "--config", str(cluster.dir))
        wait_for(lambda: cluster.broker_pid(2) is None, 60, "broker 2 to stop")
        results["none"] = tool("kafka-server-stop", "--config", str(cluster.dir))
        yield cluster, results, survivors


def segment(cluster: Cluster, partition: str, suffix: str = ".log") -> str:
    return str(cluster.log_dir(2) / partition / f"00000000000000000000{suffix}")


def test_kafka_server_stop_stops_only_the_brokers_it_names(stopped):
    cluster, results, survivors = stopped
    assert [(r.returncode, r.stdout, r.stderr) for r in (results["one"], results["rest"])] == [(0, "", "")] * 2
    assert survivors == {1: False, 2: True}
    assert (results["none"].returncode, results["none"].stdout) == (1, "No kafka server to stop\n")
    for broker in cluster.broker_ids:
        log = (cluster.broker_dir(broker) / "broker.log").read_text()
        assert f"broker {broker} stopping (signal)" in log and f"broker {broker} shut down completed" in log
        assert (cluster.log_dir(broker) / ".kafka_cleanshutdown").exists()
    assert "broker 1: controlled shutdown succeeded" in (cluster.broker_dir(1) / "broker.log").read_text()


def test_dump_log_prints_kafkas_batch_and_record_lines(stopped):
    cluster = stopped[0]
    result = tool("kafka-dump-log", "--files", segment(cluster, "dumped-0"), "--print-data-log")
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and lines[:2] == [f"Dumping {segment(cluster, 'dumped-0')}", "Starting offset: 0"]
    batches = [BATCH.match(line) for line in lines if line.startswith("baseOffset:")]
    assert all(batches), lines
    records = [RECORD.match(line) for line in lines if line.startswith("|")]
    assert all(records), lines
    data = [r for r in records if "endTxnMarker" not in r.group(7)]
    assert [r.group(7) for r in data] == [f" key: k{n} payload: value-{n}" for n in range(10)] + [" key: t payload: in-txn"]
    assert [r.group(6) for r in data[:4]] == ["", "h", "", "h"]
    assert [int(r.group(1)) for r in records] == list(range(len(records)))  # offsets 0..n, the marker included
    marker = batches[-1]
    assert (marker.group(9), marker.group(10)) == ("true", "true")
    assert records[-1].group(7) == " endTxnMarker: COMMIT coordinatorEpoch: 0"
    assert batches[0].group(14) == "LZ4" and int(batches[0].group(6)) >= 0  # idempotent: a producer id
    positions = [int(b.group(11)) for b in batches]
    assert positions == [0] + [p + int(b.group(13)) for p, b in zip(positions, batches)][:-1]
    assert "invalid bytes" not in result.stdout and result.stderr == ""


def test_dump_log_decodes_the_transaction_log(stopped):
    cluster = stopped[0]
    result = tool("kafka-dump-log", "--files", segment(cluster, "__transaction_state-0"), "--transaction-log-decoder")
    payloads = [line.split(" key: ", 1)[1] for line in result.stdout.splitlines() if " key: " in line]
    assert payloads and all(p.startswith("transaction_metadata::transactionalId=dump-txn payload: producerId:")
                            for p in payloads), result.stdout
    states = [re.search(r",state=(\w+),partitions=\[(.*?)\]", p).groups() for p in payloads]
    assert states[0] == ("Empty", "")
    assert ("Ongoing", "dumped-0") in states and ("PrepareCommit", "dumped-0") in states
    assert states[-1] == ("CompleteCommit", "")


def test_dump_log_checks_the_indexes_against_the_log(stopped):
    cluster = stopped[0]
    index, time_index = segment(cluster, "dumped-0", ".index"), segment(cluster, "dumped-0", ".timeindex")
    result = tool("kafka-dump-log", "--files", f"{index},{time_index}")
    lines = result.stdout.splitlines()
    entries = [re.fullmatch(r"offset: (\d+) position: (\d+)", line) for line in lines[1:lines.index(f"Dumping {time_index}")]]
    assert entries and all(entries), lines
    assert [re.fullmatch(r"timestamp: \d+ offset: \d+", line) is not None for line in lines[len(entries) + 2:]]
    assert result.returncode == 0 and result.stderr == ""  # no mismatches
    verified = tool("kafka-dump-log", "--files", f"{index},{time_index}", "--verify-index-only")
    assert verified.stdout.splitlines() == [f"Dumping {index}", f"Dumping {time_index}"]
    sane = tool("kafka-dump-log", "--files", index, "--index-sanity-check")
    assert sane.stdout.splitlines() == [f"Dumping {index}", f"{index} passed sanity check."]
