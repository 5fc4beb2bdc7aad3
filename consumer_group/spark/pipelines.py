"""Small, ready-made pieces of Spark pipelines over ``zkafka`` DataFrames, for scripts that must not import
pyspark themselves (the import-linter contract: only ``consumer_group.spark`` does).

    counts = page_window_counts(spark.readStream.format("zkafka")...load())
    counts.writeStream.format("zkafka").option("topic", "page-counts")...start()
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from consumer_group.spark.decode import from_msgpack

CLICK_SCHEMA = "page string, user string, ts timestamp"


def decode_clicks(df: DataFrame, schema: str = CLICK_SCHEMA) -> DataFrame:
    """The msgpack ``value`` of each row as the columns of ``schema``; values that do not decode (a null struct)
    or carry no event time are dropped."""
    return (df.select(from_msgpack("value", schema).alias("e")).where(F.col("e").isNotNull()).select("e.*")
            .where(F.col("ts").isNotNull()))


def page_window_counts(df: DataFrame, window: str = "10 seconds", watermark: str = "10 seconds") -> DataFrame:
    """Clicks per page per tumbling event-time ``window`` (late data bounded by ``watermark``), shaped for the
    zkafka sink: ``key`` = the page, ``value`` = JSON ``{"window_start", "window_end", "page", "count"}``
    (times as ISO-8601 in the session time zone)."""
    counts = (decode_clicks(df).withWatermark("ts", watermark)
              .groupBy(F.window("ts", window).alias("window"), F.col("page")).count())
    value = F.to_json(F.struct(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                               F.col("page"), F.col("count")))
    return counts.select(F.col("page").alias("key"), value.alias("value"))


def count_rows(df: DataFrame) -> int:
    """``df.count()`` (here so that callers need no pyspark of their own)."""
    return df.count()


def last_progress(query: Any) -> dict | None:
    """A streaming query's ``lastProgress`` (a dict, or None before the first micro-batch)."""
    return query.lastProgress
