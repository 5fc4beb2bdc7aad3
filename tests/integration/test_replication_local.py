"""Two in-process brokers on one event loop, each behind a real KafkaListener on 127.0.0.1: the follower's
ReplicaFetcher copies the leader's log over real sockets with Kafka's Fetch (v12, truncating on fetch).

No ZooKeeper here (the cluster tests in test_replication.py have it): the test plays the controller,
handing each ReplicaManager its LeaderAndIsr, and records the leaders' ISR writes in a ``RecordingIsrStore``
that behaves like the partition state znode (version check included). Produce requests go through the
real listener with ``KafkaConnection``, the same client the fetchers use.
"""
from __future__ import annotations

import asyncio
import logging
import time

from brokers.client.connection import KafkaConnection
from brokers.config import BrokerConfig
from brokers.control import LeaderAndIsrRequest, PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.replication.fetch_session import FetchSessionCache
from brokers.replication.fetcher import FetcherConfig
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import IsrConflictError, ReplicaManager
from brokers.server.apis import KafkaApis
from brokers.server.context import ServerContext
from brokers.server.listener import KafkaListener
from brokers.storage.log_config import LogConfig
from brokers.storage.log_manager import LogManager

TOPIC = "rep"
TP = TopicPartition(TOPIC, 0)
LAG_MS = 400
TIMEOUT = 20


class RecordingIsrStore:
    """The partition state znode's semantics in memory: a version-checked write, and the notifications."""

    def __init__(self):
        self.states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.versions: dict[TopicPartition, int] = {}
        self.notified: list[list[TopicPartition]] = []

    async def update_isr(self, tp, state):
        if state.leader_and_isr.zk_version != self.versions.get(tp, 0):
            raise IsrConflictError(f"version {state.leader_and_isr.zk_version} != {self.versions.get(tp, 0)}")
        self.versions[tp] = self.versions.get(tp, 0) + 1
        self.states[tp] = state
        return self.versions[tp]

    async def read_state(self, tp):
        return self.states.get(tp)

    async def notify_isr_changes(self, partitions):
        self.notified.append(list(partitions))


class Node:
    def __init__(self, broker_id: int, tmp_path, store: RecordingIsrStore, min_isr: int = 1):
        self.broker_id = broker_id
        self.log_manager = LogManager([tmp_path / f"broker-{broker_id}"])
        self.log_manager.startup()
        self.store = store
        self.min_isr = min_isr
        self.cache = MetadataCache(broker_id)
        self.config = BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181",
                                                    "broker.id": str(broker_id)})

    async def start(self) -> None:
        async def topic_config(topic):
            return LogConfig(min_insync_replicas=self.min_isr)

        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager, topic_config, lambda: 100, isr_store=self.store,
            fetcher_config=FetcherConfig(self.broker_id, wait_max_ms=100, backoff_ms=50, socket_timeout_ms=5000),
            replica_lag_time_max_ms=LAG_MS)
        self.replica_manager.start()
        self.sessions = FetchSessionCache()
        context = ServerContext(self.broker_id, self.config, self.cache, self.replica_manager, lambda: "c", None,
                                fetch_sessions=self.sessions)  # the fetchers replicate in sessions (KIP-227)
        self.listener = KafkaListener(KafkaApis(context).handle, "127.0.0.1", 0)
        await self.listener.start()
        self.info = BrokerInfo(self.broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", self.listener.port),), None, 100)

    async def stop(self) -> None:
        await self.replica_manager.shutdown()
        await self.listener.stop()
        self.log_manager.shutdown()

    async def apply(self, leader: int, epoch: int, isr, replicas, nodes, zk_version: int = 0) -> None:
        state = PartitionState(TOPIC, 0, 1, leader, epoch, tuple(isr), zk_version, tuple(replicas))
        infos = tuple(n.info for n in nodes)
        self.cache.update(UpdateMetadataRequest(1, 1, 100, (state,), infos))
        response = await self.replica_manager.become_leader_or_follower(
            LeaderAndIsrRequest(1, 1, 100, (state,), infos))
        assert response.partition_errors == ((TOPIC, 0, 0),)

    @property
    def partition(self):
        return self.replica_manager.partitions[TP]

    @property
    def log(self):
        return self.partition.log


def batch(*values: bytes) -> bytes:
    return bytes(build_batch([Record(i, i, None, v) for i, v in enumerate(values)], base_timestamp=1_700_000_000_000))


def log_bytes(log) -> bytes:
    log.flush()
    return b"".join(segment.log_path.read_bytes() for segment in log.segments)


async def wait_until(condition, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def produce(node: Node, records: bytes, acks: int, timeout_ms: int = 10000):
    connection = KafkaConnection("127.0.0.1", node.listener.port, "test-producer")
    await connection.connect(5)
    try:
        body = codec.build(codec.request_class(0, 7), acks=acks, timeout=timeout_ms, transactional_id=None,
                           topic_data=[dict(name=TOPIC, partition_data=[dict(index=0, records=records)])])
        response = await connection.request(0, 7, body, timeout_ms / 1000 + 5)
    finally:
        connection.close()
    answer = response.responses[0].partition_responses[0]
    return answer.error_code.value, answer.base_offset


def run(scenario, tmp_path, min_isr: int = 1):
    async def main():
        store = RecordingIsrStore()
        nodes = [Node(1, tmp_path, store, min_isr), Node(2, tmp_path, store, min_isr)]
        for node in nodes:
            await node.start()
        try:
            await asyncio.wait_for(scenario(*nodes, store), 60)
        finally:
            for node in nodes:
                await node.stop()

    asyncio.run(main())


def test_follower_copies_the_leader_byte_for_byte_and_the_hw_follows(tmp_path):
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        for i in range(20):
            assert (await produce(leader, batch(b"a%d" % i, b"b%d" % i), acks=1))[0] == 0
        await follower.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        await wait_until(lambda: follower.log.log_end_offset == 40, "the follower to copy 40 offsets")
        await wait_until(lambda: leader.log.high_watermark == 40, "the leader's HW to reach 40")
        await wait_until(lambda: follower.log.high_watermark == 40, "the follower's HW to follow")
        assert log_bytes(follower.log) == log_bytes(leader.log)
        assert [(e.epoch, e.start_offset) for e in follower.log.leader_epoch_cache.entries] == [(0, 0)]
        # KIP-227: one full request made the follower's session, the rest are incremental
        stats = follower.replica_manager.fetchers.fetchers[1].stats
        await wait_until(lambda: stats.requests > stats.full_requests + 2, "incremental fetches")
        assert stats.full_requests == 1 and [s.privileged for s in leader.sessions.sessions.values()] == [True]


    run(scenario, tmp_path)


def test_an_idle_partition_is_named_and_read_by_no_fetch_and_stays_in_sync(tmp_path):
    """Quiet partitions (fetch_session): once the follower is at the end, its fetcher names the partition
    in no request and the leader's session skips it; idle for longer than replica.lag.time.max.ms, the
    next acks=all produce replicates without the follower leaving the ISR."""
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        await follower.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        assert await produce(leader, batch(b"a", b"b"), acks=-1) == (0, 0)
        (session,) = leader.sessions.sessions.values()
        await wait_until(lambda: (TOPIC, 0) in session.quiet, "the partition to go quiet in the follower's session")
        stats = follower.replica_manager.fetchers.fetchers[1].stats
        named, requests, isr_writes = stats.partitions_sent, stats.requests, store.versions.get(TP, 0)
        await wait_until(lambda: stats.requests >= requests + 10, "ten idle fetches (over a second, > 400 ms lag)")
        assert stats.partitions_sent == named and (TOPIC, 0) in session.quiet and session.fetch_list() == []
        assert await produce(leader, batch(b"c"), acks=-1) == (0, 2)
        await wait_until(lambda: follower.log.high_watermark == 3, "the follower to copy it and follow the HW")
        assert leader.partition.isr == (1, 2) and store.versions.get(TP, 0) == isr_writes

    run(scenario, tmp_path)


def test_a_leader_not_ready_yet_is_a_summary_line_per_answer_not_a_line_per_partition(tmp_path, caplog):
    """The issue's "no per-partition INFO logging on cluster-wide events": a follower that heard of its new
    leader before the leader did gets UNKNOWN_TOPIC_OR_PARTITION and retries soon, saying so once per answer."""
    async def scenario(leader, follower, store):
        caplog.set_level(logging.INFO, logger="brokers.replication.fetcher")
        await follower.apply(1, 0, [1, 2], [1, 2], [leader, follower])  # the leader has not heard of it yet

        def summaries():
            return [r.getMessage() for r in caplog.records if "has not applied our LeaderAndIsr" in r.getMessage()]
        await wait_until(lambda: summaries(), "the fetcher's summary line")
        assert "1 partitions UNKNOWN_TOPIC_OR_PARTITION" in summaries()[0]
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        assert await produce(leader, batch(b"a"), acks=-1) == (0, 0)  # replicated once the leader knows
        assert not [r for r in caplog.records if r.name == "brokers.replication.fetcher" and r.levelno >= logging.INFO
                    and f"{TOPIC}-0" in r.getMessage()]

    run(scenario, tmp_path)


def test_acks_all_waits_for_the_follower_and_consumers_see_only_below_the_hw(tmp_path):
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        pending = asyncio.ensure_future(produce(leader, batch(b"x", b"y"), acks=-1))
        await wait_until(lambda: leader.log.log_end_offset == 2, "the leader to append")
        await asyncio.sleep(0.2)  # the follower is not fetching: nothing may acknowledge meanwhile
        assert not pending.done() and leader.log.high_watermark == 0
        await follower.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        assert await asyncio.wait_for(pending, TIMEOUT) == (0, 0)
        assert leader.log.high_watermark == 2 and follower.log.log_end_offset == 2

    run(scenario, tmp_path)


def test_acks_all_times_out_and_min_isr_rejects_before_writing(tmp_path):
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        assert await produce(leader, batch(b"late"), acks=-1, timeout_ms=300) == (ErrorCode.REQUEST_TIMED_OUT, -1)
        # the lagging follower is shrunk away after replica.lag.time.max.ms: ISR [1] < min.insync.replicas 2
        await wait_until(lambda: leader.partition.isr == (1,), "the ISR to shrink to the leader", timeout=10)
        assert store.states[TP].leader_and_isr.isr == (1,) and store.versions[TP] == 1
        end = leader.log.log_end_offset
        assert await produce(leader, batch(b"no"), acks=-1) == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
        assert leader.log.log_end_offset == end  # nothing written
        assert (await produce(leader, batch(b"acks1"), acks=1))[0] == 0  # acks=1 is not held to min ISR
        # the follower comes back, catches up and is added again; acks=all flows
        await follower.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        await wait_until(lambda: leader.partition.isr == (1, 2), "the follower to rejoin the ISR")
        assert store.states[TP].leader_and_isr.isr == (1, 2) and store.versions[TP] == 2
        assert (await produce(leader, batch(b"yes"), acks=-1))[0] == 0

    run(scenario, tmp_path, min_isr=2)


def test_isr_write_conflict_rereads_zookeeper_instead_of_keeping_a_stale_version(tmp_path):
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1, 2], [1, 2], [leader, follower])
        # someone (the controller) wrote the znode meanwhile: same leader and epoch, new version
        store.versions[TP] = 5
        store.states[TP] = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 5), 1)
        await wait_until(lambda: leader.partition.zk_version == 5, "the leader to adopt ZooKeeper's version")
        await wait_until(lambda: leader.partition.isr == (1,), "the shrink to succeed on the re-read version")
        assert store.versions[TP] == 6

    run(scenario, tmp_path)


def test_divergent_follower_truncates_by_leader_epoch_in_several_rounds(tmp_path):
    """KIP-279: the follower's last epoch (2) is unknown to the new leader; it truncates to where its
    epoch 0 ended, asks again, and ends byte-identical. Truncating to its HW (0) would also converge
    here, but a follower that kept its own epoch-2 batches would diverge at offsets 5-9."""

    async def scenario(leader, follower, store):
        for node in (leader, follower):  # both: epoch 0 wrote offsets 0-4
            await node.apply(node.broker_id, 0, [node.broker_id], [1, 2], [leader, follower])
            for i in range(5):
                node.log.append_as_leader(bytearray(batch(b"common%d" % i)), 0)
        for i in range(5):
            leader.log.append_as_leader(bytearray(batch(b"leader-epoch1-%d" % i)), 1)
        for i in range(8):
            follower.log.append_as_leader(bytearray(batch(b"follower-epoch2-%d" % i)), 2)
        await leader.apply(1, 4, [1, 2], [1, 2], [leader, follower])
        await follower.apply(1, 4, [1, 2], [1, 2], [leader, follower])
        await wait_until(lambda: follower.log.log_end_offset == 10 and log_bytes(follower.log) == log_bytes(leader.log),
                         "the follower to converge on the leader's log")
        assert [(e.epoch, e.start_offset) for e in follower.log.leader_epoch_cache.entries] == [(0, 0), (1, 5)]

    run(scenario, tmp_path)


def test_follower_far_behind_the_leaders_log_start_starts_over_there(tmp_path):
    async def scenario(leader, follower, store):
        await leader.apply(1, 0, [1], [1, 2], [leader, follower])
        for i in range(10):
            assert (await produce(leader, batch(b"r%d" % i), acks=1))[0] == 0
        leader.log.roll()
        leader.log.increment_log_start_offset(10)
        leader.log.delete_old_segments()
        assert leader.log.log_start_offset == 10
        assert (await produce(leader, batch(b"after"), acks=1))[0] == 0
        await follower.apply(1, 0, [1], [1, 2], [leader, follower])
        await wait_until(lambda: follower.log.log_end_offset == 11, "the follower to restart at the log start")
        assert follower.log.log_start_offset == 10

    run(scenario, tmp_path)
