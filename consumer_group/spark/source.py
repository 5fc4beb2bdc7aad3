"""The ``zkafka`` PySpark data source: Spark's Kafka source and sink, as a Python Data Source.

``spark.read.format("zkafka")`` / ``spark.readStream.format("zkafka")`` / ``df.write.format("zkafka")`` with
the option names and row schema of Spark's own Kafka integration (see ``options.py``). Pitfalls handled
(platform-notes §2.3): everything a task needs travels in its ``InputPartition`` (readers are pickled;
clients are opened inside ``read``); ``partitions()`` returning nothing still runs one task with
``InputPartition(None)``; streaming offsets are ``{topic: {partition: offset}}`` with sorted keys and
``latestOffset`` returns ``start`` unchanged when nothing is new, because Spark compares offsets as JSON text.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from consumer_group.spark import kafka_io
from consumer_group.spark.options import SinkOptions, parse_sink_options, transactional_id
from consumer_group.spark.source_options import SourceOptions, parse_source_options
from consumer_group.spark.ranges import OffsetRange, offsets_from_json_dict, offsets_to_json_dict, rate_limit, split_ranges

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int")
HEADERS = ", headers array<struct<key: string, value: binary>>"
EARLIEST, LATEST = -2, -1
# the local properties Spark's micro-batch execution gives its tasks
BATCH_ID_PROPERTY, QUERY_ID_PROPERTY = "streaming.sql.batchId", "sql.streaming.queryId"


class ZkafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "zkafka"

    def schema(self) -> str:
        include = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return SCHEMA + (HEADERS if include else "")

    def reader(self, schema) -> "ZkafkaBatchReader":
        return ZkafkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema) -> "ZkafkaStreamReader":
        return ZkafkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema, overwrite: bool) -> "ZkafkaWriter":
        return ZkafkaWriter(parse_sink_options(self.options), schema.fieldNames())

    def streamWriter(self, schema, overwrite: bool) -> "ZkafkaStreamWriter":
        return ZkafkaStreamWriter(parse_sink_options(self.options), schema.fieldNames())


class KafkaInputPartition(InputPartition):
    """One task: one offset range of one partition, and what reading it needs."""

    def __init__(self, rng: OffsetRange, options: SourceOptions):
        super().__init__(None)
        self.range = rng
        self.params = options.kafka_params
        self.include_headers = options.include_headers
        self.fail_on_data_loss = options.fail_on_data_loss


def _read(partition) -> Iterator:
    if not isinstance(partition, KafkaInputPartition):  # Spark's one task for an empty plan
        return iter(())
    return kafka_io.read_arrow(partition.params, partition.range, partition.include_headers,
                               partition.fail_on_data_loss)


def resolve(options: SourceOptions, spec, timestamp: int | None, by_timestamp: dict | None,
            partitions: list[kafka_io.TP], bounds: dict[kafka_io.TP, tuple[int, int]],
            default: str = "earliest") -> dict[kafka_io.TP, int]:
    """Concrete offsets for a starting/ending spec: earliest/latest, per-partition JSON (-2/-1 allowed;
    partitions it does not name take ``default``), or timestamps (one for all partitions, or per partition)."""
    if timestamp is not None or by_timestamp is not None:
        wanted = {tp: timestamp if by_timestamp is None else by_timestamp.get(tp[0], {}).get(tp[1])
                  for tp in partitions}
        found = kafka_io.offsets_for_times(options.kafka_params, {tp: ts for tp, ts in wanted.items() if ts is not None})
        return {tp: found.get(tp, bounds[tp][1]) for tp in partitions}
    out = {}
    for tp in partitions:
        value = spec if isinstance(spec, str) else spec.get(tp[0], {}).get(tp[1], default)
        if value in ("earliest", EARLIEST):
            out[tp] = bounds[tp][0]
        elif value in ("latest", LATEST):
            out[tp] = bounds[tp][1]
        else:
            out[tp] = int(value)
    return out


class ZkafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions):
        self.options = options

    def partitions(self) -> list[KafkaInputPartition]:
        o = self.options
        tps = kafka_io.topic_partitions(o)
        bounds = kafka_io.watermarks(o, tps)
        start = resolve(o, o.starting_offsets, o.starting_timestamp, o.starting_offsets_by_timestamp, tps, bounds)
        end = resolve(o, o.ending_offsets, o.ending_timestamp, o.ending_offsets_by_timestamp, tps, bounds, "latest")
        ranges = [OffsetRange(t, p, start[(t, p)], end[(t, p)]) for t, p in tps if end[(t, p)] > start[(t, p)]]
        return [KafkaInputPartition(r, o) for r in split_ranges(ranges, o.min_partitions)]

    def read(self, partition) -> Iterator[tuple]:
        return _read(partition)


class ZkafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{topic: {partition: next offset}}``. New partitions start at their log start offset."""

    def __init__(self, options: SourceOptions):
        self.options = options
        self.target: dict[kafka_io.TP, int] | None = None  # availableNow: the latest offsets at query start

    def initialOffset(self) -> dict:
        o = self.options
        tps = kafka_io.topic_partitions(o)
        bounds = kafka_io.watermarks(o, tps)
        start = resolve(o, o.starting_offsets, o.starting_timestamp, o.starting_offsets_by_timestamp, tps, bounds)
        return offsets_to_json_dict(start)

    def _bounds(self) -> dict[kafka_io.TP, tuple[int, int]]:
        return kafka_io.watermarks(self.options, kafka_io.topic_partitions(self.options))

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {tp: high for tp, (_, high) in self._bounds().items()}

    def getDefaultReadLimit(self):
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict, limit=None) -> dict:
        begin = offsets_from_json_dict(start)
        bounds = self._bounds()
        for tp in bounds.keys() - begin.keys():  # a new partition: read it from its log start offset
            begin[tp] = bounds[tp][0]
        latest = self.target if self.target is not None else {tp: high for tp, (_, high) in bounds.items()}
        latest = {tp: max(offset, begin[tp]) for tp, offset in latest.items() if tp in begin}
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        end = offsets_to_json_dict({**begin, **latest})
        return start if end == start else end

    def partitions(self, start: dict, end: dict) -> list[KafkaInputPartition]:
        begin, until = offsets_from_json_dict(start), offsets_from_json_dict(end)
        ranges = [OffsetRange(t, p, begin.get((t, p), 0), u) for (t, p), u in sorted(until.items())
                  if u > begin.get((t, p), 0)]
        return [KafkaInputPartition(r, self.options) for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition) -> Iterator[tuple]:
        return _read(partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint holds the offsets (Spark's Kafka source commits nothing either)."""


class _SinkMessage(WriterCommitMessage):
    def __init__(self, count: int):
        self.count = count


class _Sink:
    """Rows with ``value`` (and optional ``key``, ``topic``, ``partition``, ``headers``) to Kafka, acks=all.

    With ``transactionalIdPrefix`` each task's rows are one Kafka transaction, committed when the task has
    sent them all (before Spark's driver-side commit, which cannot take over a task's open transaction):
    a task that fails aborts its transaction, and a retried or speculative attempt (same transactional id)
    fences an earlier one still running. In a streaming query the transaction also carries the task's batch
    marker (``kafka_io.BatchMarker``: the micro-batch id as a committed offset of a group of its own), so a
    task that runs a micro-batch again after its transaction committed (its executor lost after the commit,
    the driver failed before its checkpoint recorded the batch) writes nothing: exactly once per micro-batch
    for deterministic queries. A batch write (no micro-batch id) that is retried after a task committed
    commits that task's rows again (at least once), and a job that fails keeps the transactions of the tasks
    that finished; read_committed readers never see a failed attempt's rows."""

    def __init__(self, options: SinkOptions, columns: list[str]):
        if "value" not in columns:
            raise ValueError("the zkafka sink needs a 'value' column (binary or string); got "
                             f"{columns}")
        if options.topic is None and "topic" not in columns:
            raise ValueError("the zkafka sink needs the 'topic' option or a 'topic' column")
        self.options, self.columns = options, columns

    def write(self, iterator) -> _SinkMessage:
        prefix = self.options.transactional_id_prefix
        context = TaskContext.get()
        producer = kafka_io.RowProducer(self.options.kafka_params, None if prefix is None else transactional_id(
            prefix, context.partitionId()))
        try:
            rows = self._rows(iterator)
            if prefix is not None and self.streaming:
                rows = self._unless_written(producer, rows, context.getLocalProperty(QUERY_ID_PROPERTY),
                                            int(context.getLocalProperty(BATCH_ID_PROPERTY)))
            for topic, value, key, partition, headers in rows:
                producer.send(topic, value, key, partition, headers)
            return _SinkMessage(producer.close())
        except BaseException:
            producer.abort()
            raise

    def _unless_written(self, producer: kafka_io.RowProducer, rows: Iterator[tuple], query_id: str | None,
                        batch_id: int) -> Iterator[tuple]:
        """``rows``, or nothing when this task's transaction for ``batch_id`` already committed
        (``kafka_io.BatchMarker`` on the ``topic`` option's partition 0, then sent in the transaction); a task
        with no rows marks nothing. The marker's group names the query (its id lives in the checkpoint), so a
        new checkpoint starts afresh."""
        if query_id is None:
            raise RuntimeError(f"no {QUERY_ID_PROPERTY} in the task's properties: cannot mark the micro-batch")
        first = next(rows, None)
        if first is None:
            return iter(())
        marker = kafka_io.BatchMarker(producer.params, f"{producer.transactional_id}.{query_id}", self.options.topic,
                                      batch_id)
        try:
            written = marker.already_written()
        except BaseException:
            marker.close()
            raise
        if written:
            marker.close()
            return iter(())
        producer.batch_marker = marker
        return itertools.chain([first], rows)

    def _rows(self, iterator) -> Iterator[tuple]:
        """``(topic, value, key, partition, headers)`` of each row."""
        has = set(self.columns)
        for row in iterator:
            topic = row["topic"] if "topic" in has and row["topic"] is not None else self.options.topic
            yield (topic, _bytes(row["value"]), _bytes(row["key"]) if "key" in has else None,
                   row["partition"] if "partition" in has else None,
                   [(h["key"], _bytes(h["value"])) for h in row["headers"] or []] if "headers" in has else None)


def _bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode()


class ZkafkaWriter(_Sink, DataSourceWriter):
    streaming = False


class ZkafkaStreamWriter(_Sink, DataSourceStreamWriter):
    streaming = True

    def __init__(self, options: SinkOptions, columns: list[str]):
        super().__init__(options, columns)
        if options.transactional_id_prefix is not None and options.topic is None:
            raise ValueError("Option 'transactionalIdPrefix': a streaming query's transactional writes need the "
                             "'topic' option (each task's micro-batch marker lives on its partition 0)")

    def commit(self, messages, batchId) -> None:
        """Each task flushed with acks=all (and committed its transaction) before reporting: nothing is left."""

    def abort(self, messages, batchId) -> None:
        """Records already acknowledged stay: at least once without transactionalIdPrefix; with it a re-run of
        the batch finds each committed task's marker and skips it."""
