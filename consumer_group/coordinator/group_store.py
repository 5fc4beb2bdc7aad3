"""GroupStore: storing and loading group metadata records (``group_record``) through the ``OffsetStore``
(Kafka 2.8's ``GroupMetadataManager.storeGroup`` and the group half of ``loadGroupsAndOffsets``).

A store runs in the group's turn of the ``OffsetWriter`` queue, as every offset write does, so a group's
records and deletions reach ZooKeeper in the order the coordinator accepted them; the record is built in that
turn (``build`` returns None when the group moved on and there is nothing left to store). ZooKeeper's
blocking calls run off the event loop in the ZooKeeper gateway. A write longer than
``offsets.commit.timeout.ms`` is abandoned, as Kafka's append is.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group_record import GroupRecord, from_json, store_error, to_json
from consumer_group.coordinator.offset_store import OffsetStore
from consumer_group.coordinator.offsets import OffsetWriter

log = logging.getLogger(__name__)


class GroupStore:
    def __init__(self, store: OffsetStore, writer: OffsetWriter, timeout_ms: int):
        self.store = store
        self.writer = writer
        self.timeout_ms = timeout_ms

    async def store_group(self, group_id: str, build: Callable[[], GroupRecord | None]) -> ErrorCode | None:
        """Store what ``build`` returns in the group's turn: NONE, the error to answer (``store_error``), or
        None when ``build`` found nothing to store."""
        async def operation() -> ErrorCode | None:
            record = build()
            if record is None:
                return None
            try:
                await asyncio.wait_for(self.store.store_group(group_id, to_json(record)), self.timeout_ms / 1000)
            except Exception as exc:  # noqa: BLE001 - every failure is an answer to the members
                log.warning("storing the metadata of group %s (generation %d) failed: %r", group_id,
                            record.generation, exc)
                return store_error(exc)
            return ErrorCode.NONE

        try:
            return await self.writer.submit(group_id, operation)
        except Exception as exc:  # noqa: BLE001 - the writer logged it
            return store_error(exc)

    async def load(self, group_ids: list[str]) -> dict[str, GroupRecord]:
        """The stored records of ``group_ids`` (a record that does not parse is skipped with a warning: its
        group starts over, as a group without a record does)."""
        records = {}
        for group_id, value in (await self.store.load_group_metadata(group_ids)).items():
            try:
                records[group_id] = from_json(value)
            except ValueError as exc:
                log.warning("skipping the stored metadata of group %s: %s", group_id, exc)
        return records
