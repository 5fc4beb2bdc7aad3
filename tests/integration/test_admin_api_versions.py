"""The broker's non-group APIs at the lowest and the highest version of Kafka 2.8's window, with raw requests
built from the schemas (``brokers.protocol.codec``), against one real 2-broker cluster with the ACL authorizer
(``allow.everyone.if.no.acl.found=true``: everything is allowed until a resource has ACLs).

Each test asserts what the version's fields mean in Kafka 2.8: topic ids (assigned at creation, given by the
controller to topics created without one, answered by Metadata v10+, CreateTopics v7, DeleteTopics v6),
Metadata's all-topics conventions and authorized-operation bit fields, CreateTopics v5+'s configs,
ListOffsets v0's old-style offsets and v4+'s epoch fencing, OffsetForLeaderEpoch, InitProducerId's
KIP-360 fields, DescribeConfigs v0's is_default and v3's types, the ACL APIs' v0 (literal patterns only)
and Produce v8+'s record errors.
"""
from __future__ import annotations

import base64
import json
import socket
import struct
import uuid

import pytest

from brokers.protocol import codec, legacy_codec, legacy_schemas
from brokers.protocol.record import Record, build_batch
from scripts.local.cluster import running_cluster
from tests.integration.conditions import wait_for
from tests.integration.znodes import connected_zk

TIMEOUT = 30
ZERO = uuid.UUID(int=0)
NO_OPERATIONS = -2147483648
# Kafka's AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
ALL_TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
ALL_CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
METADATA, CREATE_TOPICS, DELETE_TOPICS, LIST_OFFSETS, PRODUCE = 3, 19, 20, 2, 0
INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS = 22, 23, 32
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
TOPIC, CLUSTER, ANY, LITERAL, PREFIXED, ALLOW, READ = 2, 4, 1, 3, 4, 3, 3
ANONYMOUS = "User:ANONYMOUS"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("admin-versions") / "cluster", 2, tick_time=500,
                         session_timeout_ms=6000,
                         properties={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                     "allow.everyone.if.no.acl.found": "true", "num.partitions": "2",
                                     "default.replication.factor": "2", "offsets.topic.replication.factor": "1",
                                     "replica.fetch.backoff.ms": "200"}) as c:
        yield c


@pytest.fixture(scope="module")
def zk(cluster):
    with connected_zk(cluster) as client:
        yield client


class Raw:
    """One connection to one broker; ``call`` sends a request of (key, version) and decodes its answer."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, **fields):
        self.correlation_id += 1
        body = codec.build(codec.request_class(api_key, version), **fields)
        self.sock.sendall(codec.encode_request(api_key, version, self.correlation_id, "raw-admin", body))
        (size,) = struct.unpack(">i", self.sock.recv(4, socket.MSG_WAITALL))
        correlation_id, answer = codec.decode_response(api_key, version, self.sock.recv(size, socket.MSG_WAITALL))
        assert correlation_id == self.correlation_id
        return answer

    def call_legacy(self, api_key: int, version: int, values: dict) -> bytes:
        """A legacy version's request from its own fields (those kio's base version lacks too); the answer's
        body bytes."""
        self.correlation_id += 1
        header = struct.pack(">hhih", api_key, version, self.correlation_id, 9) + b"raw-admin"
        frame = header + legacy_codec.write(legacy_schemas.REQUESTS[api_key, version], values)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self.sock.recv(4, socket.MSG_WAITALL))
        answer = self.sock.recv(size, socket.MSG_WAITALL)
        assert struct.unpack_from(">i", answer)[0] == self.correlation_id
        return answer[4:]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def controller_raw(cluster, zk):
    """A connection to the controller (CreateTopics and DeleteTopics answers come from any broker; the
    controller's metadata is the first to change)."""
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    raw = Raw(cluster.kafka_port(controller))
    yield raw
    raw.close()


def znode_topic_id(zk, topic: str) -> uuid.UUID | None:
    text = json.loads(zk.get(f"/brokers/topics/{topic}")[0]).get("topic_id")
    return None if text is None else uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def metadata(raw: Raw, version: int, names, **fields):
    topics = None if names is None else [dict(name=n) for n in names]
    return raw.call(METADATA, version, topics=topics, allow_auto_topic_creation=False, **fields)


def create(raw: Raw, version: int, name: str, partitions: int = 1, rf: int = 2, **fields):
    (answer,) = raw.call(CREATE_TOPICS, version, timeout=TIMEOUT * 1000, topics=[dict(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
        configs=fields.pop("configs", []))], **fields).topics
    return answer


def leaders_everywhere(cluster, topic: str, partitions: int) -> bool:
    for broker in (1, 2):
        raw = Raw(cluster.kafka_port(broker))
        try:
            (answer,) = metadata(raw, 4, [topic]).topics
        finally:
            raw.close()
        if answer.error_code != 0 or len(answer.partitions) != partitions or any(
                p.leader_id < 0 for p in answer.partitions):
            return False
    return True


def ensure_topic(cluster, raw: Raw, name: str, partitions: int = 1, **fields) -> None:
    assert create(raw, 4, name, partitions, **fields).error_code == 0
    wait_for(lambda: leaders_everywhere(cluster, name, partitions), TIMEOUT, f"{name}'s leaders on both brokers")


def leader_raw(cluster, raw: Raw, topic: str) -> tuple[Raw, int]:
    """A connection to partition 0's leader, and its leader epoch."""
    (answer,) = metadata(raw, 9, [topic]).topics
    (p0,) = [p for p in answer.partitions if p.partition_index == 0]
    return Raw(cluster.kafka_port(p0.leader_id)), p0.leader_epoch


def produce(raw: Raw, version: int, topic: str, records: list[tuple[bytes | None, bytes]]):
    batch = build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)], base_timestamp=1_000_000)
    (answer,) = raw.call(PRODUCE, version, transactional_id=None, acks=-1, timeout=TIMEOUT * 1000, topic_data=[
        dict(name=topic, partition_data=[dict(index=0, records=bytes(batch))])]).responses
    (partition,) = answer.partition_responses
    return partition


# -- topic ids ----------------------------------------------------------------------------------------

def test_create_topics_v7_answers_the_topic_id_metadata_v10_and_v11_answer_too(cluster, zk, controller_raw):
    answer = create(controller_raw, 7, "ids-v7", partitions=2, rf=-1,
                    configs=[dict(name="retention.ms", value="7200000")])
    assert (answer.error_code, answer.num_partitions, answer.replication_factor) == (0, 2, 2)
    assert answer.topic_id == znode_topic_id(zk, "ids-v7") != ZERO
    configs = {c.name: c for c in answer.configs}
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("7200000", 1)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == ("delete", 5)
    assert not any(c.read_only or c.is_sensitive for c in answer.configs)
    wait_for(lambda: leaders_everywhere(cluster, "ids-v7", 2), TIMEOUT, "ids-v7's leaders")
    for version in (10, 11):
        (topic,) = metadata(controller_raw, version, ["ids-v7"]).topics
        assert topic.topic_id == answer.topic_id
    (topic,) = metadata(controller_raw, 9, ["ids-v7"]).topics  # v9 has no topic ids: the same topic
    assert len(topic.partitions) == 2


def test_the_controller_gives_a_topic_created_without_an_id_one(cluster, zk, controller_raw):
    """A topic znode as an older tool writes it (version 2, no topic_id): the controller writes an id into it
    (Kafka 2.8's processTopicIds) and every broker's metadata answers it."""
    zk.create("/config/topics/old-style", json.dumps({"version": 1, "config": {}}).encode(), makepath=True)
    zk.create("/brokers/topics/old-style", json.dumps({"version": 2, "partitions": {"0": [1, 2]},
                                                       "adding_replicas": {}, "removing_replicas": {}}).encode())
    topic_id = wait_for(lambda: znode_topic_id(zk, "old-style"), TIMEOUT, "the controller's topic id")
    assert topic_id != ZERO
    for broker in (1, 2):
        raw = Raw(cluster.kafka_port(broker))
        try:
            wait_for(lambda: [t.topic_id for t in metadata(raw, 10, ["old-style"]).topics] == [topic_id], TIMEOUT,
                     f"broker {broker}'s metadata to carry the id")
        finally:
            raw.close()


def test_delete_topics_v6_by_topic_id(cluster, zk, controller_raw):
    ensure_topic(cluster, controller_raw, "del-by-id")
    topic_id = znode_topic_id(zk, "del-by-id")
    wait_for(lambda: metadata(controller_raw, 10, ["del-by-id"]).topics[0].topic_id == topic_id, TIMEOUT, "the id")
    unknown = uuid.uuid4()
    answer = controller_raw.call(DELETE_TOPICS, 6, timeout=TIMEOUT * 1000, topics=[
        dict(name=None, topic_id=topic_id), dict(name=None, topic_id=unknown)])
    assert [(r.name, r.topic_id, r.error_code) for r in answer.responses] == [
        ("del-by-id", topic_id, 0), (None, unknown, 100)]  # UNKNOWN_TOPIC_ID
    assert [t.error_code for t in metadata(controller_raw, 10, ["del-by-id"]).topics] == [3]


def test_delete_topics_v6_with_name_and_id_is_an_invalid_request(cluster, controller_raw):
    ensure_topic(cluster, controller_raw, "del-both")
    topic_id = metadata(controller_raw, 10, ["del-both"]).topics[0].topic_id
    answer = controller_raw.call(DELETE_TOPICS, 6, timeout=TIMEOUT * 1000, topics=[
        dict(name="del-both", topic_id=topic_id)])
    assert [r.error_code for r in answer.responses] == [42]
    assert metadata(controller_raw, 10, ["del-both"]).topics[0].error_code == 0  # not deleted


def test_delete_topics_v0(cluster, controller_raw):
    ensure_topic(cluster, controller_raw, "del-v0")
    answer = controller_raw.call(DELETE_TOPICS, 0, timeout=TIMEOUT * 1000, topic_names=["del-v0", "never-was"])
    assert [(r.name, r.error_code) for r in answer.responses] == [("del-v0", 0), ("never-was", 3)]
    assert [t.error_code for t in metadata(controller_raw, 4, ["del-v0"]).topics] == [3]


# -- CreateTopics ----------------------------------------------------------------------------------------

def test_create_topics_v0_creates_and_v1_validates_only(cluster, controller_raw):
    assert create(controller_raw, 1, "validated", partitions=3, validate_only=True).error_code == 0
    assert [t.error_code for t in metadata(controller_raw, 4, ["validated"]).topics] == [3]
    assert create(controller_raw, 0, "created-v0", partitions=3).error_code == 0
    wait_for(lambda: leaders_everywhere(cluster, "created-v0", 3), TIMEOUT, "created-v0's leaders")
    assert create(controller_raw, 0, "created-v0").error_code == 36  # TOPIC_ALREADY_EXISTS


def test_create_topics_v5_without_describe_configs_answers_no_configs(cluster, controller_raw):
    """With ACLs on the topic that allow Create but not DescribeConfigs: topic_config_error_code 29."""
    answer = controller_raw.call(CREATE_ACLS, 3, creations=[dict(
        resource_type=TOPIC, resource_name="no-configs", resource_pattern_type=LITERAL, principal=ANONYMOUS,
        host="*", operation=5, permission_type=ALLOW)])  # CREATE
    assert [r.error_code for r in answer.results] == [0]
    wait_for(lambda: create(controller_raw, 5, "no-configs", validate_only=True).topic_config_error_code == 29,
             TIMEOUT, "the ACL on every broker")
    answer = create(controller_raw, 5, "no-configs")
    assert (answer.error_code, answer.topic_config_error_code, answer.configs, answer.num_partitions) == (0, 29, (), -1)


# -- Metadata --------------------------------------------------------------------------------------------

def test_metadata_v0_empty_list_is_every_topic_v1_empty_list_is_none(cluster, controller_raw):
    ensure_topic(cluster, controller_raw, "md-all")
    assert "md-all" in {t.name for t in metadata(controller_raw, 0, []).topics}
    assert metadata(controller_raw, 1, []).topics == ()
    assert "md-all" in {t.name for t in metadata(controller_raw, 1, None).topics}


def test_metadata_v10_naming_a_topic_id_is_an_invalid_request(controller_raw):
    answer = controller_raw.call(METADATA, 10, topics=[dict(name="x", topic_id=uuid.uuid4())],
                                 allow_auto_topic_creation=False)
    assert [t.error_code for t in answer.topics] == [42]


def test_metadata_v8_to_v11_authorized_operations_from_the_acls(cluster, controller_raw):
    """No ACLs on the cluster: every cluster operation; Read for ANONYMOUS on one topic: Read and Describe
    (implied) there, every operation on a topic without ACLs; -2147483648 when not asked for."""
    ensure_topic(cluster, controller_raw, "ops-read")
    ensure_topic(cluster, controller_raw, "ops-open")
    controller_raw.call(CREATE_ACLS, 1, creations=[dict(
        resource_type=TOPIC, resource_name="ops-read", resource_pattern_type=LITERAL, principal=ANONYMOUS,
        host="*", operation=READ, permission_type=ALLOW)])
    expected = {"ops-read": (1 << 3) | (1 << 8), "ops-open": ALL_TOPIC_OPERATIONS}

    def operations(version: int):
        answer = metadata(controller_raw, version, ["ops-read", "ops-open"],
                          include_cluster_authorized_operations=True, include_topic_authorized_operations=True)
        return getattr(answer, "cluster_authorized_operations", None), {
            t.name: t.topic_authorized_operations for t in answer.topics}

    wait_for(lambda: operations(8) == (ALL_CLUSTER_OPERATIONS, expected), TIMEOUT, "v8's operations")
    assert operations(10) == (ALL_CLUSTER_OPERATIONS, expected)
    assert operations(11) == (None, expected)  # v11 has no cluster field
    plain = metadata(controller_raw, 10, ["ops-open"])
    assert (plain.cluster_authorized_operations, plain.topics[0].topic_authorized_operations) == (
        NO_OPERATIONS, NO_OPERATIONS)


# -- ListOffsets, OffsetForLeaderEpoch, Produce ----------------------------------------------------------

@pytest.fixture(scope="module")
def produced(cluster, controller_raw):
    """Topic "offsets" with 3 records at offsets 0-2 (one Produce v3 batch); (leader connection, its epoch)."""
    ensure_topic(cluster, controller_raw, "offsets")
    raw, epoch = leader_raw(cluster, controller_raw, "offsets")
    assert produce(raw, 3, "offsets", [(b"k", b"a"), (b"k", b"b"), (b"k", b"c")]).error_code == 0
    yield raw, epoch
    raw.close()


def test_list_offsets_v0_answers_old_style_offsets(produced):
    raw, _ = produced

    def offsets(timestamp: int):
        answer = raw.call(LIST_OFFSETS, 0, replica_id=-1, topics=[dict(
            name="offsets", partitions=[dict(partition_index=0, timestamp=timestamp)])])
        (partition,) = answer.topics[0].partitions
        return partition.error_code, partition.offset

    assert offsets(-1) == (0, 3)  # latest: the high watermark
    assert offsets(-2) == (0, 0)  # earliest
    assert offsets(0) == (0, -1)  # no segment was last modified before 1970: an empty list


@pytest.mark.parametrize(("max_num_offsets", "expected"), [(1, [3]), (2, [3, 0]), (10, [3, 0])])
def test_list_offsets_v0_answers_up_to_max_num_offsets(produced, max_num_offsets, expected):
    """Kafka's legacyFetchOffsetsBefore: the log end, then segment base offsets, newest first, at most
    max_num_offsets of them (a field kio's v1 lacks: it reaches the handler through the legacy fields)."""
    raw, _ = produced
    answer = raw.call_legacy(LIST_OFFSETS, 0, {"replica_id": -1, "topics": [{"name": "offsets", "partitions": [
        {"partition_index": 0, "timestamp": -1, "max_num_offsets": max_num_offsets}]}]})
    name = b"offsets"
    prefix = struct.pack(">ih", 1, len(name)) + name + struct.pack(">iihi", 1, 0, 0, len(expected))
    assert answer == prefix + b"".join(struct.pack(">q", offset) for offset in expected)


def test_list_offsets_v6_fences_the_leader_epoch_and_answers_it(produced):
    raw, epoch = produced

    def ask(current_epoch: int, timestamp: int = -1):
        answer = raw.call(LIST_OFFSETS, 6, replica_id=-1, isolation_level=1, topics=[dict(name="offsets", partitions=[
            dict(partition_index=0, current_leader_epoch=current_epoch, timestamp=timestamp)])])
        (partition,) = answer.topics[0].partitions
        return partition.error_code, partition.offset, partition.leader_epoch

    assert ask(epoch) == (0, 3, epoch)
    assert ask(-1, -2) == (0, 0, epoch)
    assert ask(-1, 1_000_000) == (0, 0, epoch)
    assert ask(epoch + 1)[0] == 75  # UNKNOWN_LEADER_EPOCH
    if epoch > 0:
        assert ask(epoch - 1)[0] == 74  # FENCED_LEADER_EPOCH


def test_offset_for_leader_epoch_v0_and_v4(produced):
    raw, epoch = produced
    answer = raw.call(OFFSET_FOR_LEADER_EPOCH, 0, topics=[dict(topic="offsets", partitions=[
        dict(partition=0, leader_epoch=epoch)])])
    assert [(p.error_code, p.end_offset) for p in answer.topics[0].partitions] == [(0, 3)]

    def ask(current_epoch: int):
        answer = raw.call(OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=[dict(topic="offsets", partitions=[
            dict(partition=0, current_leader_epoch=current_epoch, leader_epoch=epoch)])])
        (partition,) = answer.topics[0].partitions
        return partition.error_code, partition.leader_epoch, partition.end_offset

    assert ask(epoch) == (0, epoch, 3)
    assert ask(epoch + 1) == (75, -1, -1)


def test_produce_v8_and_v9_answer_record_errors_for_keyless_records_on_a_compacted_topic(cluster, controller_raw):
    ensure_topic(cluster, controller_raw, "compacted", configs=[dict(name="cleanup.policy", value="compact")])
    raw, _ = leader_raw(cluster, controller_raw, "compacted")
    try:
        for version in (8, 9):
            answer = produce(raw, version, "compacted", [(b"k", b"kept"), (None, b"no key"), (None, b"nor here")])
            assert (answer.error_code, answer.error_message) == (87, "One or more records have been rejected")
            message = "Compacted topic cannot accept message without key in topic partition compacted-0."
            assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
                (1, message), (2, message)]
        answer = produce(raw, 3, "compacted", [(None, b"v3")])
        assert answer.error_code == 87  # v3 has no record_errors: the error alone
        assert produce(raw, 9, "compacted", [(b"k", b"v")]).base_offset == 0  # nothing was written before
    finally:
        raw.close()


# -- InitProducerId -------------------------------------------------------------------------------------

def test_init_producer_id_v0_and_v4(controller_raw):
    first = controller_raw.call(INIT_PRODUCER_ID, 0, transactional_id=None, transaction_timeout=60000)
    assert (first.error_code, first.producer_epoch) == (0, 0) and first.producer_id >= 0
    again = controller_raw.call(INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=60000,
                                producer_id=first.producer_id, producer_epoch=0)
    assert (again.error_code, again.producer_epoch) == (0, 0) and again.producer_id > first.producer_id
    half = controller_raw.call(INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=60000,
                               producer_id=first.producer_id, producer_epoch=-1)
    assert (half.error_code, half.producer_id, half.producer_epoch) == (42, -1, -1)


# -- DescribeConfigs ------------------------------------------------------------------------------------

def test_describe_configs_v0_is_default_and_v4_documentation_and_types(cluster, controller_raw):
    ensure_topic(cluster, controller_raw, "described", configs=[dict(name="retention.ms", value="3600000")])
    resources = [dict(resource_type=TOPIC, resource_name="described",
                      configuration_keys=["retention.ms", "cleanup.policy", "unclean.leader.election.enable"])]
    (v0,) = controller_raw.call(DESCRIBE_CONFIGS, 0, resources=resources).results
    assert [(c.name, c.value, c.config_source == 5) for c in v0.configs] == [
        ("retention.ms", "3600000", False), ("cleanup.policy", "delete", True),
        ("unclean.leader.election.enable", "false", True)]
    (v4,) = controller_raw.call(DESCRIBE_CONFIGS, 4, resources=resources, include_synonyms=True,
                                include_documentation=True).results
    assert [(c.name, c.config_source, c.config_type) for c in v4.configs] == [
        ("retention.ms", 1, 5), ("cleanup.policy", 5, 7), ("unclean.leader.election.enable", 5, 1)]
    assert all(c.documentation for c in v4.configs)
    (plain,) = controller_raw.call(DESCRIBE_CONFIGS, 4, resources=resources).results
    assert [c.documentation for c in plain.configs] == [None, None, None]


# -- the ACL APIs ---------------------------------------------------------------------------------------

def test_acls_v0_see_and_delete_literal_patterns_only(controller_raw):
    """v0 has no pattern type: its creations are LITERAL, its filters match LITERAL patterns only (Kafka 2.8
    answers a v0 request nothing that a v0 response could not express)."""
    answer = controller_raw.call(CREATE_ACLS, 3, creations=[dict(
        resource_type=TOPIC, resource_name="acl-", resource_pattern_type=PREFIXED, principal="User:p",
        host="*", operation=READ, permission_type=ALLOW)])
    assert [r.error_code for r in answer.results] == [0]
    answer = controller_raw.call(CREATE_ACLS, 0, creations=[dict(
        resource_type=TOPIC, resource_name="acl-lit", principal="User:p", host="*", operation=READ,
        permission_type=ALLOW)])
    assert [r.error_code for r in answer.results] == [0]
    everything = dict(resource_type_filter=TOPIC, resource_name_filter=None, principal_filter="User:p",
                      host_filter=None, operation=ANY, permission_type=ANY)
    v0 = controller_raw.call(DESCRIBE_ACLS, 0, **everything)
    assert [(r.resource_name, [a.principal for a in r.acls]) for r in v0.resources] == [("acl-lit", ["User:p"])]
    v3 = controller_raw.call(DESCRIBE_ACLS, 3, pattern_type_filter=ANY, **everything)
    assert sorted((r.resource_name, r.pattern_type) for r in v3.resources) == [("acl-", PREFIXED),
                                                                              ("acl-lit", LITERAL)]
    (deleted,) = controller_raw.call(DELETE_ACLS, 0, filters=[everything]).filter_results
    assert [(m.resource_name, m.principal) for m in deleted.matching_acls] == [("acl-lit", "User:p")]
    v3 = controller_raw.call(DESCRIBE_ACLS, 3, pattern_type_filter=ANY, **everything)
    assert [(r.resource_name, r.pattern_type) for r in v3.resources] == [("acl-", PREFIXED)]
    (deleted,) = controller_raw.call(DELETE_ACLS, 3, filters=[dict(pattern_type_filter=ANY, **everything)]).filter_results
    assert [(m.resource_name, m.pattern_type) for m in deleted.matching_acls] == [("acl-", PREFIXED)]
