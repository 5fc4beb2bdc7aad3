"""Incremental fetch sessions (KIP-227), the leader side: Kafka 2.8's ``FetchSession.scala``.

A Fetch v7+ carries ``session_id`` and ``session_epoch``:

* epoch -1 (FINAL) with session 0: **sessionless**, every partition requested and answered, as before
  KIP-227. Epoch -1 with a session id closes that session first, and is then sessionless;
* epoch 0 (INITIAL): a **full** request: a named session is closed, then a new session is made from the
  request's partitions (when a slot is free or one can be evicted) and its id answered (0 if none);
* epoch > 0: **incremental**: the session must exist (else FETCH_SESSION_ID_NOT_FOUND, 70) and expect
  this epoch (else INVALID_FETCH_SESSION_EPOCH, 71). The request names only partitions added or changed
  (fetch offset, max bytes, epochs) and lists removed ones in ``forgotten_topics_data``; the partitions
  not named keep their cached fetch offset. The answer carries only the partitions with records, a
  changed high watermark, last stable offset or log start offset, an error or a diverging epoch
  (``CachedPartition.must_respond``); those answered move to the end of the session's order (a topic may
  then appear more than once in an answer, as in Kafka's). A session left empty is closed: sessionless.
  The session's epoch moves on once per incremental request.

**Quiet partitions** (where zkafka parts from Kafka, which reads every session partition per fetch): a
partition not answered while its fetcher is at its end (``Partition.fetcher_at_end``: a follower in the
ISR at the log end, with the high watermark there too; a consumer at the high watermark) is skipped by
the next fetches until its Partition says it changed (an append for a follower's session, an HW
advance, a role change, a log start move), so an idle partition
costs an incremental fetch nothing. The answers are Kafka's: a skipped partition has nothing to say.
The skipped fetches of a follower are recorded when the partition changes (``isr.caught_up_while_quiet``).

Eviction (``max.incremental.fetch.session.cache.slots`` sessions at most, Kafka's ``tryEvict``): a new
session takes a free slot; else the least recently used session, if unused for longer than the eviction
time (Kafka's 120 s ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``); else the least valuable evictable
session when it is worth less than the newcomer: value orders (privileged = a follower's, size, id), a
consumer's session is evictable at once by a follower's, every session once it is older than the
eviction time.

The cached partition objects carry the request's field names (``partition``, ``fetch_offset``, ...), so
the Fetch handler reads them as it reads a request's partitions.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from brokers.protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka 2.8's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
INT32_MAX = 0x7FFFFFFF


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 0 -> 1, wraps from int32 max back to 1; -1 stays -1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


class CachedPartition:
    """One session partition: the last request's fetch fields and the last response's offsets."""

    __slots__ = ("position", "partition", "fetch_offset", "partition_max_bytes", "log_start_offset",
                 "current_leader_epoch", "last_fetched_epoch", "high_watermark", "last_stable_offset",
                 "local_log_start_offset")

    def __init__(self, wanted: Any):
        self.partition = wanted.partition
        self.position = 0  # its place in the session's fetch order (FetchSession.fetch_list)
        self.high_watermark = self.last_stable_offset = self.local_log_start_offset = -1
        self.update(wanted)

    def update(self, wanted: Any) -> None:
        """Take the fetch fields of a request's partition (Kafka's updateRequestParams)."""
        self.fetch_offset = wanted.fetch_offset
        self.partition_max_bytes = wanted.partition_max_bytes
        self.log_start_offset = getattr(wanted, "log_start_offset", -1)
        self.current_leader_epoch = getattr(wanted, "current_leader_epoch", -1)
        self.last_fetched_epoch = getattr(wanted, "last_fetched_epoch", -1)

    def must_respond(self, data: Any) -> bool:
        """Whether an incremental answer includes this partition's read ``data`` (a FetchPartitionData);
        remembers the offsets sent (Kafka's maybeUpdateResponseData). An error is always sent and
        resets the cached high watermark, so the partition is sent again once the error is gone."""
        respond = (data.error_code != ErrorCode.NONE or data.diverging_epoch is not None
                   or data.preferred_read_replica >= 0 or _has_records(data.records))
        if data.error_code != ErrorCode.NONE:
            self.high_watermark = -1
            return True
        if (self.high_watermark != data.high_watermark or self.last_stable_offset != data.last_stable_offset
                or self.local_log_start_offset != data.log_start_offset):
            self.high_watermark, self.last_stable_offset = data.high_watermark, data.last_stable_offset
            self.local_log_start_offset = data.log_start_offset
            return True
        return respond


def _position(item: tuple[str, CachedPartition]) -> int:
    return item[1].position


def _has_records(records: Any) -> bool:
    if records is None:
        return False
    size = getattr(records, "size", None)
    return bool(len(records) if size is None else size)


@dataclass(eq=False)
class FetchSession:
    """A session: its partitions by (topic, partition), in fetch order, and its expected epoch.

    ``awake`` are the partitions an incremental fetch reads, in order; the others are **quiet**: the
    fetcher was at their end with nothing to answer, and each waits on its Partition
    (``quiet[key].watch_quietly``) until it changes, which ``touch``es it awake again and wakes the
    session's parked fetch. An idle partition so costs a fetch nothing, where Kafka reads every session
    partition per fetch. ``last_read_ms``: when the session last read its partitions (a quiet partition's
    follower was at the log end then)."""

    id: int
    privileged: bool
    partitions: dict[tuple[str, int], CachedPartition]
    created_ms: int
    last_used_ms: int
    epoch: int = 1  # the full request that made it was epoch 0
    replica_id: int = -1
    awake: dict[tuple[str, int], None] = field(init=False)
    quiet: dict[tuple[str, int], Any] = field(init=False, default_factory=dict)
    parked: Any = field(init=False, default=None)  # the future a parked fetch of this session waits on
    last_read_ms: int = field(init=False, default=0)
    _next_position: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.awake = dict.fromkeys(self.partitions)
        for cached in self.partitions.values():
            self.to_the_end(cached)

    def to_the_end(self, cached: CachedPartition) -> None:
        """Last in the fetch order (new, or just answered: Kafka's round robin)."""
        cached.position = self._next_position
        self._next_position += 1

    @property
    def size(self) -> int:
        return len(self.partitions)

    def value(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the bigger, the less evictable."""
        return (self.privileged, self.size, self.id)

    def update(self, topics: Iterable[tuple[str, Iterable[Any]]], forgotten: Iterable[tuple[str, Iterable[int]]]
               ) -> None:
        """An incremental request: add or update the named partitions (awake), then drop the forgotten ones."""
        cached = self.partitions
        for topic, partitions in topics:
            for wanted in partitions:
                key = (topic, wanted.partition)
                known = cached.get(key)
                if known is None:
                    cached[key] = known = CachedPartition(wanted)
                    self.to_the_end(known)
                else:
                    known.update(wanted)
                self._wake(key)
        for topic, indexes in forgotten:
            for index in indexes:
                key = (topic, index)
                if cached.pop(key, None) is not None:
                    self._unquiet(key)
                    self.awake.pop(key, None)

    def fetch_list(self) -> list[tuple[str, CachedPartition]]:
        """The awake session partitions in fetch order: what an incremental fetch reads."""
        cached = self.partitions
        return sorted(((key[0], cached[key]) for key in self.awake), key=_position)

    def settle(self, key: tuple[str, int], partition: Any) -> None:
        """``key`` had nothing to answer with its fetcher at the end: skip it until ``partition`` changes."""
        if self.awake.pop(key, 0) is None:
            self.quiet[key] = partition
            partition.watch_quietly(self, self.privileged)

    def touch(self, key: tuple[str, int]) -> bool:
        """The partition changed (its Partition calls this once per ``watch_quietly``): read it again, wake
        a parked fetch. Whether ``key`` was quiet here (a forgotten or re-added partition was not)."""
        if self.quiet.pop(key, None) is None:
            return False
        self.awake[key] = None
        parked = self.parked
        if parked is not None and not parked.done():
            parked.set_result(None)
        return True

    def _wake(self, key: tuple[str, int]) -> None:
        self._unquiet(key)
        self.awake[key] = None

    def _unquiet(self, key: tuple[str, int]) -> None:
        partition = self.quiet.pop(key, None)
        if partition is not None:
            partition.unwatch_quietly(self)

    def close(self) -> None:
        """Out of the cache: no Partition keeps it."""
        for partition in self.quiet.values():
            partition.unwatch_quietly(self)
        self.quiet.clear()


@dataclass
class FetchContext:
    """How one Fetch is answered: ``kind`` is "sessionless", "full", "incremental" or "error"."""

    kind: str
    error: int = ErrorCode.NONE
    session: FetchSession | None = None
    privileged: bool = False

    @property
    def incremental(self) -> bool:
        return self.kind == "incremental"


@dataclass
class FetchSessionCache:
    """The broker's sessions (Kafka's FetchSessionCache)."""

    max_slots: int = 1000
    eviction_ms: int = EVICTION_MS
    rng: random.Random = field(default_factory=random.Random)
    sessions: dict[int, FetchSession] = field(default_factory=dict)
    evictions: int = 0
    incremental_fetches: int = 0

    def partitions_cached(self) -> int:
        return sum(session.size for session in self.sessions.values())

    def new_context(self, session_id: int, epoch: int, topics: list[tuple[str, list[Any]]],
                    forgotten: list[tuple[str, list[int]]], privileged: bool, now_ms: int) -> FetchContext:
        """Kafka's FetchManager.newContext. ``topics``: (topic, the request's partitions); for an
        incremental request the session is updated here and its epoch moved on."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._drop(session_id)
            return FetchContext("sessionless" if epoch == FINAL_EPOCH else "full", privileged=privileged)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext("error", ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext("error", ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        session.update(topics, forgotten)
        if not session.partitions:
            self._drop(session.id)
            return FetchContext("sessionless", privileged=privileged)
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        self.incremental_fetches += 1
        return FetchContext("incremental", session=session, privileged=privileged)

    def create(self, topics: list[tuple[str, list[Any]]], answered: Iterable[tuple[str, list[Any]]],
               privileged: bool, now_ms: int, replica_id: int = -1) -> int:
        """After a full request is answered: a new session of its partitions, each remembering the offsets
        just sent; its id, or 0 when there is no slot for it (Kafka's maybeCreateSession)."""
        size = sum(len(partitions) for _, partitions in topics)
        if size == 0 or self.max_slots <= 0:
            return INVALID_SESSION_ID
        new_id = self._new_id()
        if len(self.sessions) >= self.max_slots and not self._try_evict((privileged, size, new_id), now_ms):
            return INVALID_SESSION_ID
        partitions = {(topic, wanted.partition): CachedPartition(wanted)
                      for topic, wanted_list in topics for wanted in wanted_list}
        for topic, data_list in answered:
            for data in data_list:
                known = partitions.get((topic, data.partition_index))
                if known is not None:
                    known.must_respond(data)
        self.sessions[new_id] = FetchSession(new_id, privileged, partitions, now_ms, now_ms, replica_id=replica_id)
        return new_id

    def _new_id(self) -> int:
        while True:
            candidate = self.rng.randint(1, INT32_MAX)
            if candidate not in self.sessions:
                return candidate

    def _try_evict(self, value: tuple[bool, int, int], now_ms: int) -> bool:
        """Kafka's tryEvict: the least recently used session if stale, else the least valuable evictable
        one if it is worth less than ``value``."""
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            return self._evict(oldest)
        privileged = value[0]
        evictable = [s for s in self.sessions.values()
                     if now_ms - s.created_ms > self.eviction_ms or (privileged and not s.privileged)]
        if not evictable:
            return False
        cheapest = min(evictable, key=FetchSession.value)
        return value >= cheapest.value() and self._evict(cheapest)

    def _evict(self, session: FetchSession) -> bool:
        self._drop(session.id)
        self.evictions += 1
        return True

    def _drop(self, session_id: int) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def respond(self, context: FetchContext, topics: list[tuple[str, list[Any]]],
                at_end: dict[tuple[str, int], Any] | None = None) -> list[tuple[str, list[Any]]]:
        """An incremental answer: of the read ``topics``, only what ``must_respond`` says (topics left
        empty dropped); any other context answers everything. The partitions answered move to the end
        of the session's fetch order (Kafka's round robin: with ``max_bytes`` spent by the first partitions
        read, the others get their turn in the next fetch). A partition not answered whose fetcher is at
        its end (``at_end``: key -> its Partition) goes quiet (``FetchSession.settle``)."""
        session = context.session
        if not context.incremental or session is None:
            return topics
        cached, out = session.partitions, []
        at_end = at_end or {}
        for topic, data_list in topics:
            kept = []
            for data in data_list:
                key = (topic, data.partition_index)
                known = cached.get(key)
                if known is None:
                    kept.append(data)
                elif known.must_respond(data):
                    kept.append(data)
                    session.to_the_end(known)
                elif key in at_end:
                    session.settle(key, at_end[key])
            if kept:
                out.append((topic, kept))
        return out
