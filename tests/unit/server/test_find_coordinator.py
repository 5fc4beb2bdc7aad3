"""FindCoordinator: creates __consumer_offsets (a group key) or __transaction_state (a transaction key) on first
use (COORDINATOR_NOT_AVAILABLE meanwhile), then names the leader of the key's partition; no leader, or no
coordinator of that type on the broker, is COORDINATOR_NOT_AVAILABLE, an unknown key type INVALID_REQUEST."""
from __future__ import annotations

import asyncio

import pytest

from brokers.config import BrokerConfig
from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import BrokerInfo, EndPoint
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.protocol.framing import RequestHeader
from brokers.replication.metadata_cache import MetadataCache
from brokers.server.context import ServerContext
from brokers.security.acls import GROUP, TRANSACTIONAL_ID
from brokers.server.handlers.find_coordinator import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    handle_find_coordinator,
    key_type_error,
)

BROKERS = (BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),)),
           BrokerInfo(2, (EndPoint("PLAINTEXT", "127.0.0.2", 9093),)))


class Admin:
    def __init__(self):
        self.created = []

    async def create_topic(self, name, partitions, replication, config, assignment, validate_only):
        self.created.append((name, partitions, replication, config))
        if len(self.created) > 1:
            raise KafkaError("exists", ErrorCode.TOPIC_ALREADY_EXISTS)


def context(partition_of=lambda group: 1, txn_partition_of=None, **properties) -> ServerContext:
    config = BrokerConfig.from_properties({"zookeeper.connect": "z:2181", "broker.id": "1",
                                           "offsets.topic.num.partitions": "3", **properties})
    cache = MetadataCache(1)
    cache.update(UpdateMetadataRequest(1, 1, 1, (), BROKERS))
    return ServerContext(1, config, cache, None, lambda: "c", Admin(), coordinator_partition=partition_of,
                         transaction_partition=txn_partition_of)


def find(ctx, version, key="g", key_type=0):
    request = codec.build(codec.request_class(10, version), key=key, key_type=key_type)
    response = asyncio.run(handle_find_coordinator(ctx, RequestHeader(10, version, 5, "test", 0), request))
    assert codec.decode_response(10, version, codec.encode_response(10, version, 5, response)[4:])[0] == 5
    return response


def publish(ctx, leaders, topic=OFFSETS_TOPIC):
    states = tuple(PartitionState(topic, p, 1, leader, 0, (1, 2), 0, (1, 2)) for p, leader in enumerate(leaders))
    ctx.metadata_cache.update(UpdateMetadataRequest(1, 1, 1, states, BROKERS))


@pytest.mark.parametrize("version", [0, 1])
def test_first_lookup_creates_the_offsets_topic_capped_by_live_brokers(version):
    ctx = context()
    response = find(ctx, version)
    assert int(response.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE and response.node_id == -1
    assert ctx.admin.created == [(OFFSETS_TOPIC, 3, 2, {"cleanup.policy": "compact"})]  # RF 3 capped to 2 live
    assert int(find(ctx, version).error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE  # exists already: fine


@pytest.mark.parametrize("version", [0, 1])
def test_the_coordinator_is_the_leader_of_the_groups_partition(version):
    ctx = context(partition_of=lambda group: {"a": 0, "b": 1, "c": 2}[group])
    publish(ctx, [1, 2, -1])
    assert (find(ctx, version, "a").node_id, find(ctx, version, "a").host) == (1, "127.0.0.1")
    b = find(ctx, version, "b")
    assert (int(b.error_code), b.node_id, b.host, b.port) == (0, 2, "127.0.0.2", 9093)
    assert int(find(ctx, version, "c").error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE  # no leader


@pytest.mark.parametrize("version", [1, 2, 3])
def test_no_transaction_coordinator_on_the_broker_is_not_available(version):
    ctx = context()
    publish(ctx, [1, 1, 1])
    response = find(ctx, version, key="txn", key_type=1)
    assert (int(response.error_code), response.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    assert ctx.admin.created == []  # no __transaction_state either


@pytest.mark.parametrize("version", [1, 3])
def test_first_transaction_lookup_creates_the_transaction_state_topic(version):
    ctx = context(txn_partition_of=lambda txn: 0, **{"transaction.state.log.num.partitions": "4",
                                                     "transaction.state.log.segment.bytes": "1048576"})
    response = find(ctx, version, key="txn", key_type=1)
    assert (int(response.error_code), response.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    assert ctx.admin.created == [(TRANSACTION_STATE_TOPIC, 4, 2, {  # RF 3 capped to 2 live, min ISR 2 fits
        "cleanup.policy": "compact", "min.insync.replicas": "2", "segment.bytes": "1048576",
        "unclean.leader.election.enable": "false"})]
    assert int(find(ctx, version, key="txn", key_type=1).error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert len(ctx.admin.created) == 2  # exists already: fine, still not available until it has metadata


def test_transaction_state_min_isr_is_capped_by_the_replication_factor():
    ctx = context(txn_partition_of=lambda txn: 0, **{"transaction.state.log.replication.factor": "1",
                                                     "transaction.state.log.min.isr": "2"})
    find(ctx, 1, key="txn", key_type=1)
    (_, _, replication, configs), = ctx.admin.created
    assert (replication, configs["min.insync.replicas"]) == (1, "1")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_transaction_coordinator_is_the_leader_of_the_ids_partition(version):
    ctx = context(partition_of=lambda group: 0, txn_partition_of=lambda txn: {"x": 0, "y": 1, "z": 2}[txn])
    publish(ctx, [1, 1, 1])  # __consumer_offsets: all led by broker 1
    publish(ctx, [1, 2, -1], topic=TRANSACTION_STATE_TOPIC)
    y = find(ctx, version, key="y", key_type=1)
    assert (int(y.error_code), y.node_id, y.host, y.port) == (0, 2, "127.0.0.2", 9093)
    assert find(ctx, version, key="x", key_type=1).node_id == 1
    assert int(find(ctx, version, key="z", key_type=1).error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert find(ctx, version, key="y", key_type=0).node_id == 1  # the same key as a group: the offsets leader
    assert ctx.admin.created == []


@pytest.mark.parametrize("version", [1, 3])
def test_an_unknown_key_type_is_invalid_request(version):
    ctx = context()
    publish(ctx, [1, 1, 1])
    assert int(find(ctx, version, key_type=2).error_code) == ErrorCode.INVALID_REQUEST


def test_v3_the_flexible_version_names_the_coordinator():
    ctx = context()
    publish(ctx, [2, 2, 2])
    response = find(ctx, 3)
    assert (int(response.error_code), response.node_id, response.port) == (0, 2, 9093)


@pytest.mark.parametrize("key_type, allowed, expected", [
    (0, {GROUP}, None), (0, set(), ErrorCode.GROUP_AUTHORIZATION_FAILED),
    (1, {TRANSACTIONAL_ID}, None), (1, {GROUP}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    (5, {GROUP, TRANSACTIONAL_ID}, ErrorCode.INVALID_REQUEST),
])
def test_describe_on_the_key_is_checked_by_its_type(key_type, allowed, expected):
    assert key_type_error(key_type, lambda resource, name: resource in allowed and name == "k", "k") == expected
