"""ClusterAdmin: what the operator tools need that confluent-kafka's AdminClient lacks (one way for them to
speak the broker's own protocol client: ``request_any`` for any API, ``request_broker`` to one broker by id,
``find_coordinator`` (groups and transactional ids), KIP-455's reassignments to the controller).

KIP-455's AlterPartitionReassignments and ListPartitionReassignments (librdkafka has neither) go to the
controller over the broker's own protocol client (``brokers.client.KafkaConnection``, kio-encoded), found
with Metadata v4 like every Kafka admin client does: the controller id in Metadata, retried once on
NOT_CONTROLLER after a fresh Metadata (the controller moved). Configs go through confluent-kafka's
``incremental_alter_configs`` (the throttles of ``kafka-reassign-partitions --throttle``).
``properties`` are Kafka's client properties (a tool's ``--command-config``, ``scripts.tools.common.client_properties``):
both kinds of connection use their ``security.protocol``, TLS and SASL settings.
"""
from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from brokers.client.connection import KafkaConnection
from brokers.model import ReplicaAssignment, TopicPartition
from brokers.protocol import codec
from brokers.protocol.api_versions import ApiKey
from brokers.protocol.errors import ErrorCode
from scripts.tools.common.client_properties import client_config, connection_settings

METADATA, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = (ApiKey.METADATA, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                                                   ApiKey.LIST_PARTITION_REASSIGNMENTS)
DESCRIBE_LOG_DIRS, ALTER_REPLICA_LOG_DIRS = ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ALTER_REPLICA_LOG_DIRS
LOG_DIRS_VERSION = 1
FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
CLIENT_ID = "zkafka-admin"


class ClusterAdminError(RuntimeError):
    pass


def _endpoints(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ClusterAdminError(f"bad --bootstrap-server entry {item!r}: expected HOST:PORT")
        out.append((host, int(port)))
    return out


class ClusterAdmin:
    def __init__(self, bootstrap: str, timeout: float, client_id: str = CLIENT_ID,
                 properties: dict[str, str] | None = None):
        self.bootstrap, self.timeout, self.client_id = bootstrap, timeout, client_id
        self.properties = properties or {}
        self._ssl_context, self._sasl = connection_settings(self.properties)  # ClientPropertiesError if unusable
        self._connections: dict[tuple[str, int], KafkaConnection] = {}
        self._configs: AdminClient | None = None

    async def __aenter__(self) -> "ClusterAdmin":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for connection in self._connections.values():
            connection.close()

    async def _connection(self, host: str, port: int) -> KafkaConnection:
        connection = self._connections.get((host, port))
        if connection is None or not connection.connected:
            connection = KafkaConnection(host, port, self.client_id, self._ssl_context, self._sasl)
            await connection.connect(self.timeout)
            self._connections[(host, port)] = connection
        return connection

    async def request_any(self, api_key: int, version: int, body: Any) -> Any:
        """``body`` to the first bootstrap broker that answers; ClusterAdminError naming each failure."""
        errors = []
        for host, port in _endpoints(self.bootstrap):
            try:
                connection = await self._connection(host, port)
                return await connection.request(api_key, version, body, self.timeout)
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                errors.append(f"{host}:{port}: {exc}")
        raise ClusterAdminError(f"no broker answered API key {api_key} ({'; '.join(errors)})")

    async def request_endpoint(self, host: str, port: int, api_key: int, version: int, body: Any) -> Any:
        """``body`` to the broker at ``host:port`` (one a Metadata answer named)."""
        connection = await self._connection(host, port)
        return await connection.request(api_key, version, body, self.timeout)

    async def metadata(self, topics: list[str] | None) -> Any:
        """Metadata v4 for ``topics`` (None: every topic, internal ones included)."""
        body = codec.build(codec.request_class(METADATA, 4),
                           topics=None if topics is None else [{"name": t} for t in topics],
                           allow_auto_topic_creation=False)
        return await self.request_any(METADATA, 4, body)

    async def request_broker(self, broker_id: int, api_key: int, version: int, body: Any) -> Any:
        """``body`` to broker ``broker_id``, found in Metadata (ClusterAdminError if the cluster has no such broker)."""
        broker = next((b for b in (await self.metadata([])).brokers if b.node_id == broker_id), None)
        if broker is None:
            raise ClusterAdminError(f"no broker with id {broker_id} in the cluster's metadata")
        return await self.request_endpoint(broker.host, int(broker.port), api_key, version, body)

    async def find_coordinator(self, key: str, key_type: int) -> tuple[ErrorCode, int]:
        """FindCoordinator v3 (key type 0 a group, 1 a transactional id): the error and the coordinator's id."""
        body = codec.build(codec.request_class(FIND_COORDINATOR, 3), key=key, key_type=key_type)
        response = await self.request_any(FIND_COORDINATOR, 3, body)
        return ErrorCode(int(response.error_code)), int(response.node_id)

    async def broker_ids(self) -> list[int]:
        return sorted(int(b.node_id) for b in (await self.metadata([])).brokers)

    async def broker_racks(self) -> dict[int, str | None]:
        """Each live broker's ``broker.rack`` (None when unset), from Metadata."""
        return {int(b.node_id): b.rack for b in (await self.metadata([])).brokers}

    async def assignment(self, topics: list[str]) -> dict[TopicPartition, list[int]]:
        """The replica lists of ``topics`` (unknown topics are left out)."""
        metadata = await self.metadata(topics)
        return {TopicPartition(t.name, int(p.partition_index)): [int(r) for r in p.replica_nodes]
                for t in metadata.topics if t.error_code == 0 for p in t.partitions}

    async def _to_controller(self, api_key: int, body: Any) -> Any:
        for attempt in (1, 2):
            metadata = await self.metadata([])
            controller = next((b for b in metadata.brokers if b.node_id == metadata.controller_id), None)
            if controller is None:
                raise ClusterAdminError("the cluster names no controller")
            connection = await self._connection(controller.host, int(controller.port))
            response = await connection.request(api_key, 0, body, self.timeout)
            if response.error_code != ErrorCode.NOT_CONTROLLER or attempt == 2:
                if response.error_code != 0:
                    raise ClusterAdminError(f"{ErrorCode(int(response.error_code)).name}: {response.error_message}")
                return response
            await asyncio.sleep(0.5)

    async def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None]
                                  ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        by_topic: dict[str, list[dict]] = {}
        for tp, replicas in sorted(targets.items()):
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "replicas": replicas})
        body = codec.build(codec.request_class(ALTER_REASSIGNMENTS, 0), timeout=int(self.timeout * 1000),
                           topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
        response = await self._to_controller(ALTER_REASSIGNMENTS, body)
        return {TopicPartition(t.name, int(p.partition_index)): (ErrorCode(int(p.error_code)), p.error_message)
                for t in response.responses for p in t.partitions}

    async def list_reassignments(self) -> dict[TopicPartition, ReplicaAssignment]:
        body = codec.build(codec.request_class(LIST_REASSIGNMENTS, 0), timeout=int(self.timeout * 1000), topics=None)
        response = await self._to_controller(LIST_REASSIGNMENTS, body)
        return {TopicPartition(t.name, int(p.partition_index)): ReplicaAssignment(
            tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in response.topics for p in t.partitions}

    # -- log dirs (KIP-113: DescribeLogDirs, AlterReplicaLogDirs to one broker) ----------------------
    async def describe_log_dirs(self, broker_id: int, topics: list[str] | None = None) -> list[Any]:
        """Broker ``broker_id``'s DescribeLogDirs results (every partition; a dir's ``topics`` filtered by
        name when ``topics`` is given)."""
        body = codec.build(codec.request_class(DESCRIBE_LOG_DIRS, LOG_DIRS_VERSION), topics=None)
        response = await self.request_broker(broker_id, DESCRIBE_LOG_DIRS, LOG_DIRS_VERSION, body)
        return list(response.results)

    async def replica_log_dirs(self, broker_id: int, partitions: set[TopicPartition] | None = None
                               ) -> dict[TopicPartition, tuple[str | None, str | None]]:
        """Broker ``broker_id``'s replicas (of ``partitions``, or all) as (current dir, future dir): the dir
        holding each one, and the dir a move between its dirs is copying it into (None when not moving)."""
        found: dict[TopicPartition, tuple[str | None, str | None]] = {}
        for result in await self.describe_log_dirs(broker_id):
            for topic in result.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, int(p.partition_index))
                    if partitions is None or tp in partitions:
                        current, future = found.get(tp, (None, None))
                        found[tp] = (current, result.log_dir) if p.is_future_key else (result.log_dir, future)
        return found

    async def alter_replica_log_dirs(self, broker_id: int, moves: dict[TopicPartition, str]
                                     ) -> dict[TopicPartition, ErrorCode]:
        """AlterReplicaLogDirs to broker ``broker_id``: each partition's replica there to its dir."""
        by_dir: dict[str, dict[str, list[int]]] = {}
        for tp, path in sorted(moves.items()):
            by_dir.setdefault(path, {}).setdefault(tp.topic, []).append(tp.partition)
        body = codec.build(codec.request_class(ALTER_REPLICA_LOG_DIRS, LOG_DIRS_VERSION), dirs=[
            {"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            for path, topics in by_dir.items()])
        response = await self.request_broker(broker_id, ALTER_REPLICA_LOG_DIRS, LOG_DIRS_VERSION, body)
        return {TopicPartition(t.topic_name, int(p.partition_index)): ErrorCode(int(p.error_code))
                for t in response.results for p in t.partitions}

    # -- throttles (confluent-kafka) ---------------------------------------------------------------
    def _alter(self, resources: list[ConfigResource]) -> None:
        """One call for the topics and one per broker (librdkafka sends a BROKER resource to that broker)."""
        if self._configs is None:
            self._configs = AdminClient(client_config(self.bootstrap, self.properties))
        topics = [r for r in resources if r.restype == ConfigResource.Type.TOPIC]
        calls = [[r] for r in resources if r.restype != ConfigResource.Type.TOPIC] + ([topics] if topics else [])
        for call in calls:
            for resource, future in self._configs.incremental_alter_configs(call).items():
                try:
                    future.result(self.timeout)
                except Exception as exc:  # noqa: BLE001 - confluent's KafkaException carries the broker's error
                    raise ClusterAdminError(f"cannot alter the configs of {resource}: {exc}") from None

    def set_throttles(self, brokers: list[int], rate: int, replicas: dict[str, dict[str, str]]) -> None:
        def entry(key: str, value: str) -> ConfigEntry:
            return ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)

        resources = [ConfigResource(ConfigResource.Type.BROKER, str(b),
                                    incremental_configs=[entry(k, str(rate)) for k in
                                                         ("leader.replication.throttled.rate",
                                                          "follower.replication.throttled.rate")])
                     for b in brokers]
        resources += [ConfigResource(ConfigResource.Type.TOPIC, topic,
                                     incremental_configs=[entry(k, v) for k, v in configs.items()])
                      for topic, configs in sorted(replicas.items())]
        self._alter(resources)

    def clear_throttles(self, brokers: list[int], topics: list[str]) -> None:
        def delete(key: str) -> ConfigEntry:
            return ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)

        resources = [ConfigResource(ConfigResource.Type.BROKER, str(b), incremental_configs=[
            delete("leader.replication.throttled.rate"), delete("follower.replication.throttled.rate")])
            for b in brokers]
        resources += [ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
            delete("leader.replication.throttled.replicas"), delete("follower.replication.throttled.replicas")])
            for t in topics]
        self._alter(resources)
