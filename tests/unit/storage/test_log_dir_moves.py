"""Moving a replica between a broker's log dirs (AlterReplicaLogDirs): the LogManager's future logs and
preferred dirs (brokers.storage.log_dir_moves) and the mover's copy (brokers.replication.log_dir_mover), on
real files: two log dirs, real segments, appends racing the copy."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from brokers.protocol.record import Record, build_batch
from brokers.replication.log_dir_mover import LogDirMover
from brokers.storage.log_config import LogConfig
from brokers.storage.log_dir_moves import LogDirNotFoundError
from brokers.storage.log_manager import LogManager

TP = TopicPartition("t", 0)


def batch(first: int, count: int = 3) -> bytearray:
    return bytearray(build_batch([Record(i, i, b"k%d" % (first + i), b"v%d" % (first + i)) for i in range(count)],
                             base_timestamp=1000 + first))


async def until_moved(mover: LogDirMover, timeout: float = 30.0) -> None:
    """Until the mover has no move left, with a deadline (a move that never finishes fails the test)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while mover.moving():
        assert loop.time() < deadline, f"still moving {mover.moving()}"
        await asyncio.sleep(0)


@pytest.fixture
def manager(tmp_path):
    m = LogManager([tmp_path / "a", tmp_path / "b"], LogConfig(segment_bytes=600))
    m.startup()
    yield m
    m.shutdown()


def fill(log, batches: int, start: int = 0) -> None:
    for i in range(batches):
        log.append_as_leader(batch(start + 3 * i), 0)


def test_a_move_copies_every_batch_and_swaps_the_directories(manager, tmp_path):
    manager.preferred_dirs[TP] = tmp_path / "a"
    current = manager.get_or_create_log(TP, is_new=True)
    assert manager.log_dir_of(TP) == tmp_path / "a"
    fill(current, 20)
    current.update_high_watermark(current.log_end_offset)
    before = current.read(0, 1 << 30, min_one_message=True)
    before_bytes = before.records.segment.read_bytes(before.records.position, before.records.size)
    partitions = {TP: SimpleNamespace(log=current)}
    mover = LogDirMover(manager, lambda: partitions, max_bytes=500)

    async def move():
        assert mover.alter(TP, str(tmp_path / "b")) == ErrorCode.NONE
        future = manager.future_log(TP)
        assert future.directory.name.startswith("t-0.") and future.directory.name.endswith("-future")
        assert manager.future_logs()[tmp_path / "b"][TP][1] == 60  # the copy has not started: all 60 behind
        await until_moved(mover)

    asyncio.run(move())
    moved = partitions[TP].log
    assert manager.log_dir_of(TP) == tmp_path / "b" and manager.get_log(TP) is moved
    assert moved.directory == tmp_path / "b" / "t-0" and len(moved.segments) > 1
    assert (moved.log_start_offset, moved.log_end_offset, moved.high_watermark) == (0, 60, 60)
    assert not (tmp_path / "a" / "t-0").exists() and not list((tmp_path / "a").glob("t-0*"))
    after = moved.read(0, 1 << 30, min_one_message=True)
    # the first segment's bytes are the producer's bytes, as written to the old dir
    assert after.records.segment.read_bytes(after.records.position, after.records.size) == before_bytes
    assert manager.future_logs() == {}


def test_appends_during_the_move_are_all_in_the_moved_log(manager, tmp_path):
    current = manager.get_or_create_log(TP, is_new=True)
    fill(current, 30)
    partitions = {TP: SimpleNamespace(log=current)}
    mover = LogDirMover(manager, lambda: partitions, max_bytes=1000)  # ~9 batches a round, 1 appended
    destination = tmp_path / ("b" if manager.log_dir_of(TP) == tmp_path / "a" else "a")

    async def move_under_load():
        assert mover.alter(TP, str(destination)) == ErrorCode.NONE
        appended = 30
        deadline = asyncio.get_running_loop().time() + 30
        while mover.moving():
            assert appended < 1000 and asyncio.get_running_loop().time() < deadline, "the copy never caught up"
            partitions[TP].log.append_as_leader(batch(3 * appended), 0)  # on the loop, as Produce appends
            appended += 1
            await asyncio.sleep(0)
        return appended

    appended = asyncio.run(move_under_load())
    moved = partitions[TP].log
    assert moved.log_end_offset == 3 * appended and manager.log_dir_of(TP) == destination
    offsets, offset = [], 0
    while offset < moved.log_end_offset:  # every batch, in order, no gap
        info = moved.read(offset, 1 << 20, min_one_message=True)
        offsets.append(offset)
        offset = int.from_bytes(info.records.segment.read_bytes(info.records.position, 8), "big") + 3
    assert offsets == list(range(0, 3 * appended, 3))


def test_a_log_start_inside_a_batch_and_a_start_moved_during_the_copy(manager, tmp_path):
    current = manager.get_or_create_log(TP, is_new=True)
    fill(current, 10)
    current.update_high_watermark(30)
    current.increment_log_start_offset(4)  # inside the batch 3..5
    partitions = {TP: SimpleNamespace(log=current)}
    mover = LogDirMover(manager, lambda: partitions, max_bytes=100)
    destination = tmp_path / ("b" if manager.log_dir_of(TP) == tmp_path / "a" else "a")

    async def move():
        mover.alter(TP, str(destination))
        await asyncio.sleep(0)
        current.increment_log_start_offset(20)  # DeleteRecords while copying
        await until_moved(mover)

    asyncio.run(move())
    moved = partitions[TP].log
    assert (moved.log_start_offset, moved.log_end_offset) == (20, 30)


def test_errors_and_preferred_dirs(manager, tmp_path):
    partitions: dict = {}
    mover = LogDirMover(manager, lambda: partitions)

    async def alter(tp, path):
        return mover.alter(tp, path)

    assert asyncio.run(alter(TP, str(tmp_path / "c"))) == ErrorCode.LOG_DIR_NOT_FOUND
    assert asyncio.run(alter(TP, "b")) == ErrorCode.LOG_DIR_NOT_FOUND  # relative
    # not hosted yet: REPLICA_NOT_AVAILABLE, and the log is created in the dir asked for when it comes
    assert asyncio.run(alter(TP, str(tmp_path / "b"))) == ErrorCode.REPLICA_NOT_AVAILABLE
    manager.get_or_create_log(TopicPartition("t", 1), is_new=True)  # whatever the counts say
    manager.get_or_create_log(TopicPartition("t", 2), is_new=True)
    created = manager.get_or_create_log(TP, is_new=True)
    assert manager.log_dir_of(TP) == tmp_path / "b"
    partitions[TP] = SimpleNamespace(log=created)
    assert asyncio.run(alter(TP, str(tmp_path / "b"))) == ErrorCode.NONE  # already there: nothing to do
    assert manager.future_log(TP) is None
    with pytest.raises(LogDirNotFoundError):
        manager.online_dir(tmp_path / "nope")


def test_an_unfinished_move_is_deleted_at_start(tmp_path):
    first = LogManager([tmp_path / "a", tmp_path / "b"])
    first.startup()
    log = first.get_or_create_log(TP, is_new=True)
    fill(log, 3)
    other = tmp_path / ("b" if first.log_dir_of(TP) == tmp_path / "a" else "a")
    first.create_future_log(TP, other, 0)
    first.shutdown()
    assert list(other.glob("t-0.*-future"))
    second = LogManager([tmp_path / "a", tmp_path / "b"])
    second.startup()
    try:
        assert not list(other.glob("t-0.*-future")) and second.get_log(TP).log_end_offset == 9
    finally:
        second.shutdown()


def test_describe_log_dirs_answers_future_replicas_with_their_lag():
    from brokers.server.handlers.log_dirs import log_dir_results

    results = log_dir_results([("/a", None, {TP: 100}), ("/b", None, {}), ("/c", "offline", {})], None,
                              {"/b": {TP: (40, 7)}})
    assert [(r["log_dir"], r["error_code"], r["topics"]) for r in results] == [
        ("/a", ErrorCode.NONE, [{"name": "t", "partitions": [
            {"partition_index": 0, "partition_size": 100, "offset_lag": 0, "is_future_key": False}]}]),
        ("/b", ErrorCode.NONE, [{"name": "t", "partitions": [
            {"partition_index": 0, "partition_size": 40, "offset_lag": 7, "is_future_key": True}]}]),
        ("/c", ErrorCode.KAFKA_STORAGE_ERROR, [])]


def test_a_tail_without_batches_is_carried_over_and_the_cleaner_postpones_the_swap(manager, tmp_path):
    """The current log ends past its last batch (the cleaner removed the tail of a compacted log): the
    future log rolls to that end instead of waiting for a batch. A cleaner pass in progress postpones the swap."""
    current = manager.get_or_create_log(TP, is_new=True)
    fill(current, 4)
    current.roll(20)  # an empty active segment at 20: offsets 12..19 hold no batch
    assert current.log_end_offset == 20
    partitions = {TP: SimpleNamespace(log=current)}
    mover = LogDirMover(manager, lambda: partitions)
    destination = tmp_path / ("b" if manager.log_dir_of(TP) == tmp_path / "a" else "a")

    async def move():
        with manager._cleaning_lock:  # as clean_logs holds it
            mover.alter(TP, str(destination))
            for _ in range(20):
                await asyncio.sleep(0.02)
            assert mover.moving() == [TP] and manager.log_dir_of(TP) != destination  # postponed, not failed
            assert manager.future_log(TP).log_end_offset == 20
        await until_moved(mover)

    asyncio.run(move())
    assert manager.log_dir_of(TP) == destination and partitions[TP].log.log_end_offset == 20
    assert current.retired  # late tasks on the replaced log do nothing and take no dir offline
    from brokers.storage.log_dir_failure import LogRetiredError
    with pytest.raises(LogRetiredError):
        current.delete_old_segments()
    assert manager.offline_log_dirs() == []
