"""``zkafka log dump`` over a transactional partition: control batches and their markers as kafka-dump-log prints
them, and ``.txnindex`` entries. The log is written as a follower writes it (batches with their offsets), so
the expected text is exact."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from brokers.protocol.control_record import build_marker_batch
from brokers.protocol.record import Record, build_batch
from brokers.storage.dump import dump_path
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig

LEADER_EPOCH = 4
ENTRY = struct.Struct(">hqqqq")


def at_offset(batch: bytearray, base_offset: int) -> bytearray:
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, LEADER_EPOCH)
    return batch


def transactional(producer_id: int, epoch: int, sequence: int, values: list[bytes], ts: int) -> bytearray:
    records = [Record(i, i, b"k%d" % i, value) for i, value in enumerate(values)]
    return build_batch(records, base_timestamp=ts, producer_id=producer_id, producer_epoch=epoch,
                       base_sequence=sequence, transactional=True)


@pytest.fixture
def partition_dir(tmp_path) -> Path:
    log = Log(tmp_path / "txns-0", LogConfig())
    log.append_as_follower(at_offset(transactional(7, 2, 0, [b"a", b"b"], 8000), 0))
    log.append_as_follower(at_offset(build_marker_batch(7, 2, True, 5, 9000), 2))
    log.append_as_follower(at_offset(transactional(8, 0, 0, [b"c"], 9100), 3))
    log.append_as_follower(at_offset(build_marker_batch(8, 0, False, 6, 9200), 4))
    log.close()
    (tmp_path / "txns-0" / "00000000000000000000.txnindex").write_bytes(ENTRY.pack(0, 8, 3, 4, 3))
    return tmp_path / "txns-0"


def test_control_batches_are_transactional_and_control(partition_dir):
    lines = list(dump_path(partition_dir / "00000000000000000000.log"))
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert [line.split(" position:")[0] for line in batches] == [
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 2 "
        "partitionLeaderEpoch: 4 isTransactional: true isControl: false",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 2 "
        "partitionLeaderEpoch: 4 isTransactional: true isControl: true",
        "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 0 lastSequence: 0 producerId: 8 producerEpoch: 0 "
        "partitionLeaderEpoch: 4 isTransactional: true isControl: false",
        "baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 8 producerEpoch: 0 "
        "partitionLeaderEpoch: 4 isTransactional: true isControl: true",
    ]
    assert " CreateTime: 9000 size: 78 magic: 2 compresscodec: none crc: " in batches[1]
    assert not any(line.startswith("|") for line in lines)  # records only with --print-data-log


def test_marker_records_show_the_marker_and_data_records_their_sequence(partition_dir):
    lines = [line for line in dump_path(partition_dir / "00000000000000000000.log", print_records=True)
             if line.startswith("|")]
    assert lines == [
        "| offset: 0 CreateTime: 8000 keySize: 2 valueSize: 1 sequence: 0 headerKeys: [] key: k0 payload: a",
        "| offset: 1 CreateTime: 8001 keySize: 2 valueSize: 1 sequence: 1 headerKeys: [] key: k1 payload: b",
        "| offset: 2 CreateTime: 9000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5",
        "| offset: 3 CreateTime: 9100 keySize: 2 valueSize: 1 sequence: 0 headerKeys: [] key: k0 payload: c",
        "| offset: 4 CreateTime: 9200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 6",
    ]


def test_a_control_record_that_is_no_marker_names_its_type(tmp_path):
    leader_change = build_batch([Record(0, 0, struct.pack(">hh", 0, 2), b"\x00\x00")], base_timestamp=1,
                                control=True)
    log = Log(tmp_path / "kraft-0", LogConfig())
    log.append_as_follower(at_offset(leader_change, 0))
    log.close()
    lines = list(dump_path(tmp_path / "kraft-0" / "00000000000000000000.log", print_records=True))
    assert "| offset: 0 CreateTime: 1 keySize: 4 valueSize: 2 sequence: -1 headerKeys: [] " \
           "controlType: LEADER_CHANGE(2)" in lines


def test_txnindex_entries(partition_dir):
    path = partition_dir / "00000000000000000000.txnindex"
    path.write_bytes(ENTRY.pack(0, 8, 3, 4, 3) + ENTRY.pack(0, 11, 5, 20, 5))
    assert list(dump_path(path)) == [
        f"Dumping {path}",
        "version: 0 producerId: 8 firstOffset: 3 lastOffset: 4 lastStableOffset: 3",
        "version: 0 producerId: 11 firstOffset: 5 lastOffset: 20 lastStableOffset: 5",
        "Entries: 2",
    ]


def test_a_torn_txnindex_entry_is_reported_and_the_file_left_alone(partition_dir):
    path = partition_dir / "00000000000000000000.txnindex"
    data = ENTRY.pack(0, 8, 3, 4, 3) + b"\x00\x00\x00"
    path.write_bytes(data)
    assert list(dump_path(path))[1:] == [
        "version: 0 producerId: 8 firstOffset: 3 lastOffset: 4 lastStableOffset: 3",
        "Entries: 1",
        "  CORRUPT: 3 trailing bytes are not a whole 34-byte entry",
    ]
    assert path.read_bytes() == data


def test_the_directory_dump_includes_the_txnindex_after_the_segments_indexes(partition_dir):
    lines = list(dump_path(partition_dir))
    dumped = [Path(line.removeprefix("Dumping ")).name for line in lines if line.startswith("Dumping ")]
    assert dumped[:4] == ["00000000000000000000.log", "00000000000000000000.index",
                          "00000000000000000000.timeindex", "00000000000000000000.txnindex"]
    assert "version: 0 producerId: 8 firstOffset: 3 lastOffset: 4 lastStableOffset: 3" in lines


def test_producer_snapshots_show_open_transactions_and_coordinator_epochs(tmp_path):
    log = Log(tmp_path / "snap-0", LogConfig())
    log.append_as_leader(transactional(7, 2, 0, [b"a", b"b"], 8000), 0)  # offsets 0-1
    log.append_marker(7, 2, True, 5, 0)  # offset 2
    log.append_as_leader(transactional(8, 0, 0, [b"c"], 9100), 0)  # offset 3, left open
    log.close()
    path = tmp_path / "snap-0" / "00000000000000000004.snapshot"
    assert list(dump_path(path)) == [
        f"Dumping {path}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 5 currentTxnFirstOffset: None firstSequence: 0 "
        "lastSequence: 1 lastOffset: 1 offsetDelta: 1 timestamp: 8001",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: Some(3) firstSequence: 0 "
        "lastSequence: 0 lastOffset: 3 offsetDelta: 0 timestamp: 9100",
    ]
    path.write_bytes(path.read_bytes()[:-1])
    assert list(dump_path(path))[1].startswith("  CORRUPT: ")


def test_log_append_time_records_show_the_batch_timestamp(tmp_path):
    log = Log(tmp_path / "lat-0", LogConfig(message_timestamp_type="LogAppendTime"), clock=lambda: 77.0)
    log.append_as_leader(build_batch([Record(0, 0, b"k", b"v"), Record(1, 5, b"k", b"w")], base_timestamp=10), 0)
    log.close()
    lines = [line for line in dump_path(tmp_path / "lat-0" / "00000000000000000000.log", print_records=True)
             if line.startswith("|")]
    assert [line.split(" keySize")[0] for line in lines] == ["| offset: 0 LogAppendTime: 77000",
                                                              "| offset: 1 LogAppendTime: 77000"]
