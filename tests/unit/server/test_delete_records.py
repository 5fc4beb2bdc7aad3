"""DeleteRecords (21), DescribeCluster (60) and AlterReplicaLogDirs (34) over the real handlers: the World of test_handlers (a real
ReplicaManager, logs on tmp_path; broker 1 leads t-0 (replicas 1, 2; broker 2 live) and u-0 (replicas 1),
follows t-1)."""
from __future__ import annotations

import asyncio

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.security import acls as acl
from brokers.security.acls import ALLOW, AclEntry, ResourcePattern
from brokers.security.authorizer import AclAuthorizer
from brokers.server.handlers.delete_records import handle_delete_records
from brokers.server.handlers.metadata import handle_describe_cluster
from tests.unit.server.test_handlers import World, batch, produce
from tests.unit.zk.test_acl_znodes import MemoryZk

DELETE_RECORDS, DESCRIBE_CLUSTER = 21, 60


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.log_manager.shutdown()


async def delete(world, offsets, timeout_ms=200, version=2):
    topics = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(dict(partition_index=partition, offset=offset))
    response = await world.call(handle_delete_records, DELETE_RECORDS, version, timeout=timeout_ms,
                                topics=[dict(name=t, partitions=p) for t, p in topics.items()])
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark) for t in response.topics for p in t.partitions}


async def parked(partition, timeout: float = 10.0) -> None:
    """Until a DeleteRecords answer waits on ``partition``, with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not len(partition._delete_waiters):
        assert loop.time() < deadline, "no DeleteRecords answer parked"
        await asyncio.sleep(0)


async def fill(world, topic, partition, count):
    for i in range(count):
        await produce(world, topic, partition, batch([i]))


def test_a_single_replica_partition_moves_its_log_start_and_answers_at_once(world):
    async def scenario():
        await fill(world, "u", 0, 5)
        answer = await delete(world, {("u", 0): 3})
        log = world.log("u", 0)
        assert answer == {("u", 0): (ErrorCode.NONE, 3)} and log.log_start_offset == 3
        assert await delete(world, {("u", 0): -1}) == {("u", 0): (ErrorCode.NONE, 5)}  # -1: the high watermark
        assert await delete(world, {("u", 0): 2}) == {("u", 0): (ErrorCode.NONE, 5)}  # never backwards

    asyncio.run(scenario())


def test_the_answer_waits_for_the_followers_log_start(world):
    async def scenario():
        partition = world.replica_manager.partitions[TopicPartition("t", 0)]
        await fill(world, "t", 0, 4)  # ISR [1]: the HW follows the leader alone
        pending = asyncio.ensure_future(delete(world, {("t", 0): 2}, timeout_ms=5000))
        await parked(partition)
        assert world.log("t", 0).log_start_offset == 2 and not pending.done()
        partition.update_follower_fetch(2, 4, 100, log_start_offset=1)  # follower 2 has not moved yet
        await asyncio.sleep(0)
        assert not pending.done()
        partition.update_follower_fetch(2, 4, 100, log_start_offset=2)
        assert await pending == {("t", 0): (ErrorCode.NONE, 2)}

    asyncio.run(scenario())


def test_a_follower_that_does_not_move_times_the_answer_out(world):
    async def scenario():
        await fill(world, "t", 0, 4)
        assert await delete(world, {("t", 0): 2}, timeout_ms=10) == {("t", 0): (ErrorCode.REQUEST_TIMED_OUT, -1)}
        assert world.log("t", 0).log_start_offset == 2  # moved on the leader regardless

    asyncio.run(scenario())


def test_per_partition_errors(world):
    async def scenario():
        await fill(world, "u", 0, 3)
        world.log("u", 0).config = world.log("u", 0).config.__class__(cleanup_policy="compact")
        answer = await delete(world, {("u", 0): 1, ("t", 1): 0, ("t", 9): 0, ("nope", 0): 0})
        assert answer == {("u", 0): (ErrorCode.POLICY_VIOLATION, -1),
                          ("t", 1): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1),  # broker 2 leads it
                          ("t", 9): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
                          ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
        assert await delete(world, {("t", 0): 99}) == {("t", 0): (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}

    asyncio.run(scenario())


def test_delete_on_the_topic_is_required(world):
    authorizer = None

    def grant(name, op):
        authorizer.acls[ResourcePattern(acl.TOPIC, name, acl.LITERAL)] = frozenset(
            {AclEntry("User:ANONYMOUS", "*", op, ALLOW)})

    async def scenario():
        await fill(world, "u", 0, 3)
        nonlocal authorizer
        authorizer = world.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)
        grant("u", acl.DESCRIBE)
        assert await delete(world, {("u", 0): 1}) == {("u", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)}
        assert world.log("u", 0).log_start_offset == 0
        grant("u", acl.DELETE)
        assert await delete(world, {("u", 0): 1}) == {("u", 0): (ErrorCode.NONE, 1)}

    asyncio.run(scenario())


def test_losing_leadership_answers_not_leader(world):
    async def scenario():
        partition = world.replica_manager.partitions[TopicPartition("t", 0)]
        await fill(world, "t", 0, 4)
        pending = asyncio.ensure_future(delete(world, {("t", 0): 2}, timeout_ms=5000))
        await parked(partition)
        partition.make_follower(2, 1, (1, 2), (1, 2), 1, 1)
        assert await pending == {("t", 0): (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}

    asyncio.run(scenario())


def test_a_follower_takes_the_leaders_log_start_up_to_its_high_watermark(world):
    async def scenario():
        await fill(world, "u", 0, 6)
        partition = world.replica_manager.partitions[TopicPartition("u", 0)]
        partition.log.high_watermark = 4  # as a follower that has the HW 4
        assert partition.update_follower_log_start(5) and partition.log.log_start_offset == 4
        assert not partition.update_follower_log_start(3)  # never backwards

    asyncio.run(scenario())


def test_describe_cluster(world):
    async def scenario():
        world.cache.controller_id = 2
        response = await world.call(handle_describe_cluster, DESCRIBE_CLUSTER, 0,
                                    include_cluster_authorized_operations=True)
        assert (response.error_code, response.cluster_id, response.controller_id) == (ErrorCode.NONE, "cluster-x", 2)
        # the live brokers with a PLAINTEXT endpoint (broker 4 has none), with their racks
        assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
            (1, "127.0.0.1", 9092, "rack-a"), (2, "127.0.0.2", 9093, None)]
        assert response.cluster_authorized_operations > 0  # no authorizer: every cluster operation
        world.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)
        denied = await world.call(handle_describe_cluster, DESCRIBE_CLUSTER, 0, include_cluster_authorized_operations=True)
        assert denied.cluster_authorized_operations == 0
        unasked = await world.call(handle_describe_cluster, DESCRIBE_CLUSTER, 0, include_cluster_authorized_operations=False)
        assert unasked.cluster_authorized_operations == acl.NO_AUTHORIZED_OPERATIONS

    asyncio.run(scenario())


def test_alter_replica_log_dirs_needs_alter_on_the_cluster_and_names_each_partitions_outcome(world, tmp_path):
    from brokers.server.handlers.log_dirs import handle_alter_replica_log_dirs

    async def alter(path):
        response = await world.call(handle_alter_replica_log_dirs, 34, 1, dirs=[
            dict(path=path, topics=[dict(name="u", partitions=[0]), dict(name="nope", partitions=[0])])])
        return {(t.topic_name, p.partition_index): p.error_code for t in response.results for p in t.partitions}

    async def scenario():
        only_dir = str(world.log_manager.log_dirs[0])
        assert await alter(only_dir) == {("u", 0): ErrorCode.NONE, ("nope", 0): ErrorCode.REPLICA_NOT_AVAILABLE}
        assert await alter(str(tmp_path / "elsewhere")) == {("u", 0): ErrorCode.LOG_DIR_NOT_FOUND,
                                                            ("nope", 0): ErrorCode.LOG_DIR_NOT_FOUND}
        world.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)
        assert set((await alter(only_dir)).values()) == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}

    asyncio.run(scenario())
