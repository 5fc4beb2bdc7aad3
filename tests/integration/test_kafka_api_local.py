"""One in-process broker's KafkaApis behind a real KafkaListener on 127.0.0.1, driven by an unmodified
confluent-kafka (librdkafka 2.16): produce with every codec and acks 0/1, consume with assign() from
the earliest offset, watermarks and offsets-for-times, and the admin client.

No ZooKeeper: the test fills the MetadataCache and hands the ReplicaManager its LeaderAndIsr itself,
as the controller would; a small in-test AdminOps does the same for topics the clients create.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from brokers.app.transaction_log import ReplicaTransactionLog
from brokers.config import BrokerConfig
from brokers.control import LeaderAndIsrRequest, PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint
from brokers.model import TopicPartition as TP
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.record_batch import iter_batches, read_header
from brokers.replication.fetch_session import FetchSessionCache
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.server.apis import KafkaApis
from brokers.server.context import ServerContext
from brokers.server.listener import KafkaListener
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager
from transactions.coordinator.config import TransactionConfig
from transactions.coordinator.coordinator import TransactionCoordinator
from transactions.coordinator.handlers import HANDLERS as TRANSACTION_HANDLERS
from transactions.coordinator.marker_channel import TransactionMarkerChannelManager

ME = 1
TOPIC = "codecs"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SCENARIOS = [(codec, acks) for codec in CODECS for acks in (1, 0)]  # partition i <- scenario i
COUNT = 30
# librdkafka (2.16 too) enables lz4 only if the broker advertises FindCoordinator (its "LZ4" feature
# probe); the broker advertises it, so every codec is stored as the client compressed it.
STORED_CODEC: dict[str, str] = {}
BASE_TS = 1_700_000_000_000
TIMEOUT = 30


class Broker:
    """The broker's asyncio world on its own thread; tests call into it with ``call``."""

    def __init__(self, tmp_path):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="broker-loop", daemon=True)
        self.thread.start()
        self.log_manager = LogManager([tmp_path / "logs"])
        self.log_manager.startup()
        self.overrides: dict[str, dict[str, str]] = {TOPIC: {"retention.ms": "3600000"}}
        self.config = BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181", "broker.id": str(ME),
                                                    "listeners": "PLAINTEXT://127.0.0.1:0"})
        self.cache = MetadataCache(ME)
        self.leader_epochs: dict[TP, int] = {}
        self.call(self._start())

    def call(self, coro, timeout: float = TIMEOUT):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        async def topic_config(topic):
            return LogConfig.from_properties(self.overrides.get(topic, {}))

        self.replica_manager = ReplicaManager(ME, self.log_manager, topic_config, lambda: 100)
        coordinator = TransactionCoordinator(  # InitProducerId (idempotent producers) is the coordinator's API
            ME, TransactionConfig.from_broker(self.config), ReplicaTransactionLog(self.replica_manager, self.config),
            TransactionMarkerChannelManager(ME, self.cache, "PLAINTEXT"), producer_ids=self)
        context = self.context = ServerContext(ME, self.config, self.cache, self.replica_manager,
                                               lambda: "zkafka-local", self, transaction_coordinator=coordinator,
                                               fetch_sessions=FetchSessionCache())
        self.listener = KafkaListener(KafkaApis(context, TRANSACTION_HANDLERS).handle, "127.0.0.1", 0)
        await self.listener.start()
        self.info = BrokerInfo(ME, (EndPoint("PLAINTEXT", "127.0.0.1", self.listener.port),), None, 100)
        await self._lead(TOPIC, len(SCENARIOS))

    async def _lead(self, topic: str, partitions: int) -> None:
        """What the controller does for a new topic: LeaderAndIsr to the replica, UpdateMetadata to all."""
        states = tuple(PartitionState(topic, p, 1, ME, 0, (ME,), 0, (ME,)) for p in range(partitions))
        response = await self.replica_manager.become_leader_or_follower(LeaderAndIsrRequest(ME, 1, 100, states, ()))
        assert all(error == 0 for *_, error in response.partition_errors)
        self.cache.update(UpdateMetadataRequest(ME, 1, 100, states, (self.info,)))

    def stop(self) -> None:
        self.call(self.listener.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.log_manager.shutdown()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.listener.port}"

    def log_end_offset(self, topic: str, partition: int) -> int:
        return self.replica_manager.partitions[TP(topic, partition)].log.log_end_offset

    # -- AdminOps ----------------------------------------------------------------------------------
    async def create_topic(self, name, num_partitions, replication_factor, config, assignment, validate_only):
        if name in self.cache.topics():
            raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        if replication_factor != 1:
            raise KafkaError(f"replication factor {replication_factor} > 1 live broker",
                             ErrorCode.INVALID_REPLICATION_FACTOR)
        if not validate_only:
            self.overrides[name] = dict(config)
            await self._lead(name, num_partitions)

    async def delete_topic(self, name):
        raise KafkaError("not in this test", ErrorCode.TOPIC_DELETION_DISABLED)

    async def topic_config(self, name):
        return dict(self.overrides.get(name, {}))

    def log_config_defaults(self):
        return LogConfig().to_properties()

    def topic_config_synonyms(self, topic_key):
        return []  # no broker-level synonyms: each default is its own DEFAULT_CONFIG synonym

    def dynamic_broker_entries(self, per_broker):
        return {}

    async def allocate_producer_id(self):
        return 4000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("broker"))
    yield b
    b.stop()


def value(codec: str, acks: int, i: int) -> bytes:
    return f"{codec}/acks={acks}/message {i} ".encode() * 8  # compressible


def produce(broker: Broker, partition: int, codec: str, acks: int, **extra) -> list:
    reports: list = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "compression.type": codec,
                         "linger.ms": 20, "enable.idempotence": False, **extra})
    for i in range(COUNT):
        producer.produce(TOPIC, value(codec, acks, i), key=f"key-{i}".encode(), partition=partition,
                         timestamp=BASE_TS + i, headers=[("i", str(i).encode())],
                         on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert producer.flush(TIMEOUT) == 0
    return reports


def consume(broker: Broker, topic: str, partition: int, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "assign-only",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        got: list = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(message)
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("codec,acks", SCENARIOS)
def test_produce_and_consume(broker, codec, acks):
    partition = SCENARIOS.index((codec, acks))
    reports = produce(broker, partition, codec, acks)
    assert [err for err, _ in reports] == [None] * COUNT
    if acks == 1:
        assert [offset for _, offset in reports] == list(range(COUNT))
    else:  # acks=0: no response, so no offsets; wait until the broker has appended everything
        deadline = time.monotonic() + TIMEOUT
        while broker.log_end_offset(TOPIC, partition) < COUNT:
            assert time.monotonic() < deadline, "acks=0 records never arrived"
            time.sleep(0.01)
    assert broker.log_end_offset(TOPIC, partition) == COUNT
    stored = broker.replica_manager.partitions[TP(TOPIC, partition)].log.read(0, 1 << 30).records.read()
    # stored as the producer sent it
    assert {header.codec_name for header in iter_batches(stored)} == {STORED_CODEC.get(codec, codec)}
    messages = consume(broker, TOPIC, partition, COUNT)
    assert [(m.offset(), m.key(), m.value(), m.headers(), m.timestamp()) for m in messages] == [
        (i, f"key-{i}".encode(), value(codec, acks, i), [("i", str(i).encode())], (1, BASE_TS + i))
        for i in range(COUNT)]


def test_watermarks_and_offsets_for_times(broker):
    partition = SCENARIOS.index(("zstd", 1))
    if broker.log_end_offset(TOPIC, partition) == 0:
        produce(broker, partition, "zstd", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "offsets", "enable.auto.commit": False})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=TIMEOUT) == (0, COUNT)
        for timestamp, offset in ((BASE_TS + 7, 7), (BASE_TS - 1, 0), (BASE_TS + 10_000, -1)):
            (found,) = consumer.offsets_for_times([TopicPartition(TOPIC, partition, timestamp)], timeout=TIMEOUT)
            assert (found.partition, found.offset, found.error) == (partition, offset, None)
    finally:
        consumer.close()


def test_admin_client(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(timeout=TIMEOUT)
    assert metadata.cluster_id == "zkafka-local" and metadata.controller_id == ME
    assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [(ME, "127.0.0.1", broker.listener.port)]
    partitions = metadata.topics[TOPIC].partitions
    assert sorted(partitions) == list(range(len(SCENARIOS)))
    assert {(p.leader, tuple(p.replicas), tuple(p.isrs)) for p in partitions.values()} == {(ME, (ME,), (ME,))}

    futures = admin.create_topics([NewTopic("created", 2, 1, config={"cleanup.policy": "compact"}),
                                   NewTopic(TOPIC, 1, 1), NewTopic("too-many", 1, 3)], operation_timeout=10)
    assert futures["created"].result(TIMEOUT) is None
    for name, code in ((TOPIC, "TOPIC_ALREADY_EXISTS"), ("too-many", "INVALID_REPLICATION_FACTOR")):
        with pytest.raises(KafkaException) as raised:
            futures[name].result(TIMEOUT)
        assert raised.value.args[0].name() == code
    assert sorted(admin.list_topics(timeout=TIMEOUT).topics["created"].partitions) == [0, 1]

    resource = ConfigResource(ResourceType.TOPIC, "created")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT)
    assert set(configs) == set(LogConfig().to_properties())
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == ("compact", 1)  # dynamic topic
    assert (configs["segment.bytes"].value, configs["segment.bytes"].source) == ("1073741824", 5)  # default


def test_idempotent_acks_all_produce_to_a_created_topic(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("fresh", 1, 1)])["fresh"].result(TIMEOUT)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "compression.type": "lz4",
                         "enable.idempotence": True})
    for i in range(5):
        producer.produce("fresh", f"v{i}".encode(), key=b"k", partition=0)
    assert producer.flush(TIMEOUT) == 0
    messages = consume(broker, "fresh", 0, 5)
    assert [(m.offset(), m.value()) for m in messages] == [(i, f"v{i}".encode()) for i in range(5)]
    first = broker.replica_manager.partitions[TP("fresh", 0)].log.read(0, 1 << 20).records.read()
    header = read_header(first)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 0, 0)  # from InitProducerId


def test_consume_lz4_batches(broker):
    """librdkafka will not write lz4 here yet (STORED_CODEC), so write lz4 batches ourselves and read
    them back through Fetch."""
    broker.call(broker._lead("lz4", 1))
    partition = broker.replica_manager.partitions[TP("lz4", 0)]
    for start in (0, 10):
        records = [Record(i, i, f"key-{start + i}".encode(), value("lz4", 1, start + i)) for i in range(10)]
        partition.log.append_as_leader(build_batch(records, base_timestamp=BASE_TS + start, codec=3), 0)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    stored = partition.log.read(0, 1 << 20).records.read()
    assert [header.codec_name for header in iter_batches(stored)] == ["lz4", "lz4"]
    messages = consume(broker, "lz4", 0, 20)
    assert [(m.offset(), m.key(), m.value(), m.timestamp()) for m in messages] == [
        (i, f"key-{i}".encode(), value("lz4", 1, i), (1, BASE_TS + i)) for i in range(20)]


def fetch_request(topic: str, offset: int, max_wait_ms: int, max_bytes: int = 1 << 30):
    from brokers.protocol import codec
    return codec.build(codec.request_class(1, 11), replica_id=-1, max_wait=max_wait_ms, min_bytes=1,
                       max_bytes=max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                       topics=[dict(topic=topic, partitions=[dict(
                           partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                           partition_max_bytes=max_bytes)])])


def read_frames(sock, count: int) -> list[bytes]:
    frames, buffer = [], b""
    while len(frames) < count:
        chunk = sock.recv(1 << 20)
        assert chunk, "the broker closed the connection"
        buffer += chunk
        while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
            size = int.from_bytes(buffer[:4], "big")
            frames.append(buffer[4:4 + size])
            buffer = buffer[4 + size:]
    return frames


def test_a_range_sent_partly_with_sendfile_to_a_slow_reader_arrives_whole_and_in_order(broker):
    """A file range of at least SENDFILE_MIN_BYTES goes out with sendfile for as much as the socket
    takes at once; a client that does not read fills its socket, so the rest is copied behind it. The
    bytes must arrive whole and in order, and a request pipelined behind the Fetch (a long poll that
    times out meanwhile) is answered after it, never in the middle."""
    import socket

    from brokers.protocol import codec
    from brokers.server.listener import SENDFILE_MIN_BYTES

    broker.call(broker._lead("big", 1))
    partition = broker.replica_manager.partitions[TP("big", 0)]
    chunk = 1 << 19
    for i in range(max(32, 4 * SENDFILE_MIN_BYTES // chunk)):  # more than the socket buffers hold
        partition.log.append_as_leader(build_batch([Record(0, 0, None, bytes([i]) * chunk)],
                                                   base_timestamp=BASE_TS), 0)
    partition.log.update_high_watermark(partition.log.log_end_offset)
    end = partition.log.log_end_offset
    stored = partition.log.read(0, 1 << 30).records.read()
    fetches = broker.context.stats.requests

    def answered() -> int:
        return fetches[("Fetch", 11)].count if ("Fetch", 11) in fetches else 0

    done_before = answered()
    with socket.create_connection(("127.0.0.1", broker.listener.port), TIMEOUT) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(codec.encode_request(1, 11, 1, "slow-reader", fetch_request("big", 0, 0))
                     + codec.encode_request(1, 11, 2, "slow-reader", fetch_request("big", end, 50)))
        deadline = time.monotonic() + TIMEOUT
        while answered() < done_before + 2:  # both answered while we do not read
            assert time.monotonic() < deadline, "the two fetches were never answered"
            time.sleep(0.01)
        broker.call(asyncio.sleep(0))  # the second answer's done-callback has run on the broker's loop
        first, second = (codec.decode_response(1, 11, frame) for frame in read_frames(sock, 2))
    assert (first[0], second[0]) == (1, 2)
    assert bytes(first[1].responses[0].partitions[0].records) == stored
    assert second[1].responses[0].partitions[0].high_watermark == end
    assert not second[1].responses[0].partitions[0].records


def session_fetch(topic: str, partitions: list[int], session_id: int, epoch: int, max_wait_ms: int):
    """Fetch v12, READ_UNCOMMITTED from offset 0 of ``partitions`` (none: an incremental request)."""
    from brokers.protocol import codec
    return codec.build(codec.request_class(1, 12), replica_id=-1, max_wait=max_wait_ms, min_bytes=1,
                       max_bytes=1 << 20, isolation_level=0, session_id=session_id, session_epoch=epoch, rack_id="",
                       forgotten_topics_data=[], topics=[dict(topic=topic, partitions=[dict(
                           partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                           log_start_offset=-1, partition_max_bytes=1 << 20) for p in partitions])] if partitions else [])


@pytest.mark.parametrize("session", ["sessionless", "quiet session"])
def test_a_parked_fetch_is_answered_by_a_produce_long_before_its_max_wait(broker, session):
    """A consumer's long poll over the wire (listener, Fetch, purgatory): parked on partitions with nothing to
    read, it is answered with the records as soon as a Produce appends to one of them, not at max_wait (a
    minute here, past this test's socket timeout). ``quiet session``: an incremental fetch of a KIP-227
    session whose partitions went quiet (the previous incremental fetch found nothing), so the wake-up comes
    through the partition's ``touch`` of the session; ``sessionless``: librdkafka's way (session 0, epoch -1)."""
    import socket

    from brokers.protocol import codec

    topic = f"parked-{session.replace(' ', '-')}"
    broker.call(broker._lead(topic, 2))
    stats = broker.context.stats
    with socket.create_connection(("127.0.0.1", broker.listener.port), TIMEOUT) as sock:
        def fetch(correlation_id: int, request) -> tuple[int, object]:
            sock.sendall(codec.encode_request(1, 12, correlation_id, "long-poll", request))
            return codec.decode_response(1, 12, read_frames(sock, 1)[0])

        if session == "quiet session":
            _, opened = fetch(1, session_fetch(topic, [0, 1], 0, 0, 0))
            assert opened.error_code == 0 and opened.session_id != 0
            _, idle = fetch(2, session_fetch(topic, [], opened.session_id, 1, 0))
            assert idle.responses == ()  # nothing to answer: both partitions go quiet
            request = session_fetch(topic, [], opened.session_id, 2, 60_000)
        else:
            request = session_fetch(topic, [0, 1], 0, -1, 60_000)
        parked = stats.fetches_parked
        sock.sendall(codec.encode_request(1, 12, 3, "long-poll", request))
        deadline = time.monotonic() + TIMEOUT
        while stats.fetches_parked == parked:
            assert time.monotonic() < deadline, "the fetch never parked"
            time.sleep(0.005)

        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": 1, "linger.ms": 0,
                             "enable.idempotence": False})
        for i in range(3):
            producer.produce(topic, f"v{i}".encode(), partition=1)
        assert producer.flush(TIMEOUT) == 0
        sock.settimeout(10)  # far below max_wait: only a wake-up by the append answers in time
        correlation_id, body = codec.decode_response(1, 12, read_frames(sock, 1)[0])
    assert correlation_id == 3 and body.error_code == 0
    answered = [(t.topic, p.partition_index) for t in body.responses for p in t.partitions if p.records]
    assert answered == [(topic, 1)]
    (partition,) = [p for t in body.responses for p in t.partitions if p.records]
    assert partition.high_watermark == 3
    assert [r.value for r in iter_records(bytes(partition.records))] == [b"v0", b"v1", b"v2"]
