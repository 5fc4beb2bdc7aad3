"""The ElectLeaders handler (api 43, v0-v2) driven over real wire bytes: requests encoded with kio,
decoded as the listener does, answered through a stand-in for the controller's elections and a real
MetadataCache fed by UpdateMetadata; responses encoded and decoded again."""
from __future__ import annotations

import asyncio

import pytest

from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import is_flexible, is_supported
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import parse_request_header
from brokers.replication.metadata_cache import MetadataCache
from brokers.server.context import ServerContext
from brokers.server.handlers.elect_leaders import handle_elect_leaders

ELECT_LEADERS = 43
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
BROKER = BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), None, 10)


def publish(cache: MetadataCache, leaders: dict[TopicPartition, int]) -> None:
    states = tuple(PartitionState(tp.topic, tp.partition, 1, leader, 0, (1, 2), 0, (1, 2))
                   for tp, leader in leaders.items())
    cache.update(UpdateMetadataRequest(1, 1, 10, states, (BROKER,)))


class Controller:
    """The elections: answers from ``answers`` and (``publish``) shows the elected leaders in the cache."""

    def __init__(self, cache: MetadataCache, answers: dict, publish: bool = True):
        self.cache, self.answers, self.publish = cache, answers, publish
        self.calls: list[tuple[int, list[TopicPartition]]] = []

    async def __call__(self, election_type, partitions):
        self.calls.append((election_type, list(partitions)))
        out = {tp: self.answers.get(tp, (3, "The partition does not exist.", -1)) for tp in partitions}
        if self.publish:
            elected = {tp: leader for tp, (code, _, leader) in out.items() if code == 0}
            asyncio.get_running_loop().call_later(0.02, publish, self.cache, elected)
        return out


def context(elect=None) -> tuple[ServerContext, MetadataCache]:
    cache = MetadataCache(1)
    publish(cache, {T0: 2, T1: 1, U0: 2})
    ctx = ServerContext(1, None, cache, None, lambda: "cluster", None, elect_leaders=elect)
    return ctx, cache


def call(ctx: ServerContext, version: int, topic_partitions, election_type: int = 0, timeout_ms: int = 1000) -> dict:
    """Encode, decode, handle, encode the response, decode it: {(topic, partition): (code, message)}."""
    assert is_supported(ELECT_LEADERS, version)
    body = codec.build(codec.request_class(ELECT_LEADERS, version), election_type=election_type,
                       topic_partitions=topic_partitions, timeout=timeout_ms)
    frame = codec.encode_request(ELECT_LEADERS, version, 7, "test", body)[4:]
    header = parse_request_header(frame, is_flexible(ELECT_LEADERS, version))
    request = codec.decode_request(header, frame)
    response = asyncio.run(handle_elect_leaders(ctx, header, request))
    _, decoded = codec.decode_response(ELECT_LEADERS, version, codec.encode_response(ELECT_LEADERS, version, 7, response)[4:])
    if version >= 1:
        assert decoded.error_code == 0
    return {(r.topic, p.partition_id): (int(p.error_code), p.error_message)
            for r in decoded.replica_election_results for p in r.partition_result}


def tps(*pairs) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for tp in pairs:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": ps} for t, ps in topics.items()]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_each_version_answers_per_partition_and_waits_for_the_metadata(version):
    ctx, cache = context()
    ctx.elect_leaders = elect = Controller(cache, {T0: (0, None, 1), T1: (84, None, 1)})
    got = call(ctx, version, tps(T0, T1, T1, TopicPartition("nope", 0)))
    assert got == {("t", 0): (0, None), ("t", 1): (84, None), ("nope", 0): (3, "The partition does not exist.")}
    assert elect.calls == [(0, [TopicPartition("nope", 0), T0, T1])]  # deduplicated, sorted
    assert cache.partitions[T0].leader == 1  # answered only once the cache showed the new leader


def test_v0_is_always_preferred_and_v1_carries_unclean():
    ctx, cache = context()
    ctx.elect_leaders = elect = Controller(cache, {T0: (83, "Failed to elect leader", -1)})
    assert call(ctx, 0, tps(T0), election_type=1) == {("t", 0): (83, "Failed to elect leader")}
    assert call(ctx, 2, tps(T0), election_type=1) == {("t", 0): (83, "Failed to elect leader")}
    assert [c[0] for c in elect.calls] == [0, 1]


def test_null_topic_partitions_means_every_known_partition_and_hides_election_not_needed():
    ctx, cache = context()
    ctx.elect_leaders = elect = Controller(cache, {T0: (0, None, 1), T1: (84, None, 1), U0: (80, "no", -1)})
    assert call(ctx, 2, None) == {("t", 0): (0, None), ("u", 0): (80, "no")}
    assert elect.calls == [(0, [T0, T1, U0])]


def test_not_the_controller():
    ctx, cache = context(elect=None)
    assert call(ctx, 2, tps(T0, U0)) == {("t", 0): (41, None), ("u", 0): (41, None)}


def test_unknown_election_type_is_invalid_request():
    ctx, cache = context()
    ctx.elect_leaders = elect = Controller(cache, {})
    (code, message), = call(ctx, 2, tps(T0), election_type=5).values()
    assert code == ErrorCode.INVALID_REQUEST and "election type 5" in message and elect.calls == []


def test_an_election_the_metadata_never_shows_times_out():
    ctx, cache = context()
    ctx.elect_leaders = Controller(cache, {T0: (0, None, 1)}, publish=False)
    assert call(ctx, 2, tps(T0), timeout_ms=100) == {("t", 0): (int(ErrorCode.REQUEST_TIMED_OUT), None)}


def test_a_controller_that_never_answers_times_out():
    async def never(election_type, partitions):
        await asyncio.Event().wait()

    ctx, cache = context(elect=never)
    assert call(ctx, 1, tps(T0), timeout_ms=100) == {("t", 0): (int(ErrorCode.REQUEST_TIMED_OUT), None)}
