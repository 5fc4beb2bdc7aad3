"""Batch headers (records.py): iterating, validating and numbering batches without decoding records."""
from __future__ import annotations

import struct

import pytest

from brokers.protocol.errors import CorruptRecordError, ErrorCode, InvalidRecordError
from brokers.protocol.record import Record, batch_records, build_batch, iter_records
from brokers.protocol.record_batch import (
    CRC_AT,
    CRC_START,
    LENGTH_AT,
    MAGIC_AT,
    BatchSetInfo,
    assign_offsets,
    check_crc,
    crc32c,
    iter_batches,
    read_header,
    set_log_append_time,
    validate_batches,
)

LAST_OFFSET_DELTA_AT = 23


def _batch(n: int, *, base_timestamp: int = 1_000, codec: int = 0, ts_step: int = 1, **kwargs) -> bytearray:
    records = [Record(i, i * ts_step, f"k{i}".encode(), f"value-{i}".encode()) for i in range(n)]
    return build_batch(records, base_timestamp=base_timestamp, codec=codec, **kwargs)


def _three() -> bytearray:
    return _batch(3, codec=1) + _batch(1, base_timestamp=5_000) + _batch(5, codec=4, base_timestamp=2_000)


def _recrc(buf, header) -> int:
    return crc32c(bytes(buf[header.position + CRC_START : header.end]))


def _corrupt(caught) -> None:
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE


def test_iter_batches_over_concatenated_batches():
    buf = _three()
    headers = list(iter_batches(buf, verify_crc=True))
    assert [h.records_count for h in headers] == [3, 1, 5]
    assert [h.compression for h in headers] == [1, 0, 4]
    assert [h.codec_name for h in headers] == ["gzip", "none", "zstd"]
    assert headers[0].position == 0
    assert [h.position for h in headers[1:]] == [headers[0].end, headers[1].end]
    assert headers[-1].end == len(buf)
    assert sum(h.size for h in headers) == len(buf)
    assert [len(batch_records(buf, h)) for h in headers] == [3, 1, 5]


def test_iter_batches_start_and_end_window():
    buf = _three()
    first, second, third = iter_batches(buf)
    assert [h.position for h in iter_batches(buf, second.position)] == [second.position, third.position]
    assert [h.position for h in iter_batches(buf, 0, second.end)] == [0, second.position]
    assert list(iter_batches(buf, len(buf))) == []


def test_iter_batches_over_empty_buffer():
    assert list(iter_batches(b"")) == []


def test_bad_crc_is_corrupt_message():
    buf = _three()
    second = list(iter_batches(buf))[1]
    buf[second.end - 1] ^= 0x40  # last byte of the second batch's records
    assert len(list(iter_batches(buf))) == 3  # headers alone still parse
    with pytest.raises(CorruptRecordError, match="CRC") as caught:
        list(iter_batches(buf, verify_crc=True))
    _corrupt(caught)
    with pytest.raises(CorruptRecordError) as caught:
        validate_batches(buf)
    _corrupt(caught)


def test_crc_field_itself_corrupted():
    buf = _batch(2)
    buf[CRC_AT] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        check_crc(buf, read_header(buf))


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_wrong_magic_is_corrupt(magic):
    buf = _batch(2)
    buf[MAGIC_AT] = magic
    with pytest.raises(CorruptRecordError, match=f"magic {magic}") as caught:
        read_header(buf)
    _corrupt(caught)


def test_length_past_buffer_is_corrupt():
    buf = _batch(2)
    with pytest.raises(CorruptRecordError, match="claims") as caught:
        read_header(buf[:-1])
    _corrupt(caught)
    struct.pack_into(">i", buf, LENGTH_AT, len(buf))  # 12 bytes more than there are
    with pytest.raises(CorruptRecordError, match="claims"):
        list(iter_batches(buf))


def test_length_below_header_is_corrupt():
    buf = _batch(1)
    struct.pack_into(">i", buf, LENGTH_AT, 10)
    with pytest.raises(CorruptRecordError, match="below the header"):
        read_header(buf)


@pytest.mark.parametrize("size", [0, 5, 11, 12, 40, 60])
def test_short_header_is_corrupt(size):
    buf = _batch(1)
    with pytest.raises(CorruptRecordError):
        read_header(bytes(buf[:size]))


def test_partial_trailing_batch_is_corrupt():
    buf = _three()
    with pytest.raises(CorruptRecordError):
        list(iter_batches(buf[:-7]))


def test_count_not_matching_last_offset_delta_is_invalid():
    buf = _batch(3)
    struct.pack_into(">i", buf, LAST_OFFSET_DELTA_AT, 5)
    struct.pack_into(">I", buf, CRC_AT, _recrc(buf, read_header(buf)))  # the CRC covers the field: fix it
    with pytest.raises(InvalidRecordError, match="3 records but last offset delta 5") as caught:
        validate_batches(buf)
    assert caught.value.code == ErrorCode.INVALID_RECORD
    info = validate_batches(buf, producer=False)  # the follower/cleaner path accepts gaps
    assert info.offsets_count == 6


def test_zero_records_is_invalid_from_a_producer():
    buf = build_batch([], base_timestamp=0, last_offset_delta=0)
    with pytest.raises(InvalidRecordError):
        validate_batches(buf)


def test_empty_set_is_invalid():
    with pytest.raises(InvalidRecordError, match="empty"):
        validate_batches(b"")


def test_validate_batches_info():
    buf = _three()  # max timestamps: 1_002, 5_000, 2_004
    info = validate_batches(buf)
    assert isinstance(info, BatchSetInfo)
    assert info.size == len(buf)
    assert info.records_count == 9
    assert info.offsets_count == 9
    assert len(info.headers) == 3
    assert info.max_timestamp == 5_000
    assert info.shallow_offset_delta_of_max_timestamp == 3  # the second batch's only record


def test_validate_batches_max_timestamp_in_last_batch():
    buf = _batch(2, base_timestamp=10) + _batch(4, base_timestamp=20, ts_step=100)
    info = validate_batches(buf)
    assert info.max_timestamp == 320
    assert info.shallow_offset_delta_of_max_timestamp == 5


def test_assign_offsets_rewrites_in_place_and_keeps_crc():
    buf = _three()
    before = bytes(buf)
    info = validate_batches(buf)
    returned = assign_offsets(buf, info, first_offset=1_000, leader_epoch=7)
    assert returned[-1].last_offset == 1_008
    headers = list(iter_batches(buf, verify_crc=True))
    assert list(returned) == headers  # the returned headers describe the rewritten bytes
    assert [h.base_offset for h in headers] == [1_000, 1_003, 1_004]
    assert [h.partition_leader_epoch for h in headers] == [7, 7, 7]
    assert [h.crc for h in headers] == [h.crc for h in iter_batches(before)]
    assert headers[-1].next_offset == 1_009
    for header in headers:  # only base_offset (8 bytes) and the leader epoch (4 bytes) changed
        start = header.position
        assert buf[start + 8 : start + 12] == before[start + 8 : start + 12]
        assert buf[start + 16 : header.end] == before[start + 16 : header.end]
    validate_batches(buf)


def test_assign_offsets_counts_gaps():
    gapped = build_batch([Record(0, 0, b"a", b"1"), Record(4, 0, b"b", b"2")], base_timestamp=0)
    buf = gapped + _batch(1)
    info = validate_batches(buf, producer=False)
    assert assign_offsets(buf, info, first_offset=10, leader_epoch=0)[-1].last_offset == 15
    assert [h.base_offset for h in iter_batches(buf)] == [10, 15]


def test_header_properties():
    buf = build_batch(
        [Record(0, 0, None, b"x")],
        base_offset=41,
        base_timestamp=3,
        timestamp_type_log_append=True,
        transactional=True,
        codec=3,
    )
    header = read_header(buf)
    assert header.last_offset == 41 and header.next_offset == 42
    assert header.timestamp_type == "LogAppendTime"
    assert header.is_transactional and not header.is_control
    assert header.codec_name == "lz4"
    assert header.magic == 2


def test_set_log_append_time_restamps_and_recrcs():
    buf = _batch(2, base_timestamp=10) + _batch(3, base_timestamp=20, codec=2)
    info = set_log_append_time(buf, validate_batches(buf), now_ms=99_000)
    assert info.max_timestamp == 99_000
    assert info.shallow_offset_delta_of_max_timestamp == 4
    headers = list(iter_batches(buf, verify_crc=True))  # new CRCs are right
    assert list(info.headers) == headers
    assert all(h.timestamp_type == "LogAppendTime" and h.max_timestamp == 99_000 for h in headers)
    assert [r.timestamp for r in iter_records(bytes(buf))] == [99_000] * 5
