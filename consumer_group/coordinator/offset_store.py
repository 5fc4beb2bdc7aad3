"""Where committed offsets live: ZooKeeper's ``/consumers/<group>/offsets/<topic>/<partition>`` (reference
§5.1, the classic ZK design), one multi-op per OffsetCommit request.

``ZkOffsetStore`` remembers which offset znodes exist (learned from ``load`` and its own commits) so a
commit is a single atomic multi of SetData (existing) and Create (new) operations. If that knowledge
was stale (a znode deleted or created by someone else since), the multi fails as a whole, nothing is
written, and the commit is retried once after re-reading the group: never a half-written commit.
Metadata strings are not stored (the ZK layout has no place for them); the coordinator keeps them
in memory.

Transactional offsets (TxnOffsetCommit) are stored per producer, pending, in
``/consumers/<group>/txn_offsets/<producer id>`` (with their metadata and leader epochs) until the
transaction's marker: ``commit_txn_offsets`` moves them into the committed offsets and deletes the pending
znode in one multi-op, ``abort_txn_offsets`` drops them; both record the marker's producer and coordinator
epochs in ``/consumers/<group>/txn_producers/<producer id>`` in that multi (``load_txn_producers``).
Completing is idempotent: when the multi fails and the pending znode is gone, an earlier attempt whose
answer was lost (a ZooKeeper connection loss) applied it, and the call succeeds.

Group metadata records (``group_record``) live in ``/consumers/<group>/metadata``. Their writes are fenced
by the znode version (what the leader epoch of the ``__consumer_offsets`` partition does in Kafka): the store
remembers the version it last wrote and writes at that version (create when it knows there is none). Loading
a group's record on election *claims* it: the record is rewritten as read, at the version read, so every
coordinator that loaded or wrote it before holds a stale version from then on. A write at a stale version
raises ``GroupMetadataFenced`` (a deposed coordinator never overwrites its successor's record, even one its
successor has not changed), and the group stays fenced in this store until its next load. A group never seen
(created after the load) has its version read before its first write; a write that failed otherwise may
have landed, so its version is read again before the next write.

``MemoryOffsetStore`` is the same contract in memory, for unit tests of the coordinator.
"""
from __future__ import annotations

import logging
from typing import Any, Protocol

from brokers.model import TopicPartition
from brokers.zk.client import KafkaZkClient
from brokers.zk.client_offsets import ProducerEpochs, TxnOffsets
from brokers.zk.errors import BadVersionError, NodeExistsError, NoNodeError, ZkError
from consumer_group.coordinator.group_record import GroupMetadataFenced

PendingByProducer = dict[int, tuple[int, TxnOffsets]]  # producer id -> (producer epoch, offsets)

log = logging.getLogger(__name__)


class OffsetStore(Protocol):
    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None: ...

    async def load(self, group_id: str) -> dict[TopicPartition, int]: ...

    async def groups(self) -> list[str]: ...

    async def delete_group(self, group_id: str) -> None: ...

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None: ...

    async def write_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                offsets: TxnOffsets) -> None: ...

    async def load_txn_offsets(self, group_ids: list[str]) -> dict[str, PendingByProducer]: ...

    async def load_txn_producers(self, group_ids: list[str]) -> dict[str, dict[int, ProducerEpochs]]: ...

    async def commit_txn_offsets(self, group_id: str, producer_id: int, offsets: dict[TopicPartition, int],
                                 epochs: ProducerEpochs) -> None: ...

    async def abort_txn_offsets(self, group_id: str, producer_id: int, epochs: ProducerEpochs) -> None: ...

    async def delete_txn_offsets(self, group_id: str, producer_id: int) -> None: ...

    async def store_group(self, group_id: str, value: dict[str, Any]) -> None: ...

    async def load_group_metadata(self, group_ids: list[str]) -> dict[str, dict[str, Any]]: ...


_ABSENT = -1  # a known version meaning: the metadata znode does not exist
_FENCED = -2  # another coordinator claimed or wrote the record since: no writes until the next load


class ZkOffsetStore:
    def __init__(self, kzc: KafkaZkClient):
        self.kzc = kzc
        self._existing: dict[str, set[TopicPartition]] = {}
        self._metadata_versions: dict[str, int] = {}  # group -> metadata znode version (or _ABSENT, _FENCED)

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        if not offsets:
            return
        existing = self._existing.get(group_id)
        if existing is None:
            existing = set(await self.kzc.get_consumer_offsets(group_id))
        try:
            await self.kzc.set_consumer_offsets(group_id, offsets, existing)
        except ZkError as exc:  # our idea of which znodes exist was stale: re-read, try once more
            log.info("offset commit for group %s raced (%s); re-reading and retrying", group_id, exc)
            existing = set(await self.kzc.get_consumer_offsets(group_id))
            await self.kzc.set_consumer_offsets(group_id, offsets, existing)
        self._existing[group_id] = existing | set(offsets)

    async def load(self, group_id: str) -> dict[TopicPartition, int]:
        offsets = await self.kzc.get_consumer_offsets(group_id)
        self._existing[group_id] = set(offsets)
        return offsets

    async def groups(self) -> list[str]:
        return await self.kzc.get_consumer_groups()

    async def delete_group(self, group_id: str) -> None:
        self._metadata_versions.pop(group_id, None)
        await self.kzc.delete_consumer_group(group_id)
        self._existing.pop(group_id, None)

    async def store_group(self, group_id: str, value: dict[str, Any]) -> None:
        version = self._metadata_versions.pop(group_id, None)
        if version == _FENCED:
            self._metadata_versions[group_id] = _FENCED
            raise GroupMetadataFenced(f"the metadata of group {group_id} was claimed by another coordinator")
        if version is None:
            version = await self.kzc.group_metadata_version(group_id)
        self._metadata_versions[group_id] = await self._write_metadata(group_id, value, version)

    async def _write_metadata(self, group_id: str, value: dict[str, Any], version: int) -> int:
        try:
            return await self.kzc.set_group_metadata(group_id, value, None if version == _ABSENT else version)
        except (BadVersionError, NodeExistsError, NoNodeError) as exc:
            self._metadata_versions[group_id] = _FENCED
            raise GroupMetadataFenced(f"the metadata of group {group_id} changed since version {version}") from exc

    async def load_group_metadata(self, group_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored records of ``group_ids`` that have one, each claimed (rewritten at the version read; read
        again if another coordinator wrote it in between). A znode that does not parse is skipped with a
        warning, and its version is read again before the next write."""
        found: dict[str, dict[str, Any]] = {}
        for group_id in group_ids:
            stored = await self._claim_metadata(group_id)
            if stored is not None:
                found[group_id] = stored
        return found

    async def _claim_metadata(self, group_id: str) -> dict[str, Any] | None:
        self._metadata_versions.pop(group_id, None)
        for _ in range(3):
            try:
                stored = await self.kzc.get_group_metadata(group_id)
            except ValueError as exc:
                log.warning("skipping the bad metadata of group %s: %s", group_id, exc)
                return None
            if stored is None:
                self._metadata_versions[group_id] = _ABSENT
                return None
            try:
                self._metadata_versions[group_id] = await self._write_metadata(group_id, *stored)
                return stored[0]
            except GroupMetadataFenced:
                continue  # written in between: read it again
        raise GroupMetadataFenced(f"the metadata of group {group_id} keeps changing while it is loaded")

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        await self.kzc.delete_consumer_offsets(group_id, partitions)
        self._existing.get(group_id, set()).difference_update(partitions)

    async def write_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                offsets: TxnOffsets) -> None:
        await self.kzc.set_txn_offsets(group_id, producer_id, producer_epoch, offsets)

    async def load_txn_offsets(self, group_ids: list[str]) -> dict[str, PendingByProducer]:
        return await self.kzc.get_groups_txn_offsets(group_ids)

    async def load_txn_producers(self, group_ids: list[str]) -> dict[str, dict[int, ProducerEpochs]]:
        return await self.kzc.get_groups_txn_producers(group_ids)

    async def commit_txn_offsets(self, group_id: str, producer_id: int, offsets: dict[TopicPartition, int],
                                 epochs: ProducerEpochs) -> None:
        existing = self._existing.get(group_id)
        if existing is None:
            existing = set(await self.kzc.get_consumer_offsets(group_id))
        try:
            await self.kzc.commit_txn_offsets(group_id, producer_id, offsets, existing, epochs)
        except ZkError as exc:
            if not await self.kzc.txn_offsets_exist(group_id, producer_id):
                log.info("transactional offsets of producer %d in group %s were committed already (%s)",
                         producer_id, group_id, exc)
                self._existing.pop(group_id, None)
                return
            log.info("transactional offset commit for group %s raced (%s); re-reading and retrying", group_id, exc)
            existing = set(await self.kzc.get_consumer_offsets(group_id))
            await self.kzc.commit_txn_offsets(group_id, producer_id, offsets, existing, epochs)
        self._existing[group_id] = existing | set(offsets)

    async def abort_txn_offsets(self, group_id: str, producer_id: int, epochs: ProducerEpochs) -> None:
        await self.kzc.abort_txn_offsets(group_id, producer_id, epochs)

    async def delete_txn_offsets(self, group_id: str, producer_id: int) -> None:
        await self.kzc.delete_txn_offsets(group_id, producer_id)


class MemoryOffsetStore:
    """The OffsetStore contract in a dict; ``fail`` makes the next commits raise (store outage), ``lose_reply``
    makes the next transaction completion apply and then raise it (a connection lost before the answer);
    ``metadata_fail`` makes the next group metadata writes raise."""

    def __init__(self) -> None:
        self.metadata: dict[str, dict[str, Any]] = {}
        self.metadata_fail: Exception | None = None
        self.offsets: dict[str, dict[TopicPartition, int]] = {}
        self.txn_offsets: dict[str, PendingByProducer] = {}
        self.txn_producers: dict[str, dict[int, ProducerEpochs]] = {}
        self.lose_reply: Exception | None = None
        self.commits: list[tuple[str, dict[TopicPartition, int]]] = []
        self.fail: Exception | None = None

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        if self.fail is not None:
            raise self.fail
        self.commits.append((group_id, dict(offsets)))
        self.offsets.setdefault(group_id, {}).update(offsets)

    async def load(self, group_id: str) -> dict[TopicPartition, int]:
        return dict(self.offsets.get(group_id, {}))

    async def groups(self) -> list[str]:
        return sorted(set(self.offsets) | set(self.txn_offsets) | set(self.txn_producers) | set(self.metadata))

    async def store_group(self, group_id: str, value: dict[str, Any]) -> None:
        if self.metadata_fail is not None:
            raise self.metadata_fail
        self.metadata[group_id] = value

    async def load_group_metadata(self, group_ids: list[str]) -> dict[str, dict[str, Any]]:
        return {g: self.metadata[g] for g in group_ids if g in self.metadata}

    async def delete_group(self, group_id: str) -> None:
        self.metadata.pop(group_id, None)
        self.offsets.pop(group_id, None)
        self.txn_offsets.pop(group_id, None)
        self.txn_producers.pop(group_id, None)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.offsets.get(group_id, {}).pop(tp, None)

    async def write_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                offsets: TxnOffsets) -> None:
        if self.fail is not None:
            raise self.fail
        self.txn_offsets.setdefault(group_id, {})[producer_id] = (producer_epoch, dict(offsets))

    async def load_txn_offsets(self, group_ids: list[str]) -> dict[str, PendingByProducer]:
        return {g: dict(self.txn_offsets[g]) for g in group_ids if self.txn_offsets.get(g)}

    async def load_txn_producers(self, group_ids: list[str]) -> dict[str, dict[int, ProducerEpochs]]:
        return {g: dict(self.txn_producers[g]) for g in group_ids if self.txn_producers.get(g)}

    async def commit_txn_offsets(self, group_id: str, producer_id: int, offsets: dict[TopicPartition, int],
                                 epochs: ProducerEpochs) -> None:
        if self.fail is not None:
            raise self.fail
        if producer_id not in self.txn_offsets.get(group_id, {}):
            return  # committed already: an earlier attempt's answer was lost
        self.commits.append((group_id, dict(offsets)))
        self.offsets.setdefault(group_id, {}).update(offsets)
        self._drop_txn(group_id, producer_id)
        self._record(group_id, producer_id, epochs)

    async def abort_txn_offsets(self, group_id: str, producer_id: int, epochs: ProducerEpochs) -> None:
        if self.fail is not None:
            raise self.fail
        self._drop_txn(group_id, producer_id)
        self._record(group_id, producer_id, epochs)

    async def delete_txn_offsets(self, group_id: str, producer_id: int) -> None:
        self._drop_txn(group_id, producer_id)

    def _record(self, group_id: str, producer_id: int, epochs: ProducerEpochs) -> None:
        self.txn_producers.setdefault(group_id, {})[producer_id] = epochs
        if self.lose_reply is not None:
            error, self.lose_reply = self.lose_reply, None
            raise error

    def _drop_txn(self, group_id: str, producer_id: int) -> None:
        pending = self.txn_offsets.get(group_id, {})
        pending.pop(producer_id, None)
        if not pending:
            self.txn_offsets.pop(group_id, None)
