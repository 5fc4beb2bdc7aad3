"""The data source's Kafka side, through confluent-kafka (the only Kafka client the Spark package uses):
partition discovery, watermarks and offsets-for-times on the planner, reading one offset range and
producing rows in the tasks.

Rows are Spark's Kafka-source rows, handed to Spark as Arrow record batches (one per ``consume()`` chunk):
``key, value, topic, partition, offset, timestamp, timestampType[, headers]`` with timestampType
0 = CreateTime, 1 = LogAppendTime, headers ``[{key, value}, ...]``.

Consumers run with the source's ``isolation.level`` (always set by ``source_options``): read_committed makes
the watermarks' high end each partition's last stable offset and drops aborted transactions' records (their
offsets are gaps, like transaction markers' always are); read_uncommitted reads to the high watermark.

A task reads ``[from, until)`` of one partition with ``assign()`` (no group, nothing committed) and
stops exactly at ``until``: offsets missing inside the range are compaction's gaps and are skipped;
a range that starts below the partition's log start offset lost data to retention, which raises
``DataLossError`` unless ``failOnDataLoss`` is false (then the task reads what is left).
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterator

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from consumer_group.spark.source_options import SourceOptions
from consumer_group.spark.ranges import OffsetRange

log = logging.getLogger(__name__)
TIMEOUT_S = 30.0
OFFSETS_TIMEOUT_S = 10.0  # one attempt at a partition's offsets (watermarks retries)
POLL_S = 0.5
BATCH = 5000
FETCH_QUEUE_BACKOFF_MS = "10"
STALL_S = 60.0
# librdkafka's timestamp types -> Spark's timestampType (0 CreateTime, 1 LogAppendTime)
_TIMESTAMP_TYPES = {1: 0, 2: 1}

TP = tuple[str, int]
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
_MS, _US = pa.timestamp("ms", tz="UTC"), pa.timestamp("us", tz="UTC")
_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class DataLossError(RuntimeError):
    """Offsets a query needed are gone (retention, a deleted topic): Spark's failOnDataLoss."""


def _consumer(params: dict[str, str]) -> Consumer:
    # fetch.queue.backoff.ms: librdkafka pauses a partition's fetches that long (1 s by default) once its local
    # queue holds queued.min.messages; a task drains that queue at once, so it should not wait (bench spark-cluster)
    return Consumer({"fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS, **params,
                     "group.id": params.get("group.id", f"spark-zkafka-{uuid.uuid4().hex}"),
                     "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "error"})


def topic_partitions(options: SourceOptions) -> list[TP]:
    """The partitions the query reads now: subscribed topics that exist, topics matching the pattern
    (internal ones excluded), or exactly the assigned partitions."""
    if options.assign is not None:
        return sorted((t, p) for t, parts in options.assign.items() for p in parts)
    consumer = _consumer(options.kafka_params)
    try:
        topics = consumer.list_topics(timeout=TIMEOUT_S).topics
    finally:
        consumer.close()
    if options.subscribe is not None:
        names = [t for t in options.subscribe if t in topics]
    else:
        pattern = re.compile(options.subscribe_pattern)
        names = [t for t in topics if not t.startswith("__") and pattern.fullmatch(t)]
    return sorted((t, p) for t in names for p in topics[t].partitions)


def watermarks(options: SourceOptions, partitions: list[TP]) -> dict[TP, tuple[int, int]]:
    """(log start offset, high watermark) of each partition. A retriable failure (a leader that just died and
    whose successor is not known yet) is asked again with a new client, ``fetchOffset.numRetries`` times
    ``fetchOffset.retryIntervalMs`` apart, as Spark's Kafka source does."""
    for attempt in range(options.fetch_offset_retries + 1):
        consumer = _consumer(options.kafka_params)
        try:
            return {tp: consumer.get_watermark_offsets(TopicPartition(*tp), timeout=OFFSETS_TIMEOUT_S)
                    for tp in partitions}
        except KafkaException as exc:
            if attempt == options.fetch_offset_retries or not _retriable(exc):
                raise
        finally:
            consumer.close()
        time.sleep(options.fetch_offset_retry_interval_ms / 1000)
    raise AssertionError("unreachable")


# librdkafka's local errors of a leader that just died: asked again with a new client (fresh metadata)
_LEADER_GONE = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._DESTROY_BROKER, KafkaError._ALL_BROKERS_DOWN)


def _retriable(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and (error.retriable() or error.code() in _LEADER_GONE)


def offsets_for_times(params: dict[str, str], timestamps: dict[TP, int]) -> dict[TP, int]:
    """The first offset at or after each timestamp; the high watermark where no record is that late
    (Spark's ``startingOffsetsByTimestampStrategy=latest``)."""
    consumer = _consumer(params)
    try:
        asked = [TopicPartition(t, p, ts) for (t, p), ts in timestamps.items()]
        found = consumer.offsets_for_times(asked, timeout=TIMEOUT_S)
        out = {}
        for tp in found:
            if tp.error is not None:
                raise KafkaException(tp.error)
            offset = tp.offset
            if offset < 0:
                offset = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=TIMEOUT_S)[1]
            out[(tp.topic, tp.partition)] = offset
        return out
    finally:
        consumer.close()


def read_arrow(params: dict[str, str], rng: OffsetRange, include_headers: bool,
               fail_on_data_loss: bool) -> Iterator[pa.RecordBatch]:
    """The records of ``rng`` as Arrow record batches in Spark's Kafka schema: columns are built from
    each ``consume()`` chunk at once, and Spark takes Arrow without converting row by row."""
    for chunk in read_chunks(params, rng, fail_on_data_loss):
        yield _record_batch(chunk, include_headers)


def _record_batch(chunk: list, include_headers: bool) -> pa.RecordBatch:
    first, n = chunk[0], len(chunk)
    stamps = [m.timestamp() for m in chunk]
    arrays = [pa.array([m.key() for m in chunk], pa.binary()), pa.array([m.value() for m in chunk], pa.binary()),
              pa.array([first.topic()] * n, pa.string()), pa.array([first.partition()] * n, pa.int32()),
              pa.array([m.offset() for m in chunk], pa.int64()),
              pa.array([ms if ms >= 0 else None for _, ms in stamps], _MS).cast(_US),
              pa.array([_TIMESTAMP_TYPES.get(kind, 0) for kind, _ in stamps], pa.int32())]
    if include_headers:
        arrays.append(pa.array([[{"key": k, "value": v} for k, v in (m.headers() or [])] for m in chunk], _HEADERS))
    return pa.RecordBatch.from_arrays(arrays, names=COLUMNS[:len(arrays)])


def read_chunks(params: dict[str, str], rng: OffsetRange, fail_on_data_loss: bool) -> Iterator[list]:
    """The messages of ``rng`` in offset order, a ``consume()`` call's worth at a time."""
    consumer = _consumer(params)
    try:
        start = _checked_start(consumer, rng, fail_on_data_loss)
        if start >= rng.until_offset:
            return
        consumer.assign([TopicPartition(rng.topic, rng.partition, start)])
        deadline = time.monotonic() + STALL_S
        next_offset = start
        while True:
            # never ask for more than the range holds: consume() would wait out POLL_S for the rest
            messages = consumer.consume(max(1, min(BATCH, rng.until_offset - next_offset)), timeout=POLL_S)
            if messages:
                deadline = time.monotonic() + STALL_S
            elif time.monotonic() > deadline:
                _stalled(rng, fail_on_data_loss)
                return
            chunk, done = _in_range(messages, rng)
            if chunk:
                next_offset = chunk[-1].offset() + 1
                yield chunk
            if done:
                return
    finally:
        consumer.close()


def _in_range(messages: list, rng: OffsetRange) -> tuple[list, bool]:
    """The records below the range end, and whether the end was reached (EOF events are skipped; compaction's
    gaps are simply offsets that never come)."""
    chunk = []
    for message in messages:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                if message.offset() >= rng.until_offset:
                    return chunk, True
                continue  # the range end was beyond the log end when planned: wait for it
            raise KafkaException(error)
        if message.offset() >= rng.until_offset:
            return chunk, True
        chunk.append(message)
        if message.offset() + 1 >= rng.until_offset:
            return chunk, True
    return chunk, False


def _stalled(rng: OffsetRange, fail_on_data_loss: bool) -> None:
    problem = (f"{rng.topic}-{rng.partition}: nothing more before the range end {rng.until_offset} "
               f"for {STALL_S:.0f} s (records deleted or truncated)")
    if fail_on_data_loss:
        raise DataLossError(problem)
    log.warning(problem)


def _checked_start(consumer: Consumer, rng: OffsetRange, fail_on_data_loss: bool) -> int:
    low, high = consumer.get_watermark_offsets(TopicPartition(rng.topic, rng.partition), timeout=TIMEOUT_S)
    if rng.from_offset < low:
        message = (f"{rng.topic}-{rng.partition}: offsets {rng.from_offset}..{min(low, rng.until_offset) - 1} "
                   f"are gone (log start offset {low}): records were lost to retention. Set failOnDataLoss "
                   f"to false to read what is left")
        if fail_on_data_loss:
            raise DataLossError(message)
        log.warning(message)
        return low
    return rng.from_offset


class BatchMarker:
    """Which streaming micro-batch a task's transaction wrote, kept where Kafka keeps things atomically with a
    transaction: a committed offset. Group ``<transactional id>.<query id>`` (one per task of the query),
    partition 0 of ``topic`` (the sink's ``topic`` option), offset ``batch id + 1``, sent with the rows in the task's
    transaction (``send_offsets_to_transaction``). A task that re-runs a micro-batch whose transaction already
    committed (the driver failed after the commit, before its checkpoint recorded the batch; or the task's
    executor was lost after committing) finds its marker at or past the batch and writes nothing: exactly once
    per (micro-batch, task) for deterministic queries. Read after ``init_transactions``, which fences an earlier
    attempt and waits for its transaction to complete, with ``isolation.level=read_committed`` so a pending
    transactional offset is waited for (KIP-447's require_stable), never missed. Markers are committed offsets:
    they expire with ``offsets.retention.minutes`` (7 days) like any group's, so a query stopped longer than that
    in the middle of a micro-batch may write that batch again."""

    def __init__(self, params: dict[str, str], group: str, topic: str, batch_id: int):
        self.params, self.group, self.topic, self.batch_id = params, group, topic, batch_id
        self._consumer: Consumer | None = None

    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer({**self.params, "group.id": self.group, "enable.auto.commit": False,
                                       "isolation.level": "read_committed"})
        return self._consumer

    def already_written(self) -> bool:
        (committed,) = self.consumer().committed([TopicPartition(self.topic, 0)], timeout=TIMEOUT_S)
        if committed.error is not None:
            raise KafkaException(committed.error)
        return committed.offset > self.batch_id

    def send_in(self, producer: Producer) -> None:
        producer.send_offsets_to_transaction([TopicPartition(self.topic, 0, self.batch_id + 1)],
                                             self.consumer().consumer_group_metadata(), TIMEOUT_S)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class RowProducer:
    """Produces rows with acks=all; ``close`` waits for every delivery and raises the first failure.

    With a ``transactional_id`` every row goes in one transaction: ``init_transactions`` (which aborts what
    an earlier producer with that id left open and fences it) and ``begin_transaction`` first, then
    ``close`` commits after the flush; ``abort`` (a failed task) rolls back."""

    def __init__(self, params: dict[str, str], transactional_id: str | None = None):
        config = {"acks": "all", "enable.idempotence": True, "linger.ms": 5, **params}
        if transactional_id is not None:
            config["transactional.id"] = transactional_id
        self.params, self.transactional_id = params, transactional_id
        self.producer = Producer(config)
        self.transactional = transactional_id is not None
        if self.transactional:
            self.producer.init_transactions(TIMEOUT_S * 2)
            self.producer.begin_transaction()
        self.errors: list[str] = []
        self.count = 0
        self.batch_marker: BatchMarker | None = None
        self.finished = False  # the transaction was committed or aborted

    def _delivered(self, err, _message) -> None:
        if err is not None:
            self.errors.append(str(err))

    def send(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> None:
        kwargs = {} if partition is None else {"partition": partition}
        while True:
            try:
                self.producer.produce(topic, value=value, key=key, headers=headers, on_delivery=self._delivered,
                                      **kwargs)
                break
            except BufferError:  # the local queue is full: let deliveries drain
                self.producer.poll(0.1)
        self.count += 1
        self.producer.poll(0)

    def close(self) -> int:
        """Wait for every delivery, then (transactional) send the batch marker and commit; on any failure the
        transaction is aborted and the error raised. Returns the rows sent."""
        try:
            remaining = self.producer.flush(TIMEOUT_S * 4)
            if remaining:
                raise RuntimeError(f"{remaining} records were not delivered within {TIMEOUT_S * 4:.0f} s")
            if self.errors:
                raise RuntimeError(f"{len(self.errors)} records failed: {self.errors[0]}")
            if self.transactional:
                if self.batch_marker is not None:
                    self.batch_marker.send_in(self.producer)
                self.producer.commit_transaction(TIMEOUT_S * 2)
                self.finished = True
            return self.count
        finally:
            self.abort()  # after a commit: only the marker's client to close

    def abort(self) -> None:
        """Roll the transaction back unless it ended already (nothing to do without one: acknowledged records
        stay); close the batch marker's client. Idempotent."""
        if self.batch_marker is not None:
            self.batch_marker.close()
        if self.transactional and not self.finished:
            self.finished = True
            try:
                self.producer.abort_transaction(TIMEOUT_S * 2)
            except KafkaException as exc:  # fenced or already failed: the coordinator aborts it anyway
                log.warning("abort_transaction failed: %s", exc)
