"""What the transactional-offsets tests of the group coordinator share: partitions and producer ids, an
``OffsetAndMetadata`` maker, a TxnOffsetCommit call, an offset store that holds TxnOffsetCommit writes and a
failover of the offsets partition."""
from __future__ import annotations

import asyncio

from brokers.model import TopicPartition
from consumer_group.coordinator.group import OffsetAndMetadata
from consumer_group.coordinator.offset_store import MemoryOffsetStore
from tests.unit.consumer_group.test_coordinator import Ctx, wait_until

TP0, TP1, TP2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
PID, OTHER_PID = 4000, 4001


def om(offset: int, metadata: str = "", leader_epoch: int = -1) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, metadata, 0, None, leader_epoch)


async def txn_commit(c: Ctx, offsets: dict, *, pid: int = PID, epoch: int = 0, group: str = "g", member: str = "",
                     instance: str | None = None, generation: int = -1) -> dict:
    offsets = {tp: value if len(value) == 3 else (*value, -1) for tp, value in offsets.items()}
    return await c.coordinator.commit_txn_offsets(group, pid, epoch, member, instance, generation, offsets)


class HeldTxnWrites(MemoryOffsetStore):
    """Holds ``write_txn_offsets`` until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def write_txn_offsets(self, *args):
        await self.gate.wait()
        await super().write_txn_offsets(*args)


async def failover(c: Ctx) -> None:
    """The partition moves away and back: the coordinator forgets it and loads it again from the store."""
    c.coordinator.on_resigned(0)
    c.coordinator.on_elected(0)
    await wait_until(lambda: c.coordinator.group_error("g") is None, what="reload")
