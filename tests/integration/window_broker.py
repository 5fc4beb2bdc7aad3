"""The broker the API-window round trips run against, and the state their recipes need (topics with
records, committed offsets, groups with members, ACLs), each made once on first use through the wire at
versions older clients have always sent, so that a recipe's own request is the only new thing it tries.

One broker with two listeners: PLAINTEXT (the principal is ``User:ANONYMOUS``, a super user) and
SASL_PLAINTEXT with PLAIN (``admin``, a super user too), and the ACL authorizer on, so the ACL APIs and
the authorized-operations fields answer as they do on a secured cluster."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, NamedTuple

from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch, iter_records
from scripts.local.cluster import Cluster, ClusterError, ClusterSpec
from scripts.local.zookeeper import find_free_base_port
from tests.integration.conditions import wait_for
from tests.integration.raw_client import RawConnection

TOPIC = "window"  # 1 partition, RECORDS records with timestamps BASE_TS, BASE_TS + 1000, ...
RECORDS = 3
BASE_TS = 1_600_000_000_000
RETENTION_MS = "3600000"  # TOPIC's one override
PROTOCOL = "range"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_admin="admin-secret";')
PLAIN_TOKEN = b"\x00admin\x00admin-secret"
TIMEOUT = 30


WINDOW_PROPERTIES = {
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


def spec_with_sasl_listener(properties: dict[str, str] | None = None) -> ClusterSpec:
    """One broker: PLAINTEXT on its Kafka port, SASL_PLAINTEXT (PLAIN) on a second free port, with
    ``properties`` (the API window's broker by default; they name the SASL listener's JAAS users)."""
    for _ in range(10):
        spec = ClusterSpec.on_free_ports(1, tick_time=500, session_timeout_ms=6000)
        sasl = find_free_base_port(1)
        if sasl not in (spec.zookeeper_port, spec.kafka_port_base, spec.http_port_base):
            break
    return dataclasses.replace(spec, properties={
        "listeners": f"PLAINTEXT://127.0.0.1:{{kafka_port}},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        **(WINDOW_PROPERTIES if properties is None else properties),
    })


def sasl_port(spec: ClusterSpec) -> int:
    return int(spec.properties["listeners"].rsplit(":", 1)[1])


def start_cluster(directory: Path, properties: dict[str, str] | None = None) -> Cluster:
    """The one-broker cluster (``spec_with_sasl_listener(properties)``), started; once more on fresh ports if a
    port was taken in between."""
    for attempt in (1, 2):
        cluster = Cluster(directory / f"cluster-{attempt}", spec_with_sasl_listener(properties))
        try:
            cluster.up(timeout=60)
            return cluster
        except ClusterError as exc:  # up() has taken down what it started
            if attempt == 2 or "address already in use" not in str(exc):
                raise
    raise AssertionError("unreachable")


class Member(NamedTuple):
    group: str
    generation: int
    member_id: str
    instance_id: str | None


class WindowBroker:
    """A running one-broker cluster and the recipes' shared state."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.broker_id = cluster.broker_ids[0]
        self.ports = {"PLAINTEXT": cluster.kafka_port(self.broker_id), "SASL_PLAINTEXT": sasl_port(cluster.spec)}
        self._made: dict[str, Any] = {}

    @property
    def log_file(self) -> Path:
        return self.cluster.broker_dir(self.broker_id) / "broker.log"

    def connect(self, listener: str = "PLAINTEXT", client_id: str = "api-window") -> RawConnection:
        return RawConnection("127.0.0.1", self.ports[listener], client_id)

    def call(self, key: int, version: int, /, **fields: Any) -> Any:
        """One request on a connection of its own (a closed connection affects nobody else)."""
        with self.connect() as connection:
            return connection.request(key, version, **fields)

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self._made:
            self._made[name] = make()
        return self._made[name]

    # --- topics and records ------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        topic = dict(name=name, num_partitions=partitions, replication_factor=1,
                     configs=[dict(name=k, value=v) for k, v in (configs or {}).items()])
        (result,) = self.call(ApiKey.CREATE_TOPICS, 4, topics=[topic], timeout=TIMEOUT * 1000).topics
        assert result.error_code == ErrorCode.NONE, result

    def topic(self, name: str, configs: dict[str, str] | None = None) -> str:
        """A one-partition topic, created on first use."""
        return self.once(f"topic {name}", lambda: self.create_topic(name, configs=configs) or name)

    def filled_topic(self) -> str:
        """TOPIC with its RECORDS records, one v2 batch, produced once."""
        def make() -> str:
            self.topic(TOPIC, {"retention.ms": RETENTION_MS})
            records = [Record(i, i * 1000, None, f"r{i}".encode()) for i in range(RECORDS)]
            batch = bytes(build_batch(records, base_timestamp=BASE_TS))
            response = self.call(ApiKey.PRODUCE, 7, acks=-1, timeout=TIMEOUT * 1000, transactional_id=None,
                                 topic_data=[dict(name=TOPIC, partition_data=[dict(index=0, records=batch)])])
            (partition,) = response.responses[0].partition_responses
            assert partition.error_code == ErrorCode.NONE and partition.base_offset == 0, partition
            return TOPIC
        return self.once("filled", make)

    def produce(self, topic: str, count: int) -> None:
        """``count`` records to ``topic``-0 in one batch, acks=all."""
        batch = bytes(build_batch([Record(i, i, None, b"v%d" % i) for i in range(count)], base_timestamp=BASE_TS))
        response = self.call(ApiKey.PRODUCE, 7, acks=-1, timeout=TIMEOUT * 1000, transactional_id=None,
                             topic_data=[dict(name=topic, partition_data=[dict(index=0, records=batch)])])
        (partition,) = response.responses[0].partition_responses
        assert partition.error_code == ErrorCode.NONE, partition

    def values_from(self, topic: str, offset: int) -> list[bytes | None]:
        """The values of ``topic``-0 from ``offset`` to its end, read with Fetch v11."""
        partition = dict(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20, log_start_offset=-1,
                         current_leader_epoch=-1)
        response = self.call(ApiKey.FETCH, 11, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=1 << 20,
                             isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                             topics=[dict(topic=topic, partitions=[partition])])
        (answer,) = response.responses[0].partitions
        assert answer.error_code == ErrorCode.NONE, answer
        return [record.value for record in iter_records(bytes(answer.records or b""))]

    def partition_count(self, topic: str) -> int:
        (answer,) = self.call(ApiKey.METADATA, 4, topics=[dict(name=topic)], allow_auto_topic_creation=False).topics
        return len(answer.partitions) if answer.error_code == ErrorCode.NONE else 0

    def topic_id(self, topic: str):
        (answer,) = self.call(ApiKey.METADATA, 10, topics=[dict(name=topic)], allow_auto_topic_creation=False).topics
        assert answer.error_code == ErrorCode.NONE, answer
        return answer.topic_id

    def topic_configs(self, topic: str) -> dict[str, str | None]:
        resource = dict(resource_type=2, resource_name=topic, configuration_keys=None)
        (result,) = self.call(ApiKey.DESCRIBE_CONFIGS, 1, resources=[resource], include_synonyms=False).results
        assert result.error_code == ErrorCode.NONE, result
        return {config.name: config.value for config in result.configs}

    # --- offsets and groups ----------------------------------------------------------------------------

    def commit(self, group: str, offset: int, metadata: str = "") -> None:
        """A simple consumer's commit (generation -1, no member): the group is created Empty."""
        partition = dict(partition_index=0, committed_offset=offset, committed_leader_epoch=0,
                         committed_metadata=metadata)
        response = self.call(ApiKey.OFFSET_COMMIT, 7, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                             group_instance_id=None, topics=[dict(name=self.filled_topic(), partitions=[partition])])
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE, response

    def committed(self, group: str, version: int = 5) -> tuple[int, str | None]:
        """(offset, metadata) committed for TOPIC-0 by ``group``, read with OffsetFetch ``version``; (-1, ...)
        if none."""
        response = self.call(ApiKey.OFFSET_FETCH, version, group_id=group,
                             topics=[dict(name=TOPIC, partition_indexes=[0])])
        (partition,) = response.topics[0].partitions
        assert partition.error_code == ErrorCode.NONE, partition
        return partition.committed_offset, partition.metadata

    def join(self, group: str, instance_id: str | None = None) -> Member:
        """A member of a new group, joined at JoinGroup v5 (a dynamic member joins twice: KIP-394)."""
        fields = dict(group_id=group, session_timeout=60000, rebalance_timeout=60000, member_id="",
                      group_instance_id=instance_id, protocol_type="consumer",
                      protocols=[dict(name=PROTOCOL, metadata=b"\x00\x01")])
        response = self.call(ApiKey.JOIN_GROUP, 5, **fields)
        if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            response = self.call(ApiKey.JOIN_GROUP, 5, **{**fields, "member_id": response.member_id})
        assert response.error_code == ErrorCode.NONE, response
        return Member(group, response.generation_id, response.member_id, instance_id)

    def sync(self, member: Member, assignment: bytes = b"\x00") -> None:
        response = self.call(ApiKey.SYNC_GROUP, 3, group_id=member.group, generation_id=member.generation,
                             member_id=member.member_id, group_instance_id=member.instance_id,
                             assignments=[dict(member_id=member.member_id, assignment=assignment)])
        assert response.error_code == ErrorCode.NONE, response

    def member(self, group: str, instance_id: str | None = None) -> Member:
        """The only member of a Stable group (joined and synced)."""
        member = self.join(group, instance_id)
        self.sync(member)
        return member

    def stable_group(self) -> Member:
        return self.once("stable group", lambda: self.member("window-stable", "stable-1"))

    def group_state(self, group: str) -> str:
        (described,) = self.call(ApiKey.DESCRIBE_GROUPS, 0, groups=[group]).groups
        return described.group_state

    def wait_for_coordinator(self) -> None:
        """FindCoordinator answers once __consumer_offsets has a leader."""
        def ready() -> bool:
            return self.call(ApiKey.FIND_COORDINATOR, 1, key="window", key_type=0).error_code == ErrorCode.NONE
        wait_for(ready, TIMEOUT, "the group coordinator")

    # --- ACLs --------------------------------------------------------------------------------------------

    def create_acl(self, resource_name: str, principal: str, pattern_type: int = 3) -> None:
        creation = dict(resource_type=2, resource_name=resource_name, resource_pattern_type=pattern_type,
                        principal=principal, host="*", operation=3, permission_type=3)
        (result,) = self.call(ApiKey.CREATE_ACLS, 1, creations=[creation]).results
        assert result.error_code == ErrorCode.NONE, result

    def acls(self, resource_name: str) -> list[tuple[int, str, int, int]]:
        """(pattern type, principal, operation, permission) of the topic ACLs on ``resource_name``."""
        response = self.call(ApiKey.DESCRIBE_ACLS, 1, resource_type_filter=2, resource_name_filter=resource_name,
                             pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
                             permission_type=1)
        assert response.error_code == ErrorCode.NONE, response
        return [(r.pattern_type, a.principal, a.operation, a.permission_type)
                for r in response.resources for a in r.acls]
