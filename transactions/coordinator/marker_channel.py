"""TransactionMarkerChannelManager: the coordinator's markers to the partition leaders (Kafka's
``TransactionMarkerChannelManager`` and its request completion handler), WriteTxnMarkers v1 over
``brokers.client``.

* **Routing**: each of a marker's partitions goes to its current leader as the broker's metadata cache knows
  it (``MarkerMetadata.leader_of``), on the inter-broker listener. A partition the cache no longer knows is a
  deleted topic's: nothing to write there (final). A known partition without a live leader waits and is
  routed again after the backoff.
* **Batching per broker**: one queue and one sender per destination broker; the sender sends one
  WriteTxnMarkers carrying every entry queued for that broker, and whatever is queued while it is in flight
  goes in the next request. Entries of one transaction are merged into one marker of the request.
* **Outcomes** (``marker_outcome``, pure): NONE done; the leader's fatal answers (corrupt or oversized batch)
  give the partition up; a fenced producer or coordinator epoch (INVALID_PRODUCER_EPOCH,
  TRANSACTION_COORDINATOR_FENCED: a newer owner exists) aborts the whole transaction's sending, as Kafka's
  ``abortSending``, and ``send_markers`` answers False so no Complete* is written; everything else (not the leader
  any more, not enough replicas, timed out, unknown partition, storage errors) is routed again after the
  backoff, as is every partition of a request whose connection failed or timed out, or that failed in any
  other way (a request the codec cannot build, an answer it cannot read): a broker's sender never dies of one
  request.
* **Currency**: a transaction stops being sent the moment ``is_current()`` (asked before each request and
  each retry) says its coordinator no longer owns it at that coordinator epoch; ``send_markers`` then
  returns False. It returns True once every partition is done or given up.

Invariants: an entry is in at most one broker queue or in flight or waiting for a retry, never two; a
``send_markers`` call returns exactly once. Counters: ``markers_written`` (partitions answered NONE),
``markers_given_up``, ``retries``.
"""
from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Awaitable, Callable, Mapping, Protocol

from brokers.client.connection import KafkaConnection, connect_inter_broker
from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.sasl import SaslClientConfig
from transactions.coordinator.ports import TxnMarker

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION = ApiKey.WRITE_TXN_MARKERS, 1
RESPONSE_MARGIN_S = 5.0  # the leader waits up to request.timeout.ms for its ISR: give it a little longer


class MarkerMetadata(Protocol):
    """What the channel reads of the broker's metadata cache (``brokers.replication.MetadataCache``)."""

    partitions: Mapping[TopicPartition, Any]  # every partition the cluster has

    def leader_of(self, tp: TopicPartition) -> BrokerInfo | None:
        """The partition's leader if it is alive, else None."""


class MarkerConnection(Protocol):
    @property
    def connected(self) -> bool: ...

    async def request(self, api_key: int, api_version: int, body: Any, timeout: float) -> Any: ...

    def close(self, error: Exception | None = None) -> None: ...


Connect = Callable[[EndPoint], Awaitable[MarkerConnection]]


class Outcome(Enum):
    DONE = "done"
    RETRY = "retry"
    GIVE_UP = "give up"
    FENCED = "fenced"


_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})  # a newer owner
_GIVE_UP = frozenset({
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
    ErrorCode.INVALID_REQUIRED_ACKS,  # the leader can never take this marker
})


def marker_outcome(code: int) -> Outcome:
    """What a leader's answer for one partition means for its marker."""
    if code == ErrorCode.NONE:
        return Outcome.DONE
    if code in _FENCED:
        return Outcome.FENCED
    return Outcome.GIVE_UP if code in _GIVE_UP else Outcome.RETRY


@dataclass(eq=False)
class _Send:
    """One ``send_markers`` call: the partitions still to be written and the future it waits on (its result:
    were the markers written)."""

    marker: TxnMarker
    is_current: Callable[[], bool]
    remaining: set[TopicPartition]
    done: asyncio.Future

    def finish(self, written: bool) -> None:
        if not self.done.done():
            self.done.set_result(written)


def request_body(entries: list[tuple[_Send, frozenset[TopicPartition]]]) -> tuple[Any, list[_Send]]:
    """One WriteTxnMarkers v1 for ``entries`` (a transaction's entries merged) and its markers' sends, in order."""
    merged: dict[_Send, set[TopicPartition]] = {}
    for send, partitions in entries:
        merged.setdefault(send, set()).update(partitions)
    markers = []
    for send, partitions in merged.items():
        topics: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            topics.setdefault(tp.topic, []).append(tp.partition)
        m = send.marker
        markers.append(dict(producer_id=m.producer_id, producer_epoch=m.producer_epoch, transaction_result=m.commit,
                            coordinator_epoch=m.coordinator_epoch,
                            topics=[dict(name=t, partition_indexes=ps) for t, ps in topics.items()]))
    return codec.build(codec.request_class(WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION), markers=markers), \
        list(merged)


def _answers(sends: list[_Send], response: Any) -> dict[_Send, dict[TopicPartition, int]]:
    """Each send's partitions' error codes in a WriteTxnMarkers response (its markers in the request's order);
    raises on a response of another shape, before anything is applied."""
    answered: dict[_Send, dict[TopicPartition, int]] = {send: {} for send in sends}
    for send, result in zip(sends, response.markers):
        for topic in result.topics:
            for p in topic.partitions:
                answered[send][TopicPartition(topic.name, p.partition_index)] = int(p.error_code)
    return answered


@dataclass(eq=False)
class _BrokerQueue:
    """The entries waiting for one destination broker, its connection and its sender task."""

    broker_id: int
    endpoint: EndPoint
    entries: list[tuple[_Send, frozenset[TopicPartition]]] = field(default_factory=list)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    connection: MarkerConnection | None = None
    task: asyncio.Task | None = None


class TransactionMarkerChannelManager:
    """``transactions.coordinator.ports.MarkerSender``. ``metadata``: the broker's metadata cache;
    ``listener``: the inter-broker listener name; ``ssl_context`` / ``sasl``: the inter-broker client settings
    (as the replica fetchers'); ``connect``: how a connection is made (tests pass a fake)."""

    def __init__(self, broker_id: int, metadata: MarkerMetadata, listener: str | None, *,
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100,
                 ssl_context: ssl.SSLContext | None = None, sasl: SaslClientConfig | None = None,
                 connect: Connect | None = None):
        self.broker_id = broker_id
        self.metadata = metadata
        self.listener = listener
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.ssl_context, self.sasl = ssl_context, sasl
        self._connect = connect or self._connect_kafka
        self._queues: dict[int, _BrokerQueue] = {}
        self._retries: set[asyncio.TimerHandle] = set()
        self._sends: set[_Send] = set()  # every send_markers call not returned yet
        self._closed = False
        self.markers_written = 0
        self.markers_given_up = 0
        self.retries = 0

    # -- MarkerSender -----------------------------------------------------------------------------
    async def send_markers(self, marker: TxnMarker, is_current: Callable[[], bool]) -> bool:
        if self._closed:
            raise RuntimeError("the transaction marker channel is shut down")
        send = _Send(marker, is_current, set(marker.partitions), asyncio.get_running_loop().create_future())
        self._sends.add(send)
        try:
            self._route(send, frozenset(marker.partitions))
            return await send.done
        finally:
            self._sends.discard(send)

    # -- routing ----------------------------------------------------------------------------------
    def _route(self, send: _Send, partitions: frozenset[TopicPartition]) -> None:
        """Queue ``partitions`` of ``send`` for their leaders now; the leaderless ones retry later."""
        if send.done.done() or self._closed:
            return
        if not self._current(send):
            send.finish(False)
            return
        by_leader: dict[int, tuple[EndPoint, set[TopicPartition]]] = {}
        waiting: set[TopicPartition] = set()
        for tp in partitions & send.remaining:
            if tp not in self.metadata.partitions:
                log.info("%s: %s no longer exists; no marker to write there", send.marker.transactional_id, tp)
                send.remaining.discard(tp)
                continue
            leader = self.metadata.leader_of(tp)
            endpoint = _endpoint(leader, self.listener) if leader is not None else None
            if endpoint is None:
                waiting.add(tp)
            else:
                by_leader.setdefault(leader.id, (endpoint, set()))[1].add(tp)
        for broker_id, (endpoint, tps) in by_leader.items():
            self._enqueue(broker_id, endpoint, send, frozenset(tps))
        if waiting:
            self._retry_later(send, frozenset(waiting))
        if not send.remaining:
            send.finish(True)

    def _enqueue(self, broker_id: int, endpoint: EndPoint, send: _Send, partitions: frozenset[TopicPartition]) -> None:
        queue = self._queues.get(broker_id)
        if queue is None:
            queue = self._queues[broker_id] = _BrokerQueue(broker_id, endpoint)
        elif queue.endpoint != endpoint:  # the broker came back on another address
            queue.endpoint = endpoint
            if queue.connection is not None:
                queue.connection.close()
                queue.connection = None
        queue.entries.append((send, partitions))
        queue.wakeup.set()
        if queue.task is None or queue.task.done():
            queue.task = asyncio.get_running_loop().create_task(self._run(queue), name=f"txn-markers-{broker_id}")

    def _retry_later(self, send: _Send, partitions: frozenset[TopicPartition]) -> None:
        if self._closed:
            return
        self.retries += 1
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            self._retries.discard(handle)
            try:
                self._route(send, partitions)
            except Exception:  # e.g. the metadata cache failing: keep the partitions, try again later
                log.exception("%s: routing its markers failed; retrying in %d ms", send.marker.transactional_id,
                              self.retry_backoff_ms)
                self._retry_later(send, partitions)
        handle = asyncio.get_running_loop().call_later(self.retry_backoff_ms / 1000, fire)
        self._retries.add(handle)

    # -- one sender per destination broker ----------------------------------------------------------
    async def _run(self, queue: _BrokerQueue) -> None:
        while not self._closed:
            if not queue.entries:
                queue.wakeup.clear()
                await queue.wakeup.wait()
                continue
            entries, queue.entries = queue.entries, []
            try:
                entries = [e for e in entries if self._still_wanted(e[0])]
                if entries:
                    await self._send(queue, entries)
            except Exception:  # a bug: the sender lives on and what it dequeued is routed again
                log.exception("the WriteTxnMarkers sender of broker %d failed; retrying its markers in %d ms",
                              queue.broker_id, self.retry_backoff_ms)
                self._request_failed(queue, entries)

    def _still_wanted(self, send: _Send) -> bool:
        if send.done.done():
            return False
        if not self._current(send):
            send.finish(False)
            return False
        return True

    @staticmethod
    def _current(send: _Send) -> bool:
        """``send.is_current()``; when it raises, the send fails with that error (its caller's own bug)."""
        try:
            return send.is_current()
        except Exception as exc:
            if not send.done.done():
                send.done.set_exception(exc)
            return False

    async def _send(self, queue: _BrokerQueue, entries: list[tuple[_Send, frozenset[TopicPartition]]]) -> None:
        try:
            body, sends = request_body(entries)
            if queue.connection is None or not queue.connection.connected:
                queue.connection = None
                queue.connection = await self._connect(queue.endpoint)
            response = await queue.connection.request(WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body,
                                                      self.request_timeout_ms / 1000 + RESPONSE_MARGIN_S)
            answered = _answers(sends, response)
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            log.warning("WriteTxnMarkers to broker %d (%s) failed: %s; retrying in %d ms", queue.broker_id,
                        queue.endpoint, exc, self.retry_backoff_ms)
            self._request_failed(queue, entries)
            return
        except Exception:  # a request the codec cannot build, an answer it cannot read: retried all the same
            log.exception("WriteTxnMarkers to broker %d (%s) failed unexpectedly; retrying in %d ms",
                          queue.broker_id, queue.endpoint, self.retry_backoff_ms)
            self._request_failed(queue, entries)
            return
        self._apply_response(queue.broker_id, entries, answered)

    def _request_failed(self, queue: _BrokerQueue, entries: list[tuple[_Send, frozenset[TopicPartition]]]) -> None:
        """The request of ``entries`` got no usable answer: drop the connection, route them again later."""
        if queue.connection is not None:
            queue.connection.close()
        queue.connection = None
        for send, partitions in entries:
            self._retry_later(send, partitions)

    def _apply_response(self, broker_id: int, entries: list[tuple[_Send, frozenset[TopicPartition]]],
                        answered: dict[_Send, dict[TopicPartition, int]]) -> None:
        for send, partitions in entries:
            if send.done.done():  # fenced by an earlier entry of this response
                continue
            retry = set()
            for tp in partitions:
                code = answered.get(send, {}).get(tp, int(ErrorCode.NETWORK_EXCEPTION))  # unanswered: retried
                outcome = marker_outcome(code)
                if outcome is Outcome.FENCED:
                    log.warning("%s: broker %d refused the marker for %s with %s: a newer producer or coordinator "
                                "epoch owns the transaction; no more of its markers are sent",
                                send.marker.transactional_id, broker_id, tp, _error_name(code))
                    self.markers_given_up += 1
                    send.finish(False)
                    break
                if outcome is Outcome.DONE:
                    self.markers_written += 1
                    send.remaining.discard(tp)
                elif outcome is Outcome.GIVE_UP:
                    log.warning("%s: broker %d refused the marker for %s with %s; giving it up",
                                send.marker.transactional_id, broker_id, tp, _error_name(code))
                    self.markers_given_up += 1
                    send.remaining.discard(tp)
                else:
                    log.info("%s: broker %d answered %s for %s; retrying", send.marker.transactional_id,
                             broker_id, _error_name(code), tp)
                    retry.add(tp)
            if send.done.done():
                continue
            if retry:
                self._retry_later(send, frozenset(retry))
            elif not send.remaining:
                send.finish(True)

    async def _connect_kafka(self, endpoint: EndPoint) -> KafkaConnection:
        return await connect_inter_broker(endpoint, f"broker-{self.broker_id}-txn-marker-sender", self.ssl_context,
                                          self.sasl, self.request_timeout_ms / 1000)

    # -- lifecycle and metrics --------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop every sender; a ``send_markers`` still waiting is cancelled."""
        self._closed = True
        for handle in self._retries:
            handle.cancel()
        self._retries.clear()
        tasks = [q.task for q in self._queues.values() if q.task is not None]
        for send in self._sends:
            send.done.cancel()
        for queue in self._queues.values():
            if queue.connection is not None:
                queue.connection.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._queues.clear()

    def describe(self) -> dict:
        return {"markers_written": self.markers_written, "markers_given_up": self.markers_given_up,
                "retries": self.retries,
                "queued": {broker: sum(len(p) for _, p in q.entries) for broker, q in sorted(self._queues.items())}}


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


def _endpoint(leader: BrokerInfo, listener: str | None) -> EndPoint | None:
    try:
        return leader.endpoint(listener)
    except KeyError:
        log.error("broker %d has no %s listener; cannot send it markers", leader.id, listener)
        return None
