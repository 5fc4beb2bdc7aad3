"""The replica fetcher's handling of the leader's log start (DeleteRecords reaching followers), on a real
follower Partition and Log: the follower moves its log start to the leader's (never past its own high
watermark) and names it in its next Fetch; a storage error while doing so backs that partition off and the
fetcher goes on (it used to end the fetcher's task, silently stopping every partition it replicates)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode

from brokers.model import EndPoint, TopicPartition
from brokers.protocol.record import Record, build_batch
from brokers.replication.fetcher import FetcherConfig, PartitionFetchState, ReplicaFetcher
from brokers.replication.partition import Partition
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.log_dir_failure import LogDirFailureChannel

TP = TopicPartition("t", 0)


def leader_batch(base_offset: int, count: int = 5) -> bytes:
    raw = bytearray(build_batch([Record(i, i, None, b"v") for i in range(count)], base_timestamp=1000))
    raw[0:8] = base_offset.to_bytes(8, "big")
    raw[12:16] = (0).to_bytes(4, "big")  # leader epoch 0
    return bytes(raw)


def answer(records: bytes, high_watermark: int, log_start_offset: int):
    return SimpleNamespace(error_code=KioErrorCode(0), diverging_epoch=SimpleNamespace(epoch=-1, end_offset=-1),
                           records=records, high_watermark=high_watermark, log_start_offset=log_start_offset)


@pytest.fixture
def follower(tmp_path):
    channel = LogDirFailureChannel()
    log = Log(tmp_path / "logs" / "t-0", LogConfig(), failure_channel=channel)
    partition = Partition(TP, 2, log)
    partition.make_follower(1, 0, (1, 2), (1, 2), 0, 1)
    fetcher = ReplicaFetcher(1, EndPoint("PLAINTEXT", "127.0.0.1", 1), FetcherConfig(2, backoff_ms=1000))
    state = PartitionFetchState(partition, 0, truncating=False)
    fetcher.partitions[TP] = state
    yield fetcher, state, partition, channel
    log.close()


def test_the_follower_takes_the_leaders_log_start_and_names_it_next(follower):
    fetcher, state, partition, _ = follower
    asyncio.run(fetcher._handle_partition(None, state, answer(leader_batch(0, 10), 10, 4)))
    assert (partition.log.log_end_offset, partition.log.log_start_offset) == (10, 4)
    assert TP in fetcher._changed and TP not in fetcher._delayed  # its next Fetch carries log_start_offset 4
    asyncio.run(fetcher._handle_partition(None, state, answer(b"", 10, 30)))  # never past its own HW
    assert partition.log.log_start_offset == 10


def test_a_storage_error_backs_the_partition_off_and_the_fetcher_goes_on(follower):
    fetcher, state, partition, channel = follower
    asyncio.run(fetcher._handle_partition(None, state, answer(leader_batch(0, 10), 10, 0)))
    channel.maybe_add_offline_log_dir(partition.log.log_dir, "a disk failed", OSError(5, "I/O error"))
    asyncio.run(fetcher._handle_partition(None, state, answer(b"", 10, 6)))  # would raise before the fix
    assert TP in fetcher._delayed and partition.log.log_start_offset == 0
