"""ZkAdmin: the admin operations the Kafka APIs need (``brokers.server.context.AdminOps``), done the
classic way: through ZooKeeper, with the controller doing the rest.

Part of the composition layer (like ``brokers.app``): it joins the ZooKeeper client, the topic admin
path in ``coordinator.topics`` and the storage layer's LogConfig validation.
"""
from __future__ import annotations

from brokers.config import BrokerConfig
from brokers.protocol.errors import ErrorCode, KafkaError
from brokers.replication.metadata_cache import MetadataCache
from brokers.storage.log_config import InvalidConfigError, LogConfig
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import NodeExistsError
from coordinator.assignment import validate_topic_name
from coordinator.partition_addition import add_partitions
from coordinator.topics import create_topic

PRODUCER_ID_BLOCK = 1000


class ZkAdmin:
    def __init__(self, broker_id: int, kzc: KafkaZkClient, config: BrokerConfig, defaults: LogConfig,
                 metadata_cache: MetadataCache):
        self.broker_id = broker_id
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
        if validate_only:
            return
        if assignment:
            try:
                await self.kzc.create_topic(name, {int(p): list(r) for p, r in assignment.items()}, config)
            except NodeExistsError:
                raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS) from None
        else:
            await create_topic(self.kzc, name, num_partitions, replication_factor, config)

    async def delete_topic(self, name: str) -> None:
        if name not in await self.kzc.get_all_topics():
            raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not self.config["delete.topic.enable"]:
            raise KafkaError("topic deletion is disabled (delete.topic.enable=false)", ErrorCode.TOPIC_DELETION_DISABLED)
        await self.kzc.request_topic_deletion(name)

    async def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                                validate_only: bool) -> None:
        await add_partitions(self.kzc, name, count, assignments, validate_only=validate_only)

    async def topic_config(self, name: str) -> dict[str, str]:
        if name not in await self.kzc.get_all_topics():
            raise KafkaError(f"topic {name!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return await self.kzc.get_topic_config(name)

    def log_config_defaults(self) -> dict[str, str]:
        return self.defaults.to_properties()

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
