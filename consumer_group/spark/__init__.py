"""Spark reads and writes Kafka topics through zkafka: the ``zkafka`` Python Data Source (``source.py``),
with the option names and row schema of Spark's own Kafka source. The only package that imports pyspark.

    from consumer_group.spark import register, local_session
    spark = local_session("my-app")
    register(spark)
    spark.read.format("zkafka").option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "t").load()
"""
from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Make ``format("zkafka")`` available to ``spark`` (read, readStream, write, writeStream)."""
    from consumer_group.spark.source import ZkafkaDataSource

    spark.dataSource.register(ZkafkaDataSource)


def local_session(app_name: str = "zkafka", cores: int = 2, conf: dict[str, str] | None = None) -> Any:
    """A local SparkSession set up the way Python data sources need on this kind of machine
    (platform-notes §2): workers run this interpreter (``PYSPARK_PYTHON``), the driver binds to loopback,
    no UI; ``conf`` adds Spark settings."""
    from consumer_group.spark.session import local_session as make

    return make(app_name, cores, conf)
