"""The batch max_timestamp repair: plausible batches untouched and unread, the others recomputed."""
from __future__ import annotations

import pytest

from brokers.protocol import compression, record
from brokers.protocol.errors import CorruptRecordError
from brokers.protocol.max_timestamp import plausible, repair_max_timestamps
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import HEADER_SIZE, iter_batches, read_header, validate_batches

T0 = 1_700_000_000_000


def batch(deltas, *, max_timestamp=None, codec=0, base=T0, log_append=False) -> bytearray:
    records = [Record(i, delta, None, b"v%d" % i) for i, delta in enumerate(deltas)]
    return build_batch(records, base_timestamp=base, max_timestamp=max_timestamp, codec=codec,
                       timestamp_type_log_append=log_append)


@pytest.mark.parametrize("max_timestamp, expected", [
    (T0 + 5, True), (T0, True), (-1, False), (T0 - 1, False),
])
def test_plausible(max_timestamp, expected):
    assert plausible(read_header(batch([0, 5], max_timestamp=max_timestamp))) is expected


def test_plausible_batches_are_not_read(monkeypatch):
    buf = batch([0, 3, 9]) + batch([0, 1], base=T0 + 100)
    before = bytes(buf)
    info = validate_batches(buf)

    def walked(*_):
        raise AssertionError("a plausible batch's records were read")

    monkeypatch.setattr("brokers.protocol.max_timestamp.record_timestamps", walked)
    assert repair_max_timestamps(buf, info) is info
    assert bytes(buf) == before


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4,
                                   compression.ZSTD])
def test_minus_one_is_recomputed_and_the_crc_follows(codec):
    buf = batch([0, 7, 3], max_timestamp=-1, codec=codec)  # what Sarama writes
    info = repair_max_timestamps(buf, validate_batches(buf))
    [header] = list(iter_batches(buf, verify_crc=True))
    assert header.max_timestamp == T0 + 7 == info.headers[0].max_timestamp == info.max_timestamp
    assert info.headers[0].crc == header.crc
    assert info.shallow_offset_delta_of_max_timestamp == 2


def test_max_below_base_is_recomputed():
    buf = batch([0, 4], max_timestamp=T0 - 10)
    repair_max_timestamps(buf, validate_batches(buf))
    assert read_header(buf).max_timestamp == T0 + 4


def test_only_implausible_batches_change_and_the_set_max_follows():
    good = batch([0, 2], base=T0 + 1000)
    bad = batch([0, 50, 20], max_timestamp=-1, base=T0 + 2000)
    buf = good + bad
    info = repair_max_timestamps(buf, validate_batches(buf))
    assert buf[: len(good)] == good
    headers = list(iter_batches(buf, verify_crc=True))
    assert [h.max_timestamp for h in headers] == [T0 + 1002, T0 + 2050]
    assert (info.max_timestamp, info.shallow_offset_delta_of_max_timestamp) == (T0 + 2050, 4)


def test_records_without_timestamps_stay_minus_one_and_the_batch_is_unchanged():
    buf = batch([0, 0], max_timestamp=-1, base=-1)  # an up-converted magic-0 set
    before = bytes(buf)
    info = repair_max_timestamps(buf, validate_batches(buf))
    assert bytes(buf) == before and info.max_timestamp == -1


def test_log_append_time_batches_are_left_to_the_append():
    buf = batch([0, 1], max_timestamp=-1, log_append=True)
    before = bytes(buf)
    repair_max_timestamps(buf, validate_batches(buf))
    assert bytes(buf) == before


def test_undecodable_records_are_corrupt():
    buf = batch([0, 1], max_timestamp=-1, codec=compression.GZIP)
    buf[HEADER_SIZE + 12] ^= 0xFF  # inside the gzip stream; CRC32C recomputed so validation passes
    buf[17:21] = record.crc32c(memoryview(buf)[21:]).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError):
        repair_max_timestamps(buf, validate_batches(buf))
