"""The group APIs at the lowest and highest version of Kafka 2.8's window, as raw requests built with the
project's codec against a real 2-broker cluster (one module-scoped cluster): FindCoordinator 0/3,
JoinGroup 0/7, SyncGroup 0/5, Heartbeat 0/4, LeaveGroup 0/4, OffsetCommit 0/8, OffsetFetch 0/7,
DescribeGroups 0/5, ListGroups 0/4, DeleteGroups 0/2, OffsetDelete 0, and what each version means:
KIP-394's MEMBER_ID_REQUIRED, v7's protocol type and name, SyncGroup v5's protocol check, v0 offsets in
ZooKeeper on any broker, v2+ null topics, the states filter, authorized operations; then one round trip
at every version of every group API the table advertises, and kafka-python pinned to old releases."""
from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata

from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.placement import partition_for
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 8, 9, 42, 47
TOPIC = "versions"
SESSION_MS = 10000
OFFSETS_PARTITIONS = 4
ALL_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)  # Read, Delete, Describe
OMITTED = -(2**31)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("versions") / "cluster", 2, tick_time=500, session_timeout_ms=4000,
                         properties={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions":
                                     str(OFFSETS_PARTITIONS),
                                     "replica.fetch.backoff.ms": "200"}) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 2, 2)])[TOPIC].result(30)
        yield c


class Raw:
    """Raw requests to the brokers, one connection per broker, answers checked by correlation id."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.socks: dict[int, socket.socket] = {}
        self.correlation = itertools.count(1)

    def call(self, broker: int, api_key: int, version: int, **fields: Any) -> Any:
        body = codec.build(codec.request_class(api_key, version), **fields)
        correlation = next(self.correlation)
        sock = self._sock(broker)
        sock.sendall(codec.encode_request(api_key, version, correlation, "raw-versions", body))
        (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        answered, response = codec.decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))
        assert answered == correlation
        return response

    def _sock(self, broker: int) -> socket.socket:
        if broker not in self.socks:
            self.socks[broker] = socket.create_connection(("127.0.0.1", self.cluster.kafka_port(broker)), timeout=30)
        return self.socks[broker]

    def close(self) -> None:
        for sock in self.socks.values():
            sock.close()

    def coordinator(self, group: str, version: int = 3) -> int:
        """The coordinator's broker id, once FindCoordinator names one and it has loaded the group."""
        def found():
            answer = self.call(1, FIND_COORDINATOR, version, key=group, key_type=0)
            return answer.node_id if int(answer.error_code) == ErrorCode.NONE else None
        node = wait_for(found, 30, f"a coordinator for {group}", interval=0.2)
        wait_for(lambda: int(self.call(node, OFFSET_FETCH, 7, group_id=group, topics=None).error_code)
                 == ErrorCode.NONE, 30, f"{group} loaded", interval=0.2)
        return node


@pytest.fixture
def raw(cluster):
    client = Raw(cluster)
    yield client
    client.close()


def subscription() -> bytes:
    """ConsumerProtocolSubscription v0 of TOPIC."""
    return struct.pack(">hih", 0, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">i", -1)


def join(raw: Raw, node: int, version: int, group: str, member_id: str = "", **extra: Any) -> Any:
    fields = dict(group_id=group, session_timeout=SESSION_MS, rebalance_timeout=SESSION_MS, member_id=member_id,
                  group_instance_id=None, protocol_type="consumer",
                  protocols=[dict(name="range", metadata=subscription())])
    return raw.call(node, JOIN_GROUP, version, **{**fields, **extra})


def commit_fields(group: str, offset: int, generation: int = -1, member: str = "", leader_epoch: int = -1,
                  **extra: Any) -> dict:
    return dict(group_id=group, generation_id_or_member_epoch=generation, member_id=member, retention_time=-1,
                topics=[dict(name=TOPIC, partitions=[dict(partition_index=0, committed_offset=offset,
                                                          committed_leader_epoch=leader_epoch,
                                                          committed_metadata="m")])], **extra)


def state(raw: Raw, node: int, group: str) -> str:
    return raw.call(node, DESCRIBE_GROUPS, 0, groups=[group]).groups[0].group_state


def partition_errors(response: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): int(p.error_code) for t in response.topics for p in t.partitions}


def fetched(response: Any) -> dict[tuple[str, int], tuple[int, int]]:
    return {(t.name, p.partition_index): (p.committed_offset, int(p.error_code))
            for t in response.topics for p in t.partitions}


# -- FindCoordinator ------------------------------------------------------------------------------
def test_find_coordinator_v0_and_v3_name_the_same_broker(raw):
    node = raw.coordinator("g-find")
    v0 = raw.call(2, FIND_COORDINATOR, 0, key="g-find")
    assert (int(v0.error_code), v0.node_id, v0.port) == (0, node, raw.cluster.kafka_port(node))


def test_find_coordinator_v3_transaction_key_is_not_available_and_unknown_key_type_invalid(raw):
    raw.coordinator("g-find")  # __consumer_offsets exists: only the key type decides
    txn = raw.call(1, FIND_COORDINATOR, 3, key="txn", key_type=1)
    assert (int(txn.error_code), txn.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    assert int(raw.call(1, FIND_COORDINATOR, 3, key="g", key_type=2).error_code) == ErrorCode.INVALID_REQUEST


# -- a whole group life at the lowest versions ------------------------------------------------------
def test_lowest_versions_join_sync_heartbeat_commit_fetch_describe_list_leave_delete(raw):
    group = "g-lowest"
    node = raw.coordinator(group, version=0)
    joined = join(raw, node, 0, group)  # v0: no KIP-394 round trip, the session timeout is the rebalance timeout
    assert (int(joined.error_code), joined.generation_id, joined.protocol_name) == (0, 1, "range")
    member = joined.member_id
    assert joined.leader == member and [m.member_id for m in joined.members] == [member]
    synced = raw.call(node, SYNC_GROUP, 0, group_id=group, generation_id=1, member_id=member,
                      assignments=[dict(member_id=member, assignment=b"plan")])
    assert (int(synced.error_code), bytes(synced.assignment)) == (0, b"plan")
    assert int(raw.call(node, HEARTBEAT, 0, group_id=group, generation_id=1, member_id=member).error_code) == 0
    assert int(raw.call(node, HEARTBEAT, 0, group_id=group, generation_id=7, member_id=member).error_code) == \
        ErrorCode.ILLEGAL_GENERATION

    commit = raw.call(node, OFFSET_COMMIT, 1, **commit_fields(group, 11, 1, member))  # v1: generation checked
    assert partition_errors(commit) == {(TOPIC, 0): 0}
    stale = raw.call(node, OFFSET_COMMIT, 1, **commit_fields(group, 12, 0, member))
    assert partition_errors(stale) == {(TOPIC, 0): ErrorCode.ILLEGAL_GENERATION}
    fetch = raw.call(node, OFFSET_FETCH, 1, group_id=group, topics=[dict(name=TOPIC, partition_indexes=[0, 1])])
    assert fetched(fetch) == {(TOPIC, 0): (11, 0), (TOPIC, 1): (-1, 0)}

    described = raw.call(node, DESCRIBE_GROUPS, 0, groups=[group]).groups[0]
    assert (int(described.error_code), described.group_state, described.protocol_type, described.protocol_data) == \
        (0, "Stable", "consumer", "range")
    assert [(m.member_id, bytes(m.member_assignment)) for m in described.members] == [(member, b"plan")]
    listed = raw.call(node, LIST_GROUPS, 0)
    assert (group, "consumer") in {(g.group_id, g.protocol_type) for g in listed.groups}

    assert int(raw.call(node, LEAVE_GROUP, 0, group_id=group, member_id=member).error_code) == 0
    assert int(raw.call(node, LEAVE_GROUP, 0, group_id=group, member_id=member).error_code) == \
        ErrorCode.UNKNOWN_MEMBER_ID  # v0-2: the member's error at the top level
    wait_for(lambda: state(raw, node, group) == "Empty", 10, f"{group} empty")
    deleted = raw.call(node, DELETE_GROUPS, 0, groups_names=[group])
    assert [(r.group_id, int(r.error_code)) for r in deleted.results] == [(group, 0)]


# -- a whole group life at the highest versions -----------------------------------------------------
def test_highest_versions_join_sync_heartbeat_commit_fetch_describe_list_leave_delete(raw):
    group = "g-highest"
    node = raw.coordinator(group)
    required = join(raw, node, 7, group)  # KIP-394: a new dynamic member first gets its id
    assert int(required.error_code) == ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    assert (required.protocol_type, required.protocol_name) == (None, None)  # v7: null, not ""
    joined = join(raw, node, 7, group, required.member_id)
    assert (int(joined.error_code), joined.generation_id, joined.protocol_type, joined.protocol_name) == \
        (0, 1, "consumer", "range")
    member = joined.member_id

    def sync(**protocol):
        return raw.call(node, SYNC_GROUP, 5, group_id=group, generation_id=1, member_id=member,
                        group_instance_id=None, assignments=[dict(member_id=member, assignment=b"plan")], **protocol)
    assert int(sync(protocol_type="consumer", protocol_name="roundrobin").error_code) == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert int(sync(protocol_type=None, protocol_name=None).error_code) == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    synced = sync(protocol_type="consumer", protocol_name="range")
    assert (int(synced.error_code), synced.protocol_type, synced.protocol_name, bytes(synced.assignment)) == \
        (0, "consumer", "range", b"plan")
    assert int(raw.call(node, HEARTBEAT, 4, group_id=group, generation_id=1, member_id=member,
                        group_instance_id=None).error_code) == 0

    commit = raw.call(node, OFFSET_COMMIT, 8, **commit_fields(group, 21, 1, member, 2, group_instance_id=None))
    assert partition_errors(commit) == {(TOPIC, 0): 0}
    missing = raw.call(node, OFFSET_COMMIT, 8, **{**commit_fields(group, 1, 1, member), "topics": [
        dict(name=TOPIC, partitions=[dict(partition_index=9, committed_offset=1, committed_leader_epoch=-1)])]})
    assert partition_errors(missing) == {(TOPIC, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    every = raw.call(node, OFFSET_FETCH, 7, group_id=group, topics=None, require_stable=True)  # null: all
    assert int(every.error_code) == 0 and fetched(every) == {(TOPIC, 0): (21, 0)}
    answered = every.topics[0].partitions[0]
    assert (answered.committed_leader_epoch, answered.metadata) == (2, "m")  # v5+: the committed leader epoch

    described = raw.call(node, DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=True).groups[0]
    assert (described.group_state, described.authorized_operations) == ("Stable", ALL_GROUP_OPERATIONS)
    assert [(m.member_id, m.group_instance_id) for m in described.members] == [(member, None)]
    quiet = raw.call(node, DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False).groups[0]
    assert quiet.authorized_operations == OMITTED

    def listed(*states):
        return {(g.group_id, g.group_state) for g in raw.call(node, LIST_GROUPS, 4, states_filter=list(states)).groups}
    assert (group, "Stable") in listed() and (group, "Stable") in listed("Stable", "Dead")
    assert group not in {g for g, _ in listed("Empty")} | {g for g, _ in listed("stable")}  # names as Kafka's

    left = raw.call(node, LEAVE_GROUP, 4, group_id=group, members=[dict(member_id=member, group_instance_id=None)])
    assert int(left.error_code) == 0 and [(m.member_id, int(m.error_code)) for m in left.members] == [(member, 0)]
    wait_for(lambda: (group, "Empty") in listed("Empty"), 10, f"{group} listed as Empty")
    offset_deleted = raw.call(node, OFFSET_DELETE, 0, group_id=group, topics=[dict(name=TOPIC, partitions=[
        dict(partition_index=0), dict(partition_index=9)])])
    assert int(offset_deleted.error_code) == 0 and partition_errors(offset_deleted) == {
        (TOPIC, 0): 0, (TOPIC, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    never = next(name for name in (f"g-never-{i}" for i in itertools.count())
                 if partition_for(name, OFFSETS_PARTITIONS) == partition_for(group, OFFSETS_PARTITIONS))
    deleted = raw.call(node, DELETE_GROUPS, 2, groups_names=[group, never])
    assert {r.group_id: int(r.error_code) for r in deleted.results} == {group: 0, never: ErrorCode.GROUP_ID_NOT_FOUND}


# -- JoinGroup v3/v4 (KIP-394) and v5 static membership (KIP-345) -----------------------------------
def test_join_group_v3_takes_a_new_member_at_once_v4_asks_for_its_id_first(raw):
    node = raw.coordinator("g-kip394-v3")
    assert int(join(raw, node, 3, "g-kip394-v3").error_code) == 0
    node = raw.coordinator("g-kip394-v4")
    assert int(join(raw, node, 4, "g-kip394-v4").error_code) == ErrorCode.MEMBER_ID_REQUIRED


def test_static_member_v5_joins_without_member_id_round_trip_and_is_described_with_its_instance_id(raw):
    group = "g-static"
    node = raw.coordinator(group)
    joined = join(raw, node, 7, group, group_instance_id="instance-1")
    assert int(joined.error_code) == 0 and joined.member_id.startswith("instance-1-")
    member = joined.member_id
    synced = raw.call(node, SYNC_GROUP, 5, group_id=group, generation_id=1, member_id=member,
                      group_instance_id="instance-1", protocol_type="consumer", protocol_name="range",
                      assignments=[dict(member_id=member, assignment=b"plan")])
    assert int(synced.error_code) == 0
    v4 = raw.call(node, DESCRIBE_GROUPS, 4, groups=[group]).groups[0]
    assert [(m.member_id, m.group_instance_id) for m in v4.members] == [(member, "instance-1")]
    fenced = raw.call(node, OFFSET_COMMIT, 7, **commit_fields(group, 1, 1, "someone-else",
                                                              group_instance_id="instance-1"))
    assert partition_errors(fenced) == {(TOPIC, 0): ErrorCode.FENCED_INSTANCE_ID}
    left = raw.call(node, LEAVE_GROUP, 4, group_id=group, members=[dict(member_id="", group_instance_id="instance-1")])
    assert [(m.group_instance_id, int(m.error_code)) for m in left.members] == [("instance-1", 0)]


# -- OffsetCommit v0 / OffsetFetch v0: ZooKeeper offsets on any broker ------------------------------
def test_offset_commit_v0_and_fetch_v0_work_on_every_broker_and_v1_plus_sees_them(raw):
    group = "g-zk"
    node = raw.coordinator(group)
    other = 2 if node == 1 else 1
    commit = raw.call(node, OFFSET_COMMIT, 0, **commit_fields(group, 5))
    assert partition_errors(commit) == {(TOPIC, 0): 0}
    request = dict(group_id=group, topics=[dict(name=TOPIC, partition_indexes=[0, 1]), dict(name="nope",
                                                                                          partition_indexes=[0])])
    for broker in (node, other):  # v0 reads ZooKeeper: no coordinator needed
        assert fetched(raw.call(broker, OFFSET_FETCH, 0, **request)) == {
            (TOPIC, 0): (5, 0), (TOPIC, 1): (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ("nope", 0): (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
    assert fetched(raw.call(node, OFFSET_FETCH, 7, group_id=group, topics=None)) == {(TOPIC, 0): (5, 0)}

    elsewhere = raw.call(other, OFFSET_COMMIT, 0, **{**commit_fields(group, 6), "topics": [
        dict(name=TOPIC, partitions=[dict(partition_index=1, committed_offset=6, committed_leader_epoch=-1)])]})
    assert partition_errors(elsewhere) == {(TOPIC, 1): 0}  # Kafka's v0 commit: any broker writes ZooKeeper
    assert fetched(raw.call(node, OFFSET_FETCH, 0, **request))[(TOPIC, 1)] == (6, 0)
    refused = raw.call(other, OFFSET_COMMIT, 1, **commit_fields(group, 7))
    assert partition_errors(refused) == {(TOPIC, 0): ErrorCode.NOT_COORDINATOR}  # v1+: the coordinator only


def test_offset_fetch_errors_per_partition_before_v2_and_at_the_top_from_v2(raw):
    group = "g-errors"
    node = raw.coordinator(group)
    other = 2 if node == 1 else 1
    topics = [dict(name=TOPIC, partition_indexes=[0])]
    v1 = raw.call(other, OFFSET_FETCH, 1, group_id=group, topics=topics)
    assert fetched(v1) == {(TOPIC, 0): (-1, ErrorCode.NOT_COORDINATOR)}
    v7 = raw.call(other, OFFSET_FETCH, 7, group_id=group, topics=topics, require_stable=False)
    assert int(v7.error_code) == ErrorCode.NOT_COORDINATOR and v7.topics == ()


# -- kafka-python pinned to old brokers: the versions those releases spoke ---------------------------
@pytest.mark.parametrize("api_version, commit_version", [((0, 8, 1), 0), ((0, 8, 2), 1)])
def test_kafka_python_pinned_before_group_management_commits_and_reads_offsets(raw, api_version, commit_version):
    """kafka-python at 0.8.1 commits and fetches with v0 (ZooKeeper offsets), at 0.8.2 with v1 through the
    coordinator FindCoordinator v0 names; a group without members, as those releases had."""
    group = f"kp-{commit_version}"
    consumer = KafkaConsumer(bootstrap_servers=raw.cluster.bootstrap_servers, group_id=group, api_version=api_version,
                             enable_auto_commit=False)
    try:
        partitions = [KafkaTopicPartition(TOPIC, 0), KafkaTopicPartition(TOPIC, 1)]
        consumer.assign(partitions)
        consumer.commit({partitions[0]: OffsetAndMetadata(3, "", -1), partitions[1]: OffsetAndMetadata(4, "", -1)})
        assert [consumer.committed(tp) for tp in partitions] == [3, 4]
    finally:
        consumer.close()
    node = raw.coordinator(group)
    stored = raw.call(node, OFFSET_FETCH, 0, group_id=group, topics=[dict(name=TOPIC, partition_indexes=[0, 1])])
    assert fetched(stored) == {(TOPIC, 0): (3, 0), (TOPIC, 1): (4, 0)}


def test_kafka_python_pinned_to_0_11_consumes_as_a_group_and_commits(raw):
    """kafka-python at 0.11: FindCoordinator v1, JoinGroup v2, SyncGroup v1, Heartbeat v1, OffsetCommit v3,
    OffsetFetch v3, LeaveGroup v1."""
    producer = Producer({"bootstrap.servers": raw.cluster.bootstrap_servers, "acks": "all"})
    for i in range(6):
        producer.produce(TOPIC, str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=raw.cluster.bootstrap_servers, group_id="kp-0-11",
                             api_version=(0, 11), auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
    seen: list[bytes] = []
    try:
        wait_for(lambda: seen.extend(r.value for rs in consumer.poll(500).values() for r in rs) or len(seen) >= 6,
                 60, "six records through the group", interval=0)
        consumer.commit()
        node = raw.coordinator("kp-0-11")
        described = raw.call(node, DESCRIBE_GROUPS, 5, groups=["kp-0-11"]).groups[0]
        assert (described.group_state, len(described.members)) == ("Stable", 1)
    finally:
        consumer.close()
    committed = raw.call(node, OFFSET_FETCH, 7, group_id="kp-0-11", topics=None)
    ends = {tp: offset for tp, (offset, error) in fetched(committed).items() if error == 0}
    assert ends == {(TOPIC, 0): 3, (TOPIC, 1): 3}  # the positions after the six records
    wait_for(lambda: state(raw, node, "kp-0-11") == "Empty", 10, "the group empty after LeaveGroup v1")


# -- every version of every group API in the table: one round trip each ---------------------------------
GROUP_APIS = (ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
              ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
              ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE)


def _unknown_member(group: str) -> dict:
    return dict(group_id=group, generation_id=1, member_id="nobody", group_instance_id=None, assignments=[],
                protocol_type="consumer", protocol_name="range",
                members=[dict(member_id="nobody", group_instance_id=None)])


def round_trip(raw: Raw, key: ApiKey, version: int) -> tuple[int, Any]:
    """(the answer's error for a request at ``version`` about a group of its own, the answer)."""
    group = f"every-{key.api_name}-v{version}"
    node = raw.coordinator(group)
    if key == ApiKey.FIND_COORDINATOR:
        answer = raw.call(2, key, version, key=group, key_type=0)
        assert answer.node_id == node
        return int(answer.error_code), answer
    if key == ApiKey.JOIN_GROUP:
        answer = join(raw, node, version, group)
        return int(answer.error_code), answer
    if key in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP):
        answer = raw.call(node, key, version, **_unknown_member(group))
        members = getattr(answer, "members", ())
        return int(members[0].error_code if members else answer.error_code), answer
    if key == ApiKey.OFFSET_COMMIT:
        answer = raw.call(node, key, version, **commit_fields(group, 9, group_instance_id=None))
        return partition_errors(answer)[(TOPIC, 0)], answer
    if key == ApiKey.OFFSET_FETCH:
        answer = raw.call(node, key, version, group_id=group, topics=[dict(name=TOPIC, partition_indexes=[0])])
        return fetched(answer)[(TOPIC, 0)][1], answer
    if key == ApiKey.DESCRIBE_GROUPS:
        answer = raw.call(node, key, version, groups=[group], include_authorized_operations=True)
        return int(answer.groups[0].error_code), answer
    if key == ApiKey.LIST_GROUPS:
        answer = raw.call(node, key, version, states_filter=[])
        return int(answer.error_code), answer
    if key == ApiKey.DELETE_GROUPS:
        answer = raw.call(node, key, version, groups_names=[group])
        return int(answer.results[0].error_code), answer
    answer = raw.call(node, key, version, group_id=group, topics=[dict(name=TOPIC, partitions=[
        dict(partition_index=0)])])
    return int(answer.error_code), answer


EXPECTED = {  # what Kafka 2.8 answers for a group nobody joined
    ApiKey.FIND_COORDINATOR: lambda v: ErrorCode.NONE,
    ApiKey.JOIN_GROUP: lambda v: ErrorCode.MEMBER_ID_REQUIRED if v >= 4 else ErrorCode.NONE,
    ApiKey.SYNC_GROUP: lambda v: ErrorCode.UNKNOWN_MEMBER_ID,
    ApiKey.HEARTBEAT: lambda v: ErrorCode.UNKNOWN_MEMBER_ID,
    ApiKey.LEAVE_GROUP: lambda v: ErrorCode.UNKNOWN_MEMBER_ID,
    ApiKey.OFFSET_COMMIT: lambda v: ErrorCode.NONE,  # generation -1: a simple commit
    ApiKey.OFFSET_FETCH: lambda v: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if v == 0 else ErrorCode.NONE,
    ApiKey.DESCRIBE_GROUPS: lambda v: ErrorCode.NONE,  # described as Dead
    ApiKey.LIST_GROUPS: lambda v: ErrorCode.NONE,
    ApiKey.DELETE_GROUPS: lambda v: ErrorCode.GROUP_ID_NOT_FOUND,
    ApiKey.OFFSET_DELETE: lambda v: ErrorCode.GROUP_ID_NOT_FOUND,
}


@pytest.mark.parametrize("key, version", [(key, v) for key in GROUP_APIS
                                          for v in range(key.min_version, key.max_version + 1)],
                         ids=lambda value: value.api_name if isinstance(value, ApiKey) else f"v{value}")
def test_every_advertised_version_round_trips(raw, key, version):
    error, answer = round_trip(raw, key, version)
    assert error == EXPECTED[key](version), answer
