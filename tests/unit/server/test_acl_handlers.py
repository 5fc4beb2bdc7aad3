"""The authorization checks at the handlers' entry points and the ACL APIs, driven directly over the
real handlers (the World of test_handlers: a real ReplicaManager and MetadataCache) with a real
AclAuthorizer whose ACLs are set in memory (writes go to an in-memory ZooKeeper)."""
from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

import pytest

from brokers.model import TopicPartition
from brokers.protocol import codec
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.security import acls as acl
from brokers.security.acls import ALLOW, DENY, AclEntry, ResourcePattern
from brokers.security.authorizer import AclAuthorizer
from brokers.server.context import PRINCIPAL
from brokers.server.handlers.acls import handle_create_acls, handle_delete_acls, handle_describe_acls
from brokers.server.handlers.fetch import handle_fetch
from brokers.server.handlers.list_offsets import handle_list_offsets
from brokers.server.handlers.metadata import handle_metadata
from brokers.server.handlers.topics import handle_create_topics, handle_delete_topics
from consumer_group.coordinator.handlers import (
    handle_describe_groups,
    handle_join_group,
    handle_list_groups,
    handle_offset_commit,
    handle_offset_fetch,
)
from tests.unit.server.test_handlers import World, batch, fetch_request, only_partition, produce
from tests.unit.zk.test_acl_znodes import MemoryZk

ANON = "User:ANONYMOUS"
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


def ace(op, permission=ALLOW, principal=ANON):
    return AclEntry(principal, "*", op, permission)


def grant(authorizer, resource_type, name, *entries, pattern=acl.LITERAL):
    key = ResourcePattern(resource_type, name, pattern)
    authorizer.acls = {**authorizer.acls, key: authorizer.acls.get(key, frozenset()) | frozenset(entries)}


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    w.context.authorizer = AclAuthorizer(MemoryZk(), frozenset(), allow_if_no_acl=False)
    yield w
    w.log_manager.shutdown()


def run(coro):
    return asyncio.run(coro)


def call(world, handler, key, version, **fields):
    return run(world.call(handler, key, version, **fields))


# -- ACL APIs -------------------------------------------------------------------------------------
FILTER = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
              host_filter=None, operation=1, permission_type=1)
CREATION = dict(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:alice", host="*",
                operation=3, permission_type=3)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_acl_apis_without_an_authorizer_are_security_disabled(world, version):
    world.context.authorizer = None
    assert call(world, handle_create_acls, CREATE_ACLS, version, creations=[CREATION]).results[0].error_code == \
        ErrorCode.SECURITY_DISABLED
    assert call(world, handle_describe_acls, DESCRIBE_ACLS, version, **FILTER).error_code == ErrorCode.SECURITY_DISABLED
    assert call(world, handle_delete_acls, DELETE_ACLS, version, filters=[FILTER]).filter_results[0].error_code == \
        ErrorCode.SECURITY_DISABLED


def test_acl_apis_need_alter_and_describe_on_the_cluster(world):
    assert call(world, handle_create_acls, CREATE_ACLS, 1, creations=[CREATION]).results[0].error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert call(world, handle_describe_acls, DESCRIBE_ACLS, 1, **FILTER).error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.DESCRIBE))
    assert call(world, handle_describe_acls, DESCRIBE_ACLS, 1, **FILTER).error_code == ErrorCode.NONE
    assert call(world, handle_delete_acls, DELETE_ACLS, 1, filters=[FILTER]).filter_results[0].error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", [1, 3])
def test_create_describe_delete_round_trip_with_invalid_bindings_rejected(world, version):
    world.context.authorizer.super_users = frozenset({ANON})
    bad_cluster = {**CREATION, "resource_type": 4, "resource_name": "other"}
    bad_pattern = {**CREATION, "resource_pattern_type": 1}
    prefixed = {**CREATION, "resource_pattern_type": 4, "resource_name": "t-", "permission_type": 2}
    results = call(world, handle_create_acls, CREATE_ACLS, version,
                   creations=[CREATION, bad_cluster, bad_pattern, prefixed]).results
    assert [r.error_code for r in results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST,
                                               ErrorCode.NONE]
    assert "kafka-cluster" in results[1].error_message
    described = call(world, handle_describe_acls, DESCRIBE_ACLS, version,
                     **{**FILTER, "resource_type_filter": 2, "resource_name_filter": "t-x", "pattern_type_filter": 2})
    assert [(r.resource_name, r.pattern_type, [a.permission_type for a in r.acls]) for r in described.resources] == [
        ("t-", 4, [2])]
    assert call(world, handle_describe_acls, DESCRIBE_ACLS, version, **{**FILTER, "operation": 0}).error_code == \
        ErrorCode.INVALID_REQUEST
    deleted = call(world, handle_delete_acls, DELETE_ACLS, version, filters=[{**FILTER, "pattern_type_filter": 3}])
    (result,) = deleted.filter_results
    assert [(m.resource_name, m.principal, m.operation) for m in result.matching_acls] == [("t", "User:alice", 3)]
    assert set(world.context.authorizer.acls) == {ResourcePattern(2, "t-", 4)}


# -- Produce, Fetch, ListOffsets, Metadata ----------------------------------------------------------
def test_produce_without_write_is_topic_authorization_failed_and_writes_nothing(world):
    response = run(produce(world, "t", 0, batch([1, 2])))
    assert only_partition(response).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert world.log("t", 0).log_end_offset == 0
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.WRITE))
    assert only_partition(run(produce(world, "t", 0, batch([1, 2])))).error_code == ErrorCode.NONE
    grant(world.context.authorizer, acl.TOPIC, "*", ace(acl.WRITE, DENY))  # deny on the wildcard wins
    assert only_partition(run(produce(world, "t", 0, batch([3])))).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert world.log("t", 0).log_end_offset == 2


def test_the_check_is_once_per_topic_not_per_record(world):
    calls = []
    authorizer = world.context.authorizer
    original = authorizer.authorize
    authorizer.authorize = lambda *args: calls.append(args) or original(*args)
    grant(authorizer, acl.TOPIC, "t", ace(acl.WRITE))
    run(produce(world, "t", 0, batch(list(range(500)))))
    assert len(calls) == 1


def test_without_an_authorizer_nothing_is_checked(world):
    world.context.authorizer = None
    assert only_partition(run(produce(world, "t", 0, batch([1])))).error_code == ErrorCode.NONE
    context = world.context
    assert context.filter_authorized(acl.READ, acl.TOPIC, ["a", "b"]) == {"a", "b"} == context.authorized_topics(acl.READ, "ab")
    assert context.authorized(acl.DELETE, acl.GROUP, "g") and context.authorized_on_cluster(acl.ALTER)
    assert context.authorized_by_resource_type(acl.WRITE, acl.TOPIC)
    with pytest.raises(KafkaError) as refused:
        context.acl_admin()
    assert refused.value.code == ErrorCode.SECURITY_DISABLED


def test_with_an_authorizer_the_context_asks_it_for_the_requesting_principal(world):
    grant(world.context.authorizer, acl.TOPIC, "a", ace(acl.READ))
    context = world.context
    assert context.filter_authorized(acl.READ, acl.TOPIC, ["a", "b"]) == {"a"} == context.authorized_topics(acl.READ, "ab")
    assert context.authorized(acl.READ, acl.TOPIC, "a") and not context.authorized(acl.READ, acl.TOPIC, "b")
    assert not context.authorized_on_cluster(acl.ALTER) and not context.authorized_by_resource_type(acl.WRITE, acl.TOPIC)
    assert context.authorized_by_resource_type(acl.READ, acl.TOPIC)
    assert context.acl_admin() is context.authorizer


def fetch_errors(world, replica_id=-1):
    request = {**fetch_request([("t", 0, 0, 1000), ("u", 0, 0, 1000)], max_wait=0), "replica_id": replica_id}
    segments = run(world.call(handle_fetch, 1, 11, **request))
    frame = b"".join(s if isinstance(s, (bytes, bytearray)) else s.read() for s in segments)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    _, body = codec.decode_response(1, 11, frame[4:])
    return {(t.topic, p.partition_index): p.error_code for t in body.responses for p in t.partitions}


def test_fetch_needs_read_for_consumers_and_cluster_action_for_followers(world):
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.READ))
    assert fetch_errors(world) == {("t", 0): ErrorCode.NONE, ("u", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert set(fetch_errors(world, replica_id=2).values()) == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.CLUSTER_ACTION))
    assert set(fetch_errors(world, replica_id=2).values()) == {ErrorCode.NONE}


def test_list_offsets_needs_describe(world):
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.WRITE))  # Write implies Describe
    response = call(world, handle_list_offsets, 2, 2, replica_id=-1, isolation_level=0, topics=[
        dict(name=n, partitions=[dict(partition_index=0, timestamp=-1)]) for n in ("t", "u")])
    assert {t.name: t.partitions[0].error_code for t in response.topics} == {
        "t": ErrorCode.NONE, "u": ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_metadata_hides_topics_without_describe_and_rejects_named_ones(world):
    grant(world.context.authorizer, acl.TOPIC, "l", ace(acl.DESCRIBE), pattern=acl.PREFIXED)
    everything = call(world, handle_metadata, 3, 4, topics=None, allow_auto_topic_creation=False)
    assert [t.name for t in everything.topics] == ["lat"]
    named = call(world, handle_metadata, 3, 4, topics=[dict(name="t"), dict(name="lat")], allow_auto_topic_creation=False)
    assert [(t.name, t.error_code) for t in named.topics] == [("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                                               ("lat", ErrorCode.NONE)]


def test_metadata_auto_creation_needs_create(world):
    grant(world.context.authorizer, acl.TOPIC, "new", ace(acl.DESCRIBE))
    response = call(world, handle_metadata, 3, 4, topics=[dict(name="new")], allow_auto_topic_creation=True)
    assert response.topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert world.admin.calls == []
    grant(world.context.authorizer, acl.TOPIC, "new", ace(acl.CREATE))
    response = call(world, handle_metadata, 3, 4, topics=[dict(name="new")], allow_auto_topic_creation=True)
    assert response.topics[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert world.admin.calls[0][:2] == ("create", "new")


# -- admin APIs -----------------------------------------------------------------------------------
def test_create_topics_needs_create_on_the_cluster_or_the_topic(world):
    topics = [dict(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[]) for n in ("a", "b")]
    grant(world.context.authorizer, acl.TOPIC, "a", ace(acl.CREATE))
    response = call(world, handle_create_topics, 19, 4, topics=topics, timeout=1000, validate_only=True)
    assert [(t.name, t.error_code) for t in response.topics] == [("a", ErrorCode.NONE),
                                                                 ("b", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.CREATE))
    response = call(world, handle_create_topics, 19, 4, topics=topics, timeout=1000, validate_only=True)
    assert {t.error_code for t in response.topics} == {ErrorCode.NONE}


def test_delete_topics_needs_delete_and_hides_topics_without_describe(world):
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.DESCRIBE))
    response = call(world, handle_delete_topics, 20, 3, topic_names=["t", "u"], timeout=0)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("u", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert world.admin.calls == []
    grant(world.context.authorizer, acl.TOPIC, "u", ace(acl.DELETE))  # Delete implies Describe
    response = call(world, handle_delete_topics, 20, 3, topic_names=["u"], timeout=0)
    assert world.admin.calls == [("delete", "u")]


# -- group APIs (consumer_group handlers through the same context) ---------------------------------
class FakeCoordinator:
    def __init__(self):
        self.calls = []

    async def join_group(self, request):
        self.calls.append(("join", request.group_id))
        return SimpleNamespace(error=ErrorCode.NONE, generation_id=1, protocol_type="consumer", protocol_name="range",
                               leader_id="m", member_id="m", members=[])

    async def commit_offsets(self, group, generation, member, instance, offsets, retention_ms=None, leader_epochs=None,
                             commit_timestamps=None):
        self.calls.append(("commit", sorted(offsets)))
        return dict.fromkeys(offsets, ErrorCode.NONE)

    def describe_group(self, group_id):
        return ErrorCode.NONE, None

    def fetch_offsets(self, group_id, partitions):
        self.calls.append(("fetch", group_id))
        return ErrorCode.NONE, dict.fromkeys(partitions or [])

    def list_groups(self, states=frozenset()):
        return ErrorCode.NONE, [SimpleNamespace(group_id=g, protocol_type="consumer", state="Stable")
                                for g in ("g1", "g2")]


def test_group_apis_need_read_on_the_group_and_the_topics(world):
    world.context.group_coordinator = coordinator = FakeCoordinator()
    join = dict(group_id="g1", session_timeout=10000, rebalance_timeout=30000, member_id="", group_instance_id=None,
                protocol_type="consumer", protocols=[dict(name="range", metadata=b"")])
    assert call(world, handle_join_group, 11, 5, **join).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert coordinator.calls == []
    grant(world.context.authorizer, acl.GROUP, "g1", ace(acl.READ))
    assert call(world, handle_join_group, 11, 5, **join).error_code == ErrorCode.NONE

    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.READ))
    commit = call(world, handle_offset_commit, 8, 7, group_id="g1", generation_id_or_member_epoch=1, member_id="m",
                  group_instance_id=None, topics=[dict(name=n, partitions=[dict(partition_index=0, committed_offset=5,
                                                                                committed_leader_epoch=-1,
                                                                                committed_metadata="")])
                                                  for n in ("t", "u")])
    assert {t.name: t.partitions[0].error_code for t in commit.topics} == {
        "t": ErrorCode.NONE, "u": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert coordinator.calls[-1][0] == "commit" and [tp.topic for tp in coordinator.calls[-1][1]] == ["t"]


def test_describe_groups_v3_plus_answers_the_operations_the_principal_may_do_on_the_group(world):
    world.context.group_coordinator = FakeCoordinator()

    def operations(version, requested=True):
        return call(world, handle_describe_groups, 15, version, groups=["g1"],
                    include_authorized_operations=requested).groups[0]
    assert int(operations(5).error_code) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert operations(5).authorized_operations == -(2**31)
    grant(world.context.authorizer, acl.GROUP, "g1", ace(acl.READ))
    assert operations(5).authorized_operations == (1 << acl.READ) | (1 << acl.DESCRIBE)  # Read implies Describe
    assert operations(3).authorized_operations == (1 << acl.READ) | (1 << acl.DESCRIBE)
    assert operations(5, requested=False).authorized_operations == -(2**31)
    grant(world.context.authorizer, acl.GROUP, "g1", ace(acl.DELETE))
    assert operations(4).authorized_operations == (1 << acl.READ) | (1 << acl.DELETE) | (1 << acl.DESCRIBE)


def test_offset_fetch_needs_describe_on_the_group_offset_commit_read(world):
    world.context.group_coordinator = coordinator = FakeCoordinator()
    grant(world.context.authorizer, acl.GROUP, "g1", ace(acl.DESCRIBE))
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.READ))
    fetch = call(world, handle_offset_fetch, 9, 7, group_id="g1", topics=[dict(name="t", partition_indexes=[0])])
    assert int(fetch.error_code) == ErrorCode.NONE and coordinator.calls == [("fetch", "g1")]
    commit = call(world, handle_offset_commit, 8, 8, group_id="g1", generation_id_or_member_epoch=1, member_id="m",
                  topics=[dict(name="t", partitions=[dict(partition_index=0, committed_offset=5)])])
    assert commit.topics[0].partitions[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_list_groups_shows_only_describable_groups_without_cluster_describe(world):
    world.context.group_coordinator = FakeCoordinator()
    grant(world.context.authorizer, acl.GROUP, "g2", ace(acl.DESCRIBE))
    assert [g.group_id for g in call(world, handle_list_groups, 16, 2).groups] == ["g2"]
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.DESCRIBE))
    assert [g.group_id for g in call(world, handle_list_groups, 16, 2).groups] == ["g1", "g2"]


def test_the_principal_comes_from_the_request_context(world):
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.WRITE, principal="User:alice"))

    async def as_alice():
        PRINCIPAL.set("User:alice")
        return await produce(world, "t", 0, batch([1]))
    assert only_partition(run(as_alice())).error_code == ErrorCode.NONE
    assert only_partition(run(produce(world, "t", 0, batch([1])))).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_offsets_for_leader_epoch_needs_cluster_action_or_describe(world):
    from brokers.server.handlers.offsets_for_leader_epoch import handle_offsets_for_leader_epoch
    topics = [dict(topic=n, partitions=[dict(partition=0, current_leader_epoch=-1, leader_epoch=0)]) for n in ("t", "u")]

    def errors():
        response = call(world, handle_offsets_for_leader_epoch, 23, 3, replica_id=2, topics=topics)
        return {t.topic: t.partitions[0].error_code for t in response.topics}
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.DESCRIBE))
    assert errors() == {"t": ErrorCode.NONE, "u": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.CLUSTER_ACTION))
    assert errors() == {"t": ErrorCode.NONE, "u": ErrorCode.NONE}


# -- configs, partitions, elections, reassignments --------------------------------------------------
def test_describe_and_alter_configs_need_their_operations_on_the_topic_or_the_cluster(world):
    from brokers.server.handlers.alter_configs import handle_incremental_alter_configs
    from brokers.server.handlers.describe_configs import handle_describe_configs
    resources = [dict(resource_type=2, resource_name="t", configuration_keys=["retention.ms"]),
                 dict(resource_type=4, resource_name="1", configuration_keys=["num.partitions"])]
    described = call(world, handle_describe_configs, 32, 1, include_synonyms=False, resources=resources)
    assert [r.error_code for r in described.results] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                          ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.ALTER_CONFIGS))  # implies DescribeConfigs
    described = call(world, handle_describe_configs, 32, 1, include_synonyms=False, resources=resources)
    assert [r.error_code for r in described.results] == [ErrorCode.NONE, ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    altered = call(world, handle_incremental_alter_configs, 44, 0, validate_only=True, resources=[
        dict(resource_type=2, resource_name="u", configs=[dict(name="retention.ms", config_operation=0, value="1")]),
        dict(resource_type=4, resource_name="", configs=[])])
    assert [r.error_code for r in altered.responses] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                         ErrorCode.CLUSTER_AUTHORIZATION_FAILED]


def test_create_partitions_needs_alter_on_the_topic(world):
    from brokers.server.handlers.create_partitions import handle_create_partitions
    response = call(world, handle_create_partitions, 37, 3, topics=[dict(name="t", count=9, assignments=None)],
                    timeout=1000, validate_only=True)
    assert response.results[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_elections_and_reassignments_need_alter_or_describe_on_the_cluster(world):
    from brokers.server.handlers.elect_leaders import handle_elect_leaders
    from brokers.server.handlers.reassignments import (
        handle_alter_partition_reassignments,
        handle_list_partition_reassignments,
    )
    elected = call(world, handle_elect_leaders, 43, 2, election_type=0, timeout=1000,
                   topic_partitions=[dict(topic="t", partitions=[0, 1])])
    assert elected.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert {p.error_code for r in elected.replica_election_results for p in r.partition_result} == {
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    altered = call(world, handle_alter_partition_reassignments, 45, 0, timeout=1000,
                   topics=[dict(name="t", partitions=[dict(partition_index=0, replicas=[1, 2])])])
    assert altered.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    listed = call(world, handle_list_partition_reassignments, 46, 0, timeout=1000, topics=None)
    assert listed.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(world.context.authorizer, acl.CLUSTER, acl.CLUSTER_NAME, ace(acl.ALTER))  # Alter implies Describe
    listed = call(world, handle_list_partition_reassignments, 46, 0, timeout=1000, topics=None)
    assert listed.error_code == ErrorCode.NOT_CONTROLLER  # authorized: on to the (absent) controller


def test_offset_fetch_needs_describe_on_the_group_and_the_topics(world):
    from consumer_group.coordinator.group import OffsetAndMetadata
    committed = {TopicPartition("t", 0): OffsetAndMetadata(5), TopicPartition("u", 0): OffsetAndMetadata(7)}
    world.context.group_coordinator = SimpleNamespace(
        fetch_offsets=lambda group, partitions: (ErrorCode.NONE, committed if partitions is None
                                                 else {tp: committed.get(tp) for tp in partitions}))

    def fetch(topics, version=5):
        response = call(world, handle_offset_fetch, 9, version, group_id="g", topics=topics)
        return response.error_code, {(t.name, p.partition_index): (p.committed_offset, p.error_code)
                                     for t in response.topics for p in t.partitions}
    named = [dict(name="t", partition_indexes=[0]), dict(name="u", partition_indexes=[0])]
    assert fetch(named)[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(world.context.authorizer, acl.GROUP, "g", ace(acl.DESCRIBE))
    grant(world.context.authorizer, acl.TOPIC, "t", ace(acl.DESCRIBE))
    assert fetch(named) == (ErrorCode.NONE, {("t", 0): (5, ErrorCode.NONE),
                                             ("u", 0): (-1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)})
    assert fetch(None) == (ErrorCode.NONE, {("t", 0): (5, ErrorCode.NONE)})  # all offsets: "u" left out
