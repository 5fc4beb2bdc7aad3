"""The pure decisions behind the non-group APIs' versions: topic ids (text form, metadata cache), Metadata's
all-topics rule and partition answers, authorized-operation bit fields, ListOffsets v0's legacy offsets,
leader-epoch fencing, KIP-360's producer id/epoch pair and DescribeConfigs' config types."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from brokers.control import PartitionState, UpdateMetadataRequest
from brokers.model import LEADER_DURING_DELETE, ZERO_UUID, topic_id_from_text, topic_id_text
from brokers.protocol.errors import ErrorCode
from brokers.replication.metadata_cache import MetadataCache
from brokers.security import acls
from brokers.server.context import ServerContext
from brokers.server.handlers import leader_epoch_error
from brokers.server.handlers.config_types import (
    BOOLEAN, DOUBLE, INT, LIST, LONG, PASSWORD, STRING, broker_config_type, topic_config_documentation, topic_config_type,
)
from brokers.server.handlers.list_offsets import consumer_visible, legacy_offsets
from brokers.server.handlers.metadata import all_topics_requested, partition_answer
from brokers.storage.log_config import LogConfig
from brokers.zk.client_base import new_uuid_base64


# -- topic ids ------------------------------------------------------------------------------------------

def test_topic_id_text_round_trips_kafka_uuid_strings():
    text = new_uuid_base64()
    assert len(text) == 22 and topic_id_text(topic_id_from_text(text)) == text
    known = uuid.UUID("21f45a3c-a1b7-43e3-aa00-c212691b6656")
    assert topic_id_text(known) == "IfRaPKG3Q-OqAMISaRtmVg"
    assert topic_id_from_text("IfRaPKG3Q-OqAMISaRtmVg") == known


@pytest.mark.parametrize("text", [None, "", "short", "!!!!!!!!!!!!!!!!!!!!!!"])
def test_a_missing_or_malformed_topic_id_is_zero(text):
    assert topic_id_from_text(text) == ZERO_UUID


def _state(topic, partition, leader=1, topic_id=""):
    return PartitionState(topic, partition, 1, leader, 0, (1,), 0, (1,), topic_id=topic_id)


def test_the_metadata_cache_keeps_topic_ids_until_the_topic_is_gone():
    cache = MetadataCache(1)
    text = new_uuid_base64()
    cache.update(UpdateMetadataRequest(1, 1, 1, (_state("t", 0, topic_id=text), _state("t", 1, topic_id=text),
                                                 _state("old", 0)), ()))
    topic_id = topic_id_from_text(text)
    assert (cache.topic_id("t"), cache.topic_name(topic_id)) == (topic_id, "t")
    assert cache.topic_id("old") == ZERO_UUID and cache.topic_name(ZERO_UUID) is None
    cache.update(UpdateMetadataRequest(1, 1, 1, (_state("t", 0, LEADER_DURING_DELETE),), ()))
    assert cache.topic_id("t") == topic_id  # partition 1 is still there
    cache.update(UpdateMetadataRequest(1, 1, 1, (_state("t", 1, LEADER_DURING_DELETE),), ()))
    assert (cache.topic_id("t"), cache.topic_name(topic_id)) == (ZERO_UUID, None)


# -- Metadata ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, topics, every", [
    (0, (), True), (0, ("a",), False), (1, None, True), (1, (), False), (11, None, True), (11, (), False)])
def test_all_topics_requested(version, topics, every):
    assert all_topics_requested(version, topics) is every


def _partition_state(leader, replicas=(1, 2), isr=(1, 2)):
    return SimpleNamespace(partition=0, leader=leader, leader_epoch=3, replicas=replicas, isr=isr,
                           offline_replicas=())


@pytest.mark.parametrize("version, leader, live, reachable, error, leader_id", [
    (1, 1, {1, 2}, {1, 2}, ErrorCode.NONE, 1),
    (1, 3, {1, 2}, {1, 2}, ErrorCode.LEADER_NOT_AVAILABLE, -1),  # not live
    (5, 1, {1, 2}, {2}, ErrorCode.LEADER_NOT_AVAILABLE, -1),  # live, no endpoint on this listener, before v6
    (6, 1, {1, 2}, {2}, ErrorCode.LISTENER_NOT_FOUND, -1),
    (0, 1, {1}, {1}, ErrorCode.REPLICA_NOT_AVAILABLE, 1),  # v0: replica 2 is down
    (1, 1, {1}, {1}, ErrorCode.NONE, 1),  # v1+: replica lists unfiltered, no error
])
def test_partition_answer(version, leader, live, reachable, error, leader_id):
    answer = partition_answer(_partition_state(leader), live, reachable, version)
    assert (answer["error_code"], answer["leader_id"], answer["leader_epoch"]) == (error, leader_id, 3)
    expected_replicas = [b for b in (1, 2) if b in reachable] if version == 0 else [1, 2]
    assert answer["replica_nodes"] == expected_replicas


# -- authorized operations --------------------------------------------------------------------------------

def test_operations_bit_field_is_kafkas_32_bit_field():
    assert acls.operations_bit_field([]) == 0
    assert acls.operations_bit_field([acls.READ, acls.DESCRIBE]) == (1 << 3) | (1 << 8)
    assert acls.operations_bit_field([31]) == -2147483648  # the sign bit, as Java's int


class _Authorizer:
    def __init__(self, allowed):
        self.allowed = allowed

    def authorize(self, principal, host, operation, resource_type, name):
        return (operation, resource_type, name) in self.allowed


def _context(authorizer=None):
    return ServerContext(1, None, MetadataCache(1), None, lambda: "c", None, authorizer=authorizer)


def test_authorized_operations_range_over_the_resource_types_supported_operations():
    every_topic = acls.operations_bit_field(acls.SUPPORTED_OPERATIONS[acls.TOPIC])
    assert _context().authorized_operations(acls.TOPIC, "t") == every_topic  # no authorizer: everything
    context = _context(_Authorizer({(acls.READ, acls.TOPIC, "t"), (acls.DESCRIBE, acls.TOPIC, "t"),
                                    (acls.ALTER, acls.CLUSTER, acls.CLUSTER_NAME)}))
    assert context.authorized_operations(acls.TOPIC, "t") == (1 << acls.READ) | (1 << acls.DESCRIBE)
    assert context.authorized_operations(acls.TOPIC, "other") == 0
    assert context.authorized_operations(acls.CLUSTER, acls.CLUSTER_NAME) == 1 << acls.ALTER
    assert context.authorized_operations(acls.GROUP, "g") == 0


# -- ListOffsets v0 --------------------------------------------------------------------------------------

SEGMENTS = [(0, 1000), (100, 2000), (250, 3000)]  # (base offset, last modified ms)


@pytest.mark.parametrize("target, max_num, has_data, expected", [
    (-1, 1, True, [300]),  # latest: the log end offset
    (-1, 10, True, [300, 250, 100, 0]),
    (-1, 2, False, [250, 100]),  # the active segment is empty: no log-end entry
    (-2, 5, True, [0]),  # earliest: the first point only
    (2500, 5, True, [100, 0]),  # segments modified at or before the target
    (3000, 1, True, [250]),
    (999, 1, True, []),  # none old enough
    (-1, 0, True, []),
])
def test_legacy_offsets(target, max_num, has_data, expected):
    assert legacy_offsets(SEGMENTS, 300, 5000, has_data, target, max_num) == expected


def test_a_consumer_never_sees_past_the_high_watermark():
    assert consumer_visible([300, 250, 100], 260) == [260, 250, 100]
    assert consumer_visible([250, 100], 260) == [250, 100]
    assert consumer_visible([], 260) == []


# -- fencing and producer ids ----------------------------------------------------------------------------

@pytest.mark.parametrize("current, leader, error", [
    (-1, 5, None), (5, 5, None), (4, 5, ErrorCode.FENCED_LEADER_EPOCH), (6, 5, ErrorCode.UNKNOWN_LEADER_EPOCH)])
def test_leader_epoch_error(current, leader, error):
    assert leader_epoch_error(current, leader) == error


# -- DescribeConfigs v3 ----------------------------------------------------------------------------------

def test_every_topic_config_has_a_type_and_documentation():
    for key in LogConfig().to_properties():
        assert topic_config_type(key) in (BOOLEAN, STRING, INT, LONG, DOUBLE, LIST), key
        assert topic_config_documentation(key), key
    assert (topic_config_type("retention.ms"), topic_config_type("cleanup.policy")) == (LONG, LIST)


def test_broker_config_types_follow_the_schema():
    assert broker_config_type("auto.create.topics.enable") == BOOLEAN
    assert broker_config_type("num.partitions") == INT
    assert broker_config_type("listeners") == LIST
    assert broker_config_type("control.plane.secret") == PASSWORD
