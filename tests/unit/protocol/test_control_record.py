"""Transaction markers as Kafka writes them (EndTransactionMarker / ControlRecordType)."""
import struct

import pytest

from brokers.protocol.control_record import ABORT, COMMIT, EndTxnMarker, build_marker_batch, parse_marker
from brokers.protocol.errors import InvalidRecordError
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import CONTROL_BIT, TRANSACTIONAL_BIT, check_crc, read_header


def test_marker_batch_bytes_are_kafkas_layout():
    batch = build_marker_batch(1000, 5, True, 7, 1234)
    header = read_header(batch)
    check_crc(batch, header)
    assert header.attributes == TRANSACTIONAL_BIT | CONTROL_BIT == 0x30
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1000, 5, -1)
    assert (header.records_count, header.last_offset_delta) == (1, 0)
    assert (header.base_timestamp, header.max_timestamp) == (1234, 1234)
    assert header.batch_length == len(batch) - 12 == 66
    # one record: length 16, attributes 0, timestamp delta 0, offset delta 0,
    # key (4 bytes) = version 0, type COMMIT 1; value (6 bytes) = version 0, coordinator epoch 7; no headers
    assert bytes(batch[61:]) == bytes.fromhex("20" "00" "00" "00" "08" "00000001" "0c" "000000000007" "00")


@pytest.mark.parametrize("commit", [True, False])
def test_parse_round_trip(commit):
    batch = build_marker_batch(1, 0, commit, 42, 0)
    assert parse_marker(batch, read_header(batch)) == EndTxnMarker(commit, 42)


def test_type_constants():
    assert (ABORT, COMMIT) == (0, 1)


def test_parse_reads_a_newer_value_version_by_its_known_fields():
    key, value = struct.pack(">hh", 0, ABORT), struct.pack(">hih", 1, 9, 3)
    batch = build_batch([Record(0, 0, key, value)], base_timestamp=0, producer_id=3, producer_epoch=0,
                        transactional=True, control=True)
    assert parse_marker(batch, read_header(batch)) == EndTxnMarker(False, 9)


def test_data_batch_is_not_a_marker():
    batch = build_batch([Record(0, 0, b"k", b"v")], base_timestamp=0)
    with pytest.raises(InvalidRecordError):
        parse_marker(batch, read_header(batch))


def test_leader_change_control_record_is_not_a_transaction_marker():
    batch = build_batch([Record(0, 0, struct.pack(">hh", 0, 2), b"\x00\x00")], base_timestamp=0, control=True)
    with pytest.raises(InvalidRecordError):
        parse_marker(batch, read_header(batch))
