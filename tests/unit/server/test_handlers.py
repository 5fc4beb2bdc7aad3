"""The Kafka API handlers driven directly: a real ReplicaManager/LogManager on tmp_path, a MetadataCache
filled by UpdateMetadata, and a fake AdminOps. Requests are built with ``codec.build`` for the exact
versions clients send; responses are checked field by field."""
from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

import pytest

from brokers.config import BrokerConfig
from brokers.control import LeaderAndIsrRequest, PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint, TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import ProtocolError, RequestHeader
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.server import apis
from brokers.server.context import ServerContext
from brokers.server.handlers.describe_configs import handle_describe_configs
from brokers.server.handlers.topics import handle_create_topics, handle_delete_topics
from brokers.server.handlers.fetch import handle_fetch
from brokers.server.handlers.list_offsets import handle_list_offsets
from brokers.server.handlers.metadata import handle_metadata
from brokers.server.handlers.produce import handle_produce
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager
from consumer_group.coordinator.handlers import HANDLERS as GROUP_HANDLERS

ME = 1
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID, DESCRIBE_CONFIGS = 19, 20, 22, 32
BROKERS = (
    BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), "rack-a"),
    BrokerInfo(2, (EndPoint("PLAINTEXT", "127.0.0.2", 9093),), None),
    BrokerInfo(4, (EndPoint("INTERNAL", "127.0.0.4", 9094),), None),  # no PLAINTEXT endpoint
)


def state(topic, partition, leader, replicas, isr=None, leader_epoch=0):
    return PartitionState(topic, partition, 1, leader, leader_epoch, tuple(isr or replicas), 0, tuple(replicas))


class FakeAdmin:
    """AdminOps for tests: records calls; ``publish`` makes creations and deletions visible in the
    metadata cache (as the controller's UpdateMetadata would), else they never show up."""

    def __init__(self, cache: MetadataCache):
        self.cache = cache
        self.calls: list[tuple] = []
        self.publish = True
        self.overrides: dict[str, dict[str, str]] = {"t": {"retention.ms": "1000"}}
        self.next_producer_id = 1000

    def _update(self, states):
        self.cache.update(UpdateMetadataRequest(ME, 1, 100, tuple(states), tuple(self.cache.live_brokers.values())))

    async def create_topic(self, name, num_partitions, replication_factor, config, assignment, validate_only):
        self.calls.append(("create", name, num_partitions, replication_factor, config, assignment, validate_only))
        if not name or "/" in name:
            raise KafkaError(f"topic name {name!r} is illegal", ErrorCode.INVALID_TOPIC_EXCEPTION)
        if name in self.cache.topics():
            raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        if replication_factor > 2:
            raise KafkaError(f"replication factor {replication_factor} exceeds 2 brokers",
                             ErrorCode.INVALID_REPLICATION_FACTOR)
        if not validate_only and self.publish:
            self._update(state(name, p, ME, [ME]) for p in range(num_partitions))

    async def delete_topic(self, name):
        self.calls.append(("delete", name))
        if self.publish:
            self._update(state(name, p, -2, s.replicas) for p, s in self.cache.partitions_of(name).items())

    async def topic_config(self, name):
        return dict(self.overrides.get(name, {}))

    def log_config_defaults(self):
        return LogConfig().to_properties()

    def topic_config_synonyms(self, topic_key):
        return []  # no broker-level synonyms: each default is its own DEFAULT_CONFIG synonym

    def dynamic_broker_entries(self, per_broker):
        return {}

    async def allocate_producer_id(self):
        self.next_producer_id += 1
        return self.next_producer_id - 1


class World:
    def __init__(self, tmp_path, **props):
        self.log_manager = LogManager([tmp_path / "logs"])
        self.log_manager.startup()
        configs = {"lat": LogConfig(message_timestamp_type="LogAppendTime")}

        async def topic_config(topic):
            return configs.get(topic, LogConfig())

        self.replica_manager = ReplicaManager(ME, self.log_manager, topic_config, lambda: 100)
        self.cache = MetadataCache(ME)
        states = [state("t", 0, ME, [1, 2], isr=[1]), state("t", 1, 2, [1, 2]), state("t", 2, 3, [3]),
                  state("t", 3, 4, [4]), state("u", 0, ME, [1]), state("lat", 0, ME, [1])]
        self.cache.update(UpdateMetadataRequest(ME, 1, 100, tuple(states), BROKERS))
        mine = tuple(s for s in states if ME in s.replicas)
        asyncio.run(self.replica_manager.become_leader_or_follower(LeaderAndIsrRequest(ME, 1, 100, mine, ())))
        base = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1", "num.partitions": "2"}
        self.config = BrokerConfig.from_properties({**base, **props})
        self.admin = FakeAdmin(self.cache)
        self.context = ServerContext(ME, self.config, self.cache, self.replica_manager, lambda: "cluster-x", self.admin)

    def log(self, topic="t", partition=0):
        return self.replica_manager.partitions[TopicPartition(topic, partition)].log

    async def call(self, handler, key, version, **fields):
        request = codec.build(codec.request_class(key, version), **fields)
        return decoded(key, version, await handler(self.context, RequestHeader(key, version, 7, "tests", 0), request))


def decoded(key: int, version: int, response):
    """A handler's answer as an entity: framed bytes (Produce's and Metadata's hand-encoded answers) decoded with
    the codec."""
    if key in (PRODUCE, METADATA) and isinstance(response, list):  # their hand-encoded framed answers
        correlation_id, response = codec.decode_response(key, version, b"".join(response)[4:])
        assert correlation_id == 7
    return response


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.log_manager.shutdown()


def run(coro):
    return asyncio.run(coro)


def batch(values, ts=1000, codec_=0) -> bytes:
    return bytes(build_batch([Record(i, i, f"k{v}".encode(), f"v{v}".encode()) for i, v in enumerate(values)],
                             base_timestamp=ts, codec=codec_))


def stored(batch_bytes: bytes, base_offset: int, leader_epoch: int = 0) -> bytes:
    """The batch as the leader writes it: base offset and leader epoch rewritten, nothing else."""
    out = bytearray(batch_bytes)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


async def produce(world, topic, partition, records, acks=1, version=7):
    return await world.call(handle_produce, PRODUCE, version, transactional_id=None, acks=acks, timeout=1000,
                            topic_data=[dict(name=topic, partition_data=[dict(index=partition, records=records)])])


def only_partition(response):
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


# -- Metadata -----------------------------------------------------------------------------------------
def test_metadata_answers_come_from_the_memo_until_the_topic_or_the_brokers_change(world):
    """Topic entries are encoded once per (topic, version, listener) and reused; an UpdateMetadata that touches
    the topic, or changes the live brokers, is seen by the next answer."""
    def leaders(version=9):
        response = run(world.call(handle_metadata, METADATA, version, topics=None, allow_auto_topic_creation=False))
        return {(t.name, p.partition_index): int(p.leader_id) for t in response.topics for p in t.partitions}

    first = leaders()
    assert first[("t", 1)] == 2 and any(k[0] == "t" for k in world.cache.encoded_topics)
    memo = dict(world.cache.encoded_topics)
    assert leaders() == first and world.cache.encoded_topics == memo  # reused, nothing re-encoded
    world.cache.update(UpdateMetadataRequest(ME, 1, 100, (state("t", 1, 1, [1, 2], leader_epoch=1),), BROKERS))
    assert leaders()[("t", 1)] == 1 and world.cache.encoded_topics[("t", 9, "PLAINTEXT")] != memo[("t", 9, "PLAINTEXT")]
    assert world.cache.encoded_topics[("u", 9, "PLAINTEXT")] == memo[("u", 9, "PLAINTEXT")]  # untouched topics stay
    world.cache.update(UpdateMetadataRequest(ME, 1, 100, (), tuple(b for b in BROKERS if b.id != 1)))
    assert leaders()[("t", 1)] == -1  # its leader gone: LEADER_NOT_AVAILABLE
    assert leaders(1) == leaders(9)  # each version has its own entries


def test_metadata_known_topic(world):
    response = run(world.call(handle_metadata, METADATA, 4, topics=[dict(name="t")], allow_auto_topic_creation=True))
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (1, "127.0.0.1", 9092, "rack-a"), (2, "127.0.0.2", 9093, None)]  # broker 4 has no PLAINTEXT listener
    assert response.cluster_id == "cluster-x" and response.controller_id == ME
    (topic,) = response.topics
    assert (topic.error_code, topic.name, topic.is_internal) == (0, "t", False)
    got = [(p.partition_index, p.error_code, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
           for p in topic.partitions]
    assert got == [(0, 0, 1, [1, 2], [1]), (1, 0, 2, [1, 2], [1, 2]),
                   (2, ErrorCode.LEADER_NOT_AVAILABLE, -1, [3], [3]),  # leader 3 is not alive
                   (3, ErrorCode.LEADER_NOT_AVAILABLE, -1, [4], [4])]  # leader 4 lacks the listener
    assert world.admin.calls == []


@pytest.mark.parametrize("version", [0, 1, 4, 9, 11])
def test_metadata_before_the_first_update_metadata_names_no_broker_and_no_topic(world, version):
    """A restarted broker the controller has not sent metadata yet: no view rather than "every topic is
    unknown and there are no brokers" (librdkafka would drop its brokers and the consumer's topics)."""
    world.context.metadata_cache = MetadataCache(ME)
    topics = [] if version == 0 else [dict(name="t"), dict(name="new")]  # v0: every topic
    response = run(world.call(handle_metadata, METADATA, version, topics=topics, allow_auto_topic_creation=True))
    assert (list(response.brokers), list(response.topics), getattr(response, "controller_id", -1)) == ([], [], -1)
    assert world.admin.calls == []  # nothing auto-created from an empty view


def test_metadata_all_topics_and_none(world):
    response = run(world.call(handle_metadata, METADATA, 4, topics=None))
    assert [t.name for t in response.topics] == ["lat", "t", "u"]
    assert run(world.call(handle_metadata, METADATA, 4, topics=[])).topics == ()


def test_metadata_unknown_topic_without_auto_creation(world):
    response = run(world.call(handle_metadata, METADATA, 4, topics=[dict(name="nope")],
                              allow_auto_topic_creation=False))
    assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ())]
    assert world.admin.calls == []


def test_metadata_auto_creates_unknown_topics(world):
    response = run(world.call(handle_metadata, METADATA, 4, topics=[dict(name="new"), dict(name="bad/name")],
                              allow_auto_topic_creation=True))
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("new", ErrorCode.LEADER_NOT_AVAILABLE), ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION)]
    assert world.admin.calls[0] == ("create", "new", 2, 1, {}, None, False)  # num.partitions=2, RF default 1
    again = run(world.call(handle_metadata, METADATA, 4, topics=[dict(name="new")], allow_auto_topic_creation=True))
    assert [p.leader_id for p in again.topics[0].partitions] == [1, 1]


def test_metadata_auto_creation_surfaces_replication_factor_errors(tmp_path):
    w = World(tmp_path, **{"default.replication.factor": "3"})
    try:
        response = run(w.call(handle_metadata, METADATA, 4, topics=[dict(name="new")], allow_auto_topic_creation=True))
        assert response.topics[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    finally:
        w.log_manager.shutdown()


def test_metadata_auto_creation_disabled_by_config(tmp_path):
    w = World(tmp_path, **{"auto.create.topics.enable": "false"})
    try:
        response = run(w.call(handle_metadata, METADATA, 4, topics=[dict(name="new")], allow_auto_topic_creation=True))
        assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and w.admin.calls == []
    finally:
        w.log_manager.shutdown()


# -- Produce ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [3, 5, 7])
def test_produce_acks_1_assigns_offsets_and_moves_the_high_watermark(world, version):
    first = only_partition(run(produce(world, "t", 0, batch([1, 2, 3]), version=version)))
    assert (first.index, first.error_code, first.base_offset, first.log_append_time) == (0, 0, 0, None)
    second = only_partition(run(produce(world, "t", 0, batch([4, 5]), version=version)))
    assert (second.error_code, second.base_offset) == (0, 3)
    if version >= 5:
        assert second.log_start_offset == 0
    log = world.log()
    assert (log.log_end_offset, log.high_watermark) == (5, 5)


def test_produce_acks_0_sends_no_response_but_appends(world):
    assert run(produce(world, "t", 0, batch([1, 2]), acks=0)) is None
    assert world.log().log_end_offset == 2 and world.log().high_watermark == 2


def test_produce_acks_0_failure_closes_the_connection(world):
    with pytest.raises(ProtocolError, match="acks=0"):
        run(produce(world, "t", 1, batch([1]), acks=0))


def test_produce_errors_per_partition(world):
    response = run(world.call(handle_produce, PRODUCE, 7, transactional_id=None, acks=-1, timeout=1000, topic_data=[
        dict(name="t", partition_data=[dict(index=1, records=batch([1])), dict(index=9, records=batch([1])),
                                       dict(index=0, records=batch([1]))]),
        dict(name="ghost", partition_data=[dict(index=0, records=batch([1]))])]))
    got = [(t.name, p.index, p.error_code, p.base_offset, p.log_start_offset)
           for t in response.responses for p in t.partition_responses]
    assert got == [("t", 1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1),  # broker 2 leads it
                   ("t", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                   ("t", 0, 0, 0, 0),  # acks=-1 acts like acks=1 until replication exists
                   ("ghost", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


def test_produce_bad_crc_is_corrupt_message_and_appends_nothing(world):
    bad = bytearray(batch([1, 2, 3]))
    bad[-1] ^= 0xFF
    response = only_partition(run(produce(world, "t", 0, bytes(bad))))
    assert (response.error_code, response.base_offset) == (ErrorCode.CORRUPT_MESSAGE, -1)
    assert world.log().log_end_offset == 0 and world.log().size == 0


@pytest.mark.parametrize("records", [None, b"", "two batches", "magic 1"])
def test_produce_invalid_record_sets_are_invalid_record(world, records):
    if records == "two batches":
        records = batch([1]) + batch([2])
    elif records == "magic 1":
        records = bytearray(batch([1]))
        records[16] = 1
        records = bytes(records)
    response = only_partition(run(produce(world, "t", 0, records)))
    assert response.error_code == ErrorCode.INVALID_RECORD and world.log().log_end_offset == 0


def test_produce_zstd_needs_v7(world):
    zstd = batch([1], codec_=4)
    old = only_partition(run(produce(world, "t", 0, zstd, version=6)))
    assert old.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert only_partition(run(produce(world, "t", 0, zstd, version=7))).error_code == 0


def test_produce_invalid_acks(world):
    response = only_partition(run(produce(world, "t", 0, batch([1]), acks=2)))
    assert response.error_code == ErrorCode.INVALID_REQUIRED_ACKS and world.log().log_end_offset == 0


def test_produce_log_append_time_topic_reports_the_append_time(world):
    response = only_partition(run(produce(world, "lat", 0, batch([1]))))
    assert response.error_code == 0 and response.log_append_time is not None
    (record,) = iter_records(world.log("lat").read(0, 1 << 20).records.read())
    assert record.timestamp == int(response.log_append_time.timestamp() * 1000)


# -- Fetch --------------------------------------------------------------------------------------------
def fetch_request(partitions, *, max_wait=0, min_bytes=1, max_bytes=52428800, session_epoch=-1):
    """partitions: [(topic, partition, fetch_offset, partition_max_bytes[, current_leader_epoch])]."""
    topics: dict[str, list] = {}
    for topic, partition, offset, limit, *epoch in partitions:
        topics.setdefault(topic, []).append(dict(partition=partition, fetch_offset=offset, partition_max_bytes=limit,
                                                 current_leader_epoch=epoch[0] if epoch else -1))
    return dict(replica_id=-1, max_wait=max_wait, min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0,
                session_id=0, session_epoch=session_epoch, rack_id="", forgotten_topics_data=[],
                topics=[dict(topic=name, partitions=parts) for name, parts in topics.items()])


async def fetch(world, partitions, version=11, **kwargs):
    segments = await world.call(handle_fetch, FETCH, version, **fetch_request(partitions, **kwargs))
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    correlation_id, body = codec.decode_response(FETCH, version, frame[4:])
    assert correlation_id == 7
    return body


def partitions_of(body):
    return {(t.topic, p.partition_index): p for t in body.responses for p in t.partitions}


@pytest.mark.parametrize("version", [4, 7, 11])
def test_fetch_returns_the_stored_batches(world, version):
    one, two = batch([1, 2, 3]), batch([4, 5], ts=2000, codec_=1)
    run(produce(world, "t", 0, one))
    run(produce(world, "t", 0, two))
    body = run(fetch(world, [("t", 0, 0, 1 << 20)], version=version))
    p = partitions_of(body)[("t", 0)]
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (0, 5, 5)
    if version >= 5:
        assert p.log_start_offset == 0
    assert bytes(p.records) == stored(one, 0) + stored(two, 3)
    assert [(r.offset, r.value) for r in iter_records(p.records)] == [
        (0, b"v1"), (1, b"v2"), (2, b"v3"), (3, b"v4"), (4, b"v5")]
    # from an offset inside the second batch: that whole batch (clients skip the records before)
    assert bytes(partitions_of(run(fetch(world, [("t", 0, 4, 1 << 20)])))[("t", 0)].records) == stored(two, 3)
    # at the high watermark: nothing, no error
    at_end = partitions_of(run(fetch(world, [("t", 0, 5, 1 << 20)])))[("t", 0)]
    assert (at_end.error_code, at_end.records, at_end.high_watermark) == (0, b"", 5)


def test_fetch_partition_max_bytes_and_kip74_first_batch(world):
    one, two = batch([1, 2, 3]), batch([4, 5])
    run(produce(world, "t", 0, one))
    run(produce(world, "t", 0, two))
    small = partitions_of(run(fetch(world, [("t", 0, 0, 10)])))[("t", 0)]
    assert bytes(small.records) == stored(one, 0)  # limit 10 < one batch: still the whole first batch
    cut = partitions_of(run(fetch(world, [("t", 0, 0, len(one) + 20)])))[("t", 0)]
    assert bytes(cut.records) == (stored(one, 0) + stored(two, 3))[: len(one) + 20]  # trailing partial batch


def test_fetch_response_max_bytes_only_the_first_batch_of_the_response_is_whole(world):
    one, other = batch([1, 2, 3]), batch([7, 8])
    run(produce(world, "t", 0, one))
    run(produce(world, "u", 0, other))
    body = run(fetch(world, [("t", 0, 0, 1 << 20), ("u", 0, 0, 1 << 20)], max_bytes=10))
    got = partitions_of(body)
    assert bytes(got[("t", 0)].records) == stored(one, 0)
    assert (got[("u", 0)].error_code, got[("u", 0)].records, got[("u", 0)].high_watermark) == (0, b"", 2)
    # an empty first partition does not use up the exception: the next one with data gets it
    body = run(fetch(world, [("t", 0, 3, 1 << 20), ("u", 0, 0, 1 << 20)], max_bytes=10))
    assert bytes(partitions_of(body)[("u", 0)].records) == stored(other, 0)


def test_fetch_reads_only_below_the_high_watermark(world):
    run(produce(world, "t", 0, batch([1])))
    world.log().append_as_leader(bytearray(batch([2])), 0)  # appended but not yet "replicated"
    p = partitions_of(run(fetch(world, [("t", 0, 0, 1 << 20)])))[("t", 0)]
    assert p.high_watermark == 1 and [r.offset for r in iter_records(p.records)] == [0]


def test_fetch_errors(world):
    run(produce(world, "t", 0, batch([1, 2])))
    body = run(fetch(world, [("t", 0, 3, 1000), ("t", 1, 0, 1000), ("t", 7, 0, 1000), ("u", 0, 0, 1000, 5),
                             ("lat", 0, 0, 1000, 0)], max_wait=10_000))  # errors answer at once
    got = {key: (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.records)
           for key, p in partitions_of(body).items()}
    assert got == {("t", 0): (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1, b""),
                   ("t", 1): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, b""),
                   ("t", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, b""),
                   ("u", 0): (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1, -1, b""),
                   ("lat", 0): (0, 0, 0, 0, b"")}


def test_fetch_fenced_leader_epoch(world):
    partition = world.replica_manager.partitions[TopicPartition("u", 0)]
    partition.make_leader(3, (1,), (1,), 1, 1, 0)
    p = partitions_of(run(fetch(world, [("u", 0, 0, 1000, 2)])))[("u", 0)]
    assert p.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_fetch_incremental_session_is_unknown(world):
    body = run(fetch(world, [("t", 0, 0, 1000)], session_epoch=3))
    assert body.error_code == 70 and body.session_id == 0 and body.responses == ()


def test_fetch_long_poll_wakes_up_on_produce(world):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = asyncio.ensure_future(fetch(world, [("t", 0, 0, 1 << 20)], max_wait=30_000, min_bytes=1))
        await asyncio.sleep(0)  # let the fetch read (nothing) and park
        assert not waiting.done()
        await produce(world, "t", 0, batch([1, 2]))
        body = await asyncio.wait_for(waiting, timeout=5)
        return body, loop.time() - started

    body, elapsed = run(scenario())
    p = partitions_of(body)[("t", 0)]
    assert [r.value for r in iter_records(p.records)] == [b"v1", b"v2"] and p.high_watermark == 2
    assert elapsed < 5


def test_fetch_long_poll_waits_for_min_bytes(world):
    async def scenario():
        waiting = asyncio.ensure_future(fetch(world, [("t", 0, 0, 1 << 20)], max_wait=30_000, min_bytes=100))
        await asyncio.sleep(0)
        await produce(world, "t", 0, batch([1]))  # fewer than 100 bytes: keeps waiting
        await asyncio.sleep(0)
        assert not waiting.done()
        await produce(world, "t", 0, batch(list(range(2, 12))))
        return await asyncio.wait_for(waiting, timeout=5)

    p = partitions_of(run(scenario()))[("t", 0)]
    assert [r.offset for r in iter_records(p.records)] == list(range(11))


def test_fetch_long_poll_times_out_without_data(world):
    async def scenario():
        loop = asyncio.get_running_loop()
        started = loop.time()
        body = await asyncio.wait_for(fetch(world, [("t", 0, 0, 1 << 20)], max_wait=50, min_bytes=1), timeout=5)
        return body, loop.time() - started

    body, elapsed = run(scenario())
    p = partitions_of(body)[("t", 0)]
    assert (p.error_code, p.records, p.high_watermark) == (0, b"", 0)
    assert 0.05 <= elapsed < 5


# -- ListOffsets --------------------------------------------------------------------------------------
async def list_offsets(world, queries, version=2, replica_id=-1):
    """One request per query: a partition named twice in one request is INVALID_REQUEST (Kafka 2.8)."""
    answers = []
    for topic, partition, timestamp in queries:
        response = await world.call(handle_list_offsets, LIST_OFFSETS, version, replica_id=replica_id,
                                    isolation_level=0, topics=[dict(name=topic, partitions=[
                                        dict(partition_index=partition, timestamp=timestamp)])])
        answers += [(t.name, p.partition_index, p.error_code, p.offset, p.timestamp)
                    for t in response.topics for p in t.partitions]
    return answers


def test_list_offsets_answers_a_partition_named_twice_invalid_request(world):
    run(produce(world, "t", 0, batch([1], ts=1000)))
    response = run(world.call(handle_list_offsets, LIST_OFFSETS, 1, replica_id=-1, topics=[
        dict(name="t", partitions=[dict(partition_index=0, timestamp=-1), dict(partition_index=0, timestamp=-2)])]))
    assert [p.error_code for t in response.topics for p in t.partitions] == [42, 42]


@pytest.mark.parametrize("version", [1, 2])
def test_list_offsets(world, version):
    run(produce(world, "t", 0, batch([1, 2, 3], ts=1000)))  # timestamps 1000, 1001, 1002
    run(produce(world, "t", 0, batch([4, 5], ts=2000)))  # 2000, 2001
    world.log().append_as_leader(bytearray(batch([6], ts=3000)), 0)  # offset 5, above the high watermark
    got = run(list_offsets(world, [("t", 0, -2), ("t", 0, -1), ("t", 0, 1001), ("t", 0, 1500), ("t", 0, 2001),
                                   ("t", 0, 2500), ("t", 0, 9999)], version=version))
    assert got == [("t", 0, 0, 0, -1), ("t", 0, 0, 5, -1), ("t", 0, 0, 1, 1001), ("t", 0, 0, 3, 2000),
                   ("t", 0, 0, 4, 2001), ("t", 0, 0, -1, -1), ("t", 0, 0, -1, -1)]


def test_list_offsets_for_a_replica_reads_up_to_the_log_end(world):
    run(produce(world, "t", 0, batch([1])))
    world.log().append_as_leader(bytearray(batch([2], ts=3000)), 0)
    assert run(list_offsets(world, [("t", 0, -1), ("t", 0, 3000)], replica_id=2)) == [
        ("t", 0, 0, 2, -1), ("t", 0, 0, 1, 3000)]


def test_list_offsets_errors(world):
    got = run(list_offsets(world, [("t", 1, -1), ("t", 8, -2), ("ghost", 0, -1)]))
    assert got == [("t", 1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1),
                   ("t", 8, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                   ("ghost", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


# -- CreateTopics / DeleteTopics ------------------------------------------------------------------------
def create(world, topics, version=4, timeout=5000, validate_only=False):
    response = run(world.call(handle_create_topics, CREATE_TOPICS, version, topics=topics, timeout=timeout,
                              validate_only=validate_only))
    return [(t.name, t.error_code, t.error_message) for t in response.topics]


def topic(name, partitions=-1, rf=-1, assignments=(), configs=None):
    return dict(name=name, num_partitions=partitions, replication_factor=rf, assignments=list(assignments),
                configs=[dict(name=k, value=v) for k, v in (configs or {}).items()])


@pytest.mark.parametrize("version", [2, 3, 4])
def test_create_topics(world, version):
    got = create(world, [topic("a", 3, 1, configs={"cleanup.policy": "compact"}), topic("b")], version=version)
    assert got == [("a", 0, None), ("b", 0, None)]
    assert world.admin.calls == [("create", "a", 3, 1, {"cleanup.policy": "compact"}, None, False),
                                 ("create", "b", 2, 1, {}, None, False)]  # -1: num.partitions=2, RF 1
    assert sorted(world.cache.partitions_of("a")) == [0, 1, 2]


def test_create_topics_with_assignments(world):
    got = create(world, [topic("a", assignments=[dict(partition_index=0, broker_ids=[1, 2]),
                                                 dict(partition_index=1, broker_ids=[2, 1])]),
                         topic("b", 2, -1, assignments=[dict(partition_index=0, broker_ids=[1])])])
    assert got[0] == ("a", 0, None)
    assert world.admin.calls[0] == ("create", "a", 2, 2, {}, {0: [1, 2], 1: [2, 1]}, False)
    assert got[1][:2] == ("b", ErrorCode.INVALID_REQUEST) and "both cannot be used" in got[1][2]
    assert len(world.admin.calls) == 1


def test_create_topics_errors(world):
    got = create(world, [topic("t", 1, 1), topic("dup", 1, 1), topic("dup", 1, 1), topic("big", 1, 3),
                         topic("nul", 1, 1, configs={"retention.ms": None})])
    assert [(name, code) for name, code, _ in got] == [
        ("t", ErrorCode.TOPIC_ALREADY_EXISTS), ("dup", ErrorCode.INVALID_REQUEST), ("dup", ErrorCode.INVALID_REQUEST),
        ("big", ErrorCode.INVALID_REPLICATION_FACTOR), ("nul", ErrorCode.INVALID_REQUEST)]
    assert got[0][2] == "topic 't' already exists"  # the KafkaError's text, without the code name
    assert "retention.ms" in got[4][2]


def test_create_topics_validate_only(world):
    assert create(world, [topic("a", 1, 1)], validate_only=True) == [("a", 0, None)]
    assert world.admin.calls == [("create", "a", 1, 1, {}, None, True)] and "a" not in world.cache.topics()


def test_create_topics_times_out_when_the_metadata_never_shows_leaders(world):
    world.admin.publish = False
    assert create(world, [topic("a", 1, 1)], timeout=30)[0][:2] == ("a", ErrorCode.REQUEST_TIMED_OUT)
    assert create(world, [topic("b", 1, 1)], timeout=0)[0][:2] == ("b", ErrorCode.REQUEST_TIMED_OUT)


def delete(world, names, timeout=5000):
    response = run(world.call(handle_delete_topics, DELETE_TOPICS, 3, topic_names=names, timeout=timeout))
    return [(r.name, r.error_code) for r in response.responses]


def test_delete_topics(world):
    assert delete(world, ["u", "ghost", "t", "t"]) == [
        ("u", 0), ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("t", ErrorCode.INVALID_REQUEST),
        ("t", ErrorCode.INVALID_REQUEST)]
    assert world.admin.calls == [("delete", "u")] and "u" not in world.cache.topics()


def test_delete_topics_times_out_while_the_topic_is_still_in_metadata(world):
    world.admin.publish = False
    assert delete(world, ["u"], timeout=30) == [("u", ErrorCode.REQUEST_TIMED_OUT)]


def test_delete_topics_disabled(tmp_path):
    w = World(tmp_path, **{"delete.topic.enable": "false"})
    try:
        assert delete(w, ["u"]) == [("u", ErrorCode.TOPIC_DELETION_DISABLED)] and w.admin.calls == []
    finally:
        w.log_manager.shutdown()


# -- DescribeConfigs ----------------------------------------------------------------------------------
def describe(world, resources, version=1, synonyms=False):
    response = run(world.call(handle_describe_configs, DESCRIBE_CONFIGS, version, include_synonyms=synonyms,
                              resources=[dict(resource_type=t, resource_name=n, configuration_keys=k)
                                         for t, n, k in resources]))
    return response.results


@pytest.mark.parametrize("version", [1, 2, 3])
def test_describe_topic_configs(world, version):
    (result,) = describe(world, [(2, "t", None)], version=version)
    assert (result.error_code, result.resource_type, result.resource_name) == (0, 2, "t")
    configs = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive, c.synonyms) for c in result.configs}
    assert set(configs) == set(LogConfig().to_properties())
    assert configs["retention.ms"] == ("1000", 1, False, False, ())  # the override: DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"] == ("1073741824", 5, False, False, ())  # the default: DEFAULT_CONFIG
    assert [c.name for c in result.configs] == sorted(configs)


def test_describe_configs_filters_keys_and_reports_errors(world):
    filtered, unknown, other_broker, bad_type = describe(
        world, [(2, "t", ["cleanup.policy", "retention.ms", "no.such.key"]), (2, "ghost", None), (4, "7", None),
                (3, "x", None)], synonyms=True)
    assert [(c.name, c.value, [(s.name, s.value, s.source) for s in c.synonyms]) for c in filtered.configs] == [
        ("cleanup.policy", "delete", [("cleanup.policy", "delete", 5)]),
        ("retention.ms", "1000", [("retention.ms", "1000", 1), ("retention.ms", "604800000", 5)])]  # override, default
    assert (unknown.error_code, unknown.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ())
    assert other_broker.error_code == ErrorCode.INVALID_REQUEST and "expected 1" in other_broker.error_message
    assert bad_type.error_code == ErrorCode.INVALID_REQUEST


def test_describe_broker_configs(world):
    (result,) = describe(world, [(4, "1", None)])
    configs = {c.name: (c.value, c.config_source, c.read_only) for c in result.configs}
    assert configs["broker.id"] == ("1", 4, True)  # STATIC_BROKER_CONFIG: set in server.properties
    assert configs["num.partitions"] == ("2", 4, True)
    assert configs["delete.topic.enable"] == ("true", 5, True)  # DEFAULT_CONFIG
    assert configs["listeners"] == ("PLAINTEXT://:9092", 5, True)
    assert "broker.rack" not in configs  # unset keys are not listed


def test_describe_broker_configs_never_shows_a_secret(tmp_path):
    world = World(tmp_path, **{"zookeeper.digest.credentials": "kafka:zk-secret", "zookeeper.set.acl": "true"})
    try:
        (result,) = describe(world, [(4, "1", ["zookeeper.digest.credentials", "zookeeper.set.acl"])], synonyms=True)
        configs = {c.name: c for c in result.configs}
        secret = configs["zookeeper.digest.credentials"]
        assert (secret.value, secret.is_sensitive, [s.value for s in secret.synonyms]) == (None, True, [None])
        assert (configs["zookeeper.set.acl"].value, configs["zookeeper.set.acl"].is_sensitive) == ("true", False)
    finally:
        world.log_manager.shutdown()


def test_describe_broker_configs_never_shows_a_password(tmp_path):
    w = World(tmp_path, **{"ssl.key.password": "s3cret", "ssl.keystore.type": "PEM"})
    try:
        (result,) = describe(w, [(4, "1", ["ssl.key.password", "ssl.keystore.type"])], synonyms=True)
    finally:
        w.log_manager.shutdown()
    configs = {c.name: (c.value, c.is_sensitive, [s.value for s in c.synonyms]) for c in result.configs}
    assert configs == {"ssl.key.password": (None, True, [None]), "ssl.keystore.type": ("PEM", False, ["PEM"])}


def test_every_api_is_served_by_the_handler_it_was_served_by():
    """The dispatch table, frozen: the handlers per API key captured before the ApiKey table."""
    captured = json.loads((Path(__file__).resolve().parents[2] / "golden" / "api_versions" / "api_key_facts.json").read_text())
    named = lambda table: {str(int(k)): f"{h.__module__}.{h.__name__}" for k, h in table.items()}  # noqa: E731
    assert named(apis.HANDLERS) == captured["broker_handlers"]
    assert named(GROUP_HANDLERS) == captured["group_handlers"]
