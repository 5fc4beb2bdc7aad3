"""Records sections captured from real clients (see tests/golden/README.md), read back with our codecs.

Each ``produce/*.bin`` file is the compressed records section of the first compressed batch a client sent;
the number before ``.bin`` is the codec id. Files named ``<client>-prod-<codec>-<acks>-<id>.bin`` carry
values that name their codec and acks, which is checked too.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from brokers.protocol.compression import CODEC_BY_NAME, XERIAL_MAGIC, decompress
from brokers.protocol.record import Record, batch_records, build_batch, decode_records, encode_records, iter_records
from brokers.protocol.record_batch import (
    CRC_AT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    check_crc,
    crc32c,
    read_header,
    validate_batches,
)

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "produce"
FILES = sorted(GOLDEN.glob("*.bin")) if GOLDEN.is_dir() else []
NAMED = re.compile(r"(?P<client>[a-z]+)-prod-(?P<codec>[a-z0-9]+)-(?P<acks>all|default|-?\d+)-(?P<id>\d+)")
CODEC_NAMES = {v: k for k, v in CODEC_BY_NAME.items()}
BASE_TIMESTAMP = 1_700_000_000_000

# keyed clients: key k<N>, value "<unit>" repeated where the unit is "v-<N> " or "v-<codec>-<acks>-<N> "
KEYED_UNIT = re.compile(rb"v-(?:(?P<codec>[a-z0-9]+)-(?P<acks>all|default|-?\d+)-)?(?P<n>\d+) ")
KCAT_VALUE = re.compile(rb"kcat-(?P<codec>[a-z0-9]+)-(?P<acks>all|default|-?\d+)-a+-(?P<n>\d+)")
CROSS_VALUE = re.compile(rb"cross-x+")

def _codec(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _records(path: Path) -> list[Record]:
    return decode_records(decompress(_codec(path), path.read_bytes()))


def _batch_around(section: bytes, codec: int, count: int) -> bytearray:
    """A v2 batch header (correct length and CRC32C) in front of ``section``, copied verbatim."""
    batch = bytearray(HEADER_SIZE + len(section))
    ts = BASE_TIMESTAMP
    fields = (0, len(batch) - LOG_OVERHEAD, -1, MAGIC_V2, 0, codec, count - 1, ts, ts, -1, -1, -1, count)
    HEADER.pack_into(batch, 0, *fields)
    batch[HEADER_SIZE:] = section
    struct.pack_into(">I", batch, CRC_AT, crc32c(bytes(batch[CRC_START:])))
    return batch


def _check_value(path: Path, record: Record) -> None:
    value = record.value
    assert value and value.isascii(), value
    named = NAMED.fullmatch(path.stem)
    if record.key is not None:
        key = re.fullmatch(rb"k(\d+)", record.key)
        assert key, record.key
        unit = KEYED_UNIT.match(value)
        assert unit and unit[0] * (len(value) // len(unit[0])) == value, value
        assert unit["n"] == key[1]
        found = unit
    else:
        found = KCAT_VALUE.fullmatch(value) or CROSS_VALUE.fullmatch(value)
        assert found, value
    if named and found.re is not CROSS_VALUE and found["codec"] is not None:
        assert found["codec"].decode() == named["codec"]
        assert found["acks"].decode() == named["acks"]


def test_golden_files_are_present():
    """Fails loudly when tests/golden is missing (every test below would be empty)."""
    assert len(FILES) >= 4, f"no golden files under {GOLDEN}"
    assert {_codec(p) for p in FILES} == {1, 2, 3, 4}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_golden_decodes(path):
    codec = _codec(path)
    assert codec in (1, 2, 3, 4)
    named = NAMED.fullmatch(path.stem)
    if named:
        assert CODEC_BY_NAME[named["codec"]] == codec
    records = _records(path)
    assert len(records) >= 1
    assert [r.offset_delta for r in records] == list(range(len(records)))
    assert all(0 <= r.timestamp_delta < 60_000 for r in records)
    assert all(r.attributes == 0 and r.headers == () for r in records)
    for record in records:
        _check_value(path, record)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_golden_reencodes_byte_for_byte(path):
    """Our record encoder writes exactly what the client wrote (minimal varints, same field order)."""
    raw = decompress(_codec(path), path.read_bytes())
    assert encode_records(decode_records(raw)) == raw


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_golden_section_inside_a_batch(path):
    codec = _codec(path)
    section = path.read_bytes()
    records = _records(path)
    batch = _batch_around(section, codec, len(records))
    header = read_header(batch)
    check_crc(batch, header)
    assert header.compression == codec
    assert header.size == len(batch)
    assert batch_records(batch, header) == records
    info = validate_batches(batch)
    assert info.records_count == len(records)
    consumed = list(iter_records(bytes(batch)))
    assert [c.offset for c in consumed] == list(range(len(records)))
    assert [c.value for c in consumed] == [r.value for r in records]
    assert [c.timestamp for c in consumed] == [BASE_TIMESTAMP + r.timestamp_delta for r in records]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_golden_records_rebuilt_with_our_codec(path):
    codec = _codec(path)
    records = _records(path)
    batch = build_batch(records, base_offset=500, base_timestamp=BASE_TIMESTAMP, codec=codec)
    header = read_header(batch)
    check_crc(batch, header)
    assert (header.compression, header.records_count, header.last_offset_delta) == (
        codec,
        len(records),
        len(records) - 1,
    )
    assert batch_records(batch, header) == records
    if codec == CODEC_BY_NAME["snappy"]:
        assert batch[HEADER_SIZE : HEADER_SIZE + len(XERIAL_MAGIC)] == XERIAL_MAGIC


SNAPPY_FILES = [p for p in FILES if _codec(p) == CODEC_BY_NAME["snappy"]]


@pytest.mark.parametrize("path", SNAPPY_FILES, ids=[p.name for p in SNAPPY_FILES])
def test_golden_snappy_framing_by_client(path):
    """librdkafka (confluent-kafka, kcat) sends raw snappy; the Python clients send xerial framing."""
    xerial = path.read_bytes().startswith(XERIAL_MAGIC)
    client = path.stem.split("-")[1] if path.stem.startswith("x-") else path.stem.split("-")[0]
    if client in ("ck", "kcat", "rdkafka"):
        assert not xerial
    elif client in ("kp", "aio"):
        assert xerial
