"""Broker registration, the cluster id and controller election: Kafka's ``KafkaZkClient.registerBroker``,
``getClusterId``/``createOrGetClusterId``, ``getControllerId``, ``registerControllerAndIncrementControllerEpoch``
and the producer-id block (``ProducerIdManager``'s ZooKeeper half).

Registration is one multi (create the ephemeral ``/brokers/ids/<id>`` + set its data) so that the answer
carries the czxid, the broker epoch; election is one multi (create ``/controller`` + bump
``/controller_epoch`` conditionally on its version); resignation is fenced by that version.
"""
from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass

from brokers.model import BrokerInfo
from brokers.zk.client_base import Watch, ZkClientBase, log, new_uuid_base64
from brokers.zk.errors import BadVersionError, MultiOpError, NodeExistsError, NoNodeError, ZkError
from brokers.zk.gateway import CreateOp, DeleteOp, SetDataOp
from brokers.zk.paths import (
    PERSISTENT_ROOTS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ControlPlaneSecretZNode,
    ControllerEpochZNode,
    ControllerZNode,
    ProducerIdBlockZNode,
)


class DuplicateBrokerIdError(ZkError):
    pass


@dataclass(frozen=True, slots=True)
class ControllerElection:
    """The outcome of an election attempt: who is controller, and (if we won) our epoch and its version."""

    controller_id: int
    epoch: int = -1
    epoch_zk_version: int = -1
    won: bool = False


class BrokersZkMixin(ZkClientBase):
    """KafkaZkClient's broker and controller znodes: start-up roots, the cluster id, ``/brokers/ids``,
    ``/brokers/seqid``, ``/latest_producer_id_block``, ``/controller`` and ``/controller_epoch``."""

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

    async def get_broker_registration(self, broker_id: int) -> tuple[BrokerInfo, int] | None:
        """``/brokers/ids/<id>`` and the session owning it (its ephemeral owner), None when absent."""
        try:
            data, stat = await self.zk.get(BrokerIdZNode.path(broker_id))
        except NoNodeError:
            return None
        return BrokerIdZNode.decode(broker_id, data, stat.czxid), stat.ephemeral_owner

    async def wait_broker_deregistered(self, broker_id: int, owner_session: int, timeout_s: float) -> bool:
        """Until ``/brokers/ids/<id>`` owned by ``owner_session`` is gone (its session expired), watching
        for its deletion; at most ``timeout_s``. True when it is gone (or now owned by another session:
        registration then decides), False when the bound passed first."""
        path = BrokerIdZNode.path(broker_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            changed = asyncio.Event()
            stat = await self.zk.exists(path, lambda _event: changed.set())
            if stat is None or stat.ephemeral_owner != owner_session:
                return True
            try:
                await asyncio.wait_for(changed.wait(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                return False

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

    async def get_broker_racks(self) -> dict[int, str | None]:
        """Kafka's ``getBrokerMetadatas``: each live broker's ``broker.rack`` (None when unset), for placement."""
        return {broker_id: info.rack for broker_id, info in (await self.get_all_brokers()).items()}

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
