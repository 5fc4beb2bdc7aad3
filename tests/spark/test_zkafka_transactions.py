"""The ``zkafka`` data source and Kafka transactions, in a real local Spark against a real broker: a partition
holding a committed transaction, an aborted one, a still-open one and a plain record after it. read_uncommitted
(the default, as Spark's) returns all of their records; read_committed stops at the last stable offset (the
open transaction's first offset) and never returns the aborted records, in batch and in streaming; once the
open transaction commits a restarted stream reads the rest exactly once. The sink with ``transactionalIdPrefix``
writes each task's rows in one committed transaction (``<prefix>-<partition id>``), and a task that fails after
some of its rows were written aborts its transaction: read_committed readers see none of them.

EndTxn is answered once the coordinator has logged PrepareCommit (or PrepareAbort); the markers, which move the
last stable offset up to the high watermark, and CompleteCommit follow asynchronously. So after each commit or
abort the tests wait, with a deadline, for LSO == high watermark (ListOffsets under both isolation levels) and
for the coordinator's state before reading or asserting."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient, NewTopic

from consumer_group.spark import local_session, register
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for
from tests.integration.txn_support import end_offsets, stable

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


def create_topic(cluster: Cluster, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(30)


def transactional(cluster: Cluster, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    return producer


def send(producer: Producer, values: list[str]) -> None:
    for value in values:
        producer.produce(TOPIC, value=value.encode(), partition=0)
    assert producer.flush(60) == 0


def transaction_state(cluster: Cluster, transactional_id: str) -> str:
    """The id's ``TransactionState`` as ``kafka-transactions describe`` prints it."""
    described = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_transactions", "--bootstrap-server",
                                cluster.bootstrap_servers, "describe", "--transactional-id", transactional_id],
                               capture_output=True, text=True, timeout=120, cwd=REPO)
    assert described.returncode == 0, described.stderr
    header, row = [[c.strip() for c in line.split("\t")[:-1]] for line in described.stdout.splitlines()]
    return dict(zip(header, row))["TransactionState"]


def completed(cluster: Cluster, topic: str, partitions: int, transactional_ids: list[str], state: str) -> dict:
    """Wait until every marker is written (LSO == high watermark on each partition of ``topic``) and each id's
    transaction reached ``state`` (CompleteCommit / CompleteAbort); the partitions' end offsets."""
    ends = wait_for(lambda: stable(cluster.bootstrap_servers, topic, partitions), 30,
                    f"LSO == high watermark on {topic}", 0.2)
    for transactional_id in transactional_ids:
        wait_for(lambda: transaction_state(cluster, transactional_id) == state, 30,
                 f"{transactional_id} in {state}", 0.2)
    return ends


@pytest.fixture(scope="module")
def open_transaction(cluster):
    """The partition's records: committed, aborted, open (the producer is returned, its transaction open), plain.
    Each finished transaction's marker is in the log before the next one starts, so the layout is fixed:
    c0 c1 c2 COMMIT a0 a1 ABORT o0 p0, the last stable offset at o0 (7), the high watermark 9."""
    create_topic(cluster, TOPIC)
    committed = transactional(cluster, "spark-committed")
    send(committed, COMMITTED)
    committed.commit_transaction(60)
    assert completed(cluster, TOPIC, 1, ["spark-committed"], "CompleteCommit") == {0: 4}
    aborted = transactional(cluster, "spark-aborted")
    send(aborted, ABORTED)
    aborted.abort_transaction(60)
    assert completed(cluster, TOPIC, 1, ["spark-aborted"], "CompleteAbort") == {0: 7}
    still_open = transactional(cluster, "spark-open")
    send(still_open, OPEN)
    send(Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True}), PLAIN)
    assert end_offsets(cluster.bootstrap_servers, TOPIC) == {0: 9}
    assert end_offsets(cluster.bootstrap_servers, TOPIC, committed=True) == {0: 7}
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
    assert completed(cluster, TOPIC, 1, ["spark-open"], "CompleteCommit") == {0: 10}
    after = sorted(COMMITTED + OPEN + PLAIN)
    assert values(spark, cluster, **{"kafka.isolation.level": "read_committed"}) == after
    assert stream_once(spark, cluster, tmp_path) == after  # from the checkpoint: the rest, exactly once


def write(spark, cluster: Cluster, df, topic: str, prefix: str) -> None:
    (df.write.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("topic", topic)
     .option("transactionalIdPrefix", prefix).mode("append").save())


def test_transactional_sink_commits_each_tasks_rows(spark, cluster):
    topic = "spark-txn-sink"
    create_topic(cluster, topic, partitions=2)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(40)], "key string, value string").repartition(2)
    write(spark, cluster, df, topic, "spark-sink")
    completed(cluster, topic, 2, ["spark-sink-0", "spark-sink-1"], "CompleteCommit")
    expected = sorted(f"v{i}" for i in range(40))
    assert values(spark, cluster, topic, **{"kafka.isolation.level": "read_committed"}) == expected


def test_a_sink_task_failing_mid_write_aborts_its_transaction(spark, cluster):
    """One task writes ten rows to partition 0 and one row too large for the topic (max.message.bytes) to
    partition 1: the rows to partition 0 are delivered (in the log), the large one is refused, so the task
    aborts its transaction and fails the job. read_committed sees none of the task's rows, read_uncommitted
    the delivered ones, and no transaction is left hanging (LSO == high watermark, the id in CompleteAbort)."""
    topic = "spark-txn-sink-fails"
    create_topic(cluster, topic, partitions=2, config={"max.message.bytes": "1000"})
    good = [f"g{i}" for i in range(10)]
    rows = [(value, 0) for value in good] + [("x" * 5000, 1)]
    df = spark.createDataFrame(rows, "value string, partition int").coalesce(1)
    with pytest.raises(Exception, match="records failed"):
        write(spark, cluster, df, topic, "spark-fail")
    ends = completed(cluster, topic, 2, ["spark-fail-0"], "CompleteAbort")
    assert ends[0] == len(good) + 1  # the rows and the ABORT marker
    assert values(spark, cluster, topic, **{"kafka.isolation.level": "read_committed"}) == []
    assert values(spark, cluster, topic, **{"kafka.isolation.level": "read_uncommitted"}) == sorted(good)


def copy_stream(spark, cluster: Cluster, source: str, target: str, checkpoint: Path, prefix: str | None) -> None:
    """One availableNow run of a streaming copy ``source`` -> ``target`` (two micro-batches of 10 rows)."""
    stream = (spark.readStream.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", source).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "10")
              .load().selectExpr("value"))
    writer = (stream.writeStream.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("topic", target).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    if prefix is not None:
        writer = writer.option("transactionalIdPrefix", prefix)
    query = writer.start()
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None, query.exception()


@pytest.mark.parametrize("prefix,copies_of_the_rerun_batch", [("spark-eos", 1), (None, 2)])
def test_a_micro_batch_run_again_after_its_sink_commit_is_written_once(spark, cluster, tmp_path, prefix,
                                                                       copies_of_the_rerun_batch):
    """The driver fails after the sink committed micro-batch 1 and before its checkpoint recorded it (its
    ``commits/1`` file is missing): the restarted query runs batch 1 again with the same offsets. With
    ``transactionalIdPrefix`` each task finds its batch marker (the transaction's committed offset) at batch 1
    and writes nothing: every source record once. Without it the batch is written twice (at least once)."""
    source, target = f"eos-in-{prefix}", f"eos-out-{prefix}"
    create_topic(cluster, source)
    create_topic(cluster, target)
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(20):
        plain.produce(source, value=f"r{i:02d}".encode())
    assert plain.flush(30) == 0
    checkpoint = tmp_path / "checkpoint"
    copy_stream(spark, cluster, source, target, checkpoint, prefix)
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    for name in ("1", ".1.crc"):  # the commit and its checksum: as if the driver died before writing them
        (checkpoint / "commits" / name).unlink()
    copy_stream(spark, cluster, source, target, checkpoint, prefix)
    wait_for(lambda: stable(cluster.bootstrap_servers, target), 30, f"LSO == high watermark on {target}", 0.2)
    if prefix is not None:  # the task's marker: group <transactional id>.<query id>, batch 1 -> offset 2
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        groups = [g.group_id for g in admin.list_consumer_groups().result(30).valid]
        (marker,) = [g for g in groups if g.startswith(f"{prefix}-0.")]
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(marker)])[marker].result(30)
        assert [(tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions] == [(target, 0, 2)]
    rerun = [f"r{i:02d}" for i in range(10, 20)]
    expected = sorted([f"r{i:02d}" for i in range(10)] + rerun * copies_of_the_rerun_batch)
    assert values(spark, cluster, target, **{"kafka.isolation.level": "read_committed"}) == expected
