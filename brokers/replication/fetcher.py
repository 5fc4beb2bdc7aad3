"""Replica fetchers: a follower copies its leaders' logs with Kafka's own Fetch (reference §3.6-§3.7).

``ReplicaFetcherManager`` keeps one ``ReplicaFetcher`` per source broker (``num.replica.fetchers`` = 1);
partitions are added on become-follower and removed on become-leader, StopReplica or deletion. A
fetcher is one asyncio task with one connection to the leader's listener and, per partition, a
``PartitionFetchState``. Truncation happens on fetch (KIP-320, Kafka 2.8 at inter-broker protocol
2.7+, where the OffsetsForLeaderEpoch round trip on becoming follower is gone):

1. **becoming follower**: a log with leader epochs fetches at once from its log end; a log without
   any (empty, or only un-epoched data) first truncates to its own high watermark, the only thing
   left to go on (Kafka's truncateToHighWatermark);
2. **fetching**: one Fetch v12 (``replica_id`` = this broker) for all of this leader's partitions,
   each with ``last_fetched_epoch`` = the epoch of this log's last batch (its latest leader epoch);
   each returned record set is appended verbatim (``Log.append_as_follower`` keeps the leader's
   offsets and epochs byte for byte; a trailing partial batch is cut off and fetched again), then the
   follower HW = min(leader HW, own LEO);
3. **diverging**: when the leader finds that epoch ending before our fetch offset, or does not have
   it, it answers ``diverging_epoch`` = (its largest epoch <= ours, where that epoch ends) and no
   records; ``isr.truncation_offset`` decides (Kafka's getOffsetTruncationState: min of the leader's
   end offset and our own end of that epoch; for an epoch we do not know, KIP-279's intermediate
   point) and the next Fetch carries the latest epoch left after truncating, until no divergence.

Fetch sessions (KIP-227, ``fetch_session_handler``): the first Fetch on a connection is full and opens
a session; the next ones name only the partitions whose fetch fields changed (their log end after an
append or truncation, a new leader epoch) or were added, and forget the ones no longer fetched (moved
to another leader, backed off, throttled this round); the leader's answer omits the partitions with
nothing new. A session error, a lost answer, a reconnect or a dropped partition answer (the state moved
meanwhile, so the leader's record of what we were sent is wrong) go back to a full request.

Partition errors back off that partition for ``replica.fetch.backoff.ms``; connection errors back off
the whole fetcher and reconnect. After every await the partition's state is looked up again: a
LeaderAndIsr that arrived meanwhile (new epoch, removed partition) wins, and its stale response is
dropped unapplied.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from brokers.client.connection import KafkaConnection, connect_inter_broker
from brokers.config import from_schema, schema_field
from brokers.model import EndPoint, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record_batch import whole_batches
from brokers.protocol.sasl import SaslClientConfig
from brokers.replication import isr as decide
from brokers.replication.fetch_session_handler import FetchSessionHandler
from brokers.replication.partition import Partition
from brokers.replication.quota import LONG_MAX, ReplicationQuota, is_throttled, should_throttle

log = logging.getLogger(__name__)

FETCH, FETCH_VERSION = ApiKey.FETCH, 12
LIST_OFFSETS, LIST_OFFSETS_VERSION = ApiKey.LIST_OFFSETS, 2
EARLIEST, LATEST = -2, -1
QUICK_RETRY_MS = 50
THROTTLED_BACKOFF_S = 0.1  # every partition over the follower throttle: look again after this
LEADER_NOT_READY = frozenset({ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                              ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


@dataclass(frozen=True)
class FetcherConfig:
    """The replica fetchers' settings: a view of the broker config (Kafka's ReplicaFetcherThread reads
    ``replica.fetch.*`` from ``KafkaConfig``); ``broker_id``, TLS and SASL come from the broker."""

    broker_id: int
    wait_max_ms: int = schema_field("replica.fetch.wait.max.ms")
    min_bytes: int = schema_field("replica.fetch.min.bytes")
    max_bytes: int = schema_field("replica.fetch.max.bytes")
    response_max_bytes: int = schema_field("replica.fetch.response.max.bytes")
    backoff_ms: int = schema_field("replica.fetch.backoff.ms")
    socket_timeout_ms: int = schema_field("replica.socket.timeout.ms")
    ssl_context: Any = None  # an ssl.SSLContext for leaders' SSL / SASL_SSL inter-broker listeners
    sasl: SaslClientConfig | None = None  # the broker's credentials on a SASL inter-broker listener

    @classmethod
    def from_broker(cls, config: Any, broker_id: int, *, ssl_context: Any = None,
                    sasl: SaslClientConfig | None = None) -> "FetcherConfig":
        """From a broker config (anything indexable by Kafka's keys) and the broker's resolved id."""
        return from_schema(cls, config, broker_id=broker_id, ssl_context=ssl_context, sasl=sasl)


@dataclass
class SessionStats:
    """What this fetcher's Fetch requests named: requests, full ones, partitions named and forgotten."""

    requests: int = 0
    full_requests: int = 0
    partitions_sent: int = 0
    partitions_forgotten: int = 0

    def record_request(self, partitions: int, forgotten: int, full: bool) -> None:
        self.requests += 1
        self.full_requests += full
        self.partitions_sent += partitions
        self.partitions_forgotten += forgotten


@dataclass
class PartitionFetchState:
    partition: Partition
    leader_epoch: int
    truncating: bool = True  # to the high watermark first: a log without leader epochs
    quick_retries: int = 0
    in_sync: bool = False  # caught up with the leader's HW at the last fetch (Kafka's isReplicaInSync)


class ReplicaFetcher:
    """Copies every partition this broker follows from one leader broker."""

    def __init__(self, source: int, endpoint: EndPoint, config: FetcherConfig, quota: ReplicationQuota | None = None):
        self.source, self.endpoint, self.config = source, endpoint, config
        self.quota = quota or ReplicationQuota(lambda: LONG_MAX)
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._connection: KafkaConnection | None = None
        self._session = FetchSessionHandler()  # KIP-227: one session per connection to the leader
        self.stats = SessionStats()
        self._stopped = False
        # the next Fetch's fields per partition, kept between rounds: only the partitions in ``_changed``
        # (added, removed, answered, backed off, truncated) are looked at again, so an idle one costs nothing
        self._fields: dict[TopicPartition, tuple] = {}
        self._requested: dict[TopicPartition, PartitionFetchState] = {}  # the state each field tuple is of
        self._changed: set[TopicPartition] = set()
        self._delayed: dict[TopicPartition, float] = {}  # backed off until (time.monotonic())
        self._not_ready: Counter[str] = Counter()  # partition errors of this answer that mean "not yet"

    def add(self, partition: Partition) -> None:
        """Kafka 2.8's partitionFetchState with truncation on fetch: a log with epochs fetches from its end
        (the leader's diverging_epoch answer truncates it), one without truncates to its HW first."""
        truncating = partition.log.leader_epoch_cache.latest_epoch < 0
        self.partitions[partition.topic_partition] = PartitionFetchState(partition, partition.leader_epoch,
                                                                          truncating)
        self.changed(partition.topic_partition)
        self._wakeup.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replica-fetcher-{self.source}")

    def remove(self, tp: TopicPartition) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._delayed.pop(tp, None)
            self._changed.add(tp)

    def changed(self, tp: TopicPartition) -> None:
        """``tp``'s fetch fields may have changed (its log start moved, say): the next round looks again."""
        self._changed.add(tp)

    async def stop(self) -> None:
        self._stopped = True  # a cancel that asyncio.wait_for swallows (bpo-42130) must still end the loop
        self._wakeup.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._connection is not None:
            self._connection.close()

    # -- the loop ------------------------------------------------------------------------------
    async def _run(self) -> None:
        while not self._stopped:
            if not self.partitions:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                await self._round()
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                log.warning("replica fetcher %d->%d: %s; retrying in %d ms", self.config.broker_id,
                            self.source, exc, self.config.backoff_ms)
                if self._connection is not None:
                    self._connection.close()
                self._connection = None
                await asyncio.sleep(self.config.backoff_ms / 1000)
            except Exception:  # noqa: BLE001 - a bug in one round must not stop replication from this leader
                log.exception("replica fetcher %d->%d: round failed; retrying in %d ms", self.config.broker_id,
                              self.source, self.config.backoff_ms)
                await asyncio.sleep(self.config.backoff_ms / 1000)

    async def _round(self) -> None:
        connection = await self._connect()
        now = time.monotonic()
        changed = self._refresh(now)
        wanted: dict[TopicPartition, tuple] = self._fields
        if not wanted:  # every partition backed off
            self._changed |= changed
            await asyncio.sleep(max(0.0, min(self._delayed.values(), default=now) - now))
            return
        compare: set[TopicPartition] | None = changed
        if self.quota.enabled:  # which partitions are over the follower throttle changes round to round
            now_ms = int(time.time() * 1000)
            wanted = {tp: f for tp, f in wanted.items() if not self._throttled(tp, self._requested[tp], now_ms)}
            compare = None
        if not wanted:  # every partition is over the follower throttle: wait for the rate to drop
            self._changed |= changed
            await asyncio.sleep(THROTTLED_BACKOFF_S)
            return
        await self._fetch(connection, wanted, compare)

    def _refresh(self, now: float) -> set[TopicPartition]:
        """Bring ``_fields`` up to date for the partitions that changed (and those whose back-off ended);
        a new follower without leader epochs truncates to its HW first. Returns the keys looked at."""
        for tp, until in list(self._delayed.items()):
            if until <= now:
                del self._delayed[tp]
                self._changed.add(tp)
        changed, self._changed = self._changed, set()
        for tp in changed:
            state = self.partitions.get(tp)
            if state is None or tp in self._delayed:
                self._fields.pop(tp, None)
                self._requested.pop(tp, None)
                continue
            if state.truncating:
                self._truncate_to_high_watermark(state)
            log_ = state.partition.log
            self._fields[tp] = (state.leader_epoch, log_.log_end_offset, log_.leader_epoch_cache.latest_epoch,
                                log_.log_start_offset, self.config.max_bytes)
            self._requested[tp] = state
        return changed

    def _throttled(self, tp: TopicPartition, state: PartitionFetchState, now_ms: int) -> bool:
        """Kafka's shouldFollowerThrottle: a replica not caught up, named throttled, over the follower rate."""
        return should_throttle(self.quota, state.partition.log.config.follower_throttled_replicas, tp.partition,
                               self.config.broker_id, state.in_sync, now_ms)

    async def _connect(self) -> KafkaConnection:
        if self._connection is None or not self._connection.connected:
            self._session.reset()  # a new connection: start with a full request (closing the old session)
            self._connection = await connect_inter_broker(
                self.endpoint, f"broker-{self.config.broker_id}-fetcher-{self.source}", self.config.ssl_context,
                self.config.sasl, self.config.socket_timeout_ms / 1000)
        return self._connection

    def _current(self, tp: TopicPartition, state: PartitionFetchState) -> bool:
        """Whether ``state`` is still this fetcher's state for ``tp`` (no LeaderAndIsr overtook it)."""
        return self.partitions.get(tp) is state

    def _back_off(self, state: PartitionFetchState, reason: str, code: int | None = None) -> None:
        """Retry this partition after ``replica.fetch.backoff.ms``. Errors that mean "the leader has not
        applied the LeaderAndIsr we already have" (it will within milliseconds) are retried sooner:
        50 ms, doubling up to the backoff. That takes most of a second off every failover."""
        tp, delay_ms = state.partition.topic_partition, self.config.backoff_ms
        if code in LEADER_NOT_READY:  # expected while leaderships move: one summary line per answer
            log.debug("replica fetcher %d->%d: %s: %s", self.config.broker_id, self.source, tp, reason)
            self._not_ready[ErrorCode(code).name] += 1
            delay_ms = min(delay_ms, QUICK_RETRY_MS << min(state.quick_retries, 10))
            state.quick_retries += 1
        else:
            log.info("replica fetcher %d->%d: %s: %s", self.config.broker_id, self.source, tp, reason)
        if self._current(tp, state):
            self._delayed[tp] = time.monotonic() + delay_ms / 1000
            self._changed.add(tp)

    # -- truncation ----------------------------------------------------------------------------
    def _truncate_on_divergence(self, state: PartitionFetchState, epoch: int, end_offset: int) -> None:
        """The leader answered ``diverging_epoch`` = (``epoch``, ``end_offset``): truncate where
        ``isr.truncation_offset`` says (Kafka's truncateOnFetchResponse); the next Fetch carries the
        latest epoch left, so KIP-279's intermediate points need no extra round trip."""
        log_ = state.partition.log
        entries = [(e.epoch, e.start_offset) for e in log_.leader_epoch_cache.entries]
        log_end_offset = log_.log_end_offset
        decision = decide.truncation_offset(entries, log_end_offset, epoch, end_offset)
        # an undefined end offset (which a leader never sends here) keeps the fetch offset, as Kafka does
        offset = log_end_offset if decision.offset is None else decision.offset
        if log_.truncate_to(offset):
            log.warning("%s: truncated to offset %d (leader %d's epoch %d ends at %d; our log end was %d)",
                        log_.topic_partition, offset, self.source, epoch, end_offset, log_end_offset)

    def _truncate_to_high_watermark(self, state: PartitionFetchState) -> None:
        log_ = state.partition.log
        offset = log_.high_watermark
        if log_.truncate_to(offset):
            log.warning("%s: no leader epochs: truncated to the high watermark %d on becoming follower of %d "
                        "at epoch %d", log_.topic_partition, offset, self.source, state.leader_epoch)
        state.truncating = False

    # -- fetching ------------------------------------------------------------------------------
    async def _fetch(self, connection: KafkaConnection, wanted: dict[TopicPartition, tuple],
                     changed: set[TopicPartition] | None) -> None:
        c = self.config
        session = self._session.build(wanted, changed)
        body = codec.build(
            codec.request_class(FETCH, FETCH_VERSION), replica_id=c.broker_id, max_wait=c.wait_max_ms,
            min_bytes=c.min_bytes, max_bytes=c.response_max_bytes, isolation_level=0, session_id=session.session_id,
            session_epoch=session.epoch, topics=_by_topic(session.partitions, lambda tp, fields: dict(
                partition=tp.partition, current_leader_epoch=fields[0], fetch_offset=fields[1],
                last_fetched_epoch=fields[2], log_start_offset=fields[3], partition_max_bytes=fields[4])),
            forgotten_topics_data=_forgotten(session.forgotten))
        self.stats.record_request(len(session.partitions), len(session.forgotten), session.full)
        try:
            response = await connection.request(FETCH, FETCH_VERSION, body,
                                                (c.socket_timeout_ms + c.wait_max_ms) / 1000)
        except BaseException:
            self._session.reset()  # the answer is lost: the leader's epoch may have moved on
            raise
        if not self._session.handle_response(session, response.error_code.value, response.session_id):
            log.info("replica fetcher %d->%d: fetch session %d: %s; fetching in full", c.broker_id, self.source,
                     session.session_id, response.error_code.name)
            return
        if response.error_code.value != ErrorCode.NONE:
            raise ConnectionError(f"fetch failed with {response.error_code.name}")
        for topic in response.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, data.partition_index)
                self._changed.add(tp)  # answered: its log end, epoch or log start may move now
                state, fields = self._requested.get(tp), wanted.get(tp)
                if (state is None or fields is None or not self._current(tp, state)
                        or state.partition.log.log_end_offset != fields[1]):
                    # a LeaderAndIsr or a truncation happened while the fetch was out; the leader's session
                    # counts this answer (its high watermark) as received: the next request is full
                    self._session.reset()
                    continue
                await self._handle_partition(connection, state, data)
        if self._not_ready:
            log.info("replica fetcher %d->%d: %s at the leader (it has not applied our LeaderAndIsr yet); "
                     "retrying those partitions soon", c.broker_id, self.source,
                     ", ".join(f"{count} partitions {name}" for name, count in sorted(self._not_ready.items())))
            self._not_ready.clear()

    async def _handle_partition(self, connection: KafkaConnection, state: PartitionFetchState, data) -> None:
        code = data.error_code.value
        partition = state.partition
        if code == ErrorCode.NONE and data.diverging_epoch.epoch >= 0:  # Kafka: a negative epoch is none
            state.quick_retries = 0
            self._truncate_on_divergence(state, data.diverging_epoch.epoch, data.diverging_epoch.end_offset)
            partition.update_follower_high_watermark(data.high_watermark)
        elif code == ErrorCode.NONE:
            state.quick_retries = 0
            records = whole_batches(data.records)
            try:
                partition.append_as_follower(records, data.high_watermark)
                if data.log_start_offset > partition.log.log_start_offset and partition.update_follower_log_start(
                        data.log_start_offset):
                    self.changed(partition.topic_partition)  # the next Fetch tells the leader (DeleteRecords)
            except KafkaError as exc:  # KafkaStorageError too: this partition backs off, the fetcher goes on
                self._back_off(state, f"cannot append fetched records: {exc}")
            state.in_sync = partition.log.log_end_offset >= data.high_watermark
            if is_throttled(partition.log.config.follower_throttled_replicas, partition.topic_partition.partition,
                            self.config.broker_id):
                self.quota.record(len(records), int(time.time() * 1000))
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(connection, state)
        else:
            self._back_off(state, f"fetch error {ErrorCode(code).name}", code)

    async def _handle_out_of_range(self, connection: KafkaConnection, state: PartitionFetchState) -> None:
        """Our LEO is outside the leader's log: above its end -> truncate to it; below its start (the
        leader deleted what we lack) -> start over empty at its log start offset (§3.7)."""
        tp = state.partition.topic_partition
        earliest, latest = await self._list_offsets(connection, tp, state)
        if not self._current(tp, state):
            return
        log_ = state.partition.log
        if log_.log_end_offset > latest:
            log.warning("%s: log end %d is past the leader's %d; truncating", tp, log_.log_end_offset, latest)
            log_.truncate_to(latest)
        elif log_.log_end_offset < earliest:
            log.warning("%s: log end %d is below the leader's log start %d; starting over there", tp,
                        log_.log_end_offset, earliest)
            log_.truncate_fully_and_start_at(earliest)

    async def _list_offsets(self, connection: KafkaConnection, tp: TopicPartition,
                            state: PartitionFetchState) -> tuple[int, int]:
        offsets = []
        for timestamp in (EARLIEST, LATEST):
            body = codec.build(codec.request_class(LIST_OFFSETS, LIST_OFFSETS_VERSION),
                               replica_id=self.config.broker_id, isolation_level=0,
                               topics=[dict(name=tp.topic, partitions=[dict(partition_index=tp.partition,
                                                                            timestamp=timestamp)])])
            response = await connection.request(LIST_OFFSETS, LIST_OFFSETS_VERSION, body,
                                                self.config.socket_timeout_ms / 1000)
            answer = response.topics[0].partitions[0]
            if answer.error_code.value != ErrorCode.NONE:
                self._back_off(state, f"ListOffsets error {answer.error_code.name}")
                raise ConnectionError(f"ListOffsets for {tp} failed")
            offsets.append(answer.offset)
        return offsets[0], offsets[1]


def _forgotten(partitions: tuple[TopicPartition, ...]) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return [dict(topic=topic, partitions=indexes) for topic, indexes in topics.items()]


def _by_topic(items: dict, partition_fields: Callable) -> list[dict]:
    topics: dict[str, list] = {}
    for tp, value in items.items():
        topics.setdefault(tp.topic, []).append(partition_fields(tp, value))
    return [dict(topic=topic, name=topic, partitions=partitions) for topic, partitions in topics.items()]


class ReplicaFetcherManager:
    """Which fetcher copies which partition: one per source broker, created on demand."""

    def __init__(self, config: FetcherConfig, listener: str | None, quota: ReplicationQuota | None = None):
        self.config, self.listener, self.quota = config, listener, quota
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def add_partition(self, partition: Partition, endpoint: EndPoint) -> None:
        self.remove_partition(partition.topic_partition)
        fetcher = self.fetchers.get(partition.leader)
        if fetcher is not None and fetcher.endpoint != endpoint:
            self.fetchers.pop(partition.leader)
            asyncio.get_running_loop().create_task(fetcher.stop())
            for state in fetcher.partitions.values():  # moved listener: carry the partitions over
                self._fetcher_for(partition.leader, endpoint).add(state.partition)
            fetcher = None
        self._fetcher_for(partition.leader, endpoint).add(partition)

    def _fetcher_for(self, source: int, endpoint: EndPoint) -> ReplicaFetcher:
        if source not in self.fetchers:
            self.fetchers[source] = ReplicaFetcher(source, endpoint, self.config, self.quota)
        return self.fetchers[source]

    def remove_partition(self, tp: TopicPartition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(tp)

    def log_start_moved(self, tp: TopicPartition) -> None:
        """Retention moved a followed partition's log start: its next Fetch names it with the new one."""
        for fetcher in self.fetchers.values():
            if tp in fetcher.partitions:
                fetcher.changed(tp)

    async def shutdown(self) -> None:
        await asyncio.gather(*(f.stop() for f in self.fetchers.values()))
        self.fetchers.clear()

    def describe(self) -> dict:
        return {source: sorted(str(tp) for tp in f.partitions) for source, f in self.fetchers.items()}
