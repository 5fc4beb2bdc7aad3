"""Fetch (API key 1, v0-v12): file ranges of the partitions' logs, long-polled up to ``max_wait``.

v0-v3 read the old message formats: their reads are down-converted before the response
(``fetch_down_conversion``); v4+ send the log's bytes untouched.

Per requested partition, as Kafka 2.8's ``ReplicaManager.fetchMessages`` / ``readFromLocalLog``:

* with an authorizer, a consumer needs Read on the topic and a follower ClusterAction on the cluster,
  else TOPIC_AUTHORIZATION_FAILED (29);
* this broker must lead it (NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION);
* a follower's fetch (``replica_id >= 0``) first tells the replica manager the follower's log end
  (its ``fetch_offset``), which may advance the high watermark and expand the ISR, and reads up to the
  log end; a consumer (``replica_id`` -1) reads only below the high watermark;
* v9+ ``current_leader_epoch`` (when not -1) must equal the leader epoch: older is
  FENCED_LEADER_EPOCH (74), newer UNKNOWN_LEADER_EPOCH (75);
* v12+ ``last_fetched_epoch`` (KIP-320; when >= 0: followers send the epoch of their last batch,
  librdkafka -1, kafka-python its position's epoch) is looked up in this leader's epoch cache
  (``isr.fetch_divergence``): an undefined answer or a ``fetch_offset`` below the log start is
  OFFSET_OUT_OF_RANGE; an answer with a smaller epoch or an end offset below ``fetch_offset`` means the
  fetcher's log diverges: no records, ``diverging_epoch`` = that (epoch, end offset), answered at once,
  and a follower's fetch offset is not recorded (its log end is not ours to count);
* ``fetch_offset`` outside [log start, log end] is OFFSET_OUT_OF_RANGE (1) (``Log.read`` decides);
* a consumer reads up to the high watermark; with v4+ ``isolation_level`` 1 (READ_COMMITTED) up to the
  last stable offset, and the answer lists the aborted transactions (producer id, first offset) that
  overlap the read (``Log.collect_aborted_transactions`` up to the offset after the bytes read, as
  Kafka's ``fetchUpperBoundOffset``; an empty list when none, null for
  READ_UNCOMMITTED and followers, as Kafka). Every answer carries the last stable offset. Fetch v0-3
  have no isolation level: they read as READ_UNCOMMITTED (their down-conversion drops the markers);
* at most ``min(partition_max_bytes, what is left of max_bytes)``. KIP-74: the first
  batch of the *response* is whole even when it is bigger than either limit, so only the first
  partition that returns data reads with ``min_one_message``; once the response budget is spent the
  remaining partitions return nothing. The last batch of a range may be cut short; clients ignore a
  trailing partial batch.

Replication throttle (KIP-73, ``LeaderThrottle``): in a follower's Fetch, a partition whose
``leader.replication.throttled.replicas`` names (partition, this broker), for a follower not in the
ISR, returns no records while this broker's throttled replication rate is over
``leader.replication.throttled.rate``; what throttled replicas are sent counts towards that rate.

Errored partitions answer -1 for high watermark, last stable offset and log start offset, and no records.
The last stable offset moves only when the high watermark does (a marker holds it until the marker is
below the HW), so a parked READ_COMMITTED fetch waits on the same HW watchers.
``current_leader`` (v12's tag 1) is never set: Kafka 2.8's ZooKeeper-mode broker leaves it at its
default (only the KRaft quorum's fetch fills it; brokers fill it on errors from Fetch v16, KIP-951).

Long poll (Kafka's DelayedFetch): when the bytes read are fewer than ``min_bytes``, ``max_wait`` is
positive and no partition errored or diverged, the request parks: one future, registered with every led partition
*before* reading, so a change between the read and the wait is not missed (``watch_appends`` for a
follower, ``watch_high_watermark`` for a consumer, which reads only below the HW), plus one timer for
the deadline. It reads everything again on each wake-up, until ``min_bytes`` are there or the deadline
passes. (One future and one timer, not a task per partition event: a parked Fetch is on the hot path
of every acks=all produce, twice per follower.)

Fetch sessions (KIP-227, Fetch v7+; ``brokers.replication.fetch_session``): a full request (epoch 0)
makes a session of its partitions when the broker's cache has a slot, answered with its id; an
incremental request (epoch > 0) names only added or changed partitions and forgets others, every
session partition is read as in a sessionless fetch (a follower's fetch offsets recorded for all of
them), and the answer omits the partitions with no records and unchanged offsets. Long poll is unchanged:
it waits until ``min_bytes`` of any session partition are there. An unknown session is
FETCH_SESSION_ID_NOT_FOUND (70), a wrong epoch INVALID_FETCH_SESSION_EPOCH (71), answered at once with no
partitions. Sessionless requests (epoch -1, and v4-6) are answered as before. Without a session cache
(``fetch_sessions`` None, or ``max.incremental.fetch.session.cache.slots`` 0) every full request stays
sessionless (session id 0).

The response is encoded by hand (``brokers.protocol.fetch_response``) as segments; the records are the
logs' ``FileRange`` objects, passed through uncopied.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, NamedTuple

from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.fetch_response import FetchPartitionData, encode_fetch_response, encode_legacy_fetch_response
from brokers.protocol.framing import RequestHeader
from brokers.replication import isr as decide
from brokers.replication.fetch_session import INVALID_SESSION_ID, FetchContext
from brokers.replication.partition import Partition
from brokers.replication.quota import is_throttled
from brokers.replication.replica_manager import PartitionError
from brokers.security.acls import CLUSTER_ACTION, READ
from brokers.quotas.request_throttle import RequestThrottle
from brokers.server.context import REQUEST_THROTTLE, ServerContext
from brokers.server.handlers import fetch_down_conversion as legacy
from brokers.server.handlers import leader_epoch_error, leader_for, timeout_seconds
from brokers.storage.transactions import fetch_upper_bound

NO_EPOCH = -1
FIRST_SESSION_VERSION = 7  # Fetch v7+ carry session_id, session_epoch, forgotten_topics_data
READ_COMMITTED = 1


def _error(index: int, code: int) -> FetchPartitionData:
    return FetchPartitionData(index, int(code), -1, -1, -1, None)


def _allowed(context: ServerContext, topics: set[str], from_follower: bool) -> set[str]:
    """The requested topics the principal may fetch: Read on each topic for a consumer; ClusterAction on
    the cluster (all or nothing) for a follower."""
    if from_follower:
        return topics if context.authorized_on_cluster(CLUSTER_ACTION) else set()
    return context.authorized_topics(READ, topics)


class Diverging(NamedTuple):
    """A led partition whose fetcher's log diverges from ours (KIP-320): answered with no records."""

    partition: Partition
    epoch_end: tuple[int, int]


def _check(partition: Partition, wanted: Any) -> Partition | Diverging | int:
    """The led partition checked against the request's epochs: the partition, a Diverging answer or an
    error code (Kafka's Partition.readRecords before it reads)."""
    fenced = leader_epoch_error(getattr(wanted, "current_leader_epoch", NO_EPOCH), partition.leader_epoch)
    if fenced is not None:
        return fenced
    last_fetched_epoch = getattr(wanted, "last_fetched_epoch", NO_EPOCH)
    if last_fetched_epoch < 0:
        return partition
    log = partition.log
    check = decide.fetch_divergence(last_fetched_epoch, wanted.fetch_offset, log.log_start_offset,
                                    log.leader_epoch_cache.end_offset_for(last_fetched_epoch, log.log_end_offset))
    if check.error != ErrorCode.NONE:
        return check.error
    return partition if check.diverging_epoch is None else Diverging(partition, check.diverging_epoch)


def _resolve(context: ServerContext, fetch_list: list[tuple[str, Any]], allowed: set[str]
             ) -> list[tuple[str, Any, Partition | Diverging | int]]:
    """(topic, requested partition, the led Partition, a Diverging answer or an error code) for every
    partition to read."""
    resolved = []
    for topic, wanted in fetch_list:
        if topic not in allowed:
            resolved.append((topic, wanted, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        try:
            partition: Partition | Diverging | int = _check(leader_for(context, topic, wanted.partition), wanted)
        except PartitionError as exc:
            partition = exc.code
        resolved.append((topic, wanted, partition))
    return resolved


class LeaderThrottle:
    """The leader side of KIP-73 for one follower's Fetch: a throttled replica that is not in the ISR gets
    no data while the leader's replication rate is over ``leader.replication.throttled.rate``; the bytes
    sent to throttled replicas count towards that rate. Made only while a leader rate is set."""

    def __init__(self, context: ServerContext, replica_id: int):
        self.quota, self.broker_id, self.replica_id = context.replica_manager.leader_quota, context.broker_id, replica_id
        self.pending = 0  # bytes of throttled replicas in the read about to be sent

    def _listed(self, partition: Partition) -> bool:
        return (self.replica_id not in partition.isr
                and is_throttled(partition.log.config.leader_throttled_replicas,
                                 partition.topic_partition.partition, self.broker_id))

    def withhold(self, partition: Partition) -> bool:
        return self._listed(partition) and self.quota.exceeded(_now_ms())

    def read(self, partition: Partition, size: int) -> None:
        if size and self._listed(partition):
            self.pending += size

    def commit(self) -> None:
        """The read is the one sent: count it (a parked Fetch reads again on every wake-up)."""
        if self.pending:
            self.quota.record(self.pending, _now_ms())


def _now_ms() -> int:
    return int(time.time() * 1000)


def _diverging(index: int, diverging: Diverging) -> FetchPartitionData:
    log = diverging.partition.log
    return FetchPartitionData(index, ErrorCode.NONE, log.high_watermark, log.last_stable_offset,
                              log.log_start_offset, None, diverging_epoch=diverging.epoch_end)


def read_committed(version: int, request: Any) -> bool:
    """A v4+ consumer asking for READ_COMMITTED (v0-3 have no isolation level: READ_UNCOMMITTED)."""
    return version >= 4 and request.replica_id < 0 and getattr(request, "isolation_level", 0) == READ_COMMITTED


def _aborted(log: Any, fetch_offset: int, records: Any, stable: int) -> list[tuple[int, int]]:
    """The aborted transactions a READ_COMMITTED read must name: marker at or after the fetch offset,
    first offset before the offset after the bytes read (found only when there are candidates)."""
    found = log.collect_aborted_transactions(fetch_offset, stable)
    if found:
        upper = fetch_upper_bound(records, stable)
        found = [txn for txn in found if txn.first_offset < upper]
    return [(txn.producer_id, txn.first_offset) for txn in found]


def _read_all(resolved: list, max_bytes: int, from_follower: bool, throttle: LeaderThrottle | None = None,
              min_one: bool = True, committed: bool = False
              ) -> tuple[list[tuple[str, list[FetchPartitionData]]], int, bool]:
    """Read every partition once: (response topics, bytes read, whether a partition must be answered
    now: it errored or diverged). ``min_one``: the first batch of the response is whole past the
    limits (KIP-74; not for Fetch v0-2); ``committed``: READ_COMMITTED, up to the LSO."""
    topics: list[tuple[str, list[FetchPartitionData]]] = []
    budget, total, errored, first = max(0, max_bytes), 0, False, True
    if throttle is not None:
        throttle.pending = 0
    for topic, wanted, partition in resolved:
        if not topics or topics[-1][0] != topic:
            topics.append((topic, []))
        out = topics[-1][1]
        if not isinstance(partition, Partition):
            out.append(_diverging(wanted.partition, partition) if isinstance(partition, Diverging)
                       else _error(wanted.partition, partition))
            errored = True
            continue
        log = partition.log
        high_watermark, stable = log.high_watermark, log.last_stable_offset
        if throttle is not None and throttle.withhold(partition):
            out.append(FetchPartitionData(wanted.partition, ErrorCode.NONE, high_watermark, stable,
                                          log.log_start_offset, b""))
            continue
        limit = max(0, min(wanted.partition_max_bytes, budget))
        max_offset = None if from_follower else stable if committed else high_watermark
        try:
            info = log.read(wanted.fetch_offset, limit, max_offset=max_offset, min_one_message=first and min_one)
        except KafkaError as exc:
            out.append(_error(wanted.partition, exc.code))
            errored = True
            continue
        size = info.size
        if throttle is not None:
            throttle.read(partition, size)
        if size:
            first = False
            total += size
            budget = max(0, budget - size)
        aborted = None
        if committed:
            aborted = _aborted(log, wanted.fetch_offset, info.records, stable) if size else []
        out.append(FetchPartitionData(wanted.partition, ErrorCode.NONE, high_watermark, stable,
                                      log.log_start_offset, info.records, aborted_transactions=aborted))
    return topics, total, errored


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _record_follower_fetch(context: ServerContext, replica_id: int, resolved: list) -> None:
    manager = context.replica_manager
    for _, wanted, partition in resolved:
        if isinstance(partition, Partition):
            manager.record_follower_fetch(partition, replica_id, wanted.fetch_offset,
                                          getattr(wanted, "log_start_offset", -1))


def _size(records) -> int:
    """A file range's ``size`` (even 0: a range has no len()), else a bytes-like object's length."""
    return records.size if hasattr(records, "size") else len(records)


def _count_bytes_out(context: ServerContext, topics: list[tuple[str, list[FetchPartitionData]]]) -> None:
    """Kafka's BytesOutPerSec: what consumers are sent (replication is not counted)."""
    for topic, partitions in topics:
        size = sum(_size(p.records) for p in partitions if p.records is not None)
        if size:
            context.stats.bytes_out(topic, size)


def _session_context(context: ServerContext, version: int, request: Any, from_follower: bool
                     ) -> tuple[FetchContext, list[tuple[str, list[Any]]]]:
    """The request's session context (``brokers.replication.fetch_session``) and its partitions by topic."""
    topics = [(topic.topic, list(topic.partitions)) for topic in request.topics]
    cache = context.fetch_sessions
    if version < FIRST_SESSION_VERSION:
        return FetchContext("sessionless"), topics
    session_id, epoch = request.session_id, request.session_epoch
    if cache is None:  # no sessions offered: a full request is answered sessionless (session id 0)
        code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND if epoch > 0 else ErrorCode.NONE
        return FetchContext("error" if code else "sessionless", code), topics
    forgotten = [(f.topic, list(f.partitions)) for f in (request.forgotten_topics_data or ())]
    return cache.new_context(session_id, epoch, topics, forgotten, from_follower, _now_ms()), topics


def _at_end(resolved: list, replica_id: int) -> dict[tuple[str, int], Partition]:
    """The read partitions whose fetcher is at the end (``Partition.fetcher_at_end``): the session's quiet
    candidates."""
    return {(topic, wanted.partition): partition for topic, wanted, partition in resolved
            if isinstance(partition, Partition) and partition.fetcher_at_end(replica_id, wanted.fetch_offset)}


def _fetch_list(session: FetchContext, request_topics: list) -> list[tuple[str, Any]]:
    """What to read: an incremental request's awake session partitions, else the request's partitions."""
    if session.incremental:
        assert session.session is not None
        return session.session.fetch_list()
    return [(topic, wanted) for topic, partitions in request_topics for wanted in partitions]


async def handle_fetch(context: ServerContext, header: RequestHeader, request: Any) -> list:
    version, correlation_id = header.api_version, header.correlation_id
    replica_id = request.replica_id
    from_follower = replica_id >= 0
    session, request_topics = _session_context(context, version, request, from_follower)
    if session.error:
        return encode_fetch_response(version, correlation_id, [], error_code=session.error)
    fetch_list = _fetch_list(session, request_topics)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, timeout_seconds(request.max_wait))
    allowed = _allowed(context, {topic for topic, _ in fetch_list}, from_follower)
    resolved = _resolve(context, fetch_list, allowed)
    throttle = None
    max_bytes, min_one = legacy.request_max_bytes(version, request), legacy.min_one_message(version)
    committed = read_committed(version, request)
    client_throttle = REQUEST_THROTTLE.get()  # client quotas configured: this consumer's throttle
    if client_throttle is not None:
        max_bytes = _quota_max_bytes(context, client_throttle, from_follower, max_bytes)
    if from_follower:
        _record_follower_fetch(context, replica_id, resolved)
        if context.replica_manager.leader_quota.enabled:
            throttle = LeaderThrottle(context, replica_id)
    parked_on = session.session if session.incremental else None
    while True:
        led = [partition for _, _, partition in resolved if isinstance(partition, Partition)]
        wakeup = loop.create_future()  # registered before reading: what happens after the read wakes us
        for partition in led:  # followers wait for appends, consumers (below the HW only) for the HW
            (partition.watch_appends if from_follower else partition.watch_high_watermark)(wakeup)
        if parked_on is not None:  # and the session's quiet partitions, through touch()
            parked_on.parked, parked_on.last_read_ms = wakeup, context.replica_manager.clock()
        topics, total, errored = _read_all(resolved, max_bytes, from_follower, throttle, min_one, committed)
        remaining = deadline - loop.time()
        if total >= request.min_bytes or errored or not (led or parked_on and parked_on.quiet) or remaining <= 0:
            if parked_on is not None:
                parked_on.parked = None
            throttle_ms = _client_throttle_ms(context, client_throttle, total)
            if throttle_ms:  # Kafka's getThrottledResponse: nothing read is sent, the session is unchanged
                return _throttled_response(version, correlation_id, session, throttle_ms)
            if legacy.is_legacy(version):
                topics = await legacy.down_convert_topics(topics, resolved, version, from_follower, context.stats)
            if total and not from_follower:
                _count_bytes_out(context, topics)
            if throttle is not None:
                throttle.commit()
            if legacy.is_legacy(version):
                return encode_legacy_fetch_response(version, correlation_id, topics)
            at_end = _at_end(resolved, replica_id) if parked_on is not None else None
            return _respond(context, session, version, correlation_id, request_topics, topics, request, at_end)
        context.stats.fetches_parked += 1
        timer = loop.call_later(remaining, _wake, wakeup)
        try:
            await wakeup
        finally:
            timer.cancel()
            context.stats.fetches_parked -= 1
            if parked_on is not None:
                parked_on.parked = None
        if parked_on is not None:
            fetch_list = parked_on.fetch_list()
            allowed = _allowed(context, {topic for topic, _ in fetch_list}, from_follower)
        resolved = _resolve(context, fetch_list, allowed)


def _quota_max_bytes(context: ServerContext, throttle: RequestThrottle, from_follower: bool, max_bytes: int) -> int:
    """A consumer reads at most what its quota allows in one window (Kafka's ``getMaxValueInQuotaWindow``: more
    would be throttled for sure); a follower is never client-throttled."""
    if from_follower:
        throttle.exempt = True
        return max_bytes
    cap = context.quotas.fetch.max_value_in_window(throttle.user, throttle.client_id)
    return max_bytes if cap is None else min(max_bytes, max(1, int(cap)))


def _client_throttle_ms(context: ServerContext, throttle: RequestThrottle | None, total: int) -> int:
    """The answer's throttle time: the bytes read against the consumer's quota and the request time against its
    request quota. A throttled answer sends nothing, so its bytes are taken back (Kafka's unrecord)."""
    if throttle is None:
        return 0
    throttle.bandwidth(context.quotas.fetch, total)
    throttle_ms = throttle.throttle_time_ms()
    if throttle_ms and total and not throttle.exempt:
        context.quotas.fetch.unrecord(throttle.user, throttle.client_id, total)
    return throttle_ms


def _throttled_response(version: int, correlation_id: int, session: FetchContext, throttle_ms: int) -> list:
    """No partitions, the throttle time, and the session id of an incremental request (a full request makes
    no session: the client sends it again after the throttle)."""
    if legacy.is_legacy(version):
        return encode_legacy_fetch_response(version, correlation_id, [], throttle_time_ms=throttle_ms)
    session_id = session.session.id if session.incremental and session.session is not None else INVALID_SESSION_ID
    return encode_fetch_response(version, correlation_id, [], throttle_time_ms=throttle_ms, session_id=session_id)


def _respond(context: ServerContext, session: FetchContext, version: int, correlation_id: int,
             request_topics: list, topics: list, request: Any, at_end: dict | None) -> list:
    """The response of a read: a full request's makes its session, an incremental one's is pruned (and
    its partitions at their end go quiet)."""
    session_id = INVALID_SESSION_ID
    from_follower = request.replica_id >= 0
    if session.kind == "full" and context.fetch_sessions is not None:
        session_id = context.fetch_sessions.create(request_topics, topics, from_follower, _now_ms(),
                                                   replica_id=request.replica_id)
    elif session.incremental and session.session is not None:
        topics = context.fetch_sessions.respond(session, topics, at_end)
        session_id = session.session.id
    return encode_fetch_response(version, correlation_id, topics, session_id=session_id)
