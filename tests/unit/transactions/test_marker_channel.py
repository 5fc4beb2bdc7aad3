"""TransactionMarkerChannelManager over fake connections: routing by leader, one WriteTxnMarkers per broker with
everything queued for it, retries after re-resolving the leader, final errors, currency and shutdown."""
from __future__ import annotations

import asyncio
from typing import Callable

import pytest

from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from transactions.coordinator.marker_channel import (
    WRITE_TXN_MARKERS,
    Outcome,
    TransactionMarkerChannelManager,
    marker_outcome,
)
from tests.unit.transactions.fakes import wait_for
from transactions.coordinator.ports import TxnMarker

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def broker(broker_id: int, port: int | None = None) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("INTERNAL", "127.0.0.1", port or 9000 + broker_id),
                                  EndPoint("EXTERNAL", "127.0.0.1", 9100 + broker_id)))


def marker(pid: int, *partitions: TopicPartition, commit: bool = True, txn: str = "t") -> TxnMarker:
    return TxnMarker(f"{txn}{pid}", pid, 3, commit, 7, frozenset(partitions))


class FakeMetadata:
    def __init__(self, leaders: dict[TopicPartition, int | None]):
        self.brokers = {i: broker(i) for i in (1, 2, 3)}
        self.leaders = dict(leaders)

    @property
    def partitions(self):
        return self.leaders

    def leader_of(self, tp):
        leader = self.leaders.get(tp)
        return self.brokers.get(leader) if leader is not None else None


class FakeConnection:
    """Answers each request with ``cluster.answer(port, request)``: a dict {(pid, tp): code} (missing: NONE)."""

    def __init__(self, cluster: "FakeCluster", endpoint: EndPoint):
        self.cluster, self.endpoint, self.connected = cluster, endpoint, True

    async def request(self, api_key, api_version, body, timeout):
        assert (api_key, api_version) == (WRITE_TXN_MARKERS, 1)
        self.cluster.requests.append((self.endpoint.port, body))
        await self.cluster.gate.wait()
        codes = self.cluster.answer(self.endpoint.port, body)
        if codes == "malformed":
            return object()  # no markers at all
        if isinstance(codes, Exception):
            self.connected = False
            raise codes
        return codec.build(codec.response_class(WRITE_TXN_MARKERS, 1), markers=[
            dict(producer_id=m.producer_id, topics=[
                dict(name=t.name, partitions=[
                    dict(partition_index=p, error_code=codes.get((m.producer_id, TopicPartition(t.name, p)), 0))
                    for p in t.partition_indexes]) for t in m.topics]) for m in body.markers])

    def close(self, error=None):
        self.connected = False


class FakeCluster:
    def __init__(self):
        self.requests: list[tuple[int, object]] = []
        self.connects: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.answer: Callable = lambda port, body: {}

    async def connect(self, endpoint: EndPoint):
        self.connects.append(endpoint.port)
        if endpoint.port in self.refused:
            raise ConnectionRefusedError(f"{endpoint} refused")
        return FakeConnection(self, endpoint)

    refused: set[int] = set()


def sent(body) -> set[tuple[int, TopicPartition]]:
    return {(m.producer_id, TopicPartition(t.name, p)) for m in body.markers for t in m.topics
            for p in t.partition_indexes}


@pytest.fixture
def setup():
    cluster = FakeCluster()
    cluster.refused = set()
    metadata = FakeMetadata({A0: 1, A1: 2, B0: 1})
    manager = TransactionMarkerChannelManager(5, metadata, "INTERNAL", retry_backoff_ms=10, connect=cluster.connect)
    return cluster, metadata, manager


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def idle(manager: TransactionMarkerChannelManager) -> bool:
    """Nothing left that could send a request: no retry timer armed, no entry queued for any broker."""
    return not manager._retries and not any(manager.describe()["queued"].values())


def test_outcomes():
    assert marker_outcome(ErrorCode.NONE) is Outcome.DONE
    for code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REQUEST_TIMED_OUT,
                 ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                 ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NETWORK_EXCEPTION):
        assert marker_outcome(code) is Outcome.RETRY, code
    for code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                 ErrorCode.INVALID_REQUIRED_ACKS):
        assert marker_outcome(code) is Outcome.GIVE_UP, code
    for code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED):
        assert marker_outcome(code) is Outcome.FENCED, code


def test_one_request_per_leader_on_the_inter_broker_listener(setup):
    cluster, _, manager = setup

    async def scenario():
        await manager.send_markers(marker(11, A0, A1, B0, commit=False), lambda: True)
        by_port = {port: body for port, body in cluster.requests}
        assert sorted(by_port) == [9001, 9002] and len(cluster.requests) == 2
        assert sent(by_port[9001]) == {(11, A0), (11, B0)} and sent(by_port[9002]) == {(11, A1)}
        m = by_port[9001].markers[0]
        assert (m.producer_epoch, m.transaction_result, m.coordinator_epoch) == (3, False, 7)
        assert [(t.name, list(t.partition_indexes)) for t in m.topics] == [("a", [0]), ("b", [0])]
        assert manager.markers_written == 3
    run(scenario())


def test_markers_queued_while_a_request_is_in_flight_go_in_the_next_one(setup):
    cluster, _, manager = setup

    async def scenario():
        cluster.gate.clear()
        first = asyncio.ensure_future(manager.send_markers(marker(1, A0), lambda: True))
        await wait_for(lambda: len(cluster.requests) == 1)
        others = [asyncio.ensure_future(manager.send_markers(marker(pid, A0, B0), lambda: True)) for pid in (2, 3)]
        await wait_for(lambda: manager.describe()["queued"] == {1: 4})
        assert len(cluster.requests) == 1  # queued behind the request in flight, which the gate holds
        cluster.gate.set()
        await asyncio.gather(first, *others)
        assert len(cluster.requests) == 2
        second = cluster.requests[1][1]
        assert sent(second) == {(2, A0), (2, B0), (3, A0), (3, B0)}
        assert [m.producer_id for m in second.markers] == [2, 3]  # one marker per transaction
        assert len(cluster.connects) == 1  # the connection is kept
    run(scenario())


def test_not_leader_is_retried_at_the_new_leader(setup):
    cluster, metadata, manager = setup

    def answer(port, body):
        if port == 9001:
            metadata.leaders[A0] = 3  # the controller moved it meanwhile
            return {(9, A0): ErrorCode.NOT_LEADER_OR_FOLLOWER}
        return {}
    cluster.answer = answer

    async def scenario():
        await manager.send_markers(marker(9, A0), lambda: True)
        assert [port for port, _ in cluster.requests] == [9001, 9003]
        assert manager.markers_written == 1 and manager.retries == 1
    run(scenario())


def test_connection_errors_and_timeouts_are_retried(setup):
    cluster, _, manager = setup
    failures = [ConnectionError("reset"), asyncio.TimeoutError()]
    cluster.answer = lambda port, body: failures.pop(0) if failures else {}

    async def scenario():
        cluster.refused = {9002}
        task = asyncio.ensure_future(manager.send_markers(marker(4, A0, A1), lambda: True))
        await wait_for(lambda: manager.markers_written == 1 and cluster.connects.count(9002) >= 2)
        assert not task.done()  # A1's leader keeps refusing: retried, not given up
        cluster.refused = set()
        await task
        assert manager.markers_written == 2
        assert cluster.connects.count(9001) == 3  # reconnected after each failure
    run(scenario())


def test_deleted_partitions_need_no_marker(setup):
    cluster, metadata, manager = setup

    def answer(port, body):
        metadata.leaders.pop(B0, None)  # the topic is being deleted: gone from the metadata next
        return {(6, B0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    cluster.answer = answer

    async def scenario():
        await manager.send_markers(marker(5, TopicPartition("gone", 0)), lambda: True)
        assert cluster.requests == []
        await manager.send_markers(marker(6, A0, B0), lambda: True)
        assert len(cluster.requests) == 1 and manager.markers_written == 1
    run(scenario())


def test_a_partition_without_a_live_leader_waits_for_one(setup):
    cluster, metadata, manager = setup
    metadata.leaders[A1] = None

    async def scenario():
        task = asyncio.ensure_future(manager.send_markers(marker(8, A1), lambda: True))
        await wait_for(lambda: manager.retries >= 2)  # routed at least twice, and no leader either time
        assert not task.done() and cluster.requests == []
        metadata.leaders[A1] = 2
        await task
        assert [port for port, _ in cluster.requests] == [9002]
    run(scenario())


def test_sending_stops_once_the_transaction_is_no_longer_current(setup):
    cluster, _, manager = setup
    current = [True]
    cluster.answer = lambda port, body: {(3, A0): ErrorCode.NOT_ENOUGH_REPLICAS}

    async def scenario():
        task = asyncio.ensure_future(manager.send_markers(marker(3, A0), lambda: current[0]))
        await wait_for(lambda: len(cluster.requests) >= 2)
        assert not task.done()
        current[0] = False
        assert await task is False
        count = len(cluster.requests)
        assert idle(manager)  # nothing armed that could send it again
        await asyncio.sleep(5 * manager.retry_backoff_ms / 1000)
        assert len(cluster.requests) == count and manager.markers_written == 0
    run(scenario())


def test_an_unexpected_error_is_retried(setup):
    cluster, _, manager = setup
    answers = [{(2, A0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}]  # an ACL added later fixes it
    cluster.answer = lambda port, body: answers.pop(0) if answers else {}

    async def scenario():
        await manager.send_markers(marker(2, A0), lambda: True)
        assert len(cluster.requests) == 2 and manager.markers_written == 1
    run(scenario())


@pytest.mark.parametrize("failure", [ValueError("a response the codec cannot decode"), "malformed"])
def test_any_failure_of_a_request_is_logged_and_its_entries_retried(setup, failure):
    cluster, _, manager = setup
    failures = [failure]
    cluster.answer = lambda port, body: failures.pop(0) if failures and port == 9001 else {}

    async def scenario():
        await manager.send_markers(marker(4, A0, A1, B0), lambda: True)
        assert [port for port, _ in cluster.requests].count(9001) == 2 and manager.retries == 1
        assert manager.markers_written == 3
        await manager.send_markers(marker(5, A0), lambda: True)  # the sender of broker 1 lives on
        assert manager.markers_written == 4
    run(scenario())


def test_an_unexpected_connect_failure_is_retried(setup):
    cluster, _, manager = setup
    failures = [RuntimeError("no TLS client config yet")]
    connect = cluster.connect

    async def failing_connect(endpoint):
        if failures:
            raise failures.pop(0)
        return await connect(endpoint)
    manager._connect = failing_connect

    async def scenario():
        await manager.send_markers(marker(4, A0), lambda: True)
        assert manager.markers_written == 1 and manager.retries == 1
    run(scenario())


def test_a_failing_currency_check_fails_the_send_instead_of_hanging_it(setup):
    _, _, manager = setup

    def is_current():
        raise LookupError("the coordinator's cache is broken")

    async def scenario():
        with pytest.raises(LookupError):
            await manager.send_markers(marker(4, A0), is_current)
    run(scenario())


@pytest.mark.parametrize("fenced", [ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH])
def test_a_fenced_marker_aborts_the_sending_and_reports_it(setup, fenced):
    cluster, metadata, manager = setup
    metadata.leaders[A1] = None  # this one waits for a leader meanwhile
    cluster.answer = lambda port, body: {(2, A0): fenced}

    async def scenario():
        assert await manager.send_markers(marker(2, A0, A1, B0), lambda: True) is False
        assert len(cluster.requests) == 1
        metadata.leaders[A1] = 2
        await wait_for(lambda: idle(manager))  # A1's retry timer fired and dropped it
        assert len(cluster.requests) == 1  # the waiting partition is not sent once the transaction is fenced
    run(scenario())


def test_send_markers_reports_whether_every_marker_was_written(setup):
    cluster, _, manager = setup
    cluster.answer = lambda port, body: {(2, A0): ErrorCode.CORRUPT_MESSAGE}  # given up, but not fenced

    async def scenario():
        assert await manager.send_markers(marker(1, A0, A1), lambda: True) is True
        assert await manager.send_markers(marker(2, A0, B0), lambda: True) is True
        assert (manager.markers_written, manager.markers_given_up) == (3, 1)
        assert await manager.send_markers(marker(3, A0), lambda: False) is False  # no longer current
    run(scenario())


def test_shutdown_cancels_the_waiting_sends(setup):
    cluster, metadata, manager = setup
    metadata.leaders[A0] = None

    async def scenario():
        task = asyncio.ensure_future(manager.send_markers(marker(1, A0), lambda: True))
        await wait_for(lambda: manager.retries >= 1)  # waiting for a leader
        await manager.shutdown()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert manager.describe()["markers_written"] == 0
    run(scenario())
