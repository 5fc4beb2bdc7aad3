"""zkafka pipelines on a real Spark standalone cluster: a master and two workers, each its own JVM
(``zkafka spark up``'s code), applications sent with ``spark-submit --master spark://...`` by ``zkafka spark
submit``'s code, which ships the executors' Python environment (``--archives``) and zkafka's code
(``--py-files``). The executors read the brokers themselves; the driver only plans.

The short form of the issue's fault runs: a checkpointed streaming copy into Spark's file sink (exactly once)
while one executor JVM is SIGKILLed and then a partition leader broker is SIGKILLed; every input record is in
the committed output exactly once.
"""
from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import running_cluster
from scripts.local.spark.standalone import SparkClusterSpec, SparkStandaloneCluster
from scripts.local.spark.submit import job_result, start, stop, submit
from tests.integration.conditions import wait_for
from tests.integration.txn_support import stable

TIMEOUT = 180
EXECUTOR = {"spark.executor.memory": "512m", "spark.executor.cores": "1"}


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("kafka") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"min.insync.replicas": "2"}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    cluster = SparkStandaloneCluster(tmp_path_factory.mktemp("spark"), SparkClusterSpec.on_free_ports(2))
    try:
        yield cluster.up(timeout=120)
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("spark-env")


def make_topic(kafka, name: str, partitions: int, records: int) -> dict[tuple[int, int], bytes]:
    """A topic of ``records`` acknowledged records spread over ``partitions``: ``{(partition, offset): value}``."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(60)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "linger.ms": 20,
                         "enable.idempotence": True})
    acked: dict[tuple[int, int], bytes] = {}

    def on_delivery(err, msg):
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = msg.value()

    for i in range(records):
        producer.produce(name, value=b"record-%06d" % i, partition=i % partitions, on_delivery=on_delivery)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert len(acked) == records
    return acked


def test_batch_count_runs_on_both_workers_with_the_shipped_environment(kafka, spark, cache_dir, tmp_path):
    acked = make_topic(kafka, "spark-batch", 12, 24_000)
    log = tmp_path / "count.log"
    code = submit(spark.master_url, "zkafka:count", ["--bootstrap-server", kafka.bootstrap_servers,
                                                     "--topic", "spark-batch"],
                  conf=EXECUTOR, cache_dir=cache_dir, log=log, timeout=TIMEOUT)
    assert code == 0, log.read_text()[-3000:]
    result = job_result(log)
    assert result["records"] == len(acked)
    assert result["partitions"] == {str(p): 2000 for p in range(12)}
    # each worker ran an executor, in the unpacked environment the submission shipped (not this venv)
    for worker in (1, 2):
        envs = list((spark.dir / f"worker-{worker}" / "work").glob("app-*/*/zkafka-env/bin/python"))
        assert envs, f"worker {worker} ran no executor with the shipped zkafka-env"


def committed_output(folder: Path) -> list[tuple[int, int, str]]:
    """The rows of Spark's file sink that its ``_spark_metadata`` log commits (files of failed or retried
    tasks that no batch committed are not read): ``(partition, offset, value)``."""
    log_dir = folder / "_spark_metadata"
    batches = sorted((p for p in log_dir.iterdir() if p.name.split(".")[0].isdigit()),
                     key=lambda p: int(p.name.split(".")[0]))
    compacts = [p for p in batches if p.name.endswith(".compact")]
    start = int(compacts[-1].name.split(".")[0]) if compacts else -1
    entries = [p for p in batches if int(p.name.split(".")[0]) > start] + compacts[-1:]
    files = set()
    for entry in entries:
        for line in entry.read_text().splitlines()[1:]:
            record = json.loads(line)
            (files.add if record["action"] == "add" else files.discard)(record["path"].removeprefix("file://"))
    rows = []
    for file in files:
        rows += [(r["partition"], r["offset"], r["value"]) for r in map(json.loads, Path(file).read_text().splitlines())]
    return rows


def committed_topic(kafka, topic: str, partitions: int) -> list[tuple[int, int, str]]:
    """Every committed record of ``topic`` (read_committed, to the end), as ``(-1, -1, value)``: the copy
    wrote values only. EndTxn is answered before the markers are written, so first the last stable offset
    must reach the high watermark everywhere (a read_committed reader's end is the LSO)."""
    wait_for(lambda: stable(kafka.bootstrap_servers, topic, partitions), timeout=60,
             what=f"every transaction on {topic} completed (LSO == high watermark)")
    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "check", "enable.partition.eof": True,
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, ended = [], set()
    try:
        while len(ended) < partitions:
            message = reader.poll(10)
            assert message is not None, f"no end of {topic} within 10 s"
            if message.error() is None:
                values.append((-1, -1, message.value().decode()))
            elif message.error().code() == KafkaError._PARTITION_EOF:
                ended.add(message.partition())
            else:
                raise AssertionError(message.error())
    finally:
        reader.close()
    return values


@pytest.mark.parametrize("trigger,kill_leader,sink", [("processing-time", True, "files"),
                                                      ("available-now", False, "files"),
                                                      ("available-now", False, "topic")])
def test_streaming_copy_is_exactly_once_through_faults(kafka, spark, cache_dir, tmp_path, trigger, kill_leader, sink):
    """processing-time: an executor kill, then a partition leader's; available-now: an executor kill, into Spark's
    file sink or a zkafka topic with transactionalIdPrefix (each task's batch marker: kafka_io.BatchMarker)."""
    topic = f"spark-stream-{trigger}-{sink}"
    acked = make_topic(kafka, topic, 4, 16_000)
    output, log = tmp_path / "out", tmp_path / "copy.log"
    if sink == "topic":
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
        admin.create_topics([NewTopic(f"{topic}-out", 4, 3)])[f"{topic}-out"].result(60)
        target = ["--output-topic", f"{topic}-out", "--transactional-id-prefix", f"{topic}-copy"]
    else:
        target = ["--output", str(output)]
    process = start(spark.master_url, "zkafka:copy",
                    ["--bootstrap-server", kafka.bootstrap_servers, "--topic", topic,
                     "--checkpoint", str(tmp_path / "checkpoint"), *target,
                     "--trigger", trigger, "--interval-s", "0.5", "--max-offsets-per-trigger", "800"],
                    conf=EXECUTOR, cache_dir=cache_dir, log=log)

    def batches() -> int:
        """Micro-batches the query committed (its checkpoint's commit log)."""
        return len(list((tmp_path / "checkpoint" / "commits").glob("[0-9]*")))

    leader = None
    try:
        wait_for(lambda: batches() >= 3, timeout=TIMEOUT, what="three committed micro-batches")
        victims = spark.executor_pids()
        assert victims and process.poll() is None, "the query should be running, on executors"
        spark.kill_executor(victims[0])
        done = batches()
        wait_for(lambda: batches() >= done + 2, timeout=TIMEOUT, what="two more micro-batches after the executor kill")
        if kill_leader:
            admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
            leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
            assert process.poll() is None, "the query should still be running when the leader dies"
            kafka.signal_broker(leader, signal.SIGKILL)
        assert process.wait(TIMEOUT) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            stop(process)
        if leader is not None:  # the module's next test needs three brokers again
            kafka.start_broker(leader)
            kafka.wait_until_ready(timeout=TIMEOUT)
    assert "Lost executor" in log.read_text(errors="replace") or "ExecutorLost" in log.read_text(errors="replace")
    assert victims[0] not in spark.executor_pids()
    assert job_result(log)["records"] == len(acked)  # the micro-batches' input rows, each batch counted once
    if sink == "files":
        rows = committed_output(output)
        seen = [(p, o) for p, o, _ in rows]
        assert len(seen) == len(set(seen)), "a record appears twice in the committed output"
        assert {(p, o): v.encode() for p, o, v in rows} == acked
    else:
        assert sorted(v for _, _, v in committed_topic(kafka, f"{topic}-out", 4)) == sorted(
            v.decode() for v in acked.values())
