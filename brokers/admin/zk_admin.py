"""ZkAdmin: the admin operations the Kafka APIs need (``brokers.server.context.AdminOps``), done the
classic way: through ZooKeeper, with the controller doing the rest.

Part of the composition layer (like ``brokers.app``): it joins the ZooKeeper client, the topic admin
path in ``brokers.admin.topic_creation`` and the storage layer's LogConfig validation.

Config changes (AlterConfigs / IncrementalAlterConfigs) are Kafka's AdminZkClient.changeConfigs: read
the entity's overrides, compute the new set (``brokers.dynamic_config.config_ops``), validate it (topics against
LogConfig over the current broker defaults, brokers against ``brokers.dynamic_config.broker_config``), then write
``/config/<type>/<name>`` and a ``/config/changes`` notification. The cluster-default broker entity
is ``/config/brokers/<default>``.
"""
from __future__ import annotations

from brokers.admin.assignment import assign_replicas_to_brokers, validate_topic_name
from brokers.admin.partition_addition import add_partitions
from brokers.admin.partition_limits import UNLIMITED, check_partition_limits
from brokers.admin.topic_creation import create_topic
from brokers.config import BrokerConfig
from brokers.dynamic_config.broker_config import (
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_KEYS,
    DynamicBrokerConfig,
    ReadOnlyConfigError,
    Synonym,
    validate_broker_overrides,
)
from brokers.dynamic_config.config_ops import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ConfigOp,
    InvalidRequestError,
    apply_incremental,
    replace_all,
)
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.replication.metadata_cache import MetadataCache
from brokers.storage.log_config import InvalidConfigError, LogConfig
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import NodeExistsError
from brokers.zk.paths import ConfigChangeNotificationZNode

PRODUCER_ID_BLOCK = 1000


class ZkAdmin:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, config: BrokerConfig, defaults: LogConfig,
                 metadata_cache: MetadataCache, dynamic_config: DynamicBrokerConfig | None = None):
        self.broker_id = broker_id
        self.dynamic_config = dynamic_config or DynamicBrokerConfig(broker_id, config)
        self.kzc = kzc
        self.config = config
        self.defaults = defaults
        self.metadata_cache = metadata_cache
        self._next_producer_id = 0
        self._block_end = -1

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int, config: dict[str, str],
                           assignment: dict[int, list[int]] | None, validate_only: bool) -> None:
        validate_topic_name(name)
        try:
            LogConfig.from_properties(config, base=self.defaults)
        except InvalidConfigError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_CONFIG) from None
        if name in await self.kzc.get_all_topics():
            raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        brokers = await self.kzc.get_broker_ids()
        if assignment:
            _check_assignment(assignment, brokers)
        elif num_partitions <= 0:
            raise KafkaError(f"number of partitions must be positive, got {num_partitions}", ErrorCode.INVALID_PARTITIONS)
        elif not 0 < replication_factor <= len(brokers):
            raise KafkaError(f"replication factor {replication_factor} is not between 1 and the {len(brokers)} live brokers",
                             ErrorCode.INVALID_REPLICATION_FACTOR)
        if assignment:
            self._check_partition_limits({int(p): list(r) for p, r in assignment.items()})
        elif validate_only:
            self._check_partition_limits(assign_replicas_to_brokers(await self.kzc.get_broker_racks(), num_partitions,
                                                                    replication_factor))
        if validate_only:
            return
        if assignment:
            try:
                await self.kzc.create_topic(name, {int(p): list(r) for p, r in assignment.items()}, config)
            except NodeExistsError:
                raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS) from None
        else:
            await create_topic(self.kzc, name, num_partitions, replication_factor, config,
                               check=self._check_partition_limits)

    def _check_partition_limits(self, added: dict[int, list[int]]) -> None:
        """``max.partitions`` / ``max.broker.partitions`` (KIP-578) over this broker's metadata: POLICY_VIOLATION."""
        max_partitions, max_broker = self.config["max.partitions"], self.config["max.broker.partitions"]
        if max_partitions >= UNLIMITED and max_broker >= UNLIMITED:
            return
        existing = [state.replicas for state in self.metadata_cache.partitions.values()]
        check_partition_limits(existing, added, max_partitions, max_broker)

    async def topic_id(self, name: str) -> str | None:
        """The topic id its znode holds (None: no such topic, or none yet)."""
        found = await self.kzc.get_full_topic_assignment(name)
        return None if found is None else found[1]

    async def delete_topic(self, name: str) -> None:
        if name not in await self.kzc.get_all_topics():
            raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not self.config["delete.topic.enable"]:
            raise KafkaError("topic deletion is disabled (delete.topic.enable=false)", ErrorCode.TOPIC_DELETION_DISABLED)
        await self.kzc.request_topic_deletion(name)

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool) -> None:
        await add_partitions(self.kzc, name, count, assignments, validate_only=validate_only,
                             check=self._check_partition_limits)

    async def topic_config(self, name: str) -> dict[str, str]:
        if name not in await self.kzc.get_all_topics():
            raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return await self.kzc.get_topic_config(name)

    def log_config_defaults(self) -> dict[str, str]:
        return self.defaults.to_properties()

    # -- configs: AlterConfigs / IncrementalAlterConfigs / DescribeConfigs ------------------------
    async def incremental_alter_configs(self, resource_type: int, name: str,
                                        ops: list[tuple[str, int, str | None]], validate_only: bool) -> None:
        entity_type, entity = await self._config_entity(resource_type, name)
        current = await self.kzc.get_entity_config(entity_type, entity)
        list_defaults = self.log_config_defaults() if entity_type == "topics" else {
            "log.cleanup.policy": self.dynamic_config.value("log.cleanup.policy")}
        try:
            config = apply_incremental(current, [ConfigOp(*op) for op in ops], list_defaults)
        except InvalidRequestError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_REQUEST) from None
        await self._write_entity_config(entity_type, entity, config, validate_only)

    async def alter_configs(self, resource_type: int, name: str, configs: list[tuple[str, str | None]],
                            validate_only: bool) -> None:
        entity_type, entity = await self._config_entity(resource_type, name)
        try:
            config = replace_all(configs)
        except InvalidRequestError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_REQUEST) from None
        await self._write_entity_config(entity_type, entity, config, validate_only)

    async def _config_entity(self, resource_type: int, name: str) -> tuple[str, str]:
        """The ZooKeeper entity of a config resource: a topic that exists, the cluster default (empty
        name) or this broker (Kafka answers another broker's id with INVALID_REQUEST)."""
        if resource_type == TOPIC_RESOURCE:
            if name not in await self.kzc.get_all_topics():
                raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return "topics", name
        if resource_type == BROKER_RESOURCE:
            if name == "":
                return "brokers", ConfigChangeNotificationZNode.DEFAULT_ENTITY
            if name != str(self.broker_id):
                raise KafkaError(f"Unexpected broker id, expected {self.broker_id} or empty string, but received "
                                 f"{name}", ErrorCode.INVALID_REQUEST)
            return "brokers", name
        raise KafkaError(f"unsupported resource type {resource_type} (2 = topic, 4 = broker)", ErrorCode.INVALID_REQUEST)

    async def _write_entity_config(self, entity_type: str, entity: str, config: dict[str, str],
                                   validate_only: bool) -> None:
        try:
            if entity_type == "topics":
                LogConfig.from_properties(config, base=self.defaults)
            else:
                validate_broker_overrides(config)
        except ReadOnlyConfigError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_REQUEST) from None
        except InvalidConfigError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_CONFIG) from None
        if not validate_only:
            await self.kzc.change_entity_config(entity_type, entity, config)

    def topic_config_synonyms(self, topic_key: str) -> list[Synonym]:
        """The broker-level values behind a topic key without an override, highest precedence first."""
        return self.dynamic_config.topic_synonyms(topic_key)

    def dynamic_broker_entries(self, per_broker: bool) -> dict[str, list[Synonym]]:
        """The dynamic broker keys with their synonyms: all of them for this broker; for the default
        resource only the cluster default's overrides, each with itself as its one synonym (as Kafka
        describes them)."""
        keys = DYNAMIC_KEYS if per_broker else self.dynamic_config.overrides(per_broker=False)
        entries = {key: self.dynamic_config.synonyms(key) for key in keys}
        if not per_broker:  # Kafka shows the default entity's own values only
            entries = {key: [s for s in synonyms if s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
                       for key, synonyms in entries.items()}
        return entries

    async def allocate_producer_id(self) -> int:
        """Producer ids from blocks claimed in ``/latest_producer_id_block`` (unique cluster-wide)."""
        if self._next_producer_id > self._block_end:
            self._next_producer_id, self._block_end = await self.kzc.allocate_producer_id_block(
                self.broker_id, PRODUCER_ID_BLOCK)
        producer_id = self._next_producer_id
        self._next_producer_id += 1
        return producer_id


def _check_assignment(assignment: dict[int, list[int]], brokers: list[int]) -> None:
    if sorted(assignment) != list(range(len(assignment))):
        raise KafkaError(f"partitions must be numbered 0..{len(assignment) - 1}", ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise KafkaError("every partition needs the same, non-zero number of replicas", ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas) or not set(replicas) <= set(brokers):
            raise KafkaError(f"partition {partition}: replicas {replicas} must be distinct live brokers {brokers}",
                             ErrorCode.INVALID_REPLICA_ASSIGNMENT)
