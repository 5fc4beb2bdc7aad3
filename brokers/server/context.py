"""ServerContext: everything a Kafka API handler may use, handed to it on every call.

Handlers are plain async functions ``handle_x(context, header, request)``; the context is their only
way to the rest of the broker. ``AdminOps`` is what the composition root (``brokers.app``) provides for
the admin APIs, since topic creation and deletion go through ZooKeeper and the controller, which the
server layer does not import.
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Protocol

from brokers.security.acls import ANONYMOUS
from brokers.config import BrokerConfig
from brokers.model import TopicPartition
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.stats import BrokerStats


# The address of the client whose request is being handled ("/127.0.0.1", as Kafka prints it), set per
# request by KafkaApis; each request runs in its own task, so each sees its own value.
CLIENT_HOST: ContextVar[str] = ContextVar("client_host", default="")
# The principal of the connection whose request is being handled ("User:alice"), set per request by
# KafkaApis from the connection (TLS client certificate or SASL; "User:ANONYMOUS" otherwise).
PRINCIPAL: ContextVar[str] = ContextVar("principal", default=ANONYMOUS)


class AdminOps(Protocol):
    """The admin operations behind CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
    AlterConfigs, IncrementalAlterConfigs, InitProducerId and Metadata's auto-creation. Failures raise
    ``brokers.protocol.errors.KafkaError`` with Kafka's code."""

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int, config: dict[str, str],
                           assignment: dict[int, list[int]] | None, validate_only: bool) -> None:
        """Create (or with ``validate_only`` only check) a topic: TOPIC_ALREADY_EXISTS,
        INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG."""

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
    return ``ErrorCode.NOT_CONTROLLER``). Keys are TopicPartitions."""

    async def alter_partition_reassignments(self, targets: dict) -> Any:
        """``{tp: target replicas or None to cancel}`` -> ``{tp: (ErrorCode, message)}``."""

    async def list_partition_reassignments(self, partitions: list | None) -> Any:
        """``[tp]`` or None for all -> ``{tp: ReplicaAssignment}`` of the partitions being reassigned."""


# ElectLeaders (api 43): the controller's elections. Called with (election type 0 PREFERRED / 1 UNCLEAN,
# the partitions); answers {partition: (error code, message or None, elected leader or -1)} once the
# controller ran them; NOT_CONTROLLER for each partition when this broker is not the active controller.
ElectLeaders = Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, tuple[int, str | None, int]]]]


@dataclass
class ServerContext:
    broker_id: int
    config: BrokerConfig
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    cluster_id: Callable[[], str | None]
    admin: AdminOps
    listener_name: str = "PLAINTEXT"
    coordinator_partition: Callable[[str], int] | None = None  # group id -> its __consumer_offsets partition
    group_coordinator: Any = None  # consumer_group's GroupCoordinator (the group API handlers use it)
    stats: BrokerStats = field(default_factory=BrokerStats)  # request latencies and per-topic traffic
    reassignments: ReassignmentOps | None = None  # the controller's reassignment calls (brokers.app wires them)
    elect_leaders: ElectLeaders | None = None  # the controller's elections (brokers.app wires it)
    sasl: Any = None  # brokers.server.sasl.SaslServerConfig of a SASL_PLAINTEXT / SASL_SSL listener
    user_configs: Any = None  # handlers.scram_credentials.UserConfigs: /config/users (brokers.app wires it)
    # brokers.security.authorizer.AclAuthorizer when authorizer.class.name is set; None: everything is allowed.
    authorizer: Any = None

    def authorize(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]:
        """The names of ``names`` on which the requesting principal may do ``operation`` (codes of
        ``brokers.security.acls``); all of them when no authorizer is configured."""
        if self.authorizer is None:
            return set(names)
        principal, host = PRINCIPAL.get(), CLIENT_HOST.get().lstrip("/")
        return {name for name in names if self.authorizer.authorize(principal, host, operation, resource_type, name)}

    def authorized(self, operation: int, resource_type: int, name: str) -> bool:
        """One resource: may the requesting principal do ``operation`` on it."""
        return self.authorizer is None or bool(self.authorize(operation, resource_type, (name,)))

    @staticmethod
    def client_host() -> str:
        """The host of the client that sent the request being handled."""
        return CLIENT_HOST.get()
