"""librdkafka keeps its brokers and topics across the Metadata answers of a broker the controller has not sent
metadata yet (a restarted broker while the controller is partitioned away or being re-elected).

Kafka 2.8's answer from such a broker (no brokers, every named topic UNKNOWN_TOPIC_OR_PARTITION) made
librdkafka 2.10+ decommission every broker it had learned and mark the topics deleted: a group member then
had no broker to find its coordinator on, its session timed out and its group rebalanced (the soak's
"unexpected rebalance" after a broker restart during a controller outage). The broker here is the real
request path (``KafkaListener`` + ``KafkaApis``) over a metadata cache the test fills and empties.
"""
from __future__ import annotations

import asyncio
import json
import struct
import threading

import pytest
from confluent_kafka import KafkaException, Producer

from brokers.config import BrokerConfig
from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint
from brokers.replication.metadata_cache import MetadataCache
from brokers.server.apis import KafkaApis
from brokers.server.context import ServerContext
from brokers.server.listener import KafkaListener
from tests.integration.conditions import wait_for

ME, TOPIC, METADATA = 1, "t", 3


class NoAdmin:
    async def create_topic(self, *args):
        raise AssertionError("nothing is created from a broker's metadata view")


class Broker:
    """One broker's request path on a thread of its own; ``empty_answers`` counts the Metadata requests it
    answered while its cache was empty."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        config = BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181", "broker.id": str(ME),
                                               "auto.create.topics.enable": "false"})
        self.context = ServerContext(ME, config, MetadataCache(ME), None, lambda: "cluster-x", NoAdmin())
        self.apis = KafkaApis(self.context)
        self.empty_answers = 0
        self.listener = KafkaListener(self._handle, "127.0.0.1", 0)
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(self.listener.start(), self.loop).result(10)

    async def _handle(self, frame, connection):
        (key,) = struct.unpack_from(">h", frame)
        if key == METADATA and not self.context.metadata_cache.live_brokers:
            self.empty_answers += 1
        return await self.apis.handle(frame, connection)

    def fill(self) -> None:
        """The controller's UpdateMetadata: this broker alive, TOPIC's one partition led by it."""
        cache = MetadataCache(ME)
        me = BrokerInfo(ME, (EndPoint("PLAINTEXT", "127.0.0.1", self.listener.port),), None)
        cache.update(UpdateMetadataRequest(ME, 1, 100, (PartitionState(TOPIC, 0, 1, ME, 0, (ME,), 0, (ME,)),), (me,)))
        self.context.metadata_cache = cache

    def empty(self) -> None:
        """The same broker restarted: nothing until the controller's first UpdateMetadata."""
        self.context.metadata_cache = MetadataCache(ME)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.listener.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def broker():
    b = Broker()
    yield b
    b.stop()


def test_librdkafka_keeps_its_brokers_and_topics_across_answers_of_a_broker_without_metadata(broker):
    broker.fill()
    stats: list[dict] = []
    client = Producer({"bootstrap.servers": f"127.0.0.1:{broker.listener.port}", "statistics.interval.ms": 100,
                       "topic.metadata.refresh.interval.ms": 100, "stats_cb": lambda s: stats.append(json.loads(s))})
    try:
        assert list(client.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions) == [0]

        def learned() -> list[int]:
            client.poll(0.05)
            return [b["nodeid"] for b in stats[-1]["brokers"].values() if b.get("source") == "learned"] if stats else []

        wait_for(lambda: learned() == [ME], 10, "the client learns broker 1 from metadata")
        broker.empty()
        wait_for(lambda: broker.empty_answers >= 3, 10, "three metadata refreshes answered without metadata")
        seen = len(stats)
        wait_for(lambda: client.poll(0.05) is not None and len(stats) > seen + 1, 10, "fresh statistics")
        assert learned() == [ME]  # not decommissioned
        assert stats[-1]["topics"][TOPIC]["partitions"].keys() >= {"0"}  # not marked deleted

        broker.fill()
        assert list(client.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions) == [0]
    finally:
        try:
            client.flush(5)
        except KafkaException:
            pass
