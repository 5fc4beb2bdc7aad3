"""Kafka's vocabulary as plain types: ids, offsets and epochs.

Imports nothing of ours (ARCHITECTURE §2); every other package may import it.
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import NewType

BrokerId = NewType("BrokerId", int)
Offset = NewType("Offset", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ControllerEpoch = NewType("ControllerEpoch", int)
ZkVersion = NewType("ZkVersion", int)

NO_LEADER_EPOCH = LeaderEpoch(-1)
NO_TIMESTAMP = -1


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    """A partition of a topic; its directory name is ``<topic>-<partition>``."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def dir_name(self) -> str:
        return str(self)

    @classmethod
    def from_dir_name(cls, name: str) -> "TopicPartition":
        """Parse ``<topic>-<partition>``; the topic itself may contain dashes."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"not a partition directory name: {name!r}")
        return cls(topic, int(partition))


NO_LEADER = BrokerId(-1)
LEADER_DURING_DELETE = BrokerId(-2)
INITIAL_LEADER_EPOCH = LeaderEpoch(0)
INITIAL_CONTROLLER_EPOCH = ControllerEpoch(0)
INITIAL_ZK_VERSION = ZkVersion(0)
# Kafka's Topic.INTERNAL_TOPICS: produced to only by the broker (or Kafka's admin client id), shown
# as internal in Metadata and by the admin API, never produced to through the REST proxy.
OFFSETS_TOPIC = "__consumer_offsets"  # the group coordinators' partitions (Kafka's GROUP_METADATA_TOPIC_NAME)
TRANSACTION_STATE_TOPIC = "__transaction_state"  # the transaction coordinators' log
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leadership as the controller decided it (Kafka's LeaderAndIsr).

    ``zk_version`` is the version of ``/brokers/topics/<t>/partitions/<p>/state`` that holds it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = INITIAL_ZK_VERSION

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> "LeaderAndIsr":
        """The next leadership: leader epoch + 1 (every controller decision bumps it)."""
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr), self.zk_version)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """The content of a partition state znode: leadership plus the controller epoch that decided it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's full replica assignment, Kafka's ``ReplicaAssignment`` (KIP-455).

    While a reassignment runs, ``replicas`` is the union RS = target + original (target first, order
    kept), ``adding`` = RS - original and ``removing`` = RS - target; otherwise both are empty. The
    original set is therefore always recoverable from the znode (cancelling reverts to it).
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    def reassign_to(self, target: tuple[int, ...] | list[int]) -> "ReplicaAssignment":
        """The assignment while moving from this one's origin to ``target`` (Kafka's ``reassignTo``)."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(full, tuple(r for r in full if r not in origin),
                                 tuple(r for r in full if r not in target))


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener: ``PLAINTEXT://host:port``."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str, protocol_map: dict[str, str] | None = None) -> "EndPoint":
        """``LISTENER://host:port``; an empty host means all interfaces (``0.0.0.0``)."""
        listener, sep, rest = text.strip().partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not listener or not port.isdigit():
            raise ValueError(f"not a listener (LISTENER://host:port): {text!r}")
        host = host.strip("[]")
        protocol = (protocol_map or {}).get(listener, listener if listener in _PROTOCOLS else "PLAINTEXT")
        return cls(listener, host, int(port), protocol)


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A live broker as registered in ``/brokers/ids/<id>``; ``epoch`` is the znode's czxid."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    epoch: int = -1
    http_port: int | None = None
    http_scheme: str = "http"  # "https" when the broker's HTTP port serves TLS (http.ssl.enabled)

    def endpoint(self, listener: str | None = None) -> EndPoint:
        for endpoint in self.endpoints:
            if listener is None or endpoint.listener == listener:
                return endpoint
        raise KeyError(f"broker {self.id} has no listener {listener!r}")


ZERO_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: "no topic id"


@lru_cache(maxsize=4096)  # every partition state of an UpdateMetadata carries its topic's id
def topic_id_from_text(text: str | None) -> uuid.UUID:
    """A topic id as ``/brokers/topics/<t>`` stores it (Kafka's ``Uuid.toString``: 22 characters of URL-safe
    base64 without padding) as a UUID; ZERO_UUID for none or a malformed one."""
    if not text:
        return ZERO_UUID
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return ZERO_UUID
    return uuid.UUID(bytes=raw) if len(raw) == 16 else ZERO_UUID


def topic_id_text(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString`` of a topic id."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: s[0]·31^(n−1) + … + s[n−1] over UTF-16 code units, in int32 arithmetic."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_hash_partition(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % n`` (``Utils.abs`` maps INT32_MIN to 0): which partition of an internal
    topic (``__consumer_offsets``, ``__transaction_state``) owns a group or transactional id."""
    if num_partitions <= 0:
        raise ValueError(f"the number of partitions must be positive, got {num_partitions}")
    h = java_string_hash(key)
    return (0 if h == _INT32_MIN else abs(h)) % num_partitions
