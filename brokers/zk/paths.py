"""Every znode of classic Kafka (reference/kafka-zk-classic.md §1), declared once: path, encode, decode.

Paths are relative to the chroot; the gateway applies it. JSON shapes are Kafka 2.8's, so Kafka's own
tools can read a zkafka cluster's ZooKeeper. Conditional-write rules (§1.3) are noted per znode; the
writers enforce them with znode versions and the controller-epoch check.
"""
from __future__ import annotations

import base64
import binascii
import json
import time
from typing import Any

from brokers.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)


def _json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _load(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise ValueError(f"{what}: empty znode")
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what}: expected a JSON object")
    return value


def _now_ms() -> str:
    return str(int(time.time() * 1000))


class BrokerIdsZNode:
    """``/brokers/ids``: persistent parent; the controller watches its children."""

    PATH = "/brokers/ids"


class BrokerIdZNode:
    """``/brokers/ids/<id>``: EPHEMERAL registration (v5 JSON); czxid = broker epoch.

    Created through a multi (create empty + setData expecting version 0) to learn the stat; an
    existing node owned by this broker's previous session is deleted and re-created (KAFKA-7165).
    Beyond Kafka's fields (its readers ignore them): ``zkafka_http_port``, the HTTP port, and
    ``zkafka_http_scheme`` ``"https"`` when that port serves TLS (absent: ``http``).
    """

    VERSION = 5

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BrokerIdsZNode.PATH}/{broker_id}"

    @staticmethod
    def encode(broker: BrokerInfo) -> bytes:
        plaintext = next((e for e in broker.endpoints if e.security_protocol == "PLAINTEXT"), None)
        data: dict[str, Any] = {
            "version": BrokerIdZNode.VERSION,
            "host": plaintext.host if plaintext else None,
            "port": plaintext.port if plaintext else -1,
            "jmx_port": -1,
            "timestamp": _now_ms(),
            "endpoints": [str(e) for e in broker.endpoints],
            "listener_security_protocol_map": {e.listener: e.security_protocol for e in broker.endpoints},
            "features": {},
        }
        if broker.rack is not None:
            data["rack"] = broker.rack
        if broker.http_port is not None:
            data["zkafka_http_port"] = broker.http_port  # our control plane; Kafka's readers ignore it
        if broker.http_scheme != "http":  # absent: plain HTTP (what registrations before HTTPS say too)
            data["zkafka_http_scheme"] = broker.http_scheme
        return _json(data)

    @staticmethod
    def decode(broker_id: int, data: bytes, czxid: int = -1) -> BrokerInfo:
        value = _load(data, f"/brokers/ids/{broker_id}")
        protocols = value.get("listener_security_protocol_map") or {}
        if "endpoints" in value:
            endpoints = tuple(EndPoint.parse(e, protocols) for e in value["endpoints"])
        else:  # v1
            endpoints = (EndPoint("PLAINTEXT", value["host"], int(value["port"])),)
        scheme = value.get("zkafka_http_scheme", "http")
        if scheme not in ("http", "https"):
            raise ValueError(f"/brokers/ids/{broker_id}: zkafka_http_scheme {scheme!r} is not http or https")
        return BrokerInfo(broker_id, endpoints, value.get("rack"), czxid, value.get("zkafka_http_port"), scheme)


class BrokerSequenceIdZNode:
    """``/brokers/seqid``: its version + reserved.broker.max.id generates broker ids."""

    PATH = "/brokers/seqid"


class TopicsZNode:
    PATH = "/brokers/topics"


class TopicZNode:
    """``/brokers/topics/<topic>``: the replica assignment (v3 JSON, partition keys are strings)."""

    VERSION = 3

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.PATH}/{topic}"

    @staticmethod
    def encode(assignment: dict[int, list[int]], topic_id: str | None = None) -> bytes:
        data: dict[str, Any] = {
            "version": TopicZNode.VERSION,
            "partitions": {str(p): list(replicas) for p, replicas in sorted(assignment.items())},
            "adding_replicas": {},
            "removing_replicas": {},
        }
        if topic_id is not None:
            data["topic_id"] = topic_id
        return _json(data)

    @staticmethod
    def decode(topic: str, data: bytes) -> dict[int, list[int]]:
        value = _load(data, f"/brokers/topics/{topic}")
        partitions = value.get("partitions")
        if not isinstance(partitions, dict):
            raise ValueError(f"/brokers/topics/{topic}: no partitions")
        return {int(p): [int(r) for r in replicas] for p, replicas in partitions.items()}

    @staticmethod
    def decode_topic_id(data: bytes) -> str | None:
        return _load(data, "topic").get("topic_id")

    @staticmethod
    def encode_full(assignment: dict[int, ReplicaAssignment], topic_id: str | None) -> bytes:
        """The whole znode: replica sets plus the KIP-455 ``adding_replicas`` / ``removing_replicas``
        entries of partitions under reassignment (only those partitions appear there)."""
        data: dict[str, Any] = {
            "version": TopicZNode.VERSION,
            "partitions": {str(p): list(a.replicas) for p, a in sorted(assignment.items())},
            "adding_replicas": {str(p): list(a.adding) for p, a in sorted(assignment.items()) if a.adding},
            "removing_replicas": {str(p): list(a.removing) for p, a in sorted(assignment.items()) if a.removing},
        }
        if topic_id is not None:
            data["topic_id"] = topic_id
        return _json(data)

    @staticmethod
    def decode_full(topic: str, data: bytes) -> tuple[dict[int, ReplicaAssignment], str | None]:
        """(partition -> full assignment, topic id); v1/v2 znodes have no adding/removing or topic id."""
        value = _load(data, f"/brokers/topics/{topic}")
        partitions = TopicZNode.decode(topic, data)
        adding = {int(p): tuple(int(r) for r in rs) for p, rs in (value.get("adding_replicas") or {}).items()}
        removing = {int(p): tuple(int(r) for r in rs) for p, rs in (value.get("removing_replicas") or {}).items()}
        full = {p: ReplicaAssignment(tuple(rs), adding.get(p, ()), removing.get(p, ())) for p, rs in partitions.items()}
        return full, value.get("topic_id")


class TopicPartitionsZNode:
    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionsZNode.path(tp.topic)}/{tp.partition}"


class TopicPartitionStateZNode:
    """``.../partitions/<p>/state``: leader, leader epoch, ISR and the deciding controller epoch.

    Written with the partition's expected zkVersion (compare-and-set); its stat.version travels in
    LeaderAndIsr as ``zk_version``.
    """

    VERSION = 1

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return f"{TopicPartitionZNode.path(tp)}/state"

    @staticmethod
    def encode(state: LeaderIsrAndControllerEpoch) -> bytes:
        lai = state.leader_and_isr
        return _json({"controller_epoch": state.controller_epoch, "leader": lai.leader,
                      "version": TopicPartitionStateZNode.VERSION, "leader_epoch": lai.leader_epoch,
                      "isr": list(lai.isr)})

    @staticmethod
    def decode(data: bytes, zk_version: int) -> LeaderIsrAndControllerEpoch:
        value = _load(data, "partition state")
        lai = LeaderAndIsr(int(value["leader"]), int(value["leader_epoch"]), tuple(int(b) for b in value["isr"]),
                           zk_version)
        return LeaderIsrAndControllerEpoch(lai, int(value["controller_epoch"]))


class ControllerZNode:
    """``/controller``: EPHEMERAL, created in the same multi that bumps ``/controller_epoch``."""

    PATH = "/controller"

    @staticmethod
    def encode(broker_id: int) -> bytes:
        return _json({"version": 1, "brokerid": broker_id, "timestamp": _now_ms()})

    @staticmethod
    def decode(data: bytes) -> int:
        return int(_load(data, ControllerZNode.PATH)["brokerid"])


class ControllerEpochZNode:
    """``/controller_epoch``: a decimal integer; created as 0 so the first controller gets epoch 1.

    Bumped with setData expecting the version read just before (inside the election multi); every
    later controller write carries a check on that version (KAFKA-6082 fencing).
    """

    PATH = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode()

    @staticmethod
    def decode(data: bytes) -> int:
        try:
            return int(data.decode())
        except (UnicodeDecodeError, ValueError):
            raise ValueError(f"/controller_epoch: not an integer: {data!r}") from None


class DeleteTopicsZNode:
    PATH = "/admin/delete_topics"

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.PATH}/{topic}"


class ReassignPartitionsZNode:
    """``/admin/reassign_partitions``: the legacy (pre-KIP-455) way to start reassignments, still honoured.

    ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}``. The controller
    watches its existence, starts every listed move, removes each partition from it as it completes (or
    is superseded by an API reassignment) and deletes the znode when it is empty.
    """

    PATH = "/admin/reassign_partitions"

    @staticmethod
    def encode(targets: dict[TopicPartition, list[int]]) -> bytes:
        return _json({"version": 1, "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
            for tp, replicas in sorted(targets.items())]})

    @staticmethod
    def decode(data: bytes) -> dict[TopicPartition, list[int]]:
        value = _load(data, ReassignPartitionsZNode.PATH)
        try:
            return {TopicPartition(str(p["topic"]), int(p["partition"])): [int(r) for r in p["replicas"]]
                    for p in value.get("partitions") or []}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{ReassignPartitionsZNode.PATH}: bad partition entry ({exc})") from None


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``: the partitions an admin wants led by their preferred replica
    (``assignment[0]``), ``{"version":1,"partitions":[{"topic":"t","partition":0}]}``. Written by
    admins (Kafka's ``kafka-preferred-replica-election --zookeeper``); the controller watches its
    existence, runs the preferred election and deletes it (fenced by the controller epoch). A
    partition named twice counts once."""

    PATH = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: list[TopicPartition]) -> bytes:
        return _json({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition}
                                                   for tp in partitions]})

    @staticmethod
    def decode(data: bytes) -> set[TopicPartition]:
        value = _load(data, PreferredReplicaElectionZNode.PATH)
        partitions = value.get("partitions")
        if not isinstance(partitions, list):
            raise ValueError(f"{PreferredReplicaElectionZNode.PATH}: \"partitions\" must be a list")
        out = set()
        for entry in partitions:
            topic = entry.get("topic") if isinstance(entry, dict) else None
            partition = entry.get("partition") if isinstance(entry, dict) else None
            if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
                raise ValueError(f"{PreferredReplicaElectionZNode.PATH}: bad entry {entry!r} "
                                 "(expected {\"topic\": string, \"partition\": int})")
            out.add(TopicPartition(topic, partition))
        return out


class IsrChangeNotificationZNode:
    """``/isr_change_notification/isr_change_<seq>`` (PERSISTENT_SEQUENTIAL): partitions whose ISR changed."""

    PATH = "/isr_change_notification"
    PREFIX = "isr_change_"

    @staticmethod
    def encode(partitions: list[TopicPartition]) -> bytes:
        return _json({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]})

    @staticmethod
    def decode(data: bytes) -> list[TopicPartition]:
        return [TopicPartition(p["topic"], int(p["partition"])) for p in _load(data, "isr change")["partitions"]]


class LogDirEventNotificationZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>`` (PERSISTENT_SEQUENTIAL): a broker saw one of its log
    dirs fail (KIP-112), ``{"version":1,"broker":<id>,"event":1}`` (event 1: LogDirFailure)."""

    PATH = "/log_dir_event_notification"
    PREFIX = "log_dir_event_"
    LOG_DIR_FAILURE = 1

    @staticmethod
    def encode(broker_id: int) -> bytes:
        return _json({"version": 1, "broker": broker_id, "event": LogDirEventNotificationZNode.LOG_DIR_FAILURE})

    @staticmethod
    def decode(data: bytes) -> int:
        """The broker id a notification names."""
        value = _load(data, LogDirEventNotificationZNode.PATH)
        try:
            return int(value["broker"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{LogDirEventNotificationZNode.PATH}: not a log dir event: {exc!r}") from None


class ConfigEntityZNode:
    """``/config/<type>/<name>``: only overrides, all values strings. Client quota entities nest:
    ``/config/users/<user>/clients/<client-id>``; a parent created only to hold them is empty (no overrides)."""

    TYPES = ("topics", "clients", "users", "brokers", "ips")

    @staticmethod
    def path(entity_type: str, name: str) -> str:
        return f"/config/{entity_type}/{name}"

    @staticmethod
    def type_path(entity_type: str) -> str:
        """``/config/<type>``: its children are the entities with overrides."""
        return f"/config/{entity_type}"

    @staticmethod
    def encode(config: dict[str, str]) -> bytes:
        return _json({"version": 1, "config": {k: str(v) for k, v in sorted(config.items())}})

    @staticmethod
    def decode(data: bytes) -> dict[str, str]:
        if not data:  # a parent of nested entities, created by makepath
            return {}
        return {k: str(v) for k, v in (_load(data, "config").get("config") or {}).items()}


class ConfigChangesZNode:
    PATH = "/config/changes"


class ConfigChangeNotificationZNode:
    """``/config/changes/config_change_<10-digit seq>`` (PERSISTENT_SEQUENTIAL): written by the admin
    path right after ``/config/<type>/<name>``; every broker watches the children and re-reads the
    named entity's config for each sequence number above the last it processed. Version 2 names the
    entity as one path (``{"version":2,"entity_path":"topics/t"}``, ``brokers/<default>``); version 1
    (``entity_type`` + ``entity_name``) is still read, as Kafka does."""

    PATH = ConfigChangesZNode.PATH
    PREFIX = "config_change_"
    VERSION = 2
    DEFAULT_ENTITY = "<default>"  # the cluster-wide default entity (``/config/brokers/<default>``)

    @staticmethod
    def encode(entity_type: str, name: str) -> bytes:
        return _json({"version": ConfigChangeNotificationZNode.VERSION, "entity_path": f"{entity_type}/{name}"})

    @staticmethod
    def decode(data: bytes) -> tuple[str, str]:
        """(entity type, entity name); ValueError for anything else."""
        value = _load(data, "config change notification")
        if value.get("version") == 1 and "entity_type" in value and "entity_name" in value:
            return str(value["entity_type"]), str(value["entity_name"])
        entity_type, sep, name = str(value.get("entity_path", "")).partition("/")
        if value.get("version") != 2 or not sep or entity_type not in ConfigEntityZNode.TYPES or not name:
            raise ValueError(f"config change notification: unexpected content {value}")
        return entity_type, name

    @staticmethod
    def sequence(child: str) -> int:
        """The sequence number of a child name (``config_change_0000000042`` -> 42); ValueError if not one."""
        if not child.startswith(ConfigChangeNotificationZNode.PREFIX):
            raise ValueError(f"not a config change notification: {child!r}")
        return int(child[len(ConfigChangeNotificationZNode.PREFIX):])


class ClusterIdZNode:
    """``/cluster/id``: ``{"version":"1","id":...}`` (the version is a string here)."""

    PATH = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return _json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes) -> str:
        return str(_load(data, ClusterIdZNode.PATH)["id"])


class ControlPlaneSecretZNode:
    """``/zkafka/control_plane_secret`` (zkafka's, not Kafka's): ``{"version":1,"secret":<base64>}``, the key
    brokers sign their HTTP requests to each other with (``brokers.security.control_auth``) when
    ``control.plane.secret`` is not configured. Created once by the first broker (create-if-absent, like
    ``/cluster/id``), never changed; below a sensitive root, so with ``zookeeper.set.acl`` only the brokers'
    identity can read it."""

    PATH = "/zkafka/control_plane_secret"

    @staticmethod
    def encode(secret: bytes) -> bytes:
        return _json({"version": 1, "secret": base64.b64encode(secret).decode()})

    @staticmethod
    def decode(data: bytes) -> bytes:
        try:
            return base64.b64decode(_load(data, ControlPlaneSecretZNode.PATH)["secret"], validate=True)
        except (KeyError, TypeError, binascii.Error) as exc:
            raise ValueError(f"{ControlPlaneSecretZNode.PATH}: no base64 secret: {exc}") from None


class ConsumerGroupsZNode:
    """``/consumers/<group>``: one child per group that has committed offsets (the ZK offsets design)."""

    PATH = "/consumers"

    @staticmethod
    def path(group: str) -> str:
        return f"/consumers/{group}"


class ConsumerOffsetZNode:
    """``/consumers/<group>/offsets/<topic>/<partition>``: the committed offset as decimal text."""

    @staticmethod
    def group_path(group: str) -> str:
        return f"/consumers/{group}/offsets"

    @staticmethod
    def path(group: str, tp: TopicPartition) -> str:
        return f"/consumers/{group}/offsets/{tp.topic}/{tp.partition}"

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(offset).encode()

    @staticmethod
    def decode(data: bytes) -> int:
        return int(data.decode())


class ConsumerGroupMetadataZNode:
    """``/consumers/<group>/metadata``: the group's membership as of its last completed rebalance (Kafka's group
    metadata record in ``__consumer_offsets``), written by the group coordinator after each completed SyncGroup
    and when the group becomes Empty, loaded by the coordinator elected next, removed with the group. The JSON
    carries Kafka's ``GroupMetadataValue`` v3 field names: ``{"version":3,"protocolType":<s>,"generation":<n>,
    "protocol":<s|null>,"leader":<s|null>,"currentStateTimestamp":<ms>,"members":[{"memberId","groupInstanceId",
    "clientId","clientHost","rebalanceTimeout","sessionTimeout","subscription":<base64>,"assignment":<base64>}]}``
    (``consumer_group.coordinator.group_record`` builds and reads the fields). Conditional write: the
    coordinator sets it at the znode version it last wrote, and a newly elected coordinator claims it by
    rewriting it at the version it read, so a deposed coordinator cannot overwrite its successor's record."""

    VERSION = 3

    @staticmethod
    def path(group: str) -> str:
        return f"/consumers/{group}/metadata"

    @staticmethod
    def encode(value: dict[str, Any]) -> bytes:
        return _json({"version": ConsumerGroupMetadataZNode.VERSION, **value})

    @staticmethod
    def decode(data: bytes, path: str = "metadata") -> dict[str, Any]:
        value = _load(data, path)
        if value.get("version") != ConsumerGroupMetadataZNode.VERSION:
            raise ValueError(f"{path}: unsupported group metadata version {value.get('version')!r}")
        return {k: v for k, v in value.items() if k != "version"}


class ConsumerTxnOffsetsZNode:
    """``/consumers/<group>/txn_offsets/<producer id>``: the offsets a transactional producer committed for the
    group (TxnOffsetCommit), pending until its transaction's marker commits or aborts them:
    ``{"version":1,"producer_epoch":<e>,"offsets":{<topic>:{<partition>:[<offset>,<metadata>,<leader epoch>]}}}``."""

    @staticmethod
    def group_path(group: str) -> str:
        return f"/consumers/{group}/txn_offsets"

    @staticmethod
    def path(group: str, producer_id: int) -> str:
        return f"/consumers/{group}/txn_offsets/{producer_id}"

    @staticmethod
    def encode(producer_epoch: int, offsets: dict[TopicPartition, tuple[int, str, int]]) -> bytes:
        topics: dict[str, dict[str, list]] = {}
        for tp, (offset, metadata, leader_epoch) in sorted(offsets.items()):
            topics.setdefault(tp.topic, {})[str(tp.partition)] = [offset, metadata, leader_epoch]
        return _json({"version": 1, "producer_epoch": producer_epoch, "offsets": topics})

    @staticmethod
    def decode(data: bytes, path: str = "txn_offsets") -> tuple[int, dict[TopicPartition, tuple[int, str, int]]]:
        value = _load(data, path)
        try:
            offsets = {TopicPartition(topic, int(partition)): (int(o), str(md), int(epoch))
                       for topic, partitions in value["offsets"].items()
                       for partition, (o, md, epoch) in partitions.items()}
            return int(value["producer_epoch"]), offsets
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}: not pending transactional offsets: {exc!r}") from None


class ConsumerTxnProducerZNode:
    """``/consumers/<group>/txn_producers/<producer id>``: the last producer epoch and transaction coordinator
    epoch whose marker ended that producer's transactional offsets of the group, so that a coordinator elected
    later still fences a zombie's TxnOffsetCommit and a deposed transaction coordinator's late marker:
    ``{"version":1,"producer_epoch":<e>,"coordinator_epoch":<c>}``. Written in the multi that commits or aborts
    the producer's pending offsets; removed with the group."""

    @staticmethod
    def group_path(group: str) -> str:
        return f"/consumers/{group}/txn_producers"

    @staticmethod
    def path(group: str, producer_id: int) -> str:
        return f"/consumers/{group}/txn_producers/{producer_id}"

    @staticmethod
    def encode(producer_epoch: int, coordinator_epoch: int) -> bytes:
        return _json({"version": 1, "producer_epoch": producer_epoch, "coordinator_epoch": coordinator_epoch})

    @staticmethod
    def decode(data: bytes, path: str = "txn_producers") -> tuple[int, int]:
        value = _load(data, path)
        try:
            return int(value["producer_epoch"]), int(value["coordinator_epoch"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: not a transactional producer's epochs: {exc!r}") from None


class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block of producer ids handed to a broker (written with CAS)."""

    PATH = "/latest_producer_id_block"

    @staticmethod
    def encode(broker_id: int, start: int, end: int) -> bytes:
        return _json({"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)})

    @staticmethod
    def decode(data: bytes) -> tuple[int, int]:
        value = _load(data, ProducerIdBlockZNode.PATH)
        return int(value["block_start"]), int(value["block_end"])


PERSISTENT_ROOTS = (
    ConsumerGroupsZNode.PATH, BrokerIdsZNode.PATH, TopicsZNode.PATH, ConfigChangesZNode.PATH, DeleteTopicsZNode.PATH,
    BrokerSequenceIdZNode.PATH, IsrChangeNotificationZNode.PATH, ProducerIdBlockZNode.PATH,
    LogDirEventNotificationZNode.PATH, *(f"/config/{t}" for t in ConfigEntityZNode.TYPES),
)


class AclZNode:
    """``/kafka-acl/<ResourceType>/<name>`` (literal patterns) and
    ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (prefixed): one znode per resource pattern,
    ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read",
    "host":"*"}]}`` (Kafka's AclEntry JSON; names are Kafka's camel-case ones). Written with the
    version read (compare-and-set, retried on BADVERSION); an empty ACL set deletes the znode."""

    LITERAL_ROOT = "/kafka-acl"
    EXTENDED_ROOT = "/kafka-acl-extended"
    PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
    VERSION = 1

    @staticmethod
    def root(pattern_type: str) -> str:
        """``LITERAL`` or ``PREFIXED`` -> the znode under which that pattern type's resource types live."""
        return AclZNode.LITERAL_ROOT if pattern_type == "LITERAL" else f"{AclZNode.EXTENDED_ROOT}/{pattern_type.lower()}"

    @staticmethod
    def path(pattern_type: str, resource_type: str, name: str) -> str:
        return f"{AclZNode.root(pattern_type)}/{resource_type}/{name}"

    @staticmethod
    def encode(acls: list[dict[str, str]]) -> bytes:
        """``acls``: dicts with principal, permissionType, operation, host."""
        return _json({"version": AclZNode.VERSION, "acls": sorted(acls, key=lambda a: json.dumps(a, sort_keys=True))})

    @staticmethod
    def decode(data: bytes | None) -> list[dict[str, str]]:
        if not data:
            return []
        value = _load(data, "acl")
        entries = value.get("acls") or []
        keys = ("principal", "permissionType", "operation", "host")
        if not isinstance(entries, list) or not all(isinstance(e, dict) and all(k in e for k in keys) for e in entries):
            raise ValueError(f"acl: unexpected content {value}")
        return [{k: str(e[k]) for k in keys} for e in entries]


class AclChangeNotificationZNode:
    """``/kafka-acl-changes/acl_changes_<seq>`` (literal patterns; data ``TOPIC:foo``, Kafka's
    ``ResourceType.toString + ":" + name``) and ``/kafka-acl-extended-changes/acl_changes_<seq>``
    (``{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}``), PERSISTENT_SEQUENTIAL:
    written after each ACL znode change; every broker re-reads the named resource's znode."""

    LITERAL_PATH = "/kafka-acl-changes"
    EXTENDED_PATH = "/kafka-acl-extended-changes"
    PREFIX = "acl_changes_"

    @staticmethod
    def path(pattern_type: str) -> str:
        return AclChangeNotificationZNode.LITERAL_PATH if pattern_type == "LITERAL" else AclChangeNotificationZNode.EXTENDED_PATH

    @staticmethod
    def encode(resource_type: str, name: str, pattern_type: str) -> bytes:
        """``resource_type`` as Kafka's enum name (TOPIC, TRANSACTIONAL_ID), ``pattern_type`` LITERAL/PREFIXED."""
        if pattern_type == "LITERAL":
            return f"{resource_type}:{name}".encode()
        return _json({"version": 1, "resourceType": resource_type, "name": name, "patternType": pattern_type})

    @staticmethod
    def decode(data: bytes, extended: bool) -> tuple[str, str, str]:
        """(resource type enum name, name, pattern type); ValueError if malformed."""
        if not extended:
            resource_type, sep, name = (data or b"").decode(errors="replace").partition(":")
            if not sep or not resource_type:
                raise ValueError(f"acl change: expected ResourceType:ResourceName, got {data!r}")
            return resource_type.upper(), name, "LITERAL"
        value = _load(data, "acl change")
        if value.get("version") != 1 or not all(k in value for k in ("resourceType", "name", "patternType")):
            raise ValueError(f"acl change: unexpected content {value}")
        return str(value["resourceType"]).upper(), str(value["name"]), str(value["patternType"]).upper()

    @staticmethod
    def sequence(child: str) -> int:
        if not child.startswith(AclChangeNotificationZNode.PREFIX):
            raise ValueError(f"not an acl change notification: {child!r}")
        return int(child[len(AclChangeNotificationZNode.PREFIX):])


# -- znode ACLs (zookeeper.set.acl) ------------------------------------------------------------------
SENSITIVE_ROOTS = ("/config/users", "/delegation_token", "/zkafka")
"""Kafka's ``ZkData.sensitiveRootPaths``: secrets live below them (SCRAM credentials, token keys; zkafka adds
its control-plane secret), so with ``zookeeper.set.acl`` nobody but the brokers' identity may even read them."""


def world_readable(path: str) -> bool:
    """Kafka's ``ZkData.defaultAcls`` with ``zookeeper.set.acl=true``: every znode the brokers create gets
    CREATOR_ALL (the brokers' authenticated identity may do anything) plus world READ, except below the
    sensitive roots, which get CREATOR_ALL only."""
    return not any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)
