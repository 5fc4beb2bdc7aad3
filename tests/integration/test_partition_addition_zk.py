"""``brokers.admin.partition_addition.add_partitions`` against a real ZooKeeper: the rewrite of
``/brokers/topics/<t>`` keeps every other field, is a compare-and-set (a concurrent writer makes it read
and decide again once, then fail), and Kafka's refusals (deletion queued, reassignment running, unknown
topic) leave the znode alone."""
from __future__ import annotations

import asyncio
import json

import pytest

from brokers.admin.partition_addition import add_partitions
from brokers.model import BrokerInfo, EndPoint
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import ZkGateway
from brokers.zk.paths import TopicZNode

TOPIC_ID = "q0SAh6cFTjqTAXdPgYQVkA"


async def client(zookeeper, chroot: str, brokers: tuple[int, ...] = (1, 2, 3)) -> KafkaZkClient:
    gateway = ZkGateway(zookeeper.connect_string + chroot, session_timeout_ms=4000)
    await gateway.start()
    kzc = KafkaZkClient(gateway)
    await kzc.create_persistent_roots()
    for broker_id in brokers:
        await kzc.register_broker(BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id),)))
    return kzc


async def write_topic(kzc: KafkaZkClient, topic: str, **fields) -> None:
    value = {"version": 3, "partitions": {"0": [1, 2], "1": [2, 3]}, "topic_id": TOPIC_ID,
             "adding_replicas": {}, "removing_replicas": {}, **fields}
    await kzc.zk.create(TopicZNode.path(topic), json.dumps(value).encode(), makepath=True)


async def read_topic(kzc: KafkaZkClient, topic: str) -> tuple[dict, int]:
    data, stat = await kzc.zk.get(TopicZNode.path(topic))
    return json.loads(data), stat.version


async def refused(coro) -> tuple[ErrorCode, str]:
    with pytest.raises(KafkaError) as info:
        await coro
    return info.value.code, info.value.args[0]


def test_the_rewrite_keeps_every_other_field(zookeeper):
    async def main():
        kzc = await client(zookeeper, "/keep")
        try:
            await write_topic(kzc, "t")
            assert await add_partitions(kzc, "t", 4, validate_only=True) == {2: [3, 1], 3: [1, 3]}
            assert (await read_topic(kzc, "t"))[1] == 0  # validate_only wrote nothing
            assert await add_partitions(kzc, "t", 4) == {2: [3, 1], 3: [1, 3]}  # partition 0 led by 1: continue at 3
            value, version = await read_topic(kzc, "t")
            assert value == {"version": 3, "partitions": {"0": [1, 2], "1": [2, 3], "2": [3, 1], "3": [1, 3]},
                             "topic_id": TOPIC_ID, "adding_replicas": {}, "removing_replicas": {}}
            assert version == 1
            assert await add_partitions(kzc, "t", 5, [[2, 1]]) == {4: [2, 1]}
            assert (await kzc.get_topic_assignment("t"))[4] == [2, 1]
        finally:
            await kzc.zk.close()

    asyncio.run(main())


def test_refusals_leave_the_znode_alone(zookeeper):
    async def main():
        kzc = await client(zookeeper, "/refuse")
        try:
            await write_topic(kzc, "moving", adding_replicas={"1": [1]}, removing_replicas={"1": [3]})
            assert await refused(add_partitions(kzc, "moving", 3)) == (
                ErrorCode.REASSIGNMENT_IN_PROGRESS, "A partition reassignment is in progress for the topic 'moving'.")
            await write_topic(kzc, "doomed")
            await kzc.request_topic_deletion("doomed")
            assert await refused(add_partitions(kzc, "doomed", 3)) == (
                ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
            assert await refused(add_partitions(kzc, "ghost", 3)) == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist.")
            assert [(await read_topic(kzc, t))[1] for t in ("moving", "doomed")] == [0, 0]
        finally:
            await kzc.zk.close()

    asyncio.run(main())


def racing(kzc: KafkaZkClient, interferences: list):
    """Make ``kzc`` run one of ``interferences`` between each read of the topic znode and its write."""
    read = kzc.get_topic_assignment_for_update

    async def read_then_interfere(topic):
        result = await read(topic)
        if interferences:
            await interferences.pop(0)()
        return result

    kzc.get_topic_assignment_for_update = read_then_interfere


def test_a_concurrent_write_makes_it_decide_again_once(zookeeper):
    async def main():
        kzc, other = await client(zookeeper, "/race"), await client(zookeeper, "/race", brokers=())
        try:
            await write_topic(kzc, "t")

            async def touch():  # another writer: same content, new version
                data, _ = await other.zk.get(TopicZNode.path("t"))
                await other.zk.set(TopicZNode.path("t"), data)

            async def grow():  # another CreatePartitions got there first
                await add_partitions(other, "t", 4)

            racing(kzc, [touch])
            assert await add_partitions(kzc, "t", 3) == {2: [3, 1]}  # the second attempt wrote
            assert (await read_topic(kzc, "t"))[1] == 2

            racing(kzc, [grow])
            assert await refused(add_partitions(kzc, "t", 4)) == (ErrorCode.INVALID_PARTITIONS,
                                                                  "Topic already has 4 partitions.")
            racing(kzc, [touch, touch])
            code, message = await refused(add_partitions(kzc, "t", 5))
            assert code == ErrorCode.UNKNOWN_SERVER_ERROR and "kept changing" in message
            assert sorted(await kzc.get_topic_assignment("t")) == [0, 1, 2, 3]
        finally:
            await kzc.zk.close()
            await other.zk.close()

    asyncio.run(main())
