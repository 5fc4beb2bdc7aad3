"""The ``zkafka`` data source in a real local Spark (``local[2]``, loopback, no UI) against a real broker and
ZooKeeper: batch reads equal what was produced, offset-range splitting, streaming with availableNow and a
checkpoint (each record exactly once), the writer round trip, compacted gaps, and option errors."""
from __future__ import annotations

import datetime

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

pyspark = pytest.importorskip("pyspark")

from consumer_group.spark import local_session, register  # noqa: E402
from consumer_group.spark.decode import from_json, from_msgpack  # noqa: E402

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("spark") / "cluster", 1, tick_time=500, session_timeout_ms=6000,
                         properties={"log.cleaner.backoff.ms": "500", "log.retention.check.interval.ms": "500",
                         "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}) as c:
        yield c


@pytest.fixture(scope="module")
def spark():
    session = local_session("zkafka-tests")
    register(session)
    yield session
    session.stop()


def create_topic(cluster: Cluster, topic: str, partitions: int = PARTITIONS, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(30)


def produce(cluster: Cluster, topic: str, records: list[tuple]) -> list[tuple]:
    """records: (partition, key, value, headers, timestamp_ms); returns them with their offsets, as acked."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    acked = []
    for partition, key, value, headers, ts in records:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers, timestamp=ts or 0,
                         on_delivery=lambda err, m, h=headers: acked.append(
                             (m.partition(), m.offset(), m.key(), m.value(), h, m.timestamp()[1])))
    assert producer.flush(30) == 0
    return acked


def reader(spark, cluster: Cluster, topic: str, **options):
    r = spark.read.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("subscribe", topic)
    for key, value in options.items():
        r = r.option(key, value)
    return r


def test_batch_read_returns_exactly_what_was_produced(spark, cluster):
    topic = "spark-batch"
    create_topic(cluster, topic, config={"retention.ms": "-1"})  # the timestamps below are years old
    base = 1_700_000_000_000
    records = [(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode(), [("h", f"x{i}".encode())], base + i)
               for i in range(300)]
    acked = produce(cluster, topic, records)
    df = reader(spark, cluster, topic, includeHeaders="true").load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    rows = df.collect()
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value), [(h.key, bytes(h.value)) for h in r.headers],
                  int(r.timestamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)) for r in rows)
    assert got == sorted(acked)
    assert {r.topic for r in rows} == {topic} and {r.timestampType for r in rows} == {0}
    # a bounded read: offsets 10..19 of partition 0 only
    bounded = (spark.read.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
               .option("assign", f'{{"{topic}":[0]}}').option("startingOffsets", f'{{"{topic}":{{"0":10}}}}')
               .option("endingOffsets", f'{{"{topic}":{{"0":20}}}}').load())
    assert sorted(r.offset for r in bounded.collect()) == list(range(10, 20))


def test_min_partitions_splits_large_partitions_into_offset_ranges(spark, cluster):
    topic = "spark-split"
    create_topic(cluster, topic)
    produce(cluster, topic, [(i % PARTITIONS, None, str(i).encode(), None, None) for i in range(600)])
    plain = reader(spark, cluster, topic).load()
    split = reader(spark, cluster, topic, minPartitions="12").load()
    assert plain.rdd.getNumPartitions() == PARTITIONS
    assert split.rdd.getNumPartitions() >= 12
    assert sorted(int(r.value) for r in split.collect()) == list(range(600))


def test_streaming_available_now_twice_reads_each_record_exactly_once(spark, cluster, tmp_path):
    topic = "spark-stream"
    create_topic(cluster, topic)
    produce(cluster, topic, [(i % PARTITIONS, None, str(i).encode(), None, None) for i in range(200)])

    def run_once(name: str):
        stream = (spark.readStream.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                  .option("subscribe", topic).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "90")
                  .load().selectExpr("CAST(value AS STRING) AS v"))
        query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out")).trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        assert query.awaitTermination(120), "the availableNow query did not finish"
        return sorted(int(r.v) for r in spark.read.parquet(str(tmp_path / "out")).collect())

    assert run_once("first") == list(range(200))
    produce(cluster, topic, [(i % PARTITIONS, None, str(i).encode(), None, None) for i in range(200, 350)])
    assert run_once("second") == list(range(350))  # restarted from the checkpoint: each record exactly once


def test_writer_round_trip_with_keys_and_headers(spark, cluster):
    topic = "spark-written"
    create_topic(cluster, topic)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(100)], "key string, value string")
    (df.write.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers).option("topic", topic)
     .mode("append").save())
    back = reader(spark, cluster, topic).load().selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v")
    assert sorted((r.k, r.v) for r in back.collect()) == sorted((f"k{i}", f"v{i}") for i in range(100))


def test_compacted_topic_with_gaps_reads_what_a_consumer_reads(spark, cluster):
    topic = "spark-compacted"
    create_topic(cluster, topic, 1, {"cleanup.policy": "compact", "segment.bytes": "2048", "segment.ms": "100",
                                     "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"})
    for round_ in range(6):
        produce(cluster, topic, [(0, f"key{i}".encode(), f"{round_}-{i}".encode(), None, None) for i in range(40)])

    def plain_offsets() -> list[int]:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "plain",
                             "enable.partition.eof": True})
        consumer.assign([TopicPartition(topic, 0, 0)])
        offsets = []
        while True:
            m = consumer.poll(5)
            if m is None or m.error():
                break
            offsets.append(m.offset())
        consumer.close()
        return offsets

    # the log still starts at offset 0, but compaction removed superseded records: offsets are missing
    wait_for(lambda: (o := plain_offsets()) and o != list(range(len(o))), 60, "compaction to leave gaps")
    expected = plain_offsets()
    got = sorted(r.offset for r in reader(spark, cluster, topic).load().collect())
    assert got == expected


def test_offsets_lost_to_retention_fail_the_read_unless_fail_on_data_loss_is_false(spark, cluster):
    topic = "spark-retention"
    create_topic(cluster, topic, 1, {"retention.bytes": "2048", "segment.bytes": "1024", "file.delete.delay.ms": "100"})
    for round_ in range(10):  # ten batches: several segments, more than retention.bytes keeps
        produce(cluster, topic, [(0, None, str(i).encode() * 8, None, None) for i in range(20 * round_, 20 * round_ + 20)])
    probe = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "probe"})
    wait_for(lambda: probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0] > 0, 60,
             "retention to delete the oldest segments")
    low, high = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    probe.close()
    from_zero = f'{{"{topic}":{{"0":0}}}}'
    with pytest.raises(Exception) as failure:
        reader(spark, cluster, topic, startingOffsets=from_zero).load().collect()
    assert "failOnDataLoss" in str(failure.value)
    rest = reader(spark, cluster, topic, startingOffsets=from_zero, failOnDataLoss="false").load().collect()
    assert sorted(r.offset for r in rest) == list(range(low, high))  # what retention left, nothing else


def test_decoding_json_and_msgpack_values(spark, cluster):
    import json

    import msgpack

    topic = "spark-decode"
    create_topic(cluster, topic, 1)
    events = [{"page": f"/p{i % 3}", "n": i} for i in range(30)]
    produce(cluster, topic, [(0, b"j", json.dumps(e).encode(), None, None) for e in events]
            + [(0, b"m", msgpack.packb(e), None, None) for e in events])
    df = reader(spark, cluster, topic).load()
    as_json = df.where("CAST(key AS STRING) = 'j'").select(from_json("value", "page string, n int").alias("e"))
    as_msgpack = df.where("CAST(key AS STRING) = 'm'").select(from_msgpack("value", "page string, n int").alias("e"))
    for frame in (as_json, as_msgpack):
        assert sorted((r.e.page, r.e.n) for r in frame.collect()) == sorted((e["page"], e["n"]) for e in events)


@pytest.mark.parametrize("options, named", [
    ({}, "subscribe"),
    ({"subscribe": "t", "subscribePattern": "t.*"}, "subscribe"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "startingOffsets"),
    ({"subscribe": "t", "startingOffset": "earliest"}, "startingOffset"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
    ({"subscribe": "t", "minPartitions": "zero"}, "minPartitions"),
])
def test_bad_options_fail_with_the_option_named(spark, cluster, options, named):
    r = spark.read.format("zkafka").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
    for key, value in options.items():
        r = r.option(key, value)
    with pytest.raises(Exception) as failure:
        r.load().collect()
    assert named in str(failure.value)
