"""``MirrorSourceTask``: one flow's records copied from the source cluster to the target (MM2's
``MirrorSourceTask``), keys, values, headers and timestamps as they were, each source partition into the
same partition of its remote topic, in order.

Delivery:

- **at least once** (default): the idempotent producer sends; every ``offset.flush.interval.ms`` the task
  commits, for each partition, the next source offset after the records the target acknowledged (in order:
  one partition's acknowledgements come in offset order) to the flow's progress group at the target
  (``clients.progress_group``, under the remote topic's name); on SIGTERM it waits for every acknowledgement
  first. A task killed between two commits re-sends at most one interval's records: duplicates, never a gap.
- **exactly once** (``exactly.once.source.support = enabled``): each poll's records are one target transaction
  whose ``TxnOffsetCommit`` carries the same progress offsets (KIP-618's ``transaction.boundary = poll``, KIP-656's
  offsets inside the target transaction): the records and the position they advance to commit or abort together.

Offset syncs (``offset_sync.PartitionSyncState``) are gathered from the target's acknowledgements in delivery
order and written to ``mm2-offset-syncs.<target>.internal`` at the source, with each partition's newest unsynced
pair (its *frontier*): at least once, as soon as acknowledged (the record is at the target) and the frontiers
every second; exactly once, after each transaction commits, so a sync never describes an aborted record.

A fatal client error (a failed delivery, a fenced or aborted transaction) ends the clients without committing;
the task then starts again from the committed progress (``task_restarts`` in the metrics).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Callable

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from scripts.tools.kafka_mirror_maker import clients
from scripts.tools.kafka_mirror_maker.config import ClusterConfig, FlowConfig
from scripts.tools.kafka_mirror_maker.metrics import FlowMetrics
from scripts.tools.kafka_mirror_maker.offset_sync import PartitionSyncState
from scripts.tools.kafka_mirror_maker.records import OffsetSync
from scripts.tools.kafka_mirror_maker.sync_writer import OffsetSyncWriter

log = logging.getLogger("kafka_mirror_maker.source")
POLL_RECORDS = 500
POLL_TIMEOUT_S = 0.2
BUSY_POLL_S = 0.002
LAG_EVERY_S = 1.0
CLIENT_TIMEOUT_S = 30.0
RESTART_BACKOFF_S = 1.0
FINAL_SYNCS_WAIT_S = 2.0


class TaskFailed(RuntimeError):
    pass


def _size(msg) -> int:
    headers = msg.headers() or ()
    return (len(msg.key() or b"") + len(msg.value() or b"")
            + sum(len(k) + len(v or b"") for k, v in headers))


def progress_offsets(next_offset: dict[tuple[str, int], int], committed: dict[tuple[str, int], int],
                     safe_offset: Callable[[tuple[str, int], int], int]) -> dict[tuple[str, int], int]:
    """Source partition -> the progress to commit: its acknowledged next offset, held back by ``safe_offset``
    (``OffsetSyncWriter.safe_offset``), for the partitions where that passes what is ``committed``."""
    out = {}
    for tp, offset in next_offset.items():
        offset = safe_offset(tp, offset)
        if committed.get(tp, -1) < offset:
            out[tp] = offset
    return out


class MirrorSourceTask:
    def __init__(self, flow: FlowConfig, source: ClusterConfig, target: ClusterConfig, metrics: FlowMetrics,
                 stop: threading.Event):
        self.flow, self.source, self.target = flow, source, target
        self.metrics, self.stop = metrics, stop
        self._topics_lock = threading.Lock()
        self._wanted: dict[str, tuple[str, int]] = {}

    def set_topics(self, mirrored: dict[str, tuple[str, int]]) -> None:
        """Called by the flow's scheduler: source topic -> (remote topic, partitions existing at both)."""
        with self._topics_lock:
            self._wanted = dict(mirrored)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                _Run(self).run()
            except (TaskFailed, KafkaException) as exc:
                log.error("%s: task failed, restarting from the committed progress: %s", self.flow.name, exc)
                self.metrics.add("task_restarts")
                self.stop.wait(RESTART_BACKOFF_S)

    def wanted(self) -> dict[str, tuple[str, int]]:
        with self._topics_lock:
            return dict(self._wanted)


class _Run:
    """One life of the task's clients."""

    def __init__(self, task: MirrorSourceTask):
        self.task, self.flow, self.metrics = task, task.flow, task.metrics
        self.consumer = clients.source_consumer(task.flow, task.source)
        self.producer = clients.target_producer(task.flow, task.target)
        self.progress = clients.progress_consumer(task.flow, task.target)
        self.sync_writer = OffsetSyncWriter(clients.offset_syncs_producer(task.flow, task.source),
                                            task.flow.policy.offset_syncs_topic(task.flow.target))
        self.remote: dict[tuple[str, int], str] = {}           # source (topic, partition) -> remote topic
        self.source_of: dict[tuple[str, int], tuple[str, int]] = {}  # remote (topic, partition) -> source
        self.next_offset: dict[tuple[str, int], int] = {}      # acknowledged: next source offset to mirror
        self.committed: dict[tuple[str, int], int] = {}
        self.in_flight: dict[tuple[str, int], deque] = {}      # remote (topic, partition) -> (upstream, ts, size)
        self.sync_state: dict[tuple[str, int], PartitionSyncState] = {}
        self.syncs: list[OffsetSync] = []
        self.failure: KafkaError | None = None

    def run(self) -> None:
        try:
            if self.flow.exactly_once:
                self.producer.init_transactions(CLIENT_TIMEOUT_S)
            self._loop()
            if not self.flow.exactly_once:
                self._commit(final=True)
        finally:
            self.consumer.close()
            self.progress.close()
            self.sync_writer.flush(0.5)  # the source may be gone: a stop must not wait on it

    def _loop(self) -> None:
        last_commit = last_lag = time.monotonic()
        interval = self.flow.offset_flush_interval_s
        while not self.task.stop.is_set():
            self._assign_new_partitions()
            batch = [m for m in self._poll() if self._usable(m)]
            if self.flow.exactly_once:
                if batch:
                    self._transaction(batch)
            else:
                self._send(batch)
                self.producer.poll(0)
                self.sync_writer.poll()
                self._check()
                self._emit_syncs(frontier=False)
                if time.monotonic() - last_commit >= interval:
                    self._commit()
                    last_commit = time.monotonic()
            if time.monotonic() - last_lag >= LAG_EVERY_S:
                self._record_lag()
                if not self.flow.exactly_once:
                    self._emit_syncs(frontier=True)
                last_lag = time.monotonic()

    def _poll(self) -> list:
        """What the consumer has, without waiting for a full batch (``consume`` would wait for
        ``POLL_RECORDS`` or its timeout); short waits while acknowledgements are due, to serve them."""
        first = self.consumer.poll(POLL_TIMEOUT_S if len(self.producer) == 0 else BUSY_POLL_S)
        return [] if first is None else [first, *self.consumer.consume(POLL_RECORDS - 1, 0)]

    def _usable(self, msg) -> bool:
        error = msg.error()
        if error is None:
            return True
        if error.fatal():
            raise TaskFailed(f"source consumer: {error}")
        log.warning("%s: source consumer: %s", self.flow.name, error)
        return False

    def _assign_new_partitions(self) -> None:
        new = [(topic, p, remote) for topic, (remote, n) in self.task.wanted().items() for p in range(n)
               if (topic, p) not in self.remote]
        if new:  # a partition just added at the target may be unknown to the producer's metadata yet
            known = {remote: self._partitions_known(remote) for remote in {r for _, _, r in new}}
            new = [(topic, p, remote) for topic, p, remote in new if p in known[remote]]
        if not new:
            return
        stored = self.progress.committed([TopicPartition(remote, p) for _, p, remote in new], CLIENT_TIMEOUT_S)
        start = []
        for (topic, p, remote), tp in zip(new, stored):
            self.remote[(topic, p)] = remote
            self.source_of[(remote, p)] = (topic, p)
            self.sync_state[(topic, p)] = PartitionSyncState(self.flow.offset_lag_max)
            self.in_flight[(remote, p)] = deque()
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            if tp.offset >= 0:
                self.committed[(topic, p)] = self.next_offset[(topic, p)] = tp.offset
            start.append(TopicPartition(topic, p, offset))
        self.consumer.incremental_assign(start)
        log.info("%s: mirroring %s", self.flow.name, ", ".join(f"{t.topic}-{t.partition}@{t.offset}" for t in start))
        self.metrics.topics = len({t for t, _ in self.remote})

    def _partitions_known(self, remote: str) -> set[int]:
        topic = self.producer.list_topics(remote, timeout=CLIENT_TIMEOUT_S).topics.get(remote)
        return set(topic.partitions) if topic is not None and topic.error is None else set()

    def _send(self, batch) -> None:
        now_ms = int(time.time() * 1000)
        for msg in batch:
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            remote = self.remote[(topic, partition)]
            kind, timestamp = msg.timestamp()
            self.in_flight[(remote, partition)].append((offset, timestamp, _size(msg)))
            kwargs = {"timestamp": timestamp} if kind else {}
            while True:
                try:
                    self.producer.produce(remote, msg.value(), msg.key(), partition, on_delivery=self._delivered,
                                          headers=msg.headers(), **kwargs)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            if kind:
                self.metrics.record_polled(remote, partition, now_ms - timestamp)

    def _delivered(self, error, msg) -> None:
        key = (msg.topic(), msg.partition())
        upstream, timestamp, size = self.in_flight[key].popleft()
        if error is not None:
            self.failure = self.failure or error
            return
        tp = self.source_of[key]
        self.next_offset[tp] = upstream + 1
        if self.sync_state[tp].update(upstream, msg.offset()):
            self.syncs.append(OffsetSync(tp[0], tp[1], upstream, msg.offset()))
            self.sync_state[tp].mark_synced(upstream, msg.offset())
        latency = int(time.time() * 1000) - timestamp if timestamp > 0 else 0
        self.metrics.records_acknowledged(key[0], key[1], 1, size, latency)

    def _check(self, syncs: bool = True) -> None:
        if self.failure is not None:
            raise TaskFailed(f"target producer: {self.failure}")
        if syncs and self.sync_writer.failure is not None:
            raise TaskFailed(f"offset syncs producer: {self.sync_writer.failure}")

    def _progress_offsets(self) -> list[TopicPartition]:
        """Each partition's acknowledged next offset, held back by its unacknowledged gap syncs."""
        offsets = progress_offsets(self.next_offset, self.committed, self.sync_writer.safe_offset)
        return [TopicPartition(self.remote[tp], tp[1], offset) for tp, offset in offsets.items()]

    def _commit(self, final: bool = False) -> None:
        """At least once: commit the progress the target acknowledged (``final``: everything sent)."""
        if final:  # the syncs only get a short wait: any unacknowledged one holds its partition's progress back
            self._emit_syncs(frontier=False)
            if self.producer.flush(CLIENT_TIMEOUT_S):
                raise TaskFailed(f"records unacknowledged after {CLIENT_TIMEOUT_S} s")
            self.sync_writer.flush(FINAL_SYNCS_WAIT_S)
        self._check(syncs=not final)
        offsets = self._progress_offsets()
        if offsets:
            self.progress.commit(offsets=offsets, asynchronous=False)
            self._committed(offsets)

    def _committed(self, offsets: list[TopicPartition]) -> None:
        for tp in offsets:
            self.committed[self.source_of[(tp.topic, tp.partition)]] = tp.offset

    def _transaction(self, batch) -> None:
        self.producer.begin_transaction()
        try:
            self._send(batch)
            if self.producer.flush(CLIENT_TIMEOUT_S):
                raise TaskFailed(f"target producer: records unacknowledged after {CLIENT_TIMEOUT_S} s")
            self._emit_syncs(frontier=True)  # durable before the commit; one naming an aborted record is harmless
            if self.sync_writer.flush(CLIENT_TIMEOUT_S):
                raise TaskFailed(f"offset syncs unacknowledged by {self.flow.source} after {CLIENT_TIMEOUT_S} s")
            self._check()
            offsets = self._progress_offsets()
            self.producer.send_offsets_to_transaction(offsets, self.progress.consumer_group_metadata(),
                                                      CLIENT_TIMEOUT_S)
            self.producer.commit_transaction(CLIENT_TIMEOUT_S)
        except (KafkaException, TaskFailed):
            self._abort()
            raise
        self._committed(offsets)

    def _abort(self) -> None:
        try:
            self.producer.abort_transaction(CLIENT_TIMEOUT_S)
        except KafkaException as exc:
            log.warning("%s: abort_transaction: %s", self.flow.name, exc)

    def _emit_syncs(self, frontier: bool) -> None:
        """The syncs gathered so far, and with ``frontier`` each partition's newest unsynced pair."""
        for tp, state in self.sync_state.items() if frontier else ():
            pending = state.pending()
            if pending is not None:
                self.syncs.append(OffsetSync(tp[0], tp[1], *pending))
                state.mark_synced(*pending)
        if self.syncs:
            self.sync_writer.write(self.syncs)
            self.metrics.add("offset_syncs", len(self.syncs))
            self.syncs.clear()

    def _record_lag(self) -> None:
        for (topic, p), remote in self.remote.items():
            try:
                _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
            except KafkaException:
                continue
            if high is not None and high >= 0:
                self.metrics.set_lag(remote, p, high - self.next_offset.get((topic, p), 0))
