"""LogDirMover: moving replicas between this broker's log dirs (Kafka's ``ReplicaAlterLogDirsManager`` and
``ReplicaAlterLogDirsThread``, KIP-113), the copying half (``brokers.storage.log_dir_moves`` the storage half).

``alter(tp, dir)`` (AlterReplicaLogDirs) answers at once; a task per moving partition then copies the
partition's current log into its future log on the broker's event loop, as a replica fetcher appends a
leader's batches: at most ``max_bytes`` per round (file ranges read with ``pread``, appended with
``append_as_follower``), yielding to the loop between rounds. A round that found little new flushes the
future log in a worker thread and waits ``RETRY_S``, so the swap's own flush is short and an idle
partition's move costs no busy loop; a current log ending past its last batch (a compacted tail) is
carried over by rolling the future log to that end. Appends to the current log happen on the
same loop, so the round that finds the future log at the current log's end swaps them without an await
in between (``LogManager.replace_current_with_future``) and ``Partition.log`` becomes the new log: no
record appended during the move is lost, and no reader sees a gap.

While copying, the current log may move under the copy: retention or DeleteRecords moving its start
past the copy (the future log starts over at the new start), truncation below it (the future log
truncates too). A partition that leaves this broker (StopReplica) or whose move is replaced by another
stops its copy and deletes its future log.

Errors of ``alter``, as Kafka's ``ReplicaManager.alterReplicaLogDirs``: LOG_DIR_NOT_FOUND (not one of
``log.dirs``), KAFKA_STORAGE_ERROR (the dir is offline), REPLICA_NOT_AVAILABLE (this broker does not host
the partition: the dir is remembered, and the log is created there when the replica comes).
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Callable

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record_batch import whole_batches
from brokers.storage.log import Log
from brokers.storage.log_dir_failure import KafkaStorageError
from brokers.storage.log_dir_moves import LogDirNotFoundError, SwapPostponed

log = logging.getLogger(__name__)
MAX_BYTES_PER_ROUND = 1 << 20
RETRY_S = 0.01  # a round that found (almost) nothing new, or a swap postponed: wait this long before the next


class LogDirMover:
    def __init__(self, log_manager, partitions: Callable[[], dict], max_bytes: int = MAX_BYTES_PER_ROUND):
        self.log_manager = log_manager
        self._partitions = partitions  # the replica manager's hosted partitions
        self.max_bytes = max_bytes
        self._tasks: dict[TopicPartition, asyncio.Task] = {}

    def alter(self, tp: TopicPartition, destination: str) -> ErrorCode:
        manager = self.log_manager
        try:
            manager.online_dir(destination)
        except LogDirNotFoundError:
            return ErrorCode.LOG_DIR_NOT_FOUND
        except KafkaStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        manager.preferred_dirs[tp] = Path(destination)
        partition = self._partitions().get(tp)
        current_dir = manager.log_dir_of(tp)
        if partition is None or current_dir is None:
            return ErrorCode.REPLICA_NOT_AVAILABLE
        manager.preferred_dirs.pop(tp, None)
        if Path(current_dir).resolve() == Path(destination).resolve():
            self.cancel(tp)  # already there: a move elsewhere in flight is called off (Kafka: same)
            return ErrorCode.NONE
        if manager.offline_log_dirs():
            return ErrorCode.KAFKA_STORAGE_ERROR  # Kafka creates no future log while a dir is offline
        try:
            manager.create_future_log(tp, Path(destination), partition.log.log_start_offset)
        except KafkaStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if tp not in self._tasks or self._tasks[tp].done():
            self._tasks[tp] = asyncio.get_running_loop().create_task(self._move(tp), name=f"move-{tp}")
        return ErrorCode.NONE

    def moving(self) -> list[TopicPartition]:
        return sorted(tp for tp, task in self._tasks.items() if not task.done())

    def cancel(self, tp: TopicPartition) -> None:
        task = self._tasks.pop(tp, None)
        if task is not None:
            task.cancel()
        self.log_manager.abandon_future_log(tp)

    async def shutdown(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def _move(self, tp: TopicPartition) -> None:
        manager = self.log_manager
        try:
            while True:
                partition = self._partitions().get(tp)
                future = manager.future_log(tp)
                if partition is None or future is None:
                    await asyncio.to_thread(manager.abandon_future_log, tp)
                    return
                progressed, done = self._copy_round(partition.log, future)
                if done:
                    try:
                        partition.log = manager.replace_current_with_future(tp)
                        return
                    except SwapPostponed:
                        await asyncio.sleep(RETRY_S)
                        continue
                if not progressed:  # caught up with what the current log has: make it durable off the loop,
                    await asyncio.to_thread(future.flush)  # so the swap's own flush is short
                    await asyncio.sleep(RETRY_S)
                else:
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a failed move leaves the current log as it was
            log.exception("%s: moving between log dirs failed; the replica stays where it was", tp)
            await asyncio.to_thread(manager.abandon_future_log, tp)
        finally:
            if self._tasks.get(tp) is asyncio.current_task():
                del self._tasks[tp]

    def _copy_round(self, current: Log, future: Log) -> tuple[bool, bool]:
        """One round: align the future log with the current one's start and end, copy up to ``max_bytes``.
        Returns (copied something, the future log has reached the current log's end: swap now, before any
        await)."""
        if future.log_end_offset < current.log_start_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
        elif future.log_end_offset > current.log_end_offset:
            future.truncate_to(current.log_end_offset)
        if future.log_end_offset == current.log_end_offset:
            return False, True
        info = current.read(future.log_end_offset, self.max_bytes, min_one_message=True)
        if info.records is None:
            # nothing from here to the end: the cleaner removed the last batches (a compacted log's tail)
            future.roll(current.log_end_offset)
            return True, future.log_end_offset == current.log_end_offset
        chunk = whole_batches(info.records.segment.read_bytes(info.records.position, info.records.size))
        base_offset = int.from_bytes(chunk[:8], "big", signed=True)
        if base_offset < future.log_end_offset and future.size == 0:
            future.truncate_fully_and_start_at(base_offset)  # the log start is inside this batch
        future.append_as_follower(chunk)
        return info.records.size >= self.max_bytes // 2, future.log_end_offset == current.log_end_offset
