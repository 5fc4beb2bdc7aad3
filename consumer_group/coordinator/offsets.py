"""Writing committed offsets: batching into ZooKeeper, and which offsets have expired.

``OffsetWriter`` keeps one queue per group. While a group's write is in flight, further commits of that
group wait in its queue; the next write merges every waiting commit into one multi-op (later offsets
win per partition), so a coordinator's commit rate is bounded by ZooKeeper round trips per group, not
per request. Deletions (OffsetDelete, DeleteGroups, retention) and the transactional offsets' operations
(``submit``) go through the same queue, so writes to one group reach ZooKeeper in the order the
coordinator accepted them.

``expired_offsets`` is Kafka 2.8's retention rule (KIP-211, KIP-496; reference §5.7), pure.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from consumer_group.coordinator.group import CONSUMER_PROTOCOL_TYPE, GroupMetadata, OffsetAndMetadata
from consumer_group.coordinator.offset_store import OffsetStore
from consumer_group.coordinator.state import GroupState

log = logging.getLogger(__name__)


@dataclass
class _Write:
    kind: str  # "commit" | "delete_offsets" | "delete_group" | "call"
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    partitions: list[TopicPartition] = field(default_factory=list)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    operation: Callable[[], Awaitable[Any]] | None = None  # "call": run in the group's turn
    result: Any = None


class OffsetWriter:
    def __init__(self, store: OffsetStore):
        self.store = store
        self._queues: dict[str, list[_Write]] = {}
        self._drains: dict[str, asyncio.Task[None]] = {}
        self.writes = 0  # ZooKeeper operations issued (for tests and benchmarks)

    async def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        queue = self._queues.setdefault(group_id, [])
        if queue and queue[-1].kind == "commit":
            write = queue[-1]
            write.offsets.update(offsets)
        else:
            write = _Write("commit", dict(offsets))
            queue.append(write)
        await self._enqueue(group_id, write)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        write = _Write("delete_offsets", partitions=list(partitions))
        self._queues.setdefault(group_id, []).append(write)
        await self._enqueue(group_id, write)

    async def delete_group(self, group_id: str) -> None:
        write = _Write("delete_group")
        self._queues.setdefault(group_id, []).append(write)
        await self._enqueue(group_id, write)

    async def submit(self, group_id: str, operation: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``operation`` in the group's turn (after every write queued before it, before any queued
        after it) and return its result; it reads and changes the coordinator's state itself, in that turn."""
        write = _Write("call", operation=operation)
        self._queues.setdefault(group_id, []).append(write)
        await self._enqueue(group_id, write)
        return write.result

    async def _enqueue(self, group_id: str, write: _Write) -> None:
        waiter = asyncio.get_running_loop().create_future()
        write.waiters.append(waiter)
        if group_id not in self._drains:
            self._drains[group_id] = asyncio.get_running_loop().create_task(self._drain(group_id))
        await waiter

    async def _drain(self, group_id: str) -> None:
        try:
            while self._queues.get(group_id):
                write = self._queues[group_id].pop(0)
                error = await self._apply(group_id, write)
                for waiter in write.waiters:
                    if not waiter.done():
                        waiter.set_result(None) if error is None else waiter.set_exception(error)
        finally:
            self._drains.pop(group_id, None)
            if not self._queues.get(group_id):
                self._queues.pop(group_id, None)

    async def _apply(self, group_id: str, write: _Write) -> Exception | None:
        self.writes += 1
        try:
            if write.kind == "commit":
                await self.store.commit(group_id, write.offsets)
            elif write.kind == "call":
                write.result = await write.operation()
            elif write.kind == "delete_offsets":
                await self.store.delete_offsets(group_id, write.partitions)
            else:
                await self.store.delete_group(group_id)
            return None
        except Exception as exc:  # noqa: BLE001 - every waiter learns the store failed
            log.warning("offset store %s for group %s failed: %r", write.kind, group_id, exc)
            return exc

    async def shutdown(self) -> None:
        tasks: list[Any] = list(self._drains.values())
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def oversized_metadata(metadata: dict[TopicPartition, str | None], limit: int) -> dict[TopicPartition, ErrorCode]:
    """OFFSET_METADATA_TOO_LARGE for each partition whose committed metadata is over ``offset.metadata.max.bytes``."""
    return {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, md in metadata.items()
            if md is not None and len(md.encode()) > limit}


def expired_offsets(group: GroupMetadata, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """Offsets due for removal (Kafka 2.8's ``removeExpiredOffsets``):

    * a group that used group management, Empty: all of them once it has been Empty for ``retention_ms``
      (KIP-211);
    * a consumer group with members whose subscriptions are known (computed each generation): the offsets
      of topics no member subscribes to, each ``retention_ms`` after its commit (KIP-496);
    * a group that only stores offsets (simple consumers): each one ``retention_ms`` after its commit.

    An offset committed with OffsetCommit v2-v4's retention time expires at its own expire timestamp
    instead (Kafka's old rule)."""
    if group.is_(GroupState.DEAD):
        return []
    if group.protocol_type is None or group.is_(GroupState.EMPTY):
        managed = group.protocol_type is not None
        return [tp for tp, offset in group.offsets.items()
                if _expired(offset, group.state_timestamp_ms if managed else offset.commit_timestamp_ms, now_ms,
                            retention_ms)]
    subscribed = group.subscribed_topics
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.generation_id == 0 or subscribed is None:
        return []
    return [tp for tp, offset in group.offsets.items()
            if tp.topic not in subscribed and _expired(offset, offset.commit_timestamp_ms, now_ms, retention_ms)]


def _expired(offset: OffsetAndMetadata, base_ms: int, now_ms: int, retention_ms: int) -> bool:
    if offset.expire_timestamp_ms is not None:
        return now_ms >= offset.expire_timestamp_ms
    return now_ms - base_ms >= retention_ms
