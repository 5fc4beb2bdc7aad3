"""KafkaZkClient: Kafka's ZooKeeper operations in Kafka's terms, over ZkGateway.

Every write follows reference §1.3: broker registration through a multi to learn the czxid (broker
epoch); controller election as one multi (create ``/controller`` + conditional epoch bump); every
controller write fenced by the ``/controller_epoch`` version; partition state written with the
partition's expected znode version.
"""
from __future__ import annotations

import base64
import logging
import secrets
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from brokers.model import BrokerInfo, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from brokers.zk.errors import BadVersionError, MultiOpError, NodeExistsError, NoNodeError, ZkError
from brokers.zk.gateway import CreateOp, DeleteOp, SetDataOp, WatchEvent, ZkGateway
from brokers.zk.paths import (
    PERSISTENT_ROOTS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ControlPlaneSecretZNode,
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ConsumerGroupsZNode,
    ConsumerOffsetZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
)

log = logging.getLogger(__name__)
Watch = Callable[[WatchEvent], Any] | None
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs


class DuplicateBrokerIdError(ZkError):
    pass


@dataclass(frozen=True, slots=True)
class ControllerElection:
    """The outcome of an election attempt: who is controller, and (if we won) our epoch and its version."""

    controller_id: int
    epoch: int = -1
    epoch_zk_version: int = -1
    won: bool = False


@dataclass(frozen=True, slots=True)
class TopicAssignmentRead:
    """``/brokers/topics/<t>`` as read for a conditional rewrite: the assignment, the partitions a
    reassignment is moving (non-empty adding/removing replicas) and the znode version."""

    assignment: dict[int, list[int]]
    reassigning: list[int]
    zk_version: int


def new_uuid_base64() -> str:
    """Kafka's cluster and topic ids: 22 characters of URL-safe base64 of a random UUID."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaZkClient:
    def __init__(self, gateway: ZkGateway):
        self.zk = gateway

    # -- start-up ------------------------------------------------------------------------------
    async def create_persistent_roots(self) -> None:
        for path in PERSISTENT_ROOTS:
            await self.zk.ensure_path(path)

    async def get_or_create_cluster_id(self) -> str:
        try:
            await self.zk.create(ClusterIdZNode.PATH, ClusterIdZNode.encode(new_uuid_base64()), makepath=True)
        except NodeExistsError:
            pass
        data, _ = await self.zk.get(ClusterIdZNode.PATH)
        return ClusterIdZNode.decode(data)

    async def get_or_create_control_plane_secret(self) -> bytes:
        """The cluster's generated control-plane secret; the first broker to ask creates it."""
        try:
            await self.zk.create(ControlPlaneSecretZNode.PATH, ControlPlaneSecretZNode.encode(secrets.token_bytes(32)),
                                 makepath=True)
        except NodeExistsError:
            pass
        data, _ = await self.zk.get(ControlPlaneSecretZNode.PATH)
        return ControlPlaneSecretZNode.decode(data)

    # -- brokers -------------------------------------------------------------------------------
    async def generate_broker_id(self, reserved_broker_max_id: int) -> int:
        """``broker.id=-1``: an unconditional write to ``/brokers/seqid``; id = its new version +
        ``reserved.broker.max.id`` (so the first generated id is 1001)."""
        stat = await self.zk.set(BrokerSequenceIdZNode.PATH, b"", -1)
        return stat.version + reserved_broker_max_id

    async def register_broker(self, broker: BrokerInfo) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; return the broker epoch (its czxid).

        A node left by this broker's own earlier session is replaced (KAFKA-7165); a node owned by
        another live session means another broker runs with this id.
        """
        path = BrokerIdZNode.path(broker.id)
        data = BrokerIdZNode.encode(broker)
        for _ in range(3):
            try:
                _, stat = await self.zk.multi([CreateOp(path, b"", ephemeral=True), SetDataOp(path, data, 0)])
                return stat.czxid
            except MultiOpError as exc:
                if not isinstance(exc.cause, NodeExistsError):
                    raise exc.cause from exc
            existing = await self.zk.exists(path)
            if existing is None:
                continue
            if existing.ephemeral_owner != self.zk.session_id:
                raise DuplicateBrokerIdError(
                    f"broker id {broker.id} is already registered by another live broker (session "
                    f"{existing.ephemeral_owner:#x}); each broker needs its own broker.id")
            await self.zk.delete(path, existing.version)
        raise ZkError(f"could not register broker {broker.id}")

    async def get_broker_ids(self, watch: Watch = None) -> list[int]:
        return sorted(int(child) for child in await self.zk.get_children(BrokerIdsZNode.PATH, watch))

    async def get_broker(self, broker_id: int, watch: Watch = None) -> BrokerInfo | None:
        try:
            data, stat = await self.zk.get(BrokerIdZNode.path(broker_id), watch)
        except NoNodeError:
            return None
        return BrokerIdZNode.decode(broker_id, data, stat.czxid)

    async def get_all_brokers(self) -> dict[int, BrokerInfo]:
        brokers = {}
        for broker_id in await self.get_broker_ids():
            info = await self.get_broker(broker_id)
            if info is not None:
                brokers[broker_id] = info
        return brokers

    async def allocate_producer_id_block(self, broker_id: int, size: int = 1000) -> tuple[int, int]:
        """Claim the next ``size`` producer ids: a compare-and-set on ``/latest_producer_id_block``."""
        while True:
            data, stat = await self.zk.get(ProducerIdBlockZNode.PATH)
            start = ProducerIdBlockZNode.decode(data)[1] + 1 if data else 0
            try:
                await self.zk.set(ProducerIdBlockZNode.PATH, ProducerIdBlockZNode.encode(broker_id, start, start + size - 1),
                                  stat.version)
                return start, start + size - 1
            except BadVersionError:
                continue  # another broker took a block first

    # -- controller ----------------------------------------------------------------------------
    async def get_controller_id(self, watch: Watch = None) -> int | None:
        try:
            data, _ = await self.zk.get(ControllerZNode.PATH, watch)
        except NoNodeError:
            if watch is not None:
                await self.zk.exists(ControllerZNode.PATH, watch)  # re-arm: fire when one appears
            return None
        return ControllerZNode.decode(data)

    async def get_controller_epoch(self) -> tuple[int, int]:
        """(epoch, znode version) of ``/controller_epoch``, creating it as 0 if missing."""
        try:
            await self.zk.create(ControllerEpochZNode.PATH, ControllerEpochZNode.encode(0))
        except NodeExistsError:
            pass
        data, stat = await self.zk.get(ControllerEpochZNode.PATH)
        return ControllerEpochZNode.decode(data), stat.version

    async def try_elect_controller(self, broker_id: int) -> ControllerElection:
        """Kafka's ``elect()``: one multi creates ``/controller`` and bumps the epoch conditionally."""
        current = await self.get_controller_id()
        if current is not None:
            return ControllerElection(current)
        epoch, version = await self.get_controller_epoch()
        try:
            _, stat = await self.zk.multi([
                CreateOp(ControllerZNode.PATH, ControllerZNode.encode(broker_id), ephemeral=True),
                SetDataOp(ControllerEpochZNode.PATH, ControllerEpochZNode.encode(epoch + 1), version),
            ])
            return ControllerElection(broker_id, epoch + 1, stat.version, won=True)
        except MultiOpError as exc:
            if not isinstance(exc.cause, (NodeExistsError, BadVersionError)):
                raise exc.cause from exc
        winner = await self.get_controller_id()
        now_epoch, now_version = await self.get_controller_epoch()
        if winner == broker_id and now_epoch == epoch + 1:  # our multi committed but its answer was lost
            return ControllerElection(broker_id, now_epoch, now_version, won=True)
        return ControllerElection(winner if winner is not None else -1)

    async def delete_controller_if_owned(self) -> bool:
        """Delete ``/controller`` if this session created it (a failover that died half-way)."""
        stat = await self.zk.exists(ControllerZNode.PATH)
        if stat is None or stat.ephemeral_owner != self.zk.session_id:
            return False
        try:
            await self.zk.delete(ControllerZNode.PATH, stat.version)
            return True
        except ZkError:
            return False

    async def resign_controller(self, epoch_zk_version: int) -> None:
        """Delete ``/controller`` (fenced: only while our epoch stands) so others can elect."""
        try:
            await self.zk.fenced_multi(epoch_zk_version, [DeleteOp(ControllerZNode.PATH)])
        except ZkError as exc:
            log.info("resign: /controller not deleted (%s)", exc)

    # -- topics --------------------------------------------------------------------------------
    async def get_all_topics(self, watch: Watch = None) -> list[str]:
        return await self.zk.get_children(TopicsZNode.PATH, watch)

    async def get_topic_assignment(self, topic: str, watch: Watch = None) -> dict[int, list[int]] | None:
        try:
            data, _ = await self.zk.get(TopicZNode.path(topic), watch)
        except NoNodeError:
            return None
        return TopicZNode.decode(topic, data)

    async def get_topic_assignment_for_update(self, topic: str) -> TopicAssignmentRead | None:
        """What a conditional rewrite of ``/brokers/topics/<t>`` starts from (None: no such topic)."""
        try:
            data, stat = await self.zk.get(TopicZNode.path(topic))
        except NoNodeError:
            return None
        full, _ = TopicZNode.decode_full(topic, data)
        return TopicAssignmentRead({p: list(a.replicas) for p, a in full.items()},
                                   sorted(p for p, a in full.items() if a.is_being_reassigned), stat.version)

    async def add_topic_partitions(self, topic: str, added: dict[int, list[int]], expected_version: int) -> None:
        """CreatePartitions' write: ``/brokers/topics/<t>`` with ``added`` joining its partitions, the topic
        id and reassignment fields kept, as a compare-and-set on ``expected_version``. BadVersionError if
        anyone wrote since that read, NoNodeError if the topic is gone, ValueError if a partition exists."""
        path = TopicZNode.path(topic)
        data, stat = await self.zk.get(path)
        if stat.version != expected_version:
            raise BadVersionError(f"{path} is at version {stat.version}, not {expected_version}")
        full, topic_id = TopicZNode.decode_full(topic, data)
        if set(added) & set(full):
            raise ValueError(f"{path}: partitions {sorted(set(added) & set(full))} already exist")
        full.update({p: ReplicaAssignment(tuple(replicas)) for p, replicas in added.items()})
        await self.zk.set(path, TopicZNode.encode_full(full, topic_id), expected_version)

    async def get_full_topic_assignment(self, topic: str, watch: Watch = None
                                        ) -> tuple[dict[int, ReplicaAssignment], str | None] | None:
        """Replica sets with KIP-455's adding/removing replicas, and the topic id; None if no topic."""
        try:
            data, _ = await self.zk.get(TopicZNode.path(topic), watch)
        except NoNodeError:
            return None
        return TopicZNode.decode_full(topic, data)

    async def update_topic_assignment(self, epoch_zk_version: int, topic: str,
                                      updates: dict[int, ReplicaAssignment]) -> None:
        """The controller rewrites some partitions of a topic's assignment (reassignment steps): a
        read-modify-write of the topic znode, compare-and-set on its version (so a concurrent
        CreatePartitions is never overwritten) and fenced by the controller epoch; retried on a conflict."""
        path = TopicZNode.path(topic)
        for _ in range(5):
            data, stat = await self.zk.get(path)
            assignment, topic_id = TopicZNode.decode_full(topic, data)
            assignment.update(updates)
            try:
                await self.zk.fenced_multi(epoch_zk_version, [
                    SetDataOp(path, TopicZNode.encode_full(assignment, topic_id), stat.version)])
                return
            except MultiOpError as exc:
                if not isinstance(exc.cause, BadVersionError):
                    raise
        raise ZkError(f"{path}: kept changing under the controller's write")

    # -- reassignment (/admin/reassign_partitions, the legacy path) ------------------------------
    async def get_partition_reassignment(self, watch: Watch = None) -> dict[TopicPartition, list[int]] | None:
        """The legacy reassignment request, or None; with ``watch`` an absent znode is watched for creation."""
        try:
            data, _ = await self.zk.get(ReassignPartitionsZNode.PATH, watch)
        except NoNodeError:
            if watch is not None:
                await self.zk.exists(ReassignPartitionsZNode.PATH, watch)
            return None
        try:
            return ReassignPartitionsZNode.decode(data)
        except ValueError as exc:
            log.error("ignoring a malformed %s: %s", ReassignPartitionsZNode.PATH, exc)
            return {}

    async def create_partition_reassignment(self, targets: dict[TopicPartition, list[int]]) -> None:
        """What Kafka 2.x's ``kafka-reassign-partitions --zookeeper --execute`` writes (NodeExistsError if one runs)."""
        await self.zk.create(ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(targets), makepath=True)

    async def set_partition_reassignment(self, epoch_zk_version: int, targets: dict[TopicPartition, list[int]]) -> None:
        """The controller shrinks the legacy request as partitions complete; empty deletes it (fenced)."""
        if await self.zk.exists(ReassignPartitionsZNode.PATH) is None:
            return
        op = (SetDataOp(ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(targets)) if targets
              else DeleteOp(ReassignPartitionsZNode.PATH))
        await self.zk.fenced_multi(epoch_zk_version, [op])

    async def create_topic(self, topic: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
        """The admin path (CreateTopics / kafka-topics --zookeeper): config first, then assignment."""
        config_path = ConfigEntityZNode.path("topics", topic)
        try:
            await self.zk.create(config_path, ConfigEntityZNode.encode(config), makepath=True)
        except NodeExistsError:
            await self.zk.set(config_path, ConfigEntityZNode.encode(config))
        await self.zk.create(TopicZNode.path(topic), TopicZNode.encode(assignment, new_uuid_base64()), makepath=True)

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = await self.zk.get(ConfigEntityZNode.path("topics", topic))
        except NoNodeError:
            return {}
        return ConfigEntityZNode.decode(data)

    async def get_all_topic_configs(self) -> dict[str, dict[str, str]]:
        """Every topic's overrides (``/config/topics/*``): what a broker loads its logs with at start-up,
        as Kafka builds its LogManager from ``zkClient.getLogConfigs`` of all topics."""
        try:
            topics = await self.zk.get_children(ConfigEntityZNode.type_path("topics"))
        except NoNodeError:
            return {}
        configs = {}
        for topic in topics:
            overrides = await self.get_topic_config(topic)
            if overrides:
                configs[topic] = overrides
        return configs

    # -- entity configs and their change notifications (Kafka's AdminZkClient.changeConfigs) ----
    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        """``/config/<type>/<name>``: the entity's overrides, empty if it has none."""
        try:
            data, _ = await self.zk.get(ConfigEntityZNode.path(entity_type, name))
        except NoNodeError:
            return {}
        return ConfigEntityZNode.decode(data)

    async def get_entity_names(self, entity_type: str) -> list[str]:
        """The entities of a type with a config znode (``/config/<type>`` children), sanitized names."""
        return await self._children_or_empty(ConfigEntityZNode.type_path(entity_type))

    async def change_entity_config(self, entity_type: str, name: str, config: dict[str, str]) -> None:
        """Write the entity's whole override set (last writer wins), then a ``config_change_`` notification
        so that every broker re-reads it; then purge notifications 15 minutes older than this one."""
        path = ConfigEntityZNode.path(entity_type, name)
        try:
            await self.zk.set(path, ConfigEntityZNode.encode(config))
        except NoNodeError:
            try:
                await self.zk.create(path, ConfigEntityZNode.encode(config), makepath=True)
            except NodeExistsError:
                await self.zk.set(path, ConfigEntityZNode.encode(config))
        created = await self.zk.create(
            f"{ConfigChangeNotificationZNode.PATH}/{ConfigChangeNotificationZNode.PREFIX}",
            ConfigChangeNotificationZNode.encode(entity_type, name), sequential=True, makepath=True)
        stat = await self.zk.exists(created)  # ZooKeeper's clock: the writer purges by the server's ctime
        if stat is not None:
            await self.purge_config_change_notifications(stat.ctime)

    async def purge_config_change_notifications(self, now_ms: int,
                                                max_age_ms: int = CONFIG_CHANGE_EXPIRATION_MS) -> list[str]:
        return await self.purge_change_notifications(ConfigChangeNotificationZNode.PATH, now_ms, max_age_ms)

    async def purge_change_notifications(self, parent: str, now_ms: int,
                                         max_age_ms: int = CONFIG_CHANGE_EXPIRATION_MS) -> list[str]:
        """Delete the notifications under ``parent`` (``/config/changes``, ``/kafka-acl-changes``...) created
        more than ``max_age_ms`` before ``now_ms``, ZooKeeper's clock (Kafka expires them after 15 minutes: by
        then every live broker has applied them). Returns the deleted names."""
        purged = []
        for child in await self.zk.get_children(parent):
            path = f"{parent}/{child}"
            stat = await self.zk.exists(path)
            if stat is None or now_ms - stat.ctime <= max_age_ms:
                continue
            try:
                await self.zk.delete(path, stat.version)
                purged.append(child)
            except ZkError:
                continue  # another writer purged it first
        return purged

    async def get_config_change_notifications(self, watch: Watch = None) -> list[str]:
        """The notification children, in sequence order (the watch fires on the next child change)."""
        children = await self.zk.get_children(ConfigChangeNotificationZNode.PATH, watch)
        return sorted((c for c in children if c.startswith(ConfigChangeNotificationZNode.PREFIX)),
                      key=ConfigChangeNotificationZNode.sequence)

    async def read_config_change_notification(self, child: str) -> tuple[str, str] | None:
        """(entity type, entity name) of one notification; None if it is gone (purged)."""
        try:
            data, _ = await self.zk.get(f"{ConfigChangeNotificationZNode.PATH}/{child}")
        except NoNodeError:
            return None
        return ConfigChangeNotificationZNode.decode(data)

    # -- partition state -----------------------------------------------------------------------
    async def get_partition_state(self, tp: TopicPartition, watch: Watch = None) -> LeaderIsrAndControllerEpoch | None:
        """The partition state, or None; ``watch``: a one-shot data watch (the controller follows the ISR of
        partitions under reassignment)."""
        try:
            data, stat = await self.zk.get(TopicPartitionStateZNode.path(tp), watch)
        except NoNodeError:
            return None
        return TopicPartitionStateZNode.decode(data, stat.version)

    async def create_partition_state(self, epoch_zk_version: int, tp: TopicPartition,
                                     state: LeaderIsrAndControllerEpoch) -> None:
        """New -> Online: create ``partitions/<p>/state`` (and its parents) in one fenced multi."""
        ops = []
        for parent in (TopicPartitionsZNode.path(tp.topic), TopicPartitionZNode.path(tp)):
            if await self.zk.exists(parent) is None:
                ops.append(CreateOp(parent))
        ops.append(CreateOp(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state)))
        await self.zk.fenced_multi(epoch_zk_version, ops)

    async def update_partition_state(self, epoch_zk_version: int, tp: TopicPartition,
                                     state: LeaderIsrAndControllerEpoch) -> int:
        """Compare-and-set on the partition's znode version (in ``state``); return the new version.

        Raises MultiOpError(BadVersionError) when someone else wrote first, ControllerMovedError when
        this controller was deposed.
        """
        lai = state.leader_and_isr
        (stat,) = await self.zk.fenced_multi(epoch_zk_version, [
            SetDataOp(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state), lai.zk_version)])
        return stat.version

    async def update_isr_by_leader(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int:
        """A partition leader's ISR change (ZK mode, reference §3.3): a compare-and-set on the state
        znode's version (``state.leader_and_isr.zk_version``), not fenced by the controller epoch (the
        leader is not the controller). Returns the new version; BadVersionError if anyone wrote since."""
        stat = await self.zk.set(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state),
                                 state.leader_and_isr.zk_version)
        return stat.version

    async def create_isr_change_notification(self, partitions: list[TopicPartition]) -> None:
        """One ``/isr_change_notification/isr_change_<seq>`` for a batch of partitions whose ISR changed."""
        await self.zk.create(f"{IsrChangeNotificationZNode.PATH}/{IsrChangeNotificationZNode.PREFIX}",
                             IsrChangeNotificationZNode.encode(partitions), sequential=True, makepath=True)

    # -- consumer offsets (reference §5.1, ZK design) -------------------------------------------
    async def get_consumer_groups(self) -> list[str]:
        return await self._children_or_empty(ConsumerGroupsZNode.PATH)

    async def get_consumer_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every committed offset of ``group`` (unparseable znodes are skipped with a warning)."""
        offsets: dict[TopicPartition, int] = {}
        base = ConsumerOffsetZNode.group_path(group)
        for topic in await self._children_or_empty(base):
            for partition in await self._children_or_empty(f"{base}/{topic}"):
                tp = TopicPartition(topic, int(partition))
                try:
                    data, _ = await self.zk.get(ConsumerOffsetZNode.path(group, tp))
                    offsets[tp] = ConsumerOffsetZNode.decode(data)
                except NoNodeError:
                    continue
                except ValueError as exc:
                    log.warning("skipping the bad offset znode %s: %s", ConsumerOffsetZNode.path(group, tp), exc)
        return offsets

    async def set_consumer_offsets(self, group: str, offsets: dict[TopicPartition, int],
                                   existing: set[TopicPartition]) -> None:
        """One multi-op for the whole commit: set the znodes in ``existing``, create the others (and the
        topic znodes they need). MultiOpError if ``existing`` was wrong; the caller re-reads and retries."""
        ops: list[Any] = []
        base = ConsumerOffsetZNode.group_path(group)
        known_topics = {tp.topic for tp in existing}
        new_topics = sorted({tp.topic for tp in offsets if tp not in existing} - known_topics)
        if new_topics:
            await self.zk.ensure_path(base)
            for topic in new_topics:
                if await self.zk.exists(f"{base}/{topic}") is None:
                    ops.append(CreateOp(f"{base}/{topic}"))
        for tp, offset in sorted(offsets.items()):
            path, data = ConsumerOffsetZNode.path(group, tp), ConsumerOffsetZNode.encode(offset)
            ops.append(SetDataOp(path, data) if tp in existing else CreateOp(path, data))
        await self.zk.multi(ops)

    async def delete_consumer_offsets(self, group: str, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            try:
                await self.zk.delete(ConsumerOffsetZNode.path(group, tp))
            except NoNodeError:
                pass

    async def delete_consumer_group(self, group: str) -> None:
        try:
            await self.zk.delete(ConsumerGroupsZNode.path(group), recursive=True)
        except NoNodeError:
            pass

    # -- deletion and notifications ------------------------------------------------------------
    async def get_topic_deletions(self, watch: Watch = None) -> list[str]:
        return await self.zk.get_children(DeleteTopicsZNode.PATH, watch)

    async def request_topic_deletion(self, topic: str) -> None:
        try:
            await self.zk.create(DeleteTopicsZNode.path(topic), makepath=True)
        except NodeExistsError:
            pass

    async def delete_topic(self, epoch_zk_version: int, topic: str) -> None:
        """Remove the topic's znodes bottom-up, its config and its deletion marker, fenced."""
        ops: list[Any] = []
        partitions_path = TopicPartitionsZNode.path(topic)
        for partition in await self._children_or_empty(partitions_path):
            tp = TopicPartition(topic, int(partition))
            if await self.zk.exists(TopicPartitionStateZNode.path(tp)):
                ops.append(DeleteOp(TopicPartitionStateZNode.path(tp)))
            ops.append(DeleteOp(TopicPartitionZNode.path(tp)))
        if await self.zk.exists(partitions_path):
            ops.append(DeleteOp(partitions_path))
        ops.append(DeleteOp(TopicZNode.path(topic)))
        for path in (ConfigEntityZNode.path("topics", topic), DeleteTopicsZNode.path(topic)):
            if await self.zk.exists(path):
                ops.append(DeleteOp(path))
        await self.zk.fenced_multi(epoch_zk_version, ops)

    async def delete_topic_deletion_marker(self, epoch_zk_version: int, topic: str) -> None:
        await self.zk.fenced_multi(epoch_zk_version, [DeleteOp(DeleteTopicsZNode.path(topic))])

    async def get_isr_change_notifications(self, watch: Watch = None) -> list[str]:
        return await self.zk.get_children(IsrChangeNotificationZNode.PATH, watch)

    async def read_isr_change_notification(self, name: str) -> list[TopicPartition]:
        try:
            data, _ = await self.zk.get(f"{IsrChangeNotificationZNode.PATH}/{name}")
        except NoNodeError:
            return []
        return IsrChangeNotificationZNode.decode(data)

    async def delete_isr_change_notifications(self, epoch_zk_version: int, names: list[str]) -> None:
        if names:
            await self.zk.fenced_multi(epoch_zk_version,
                                       [DeleteOp(f"{IsrChangeNotificationZNode.PATH}/{n}") for n in names])

    # -- preferred replica election (reference §2.5) ---------------------------------------------
    async def get_preferred_replica_election(self, watch: Watch = None) -> tuple[set[TopicPartition], int] | None:
        """The partitions ``/admin/preferred_replica_election`` names and the znode's version, None
        when it does not exist. ``watch`` is an existence watch: it fires when the znode is created,
        changed or deleted. ValueError when its content is not Kafka's format."""
        path = PreferredReplicaElectionZNode.PATH
        if await self.zk.exists(path, watch) is None:
            return None
        try:
            data, stat = await self.zk.get(path)
        except NoNodeError:
            return None
        return PreferredReplicaElectionZNode.decode(data), stat.version

    async def create_preferred_replica_election(self, partitions: list[TopicPartition]) -> None:
        """An admin's request (NodeExistsError while an earlier one is still pending)."""
        await self.zk.create(PreferredReplicaElectionZNode.PATH, PreferredReplicaElectionZNode.encode(partitions),
                             makepath=True)

    async def delete_preferred_replica_election(self, epoch_zk_version: int, version: int = -1) -> bool:
        """The controller's deletion once the election ran, fenced; with ``version`` only if nobody
        rewrote the znode since it was read. False when the znode is gone or was rewritten."""
        try:
            await self.zk.fenced_multi(epoch_zk_version, [DeleteOp(PreferredReplicaElectionZNode.PATH, version)])
        except MultiOpError as exc:
            if isinstance(exc.cause, (NoNodeError, BadVersionError)):
                return False
            raise
        return True

    async def _children_or_empty(self, path: str) -> list[str]:
        try:
            return await self.zk.get_children(path)
        except NoNodeError:
            return []
