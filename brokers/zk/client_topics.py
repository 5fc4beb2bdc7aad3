"""Topics, partitions and the admin requests the controller acts on: Kafka's ``KafkaZkClient`` topic and
partition-state operations (``getReplicaAssignmentForTopics``, ``setTopicAssignment``,
``createTopicPartitionStatesRaw``, ``updateLeaderAndIsr``), ``/admin/delete_topics``,
``/admin/reassign_partitions``, ``/admin/preferred_replica_election`` and ``/isr_change_notification``.

Every controller write here is a ``fenced_multi`` on the ``/controller_epoch`` version; partition state is
written compare-and-set on the partition znode's version; the topic znode is rewritten compare-and-set on
its version so that a concurrent CreatePartitions is never lost.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brokers.model import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from brokers.zk.client_base import Watch, ZkClientBase, log, new_uuid_base64
from brokers.zk.errors import BadVersionError, MultiOpError, NodeExistsError, NoNodeError, ZkError
from brokers.zk.gateway import CreateOp, DeleteOp, SetDataOp
from brokers.zk.paths import (
    ConfigEntityZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
)


@dataclass(frozen=True, slots=True)
class TopicAssignmentRead:
    """``/brokers/topics/<t>`` as read for a conditional rewrite: the assignment, the partitions a
    reassignment is moving (non-empty adding/removing replicas) and the znode version."""

    assignment: dict[int, list[int]]
    reassigning: list[int]
    zk_version: int


class TopicsZkMixin(ZkClientBase):
    """KafkaZkClient's topic, partition-state and admin-request znodes (``/brokers/topics``, ``/admin``,
    ``/isr_change_notification``)."""

    # -- topics --------------------------------------------------------------------------------
    async def get_all_topics(self, watch: Watch = None) -> list[str]:
        return await self.zk.get_children(TopicsZNode.PATH, watch)

    async def get_topic_assignment(self, topic: str, watch: Watch = None) -> dict[int, list[int]] | None:
        try:
            data, _ = await self.zk.get(TopicZNode.path(topic), watch)
        except NoNodeError:
            return None
        return TopicZNode.decode(topic, data)

    async def get_full_topic_assignments(self, topics: list[str], watches: list[Watch] | None = None
                                         ) -> list[tuple[dict[int, ReplicaAssignment], str | None] | None]:
        """``get_full_topic_assignment`` of many topics as one pipelined batch (``watches[i]``: the data
        watch of ``topics[i]``'s znode)."""
        got = await self.zk.get_many([TopicZNode.path(t) for t in topics], watches)
        return [None if g is None else TopicZNode.decode_full(t, g[0]) for t, g in zip(topics, got)]

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
        def modify(assignment: dict[int, ReplicaAssignment], topic_id: str | None):
            return {**assignment, **updates}, topic_id
        await self._rewrite_topic_znode(epoch_zk_version, topic, modify, gone_ok=False)

    async def set_topic_id(self, epoch_zk_version: int, topic: str) -> str | None:
        """Kafka 2.8's ``setTopicIds``: give a topic whose znode has no ``topic_id`` (created before topic ids,
        or by an older tool) a new random one; fenced by the controller epoch, compare-and-set on the znode
        version and retried on a conflict. Returns the znode's id (an id someone wrote meanwhile is kept),
        None if the topic is gone."""
        def modify(assignment: dict[int, ReplicaAssignment], topic_id: str | None):
            return None if topic_id is not None else (assignment, new_uuid_base64())
        return await self._rewrite_topic_znode(epoch_zk_version, topic, modify, gone_ok=True)

    async def _rewrite_topic_znode(self, epoch_zk_version: int, topic: str, modify, *, gone_ok: bool) -> str | None:
        """Read-modify-write of ``/brokers/topics/<topic>``: ``modify(assignment, topic_id)`` gives the new
        (assignment, topic_id), or None for nothing to write; the write is fenced by the controller epoch and
        a compare-and-set on the znode version, retried on a conflict. Returns the znode's topic id; None if
        the znode is gone and ``gone_ok`` (else NoNodeError)."""
        path = TopicZNode.path(topic)
        retried = (BadVersionError, NoNodeError) if gone_ok else (BadVersionError,)
        for _ in range(5):
            try:
                data, stat = await self.zk.get(path)
            except NoNodeError:
                if gone_ok:
                    return None
                raise
            assignment, topic_id = TopicZNode.decode_full(topic, data)
            changed = modify(assignment, topic_id)
            if changed is None:
                return topic_id
            try:
                await self.zk.fenced_multi(epoch_zk_version, [
                    SetDataOp(path, TopicZNode.encode_full(*changed), stat.version)])
                return changed[1]
            except MultiOpError as exc:
                if not isinstance(exc.cause, retried):
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

    # -- partition state, pipelined (zookeeper.max.in.flight.requests in flight) -------------------
    async def get_partition_states(self, tps: list[TopicPartition]) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | None]:
        """Every partition's state (None: no state znode), read as one pipelined batch."""
        got = await self.zk.get_many([TopicPartitionStateZNode.path(tp) for tp in tps])
        return {tp: None if g is None else TopicPartitionStateZNode.decode(g[0], g[1].version) for tp, g in zip(tps, got)}

    async def create_partition_states(self, epoch_zk_version: int, states: dict[TopicPartition, LeaderIsrAndControllerEpoch]
                                      ) -> dict[TopicPartition, ZkError | None]:
        """New -> Online for many partitions: each ``partitions/<p>/state`` (with ``partitions/<p>``) created
        in its own fenced multi, pipelined; the topics' ``partitions`` parents first (an existing one is
        fine). Per partition None, or the MultiOpError its multi met (NodeExistsError: an earlier controller
        created it). ControllerMovedError if this controller was deposed (nothing more is written)."""
        tps = list(states)
        topics = sorted({tp.topic for tp in tps})
        parents = await self.zk.exists_many([TopicPartitionsZNode.path(t) for t in topics])
        missing = [[CreateOp(TopicPartitionsZNode.path(t))] for t, stat in zip(topics, parents) if stat is None]
        for outcome in await self.zk.fenced_multi_many(epoch_zk_version, missing):
            if isinstance(outcome, ZkError) and not (isinstance(outcome, MultiOpError)
                                                     and isinstance(outcome.cause, NodeExistsError)):
                raise outcome
        exists = await self.zk.exists_many([TopicPartitionZNode.path(tp) for tp in tps])
        groups = [[*([] if stat else [CreateOp(TopicPartitionZNode.path(tp))]),
                   CreateOp(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(states[tp]))]
                  for tp, stat in zip(tps, exists)]
        outcomes = await self.zk.fenced_multi_many(epoch_zk_version, groups)
        return {tp: o if isinstance(o, ZkError) else None for tp, o in zip(tps, outcomes)}

    async def update_partition_states(self, epoch_zk_version: int, states: dict[TopicPartition, LeaderIsrAndControllerEpoch]
                                      ) -> dict[TopicPartition, int | ZkError]:
        """``update_partition_state`` for many partitions, pipelined: each its own fenced multi, a
        compare-and-set on the znode version in its state. Per partition the new version, or the error its
        multi met (MultiOpError(BadVersionError): someone else wrote first). ControllerMovedError if this
        controller was deposed."""
        tps = list(states)
        groups = [[SetDataOp(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(states[tp]),
                             states[tp].leader_and_isr.zk_version)] for tp in tps]
        outcomes = await self.zk.fenced_multi_many(epoch_zk_version, groups)
        return {tp: o if isinstance(o, ZkError) else o[0].version for tp, o in zip(tps, outcomes)}

    async def update_isrs_by_leader(self, items: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch]]
                                    ) -> list[int | ZkError]:
        """Partition leaders' ISR changes (ZK mode, reference §3.3), pipelined: each a compare-and-set on its
        state znode's version (``state.leader_and_isr.zk_version``), not fenced by the controller epoch (the
        leader is not the controller). Per item the new version, or the ZkError its set met
        (BadVersionError: someone wrote since)."""
        stats = await self.zk.set_many([SetDataOp(TopicPartitionStateZNode.path(tp), TopicPartitionStateZNode.encode(state),
                                                  state.leader_and_isr.zk_version) for tp, state in items])
        return [stat if isinstance(stat, ZkError) else stat.version for stat in stats]

    async def create_isr_change_notification(self, partitions: list[TopicPartition]) -> None:
        """One ``/isr_change_notification/isr_change_<seq>`` for a batch of partitions whose ISR changed."""
        await self.zk.create(f"{IsrChangeNotificationZNode.PATH}/{IsrChangeNotificationZNode.PREFIX}",
                             IsrChangeNotificationZNode.encode(partitions), sequential=True, makepath=True)

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
        tps = [TopicPartition(topic, int(p)) for p in await self._children_or_empty(partitions_path)]
        state_paths = [TopicPartitionStateZNode.path(tp) for tp in tps]
        others = [partitions_path, ConfigEntityZNode.path("topics", topic), DeleteTopicsZNode.path(topic)]
        found = await self.zk.exists_many([*state_paths, *others])  # one pipelined batch
        for tp, state_path, stat in zip(tps, state_paths, found):
            if stat is not None:
                ops.append(DeleteOp(state_path))
            ops.append(DeleteOp(TopicPartitionZNode.path(tp)))
        partitions_stat, *other_stats = found[len(tps):]
        if partitions_stat is not None:
            ops.append(DeleteOp(partitions_path))
        ops.append(DeleteOp(TopicZNode.path(topic)))
        ops.extend(DeleteOp(path) for path, stat in zip(others[1:], other_stats) if stat is not None)
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

    async def read_isr_change_notifications(self, names: list[str]) -> list[TopicPartition]:
        """The partitions all of ``names`` list, read as one pipelined batch (gone ones list none)."""
        got = await self.zk.get_many([f"{IsrChangeNotificationZNode.PATH}/{n}" for n in names])
        return [tp for g in got if g is not None for tp in IsrChangeNotificationZNode.decode(g[0])]

    async def delete_isr_change_notifications(self, epoch_zk_version: int, names: list[str]) -> None:
        if names:
            await self.zk.fenced_multi(epoch_zk_version,
                                       [DeleteOp(f"{IsrChangeNotificationZNode.PATH}/{n}") for n in names])

    # -- log dir events (KIP-112) ---------------------------------------------------------------
    async def propagate_log_dir_event(self, broker_id: int) -> None:
        """Kafka's ``propagateLogDirEvent``: one ``/log_dir_event_notification/log_dir_event_<seq>``."""
        await self.zk.create(f"{LogDirEventNotificationZNode.PATH}/{LogDirEventNotificationZNode.PREFIX}",
                             LogDirEventNotificationZNode.encode(broker_id), sequential=True, makepath=True)

    async def get_log_dir_event_notifications(self, watch: Watch = None) -> list[str]:
        return await self.zk.get_children(LogDirEventNotificationZNode.PATH, watch)

    async def read_log_dir_event_notification(self, name: str) -> int | None:
        """The broker a notification names; None when it is gone or unreadable."""
        try:
            data, _ = await self.zk.get(f"{LogDirEventNotificationZNode.PATH}/{name}")
            return LogDirEventNotificationZNode.decode(data)
        except NoNodeError:
            return None
        except ValueError as exc:
            log.warning("ignoring %s: %s", name, exc)
            return None

    async def delete_log_dir_event_notifications(self, epoch_zk_version: int, names: list[str]) -> None:
        if names:
            await self.zk.fenced_multi(epoch_zk_version,
                                       [DeleteOp(f"{LogDirEventNotificationZNode.PATH}/{n}") for n in names])

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
