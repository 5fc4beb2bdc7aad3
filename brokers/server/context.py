"""ServerContext: everything a Kafka API handler may use, handed to it on every call.

Handlers are plain async functions ``handle_x(context, header, request)``; the context is their only
way to the rest of the broker. The Protocols here are its ports, provided by the composition root
(``brokers.app``) because what is behind them (ZooKeeper, the controller, the ACL store) is not the server
layer's to import: ``AdminOps`` for the admin APIs, ``ReassignmentOps`` and ``ElectLeaders`` for the
controller's calls, ``AclAdmin`` for authorization and the ACL APIs, ``UserConfigs`` for SCRAM credentials.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Protocol

from brokers.config import BrokerConfig
from brokers.model import ReplicaAssignment, TopicPartition
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.quotas.entities import QuotaEntity
from brokers.quotas.manager import QuotaManagers
from brokers.quotas.request_throttle import RequestThrottle
from brokers.replication.fetch_session import FetchSessionCache
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.security.acls import (
    ANONYMOUS, CLUSTER, CLUSTER_NAME, SUPPORTED_OPERATIONS, TOPIC, AclEntry, AclFilter, ResourcePattern, operations_bit_field,
)
from brokers.server.sasl import SaslServerConfig
from brokers.stats import BrokerStats


# The address of the client whose request is being handled ("/127.0.0.1", as Kafka prints it), set per
# request by KafkaApis; each request runs in its own task, so each sees its own value.
CLIENT_HOST: ContextVar[str] = ContextVar("client_host", default="")
# The principal of the connection whose request is being handled ("User:alice"), set per request by
# KafkaApis from the connection (TLS client certificate or SASL; "User:ANONYMOUS" otherwise).
PRINCIPAL: ContextVar[str] = ContextVar("principal", default=ANONYMOUS)
# The request's client quota throttle (brokers.quotas.request_throttle), set per request by KafkaApis while any
# quota is configured; None otherwise. Produce and Fetch read it to put the throttle time in their answers.
REQUEST_THROTTLE: ContextVar[RequestThrottle | None] = ContextVar("request_throttle", default=None)


class AdminOps(Protocol):
    """The admin operations behind CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
    AlterConfigs, IncrementalAlterConfigs, InitProducerId and Metadata's auto-creation. Failures raise
    ``brokers.protocol.errors.KafkaError`` with Kafka's code."""

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int, config: dict[str, str],
                           assignment: dict[int, list[int]] | None, validate_only: bool) -> None:
        """Create (or with ``validate_only`` only check) a topic: TOPIC_ALREADY_EXISTS,
        INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG."""

    async def topic_id(self, name: str) -> str | None:
        """The topic id in ``/brokers/topics/<name>`` (Kafka's ``Uuid`` text), None if none."""

    async def delete_topic(self, name: str) -> None:
        """Request the deletion of a topic: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED."""

    async def topic_config(self, name: str) -> dict[str, str]:
        """The topic's config overrides only (``/config/topics/<name>``)."""

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool) -> None:
        """Grow a topic to ``count`` partitions (``assignments``: one replica list per new partition, None
        for Kafka's round robin), or with ``validate_only`` only check: UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, INVALID_TOPIC_EXCEPTION (queued for deletion),
        REASSIGNMENT_IN_PROGRESS."""

    def log_config_defaults(self) -> dict[str, str]:
        """Every topic-level config key with this broker's default value."""

    async def allocate_producer_id(self) -> int:
        """A producer id unique in the cluster."""

    async def alter_configs(self, resource_type: int, name: str, configs: list[tuple[str, str | None]],
                            validate_only: bool) -> None:
        """AlterConfigs: replace the override set of a topic (2) or broker (4; ``""`` = cluster default):
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST (bad resource, read-only broker key), INVALID_CONFIG."""

    async def incremental_alter_configs(self, resource_type: int, name: str,
                                        ops: list[tuple[str, int, str | None]], validate_only: bool) -> None:
        """IncrementalAlterConfigs: apply (key, SET 0 / DELETE 1 / APPEND 2 / SUBTRACT 3, value) ops;
        errors as ``alter_configs``."""

    def topic_config_synonyms(self, topic_key: str) -> list[tuple[str, str, int]]:
        """The broker-level (name, value, config source) behind a topic key without an override,
        highest precedence first; empty for topic-only keys."""

    def dynamic_broker_entries(self, per_broker: bool) -> dict[str, list[tuple[str, str, int]]]:
        """Dynamic broker keys -> their synonyms (this broker's view, or the cluster default's)."""


class ReassignmentOps(Protocol):
    """The controller's KIP-455 reassignment calls (only the active controller answers; elsewhere both
    return ``ErrorCode.NOT_CONTROLLER`` for the whole request)."""

    async def alter_partition_reassignments(self, targets: dict[TopicPartition, list[int] | None]
                                            ) -> dict[TopicPartition, tuple[int, str | None]] | ErrorCode:
        """``{tp: target replicas or None to cancel}`` -> ``{tp: (error code, message)}``."""

    async def list_partition_reassignments(
            self, partitions: list[TopicPartition] | None) -> dict[TopicPartition, ReplicaAssignment] | ErrorCode:
        """``[tp]`` or None for all -> ``{tp: ReplicaAssignment}`` of the partitions being reassigned."""


# ElectLeaders (api 43): the controller's elections. Called with (election type 0 PREFERRED / 1 UNCLEAN,
# the partitions); answers {partition: (error code, message or None, elected leader or -1)} once the
# controller ran them; NOT_CONTROLLER for each partition when this broker is not the active controller.
ElectLeaders = Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, tuple[int, str | None, int]]]]


class Authorizer(Protocol):
    """The decisions of ``authorizer.class.name`` (``brokers.security.authorizer.AclAuthorizer``)."""

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool: ...

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Kafka's ``authorizeByResourceType``: may the principal do ``operation`` on some resource of the type."""


class AclAdmin(Authorizer, Protocol):
    """The authorizer's ACL store, behind CreateAcls, DescribeAcls and DeleteAcls."""

    def describe(self, flt: AclFilter) -> list[tuple[ResourcePattern, AclEntry]]: ...

    async def sync(self) -> None:
        """Apply the change notifications already in ZooKeeper (another broker's writes a moment ago)."""

    async def update(self, pattern: ResourcePattern, add: frozenset[AclEntry] = frozenset(),
                     remove: frozenset[AclEntry] = frozenset()) -> frozenset[AclEntry]:
        """Add and remove one pattern's ACLs; the ones actually removed."""


class UserConfigs(Protocol):
    """``/config/users`` (user names unsanitized), behind the SCRAM credential APIs."""

    def user_config(self, user: str) -> Awaitable[dict[str, str]]: ...

    def set_user_config(self, user: str, config: dict[str, str]) -> Awaitable[None]: ...

    def user_names(self) -> Awaitable[list[str]]: ...


class ClientQuotaConfigs(Protocol):
    """The client quota entities' configs in ZooKeeper (``/config/users``, ``/config/clients``), behind
    DescribeClientQuotas and AlterClientQuotas; the quota keys sit beside other keys (SCRAM credentials)."""

    def quota_entity_configs(self) -> Awaitable[dict[QuotaEntity, dict[str, str]]]: ...

    def set_quota_entity_config(self, entity: QuotaEntity, config: dict[str, str]) -> Awaitable[None]: ...


@dataclass
class ServerContext:
    """The handlers' ports. Authorization is decided here and only here: with no authorizer configured
    (``authorizer`` None, Kafka's default) every ``authorized*`` question answers yes."""

    broker_id: int
    config: BrokerConfig
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    cluster_id: Callable[[], str | None]
    admin: AdminOps
    listener_name: str = "PLAINTEXT"
    coordinator_partition: Callable[[str], int] | None = None  # group id -> its __consumer_offsets partition
    transaction_partition: Callable[[str], int] | None = None  # transactional id -> its __transaction_state partition
    group_coordinator: Any = None  # consumer_group's GroupCoordinator: carried for the group API handlers only
    transaction_coordinator: Any = None  # transactions' TransactionCoordinator: for the transaction API handlers only
    # KIP-890 part 1: (transactional id, producer id, epoch, partition) -> the coordinator's ErrorCode (NONE when the
    # partition is in that producer's ongoing transaction); brokers.app wires it, None: no verification
    verify_transaction: Callable[[str, int, int, TopicPartition], Awaitable[int]] | None = None
    stats: BrokerStats = field(default_factory=BrokerStats)  # request latencies and per-topic traffic
    reassignments: ReassignmentOps | None = None  # the controller's reassignment calls (brokers.app wires them)
    elect_leaders: ElectLeaders | None = None  # the controller's elections (brokers.app wires it)
    sasl: SaslServerConfig | None = None  # the listener's SASL settings (SASL_PLAINTEXT / SASL_SSL listeners)
    user_configs: UserConfigs | None = None  # /config/users (brokers.app wires it)
    quota_configs: ClientQuotaConfigs | None = None  # client quota entities in ZooKeeper (brokers.app wires it)
    quotas: QuotaManagers = field(default_factory=QuotaManagers)  # the broker's client quotas, fed by brokers.app
    authorizer: AclAdmin | None = None  # authorizer.class.name's AclAuthorizer; None: everything is allowed
    fetch_sessions: FetchSessionCache | None = None  # the broker's KIP-227 sessions; None: every fetch sessionless

    # -- authorization (Kafka 2.8's AuthHelper) -------------------------------------------------------
    def authorized(self, operation: int, resource_type: int, name: str) -> bool:
        """May the requesting principal do ``operation`` (codes of ``brokers.security.acls``) on the resource."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(PRINCIPAL.get(), _host(), operation, resource_type, name)

    def authorized_on_cluster(self, operation: int) -> bool:
        """``operation`` on the cluster resource (``kafka-cluster``)."""
        return self.authorized(operation, CLUSTER, CLUSTER_NAME)

    def filter_authorized(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]:
        """The names of ``names`` on which the requesting principal may do ``operation``."""
        if self.authorizer is None:
            return set(names)
        principal, host, decide = PRINCIPAL.get(), _host(), self.authorizer.authorize
        return {name for name in names if decide(principal, host, operation, resource_type, name)}

    def authorized_topics(self, operation: int, names: Iterable[str]) -> set[str]:
        return self.filter_authorized(operation, TOPIC, names)

    def authorized_by_resource_type(self, operation: int, resource_type: int) -> bool:
        """May the principal do ``operation`` on some resource of the type (Kafka's authorizeByResourceType)."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_any(PRINCIPAL.get(), _host(), operation, resource_type)

    def authorized_operations(self, resource_type: int, name: str) -> int:
        """Kafka's ``AuthHelper.authorizedOperations``: the bit field of the resource type's supported operations
        the principal may do on the resource (all of them without an authorizer)."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        return operations_bit_field(op for op in supported if self.authorized(op, resource_type, name))

    def acl_admin(self) -> AclAdmin:
        """The ACL store of the ACL APIs; KafkaError SECURITY_DISABLED without an authorizer (as Kafka)."""
        if self.authorizer is None:
            raise KafkaError("No Authorizer is configured on the broker", ErrorCode.SECURITY_DISABLED)
        return self.authorizer

    @staticmethod
    def client_host() -> str:
        """The host of the client that sent the request being handled."""
        return CLIENT_HOST.get()


def _host() -> str:
    return CLIENT_HOST.get().lstrip("/")
