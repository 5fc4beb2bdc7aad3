"""The ``zkafka`` data source and Kafka transactions, in a real local Spark against a real broker: a partition
holding a committed transaction, an aborted one, a still-open one and a plain record after it. read_uncommitted
(the default, as Spark's) returns all of their records; read_committed stops at the last stable offset (the
open transaction's first offset) and never returns the aborted records, in batch and in streaming; once the
open transaction commits a restarted stream reads the rest exactly once. The sink with ``transactionalIdPrefix``
writes each task's rows in one committed transaction (``<prefix>-<partition id>``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster

pyspark = pytest.importorskip("pyspark")

from consumer_group.spark import local_session, register  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TOPIC = "spark-txn"
COMMITTED, ABORTED, OPEN, PLAIN = ["c0", "c1", "c2"], ["a0", "a1"], ["o0"], ["p0"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("spark-txn") / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties={"transaction.state.log.num.partitions": "3",
                                     "transaction.state.log.replication.factor": "1",
                                     "transaction.state.log.min.isr": "1",
                                     "offsets.topic.num.partitions": "1"}) as c:
        yield c


@pytest.fixture(scope="module")
def spark():
    session = local_session("zkafka-txn-tests")
    register(session)
    yield session
    session.stop()


def create_topic(cluster: Cluster, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def transactional(cluster: Cluster, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    return producer


def send(producer: Producer, values: list[str]) -> None:
    for value in values:
        producer.produce(TOPIC, value=value.encode(), partition=0)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def open_transaction(cluster):
    """The partition's records: committed, aborted, open (the producer is returned, its transaction open), plain."""
    create_topic(cluster, TOPIC)
    committed = transactional(cluster, "spark-committed")
    send(committed, COMMITTED)
    committed.commit_transaction(60)
    aborted = transactional(cluster, "spark-aborted")
    send(aborted, ABORTED)
    aborted.abort_transaction(60)
    still_open = transactional(cluster, "spark-open")
    send(still_open, OPEN)
    send(Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True}), PLAIN)
    return still_open


def values(spark, cluster: Cluster, topic: str = TOPIC, **options) -> list[str]:
    r = (spark.read.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        r = r.option(key, value)
    return sorted(row.v for row in r.load().selectExpr("CAST(value AS STRING) AS v").collect())


def stream_once(spark, cluster: Cluster, out: Path) -> list[str]:
    stream = (spark.readStream.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", TOPIC).option("startingOffsets", "earliest")
              .option("kafka.isolation.level", "read_committed").load().selectExpr("CAST(value AS STRING) AS v"))
    query = (stream.writeStream.format("parquet").option("path", str(out / "data")).trigger(availableNow=True)
             .option("checkpointLocation", str(out / "checkpoint")).start())
    assert query.awaitTermination(120), "the availableNow query did not finish"
    return sorted(r.v for r in spark.read.parquet(str(out / "data")).collect())


def test_isolation_levels_in_batch_and_streaming(spark, cluster, open_transaction, tmp_path):
    everything = sorted(COMMITTED + ABORTED + OPEN + PLAIN)
    assert values(spark, cluster) == everything  # Spark's default: read_uncommitted
    assert values(spark, cluster, **{"kafka.isolation.level": "read_uncommitted"}) == everything
    assert values(spark, cluster, **{"kafka.isolation.level": "read_committed"}) == sorted(COMMITTED)
    assert stream_once(spark, cluster, tmp_path) == sorted(COMMITTED)

    open_transaction.commit_transaction(60)
    after = sorted(COMMITTED + OPEN + PLAIN)
    assert values(spark, cluster, **{"kafka.isolation.level": "read_committed"}) == after
    assert stream_once(spark, cluster, tmp_path) == after  # from the checkpoint: the rest, exactly once


def test_transactional_sink_commits_each_tasks_rows(spark, cluster):
    topic = "spark-txn-sink"
    create_topic(cluster, topic, partitions=2)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(40)], "key string, value string").repartition(2)
    (df.write.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("topic", topic)
     .option("transactionalIdPrefix", "spark-sink").mode("append").save())
    expected = sorted(f"v{i}" for i in range(40))
    assert values(spark, cluster, topic, **{"kafka.isolation.level": "read_committed"}) == expected
    for task in (0, 1):
        described = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_transactions", "--bootstrap-server",
                                    cluster.bootstrap_servers, "describe", "--transactional-id", f"spark-sink-{task}"],
                                   capture_output=True, text=True, timeout=120, cwd=REPO)
        assert described.returncode == 0, described.stderr
        header, row = [[c.strip() for c in line.split("\t")[:-1]] for line in described.stdout.splitlines()]
        assert dict(zip(header, row))["TransactionState"] == "CompleteCommit"
