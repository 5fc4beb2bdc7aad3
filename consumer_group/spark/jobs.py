"""Ready-made Spark applications over zkafka topics, for ``spark-submit`` on a Spark cluster
(``zkafka spark submit --master spark://HOST:7077 zkafka:NAME ...`` ships them, their code and their Python).

``count``: a batch read of a whole topic (earliest to latest), one JSON line with the records, the
partitions' counts and the seconds the read took::

    zkafka spark submit --master spark://h:7077 zkafka:count --bootstrap-server b1:9092 --topic clicks

``copy``: a checkpointed structured-streaming query from a topic into a file sink (JSON files, Spark's
exactly-once file sink: a batch's files are committed in ``OUTPUT/_spark_metadata``) or into a zkafka topic
(``--output-topic``; with ``--transactional-id-prefix`` each task writes in a transaction). ``--trigger
available-now`` reads what is there and stops; ``processing-time`` runs micro-batches every
``--interval-s`` until the query has read up to the offsets that were the end when the job started.
``--max-offsets-per-trigger`` bounds each micro-batch. Restarted with the same checkpoint, it goes on where
it stopped. Executors reach the brokers themselves, by their advertised listeners.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from consumer_group.spark import kafka_io, register
from consumer_group.spark.source_options import parse_source_options


def source(spark: SparkSession, args: argparse.Namespace, streaming: bool):
    reader = (spark.readStream if streaming else spark.read).format("zkafka")
    reader = (reader.option("kafka.bootstrap.servers", args.bootstrap_server).option("subscribe", args.topic)
              .option("startingOffsets", "earliest"))
    if streaming and args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    return reader.load()


def count(spark: SparkSession, args: argparse.Namespace) -> dict:
    started = time.monotonic()
    rows = source(spark, args, streaming=False).groupBy("partition").agg(F.count("*").alias("n"),
                                                                         F.sum(F.length("value")).alias("bytes"))
    by_partition = {r["partition"]: (r["n"], r["bytes"] or 0) for r in rows.collect()}
    seconds = time.monotonic() - started
    return {"job": "count", "topic": args.topic, "records": sum(n for n, _ in by_partition.values()),
            "bytes": sum(b for _, b in by_partition.values()), "seconds": round(seconds, 3),
            "partitions": {str(p): n for p, (n, _) in sorted(by_partition.items())}}


def copy(spark: SparkSession, args: argparse.Namespace) -> dict:
    target = end_offsets(args) if args.trigger == "processing-time" else None
    rows = source(spark, args, streaming=True).select("key", "value", "topic", "partition", "offset")
    if args.output_topic:
        writer = (rows.select("key", "value").writeStream.format("zkafka")
                  .option("kafka.bootstrap.servers", args.bootstrap_server).option("topic", args.output_topic))
        if args.transactional_id_prefix:
            writer = writer.option("transactionalIdPrefix", args.transactional_id_prefix)
    else:
        writer = rows.select(F.col("partition"), F.col("offset"), F.col("value").cast("string").alias("value")
                             ).writeStream.format("json").option("path", args.output)
    writer = writer.option("checkpointLocation", args.checkpoint).queryName("zkafka-copy")
    if args.trigger == "available-now":
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.trigger(processingTime=f"{args.interval_s} seconds").start()
        while not reached(query.lastProgress, target):
            if query.awaitTermination(0.5):
                break
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return {"job": "copy", "topic": args.topic, "batches": len(query.recentProgress),
            "records": sum(p["numInputRows"] for p in query.recentProgress)}


def end_offsets(args: argparse.Namespace) -> dict[str, int]:
    """``{partition: high watermark}`` of the topic now, asked of the brokers (the driver's own client)."""
    options = parse_source_options({"kafka.bootstrap.servers": args.bootstrap_server, "subscribe": args.topic},
                                   streaming=False)
    bounds = kafka_io.watermarks(options, kafka_io.topic_partitions(options))
    return {str(partition): high for (_, partition), (_, high) in bounds.items()}


def reached(progress: dict | None, target: dict[str, int] | None) -> bool:
    """Whether a completed micro-batch's end offsets are at ``target`` (``{partition: offset}``) or beyond."""
    if progress is None or not progress.get("sources") or target is None:
        return False
    end = progress["sources"][0].get("endOffset")
    end = json.loads(end) if isinstance(end, str) else end or {}
    reached_offsets = next(iter(end.values()), {}) if end else {}
    return all(int(reached_offsets.get(p, -1)) >= offset for p, offset in target.items())


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="zkafka:jobs", description=__doc__.split("\n\n")[0])
    jobs = parser.add_subparsers(dest="job", required=True)
    for name in ("count", "copy"):
        job = jobs.add_parser(name)
        job.add_argument("--bootstrap-server", required=True)
        job.add_argument("--topic", required=True)
    copy_job = jobs.choices["copy"]
    copy_job.add_argument("--checkpoint", required=True, help="the query's checkpointLocation")
    copy_job.add_argument("--output", help="the file sink's folder (JSON files)")
    copy_job.add_argument("--output-topic", help="a zkafka topic instead of files")
    copy_job.add_argument("--transactional-id-prefix", help="with --output-topic: transactional writes")
    copy_job.add_argument("--trigger", choices=("available-now", "processing-time"), default="available-now")
    copy_job.add_argument("--interval-s", type=float, default=1.0, help="processing-time trigger interval")
    copy_job.add_argument("--max-offsets-per-trigger", type=int, default=0)
    args = parser.parse_args(argv)
    if args.job == "copy" and bool(args.output) == bool(args.output_topic):
        parser.error("copy needs exactly one of --output and --output-topic")
    if args.job == "copy":  # relative to where `zkafka spark submit` was run, not to spark-submit's folder
        base = Path(os.environ.get("ZKAFKA_SUBMIT_CWD", os.getcwd()))
        args.checkpoint = str(base / args.checkpoint)
        args.output = args.output and str(base / args.output)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    spark = SparkSession.builder.appName(f"zkafka-{args.job}-{args.topic}").getOrCreate()
    register(spark)
    try:
        result = {"count": count, "copy": copy}[args.job](spark, args)
    finally:
        spark.stop()
    print("ZKAFKA-JOB-RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
