"""AlterConfigs / IncrementalAlterConfigs handlers over ZkAdmin's validation, and DescribeConfigs'
dynamic sources, with an in-memory stand-in for KafkaZkClient's config znodes (the ZooKeeper writes
themselves are covered by tests/integration/test_configs.py)."""
from __future__ import annotations

import asyncio

import pytest

from brokers.admin.zk_admin import ZkAdmin
from brokers.config import BrokerConfig
from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.dynamic_config.broker_config import DynamicBrokerConfig
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode
from brokers.protocol.framing import RequestHeader
from brokers.replication.metadata_cache import MetadataCache
from brokers.server.context import ServerContext
from brokers.server.handlers.alter_configs import handle_alter_configs, handle_incremental_alter_configs
from brokers.server.handlers.describe_configs import handle_describe_configs
from brokers.storage.log_config import LogConfig

ME = 1
ALTER, INCREMENTAL, DESCRIBE = 33, 44, 32


class ConfigZnodes:
    """The config half of KafkaZkClient, in memory: entity znodes and the notifications written."""

    def __init__(self):
        self.entities: dict[tuple[str, str], dict[str, str]] = {("topics", "t"): {"retention.ms": "1000"}}
        self.notifications: list[tuple[str, str]] = []

    async def get_all_topics(self):
        return ["t"]

    async def get_topic_config(self, topic):
        return dict(self.entities.get(("topics", topic), {}))

    async def get_entity_config(self, entity_type, name):
        return dict(self.entities.get((entity_type, name), {}))

    async def change_entity_config(self, entity_type, name, config):
        self.entities[(entity_type, name)] = dict(config)
        self.notifications.append((entity_type, name))


class World:
    def __init__(self):
        self.config = BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:2181", "broker.id": str(ME)})
        self.dynamic = DynamicBrokerConfig(ME, self.config)
        self.zk = ConfigZnodes()
        cache = MetadataCache(ME)
        cache.update(UpdateMetadataRequest(ME, 1, 100, (PartitionState("t", 0, 1, ME, 0, (ME,), 0, (ME,)),), ()))
        self.admin = ZkAdmin(ME, self.zk, self.config, self.dynamic.default_log_config(), cache, self.dynamic)
        self.context = ServerContext(ME, self.config, cache, None, lambda: "c", self.admin)

    def call(self, handler, key, version, **fields):
        request = codec.build(codec.request_class(key, version), **fields)
        response = asyncio.run(handler(self.context, RequestHeader(key, version, 7, "tests", 0), request))
        codec.encode_response(key, version, 7, response)  # every answer must encode at its version
        return response

    def incremental(self, resources, validate_only=False, version=1):
        return self.call(handle_incremental_alter_configs, INCREMENTAL, version, validate_only=validate_only,
                         resources=[dict(resource_type=t, resource_name=n, configs=[
                             dict(name=k, config_operation=op, value=v) for k, op, v in ops]) for t, n, ops in resources])

    def alter(self, resources, validate_only=False, version=0):
        return self.call(handle_alter_configs, ALTER, version, validate_only=validate_only,
                         resources=[dict(resource_type=t, resource_name=n, configs=[
                             dict(name=k, value=v) for k, v in configs]) for t, n, configs in resources])


def results(response):
    return [(r.resource_type, r.resource_name, r.error_code) for r in response.responses]


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_alter_topic_writes_the_znode_and_a_notification(version):
    world = World()
    response = world.incremental([(2, "t", [("segment.bytes", 0, "4096"), ("retention.ms", 1, None),
                                            ("cleanup.policy", 2, "compact")])], version=version)
    assert results(response) == [(2, "t", ErrorCode.NONE)]
    assert world.zk.entities[("topics", "t")] == {"segment.bytes": "4096", "cleanup.policy": "delete,compact"}
    assert world.zk.notifications == [("topics", "t")]


def test_validate_only_writes_nothing():
    world = World()
    assert results(world.incremental([(2, "t", [("retention.ms", 0, "5")])], validate_only=True)) == [(2, "t", 0)]
    assert world.zk.entities[("topics", "t")] == {"retention.ms": "1000"} and world.zk.notifications == []


def test_errors_per_resource():
    world = World()
    response = world.incremental([
        (2, "ghost", [("retention.ms", 0, "5")]),
        (2, "t", [("segment.bytes", 0, "1")]),  # below the minimum
        (4, "", [("num.io.threads", 0, "4")]),  # not dynamic
        (4, "2", [("log.retention.ms", 0, "5")]),  # another broker
        (3, "x", [("a", 0, "b")]),  # unknown resource type
    ])
    codes = [r.error_code for r in response.responses]
    assert codes == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST,
                     ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    messages = [r.error_message for r in response.responses]
    assert "segment.bytes" in messages[1] and "Cannot update these configs dynamically: num.io.threads" in messages[2]
    assert world.zk.notifications == []


def test_duplicate_resources_and_bad_ops_are_invalid_requests():
    world = World()
    response = world.incremental([(2, "t", [("retention.ms", 0, "5")]), (2, "t", [("retention.ms", 0, "6")]),
                                  (4, "1", [("log.retention.ms", 2, "5")])])
    assert [r.error_code for r in response.responses] == [ErrorCode.INVALID_REQUEST] * 3
    assert world.zk.notifications == []


def test_broker_configs_go_to_the_broker_or_default_entity():
    world = World()
    response = world.incremental([(4, "", [("log.retention.ms", 0, "60000")]),
                                  (4, "1", [("leader.replication.throttled.rate", 0, "1024")])])
    assert [r.error_code for r in response.responses] == [0, 0]
    assert world.zk.entities[("brokers", "<default>")] == {"log.retention.ms": "60000"}
    assert world.zk.entities[("brokers", "1")] == {"leader.replication.throttled.rate": "1024"}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_whole_set(version):
    world = World()
    assert results(world.alter([(2, "t", [("segment.ms", "100")])], version=version)) == [(2, "t", 0)]
    assert world.zk.entities[("topics", "t")] == {"segment.ms": "100"}
    bad = world.alter([(2, "t", [("no.such.key", "1")]), (4, "1", [("broker.id", "7")])], version=version)
    assert [r.error_code for r in bad.responses] == [ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST]


def describe(world, resource_type, name):
    response = world.call(handle_describe_configs, DESCRIBE, 1, include_synonyms=True, resources=[
        dict(resource_type=resource_type, resource_name=name, configuration_keys=None)])
    (result,) = response.results
    return {c.name: (c.value, c.config_source, c.read_only, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in result.configs}


def test_describe_reports_dynamic_sources():
    world = World()
    world.dynamic.update("<default>", {"log.retention.ms": "60000", "leader.replication.throttled.rate": "10"})
    world.dynamic.update("1", {"leader.replication.throttled.rate": "20"})
    world.admin.defaults = world.dynamic.default_log_config()
    broker = describe(world, 4, "1")
    assert broker["leader.replication.throttled.rate"] == ("20", 2, False, [
        ("leader.replication.throttled.rate", "20", 2), ("leader.replication.throttled.rate", "10", 3),
        ("leader.replication.throttled.rate", str(2**63 - 1), 5)])
    assert broker["log.retention.ms"][:3] == ("60000", 3, False)
    assert broker["broker.id"][2] is True  # static keys stay read-only
    default = describe(world, 4, "")
    assert set(default) == {"log.retention.ms", "leader.replication.throttled.rate"}
    assert default["leader.replication.throttled.rate"] == ("10", 3, False, [("leader.replication.throttled.rate", "10", 3)])
    topic = describe(world, 2, "t")
    assert topic["retention.ms"] == ("1000", 1, False, [
        ("retention.ms", "1000", 1), ("log.retention.ms", "60000", 3), ("log.retention.ms", "604800000", 5)])
    world.zk.entities[("topics", "t")] = {}
    assert describe(world, 2, "t")["retention.ms"][:2] == ("60000", 3)  # the broker's dynamic default
    assert describe(world, 2, "t")["segment.bytes"] == (str(LogConfig().segment_bytes), 5, False, [
        ("log.segment.bytes", str(LogConfig().segment_bytes), 5)])
