"""Read-only dumps of segment files, in the spirit of Kafka's DumpLogSegments.

``dump_path`` takes a partition directory or a single ``.log`` / ``.index`` / ``.timeindex`` /
``.txnindex`` file and yields printable lines. Files are opened read-only; nothing is created or
repaired. A corrupt batch is reported and ends that file's dump; index entries are checked against the
``.log`` beside them.

Record lines (``print_records``) follow kafka-dump-log's deep iteration: ``| offset: N CreateTime: T
keySize: K valueSize: V sequence: S headerKeys: [...]``, then ``key: ... payload: ...`` for data records
and, for a transaction marker (a control batch), ``endTxnMarker: COMMIT|ABORT coordinatorEpoch: E``
instead. A ``.txnindex`` (aborted transactions) prints one ``version: 0 producerId: P firstOffset: F
lastOffset: L lastStableOffset: S`` line per entry; a producer-state ``.snapshot`` one line per entry with
the producer's epoch, coordinator epoch and open transaction's first offset (``Some(F)`` / ``None``) and,
when the entry holds a batch, its sequences, last offset, offset delta and timestamp.

The readers under the lines are shared with ``kafka-dump-log`` (``scripts.tools.dump_log``, Kafka 2.8's exact
DumpLogSegments output): ``log_batches`` (a ``.log``'s batches with their bytes and CRC validity, from a
position), ``records_of`` (a batch's records as ``RecordView``: absolute offset and timestamp, sizes, sequence,
header keys, the control record's description), ``index_entries`` / ``time_index_entries`` (whole entries,
absolute offsets) and ``increment_sequence`` (Kafka's wrap-around).
"""
from __future__ import annotations

import os
from pathlib import Path
from dataclasses import dataclass
from typing import Iterator

from brokers.protocol.control_record import ABORT, COMMIT, parse_control_type, parse_marker
from brokers.protocol.errors import KafkaError
from brokers.protocol.record import Record, batch_records
from brokers.protocol.record_batch import HEADER_SIZE, BatchHeader, check_crc, read_header
from brokers.storage.files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, base_offset_of
from brokers.storage.offset_index import OffsetIndex
from brokers.storage.producer_snapshot import SNAPSHOT_SUFFIX, CorruptSnapshotError, decode_snapshot
from brokers.storage.producer_state import snapshot_batch
from brokers.storage.segment import scan_batches
from brokers.storage.time_index import TimeIndex
from brokers.storage.transaction_index import ENTRY_SIZE, TXN_INDEX_SUFFIX, CorruptTransactionIndexError, decode_entries

SUFFIX_ORDER = {LOG_SUFFIX: 0, INDEX_SUFFIX: 1, TIME_INDEX_SUFFIX: 2, TXN_INDEX_SUFFIX: 3, SNAPSHOT_SUFFIX: 4}
CONTROL_TYPE_NAMES = {ABORT: "ABORT", COMMIT: "COMMIT", 2: "LEADER_CHANGE"}  # Kafka 2.8's ControlRecordType
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LogBatch:
    header: BatchHeader  # its position is the file position
    data: bytes  # the whole batch
    valid: bool  # its CRC matches


@dataclass(frozen=True, slots=True)
class RecordView:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    header_keys: tuple[str, ...]
    sequence: int
    control: str | None  # a control record: ``endTxnMarker: COMMIT coordinatorEpoch: 5`` / ``controlType: NAME(id)``


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def last_sequence(h: BatchHeader) -> int:
    return increment_sequence(h.base_sequence, h.last_offset_delta) if h.base_sequence >= 0 else -1


def log_batches(path: Path, position: int = 0) -> Iterator[LogBatch]:
    """The batches of a ``.log`` from ``position``; KafkaError (CorruptRecordError) where one is torn or malformed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for header in scan_batches(fd, position, os.fstat(fd).st_size):
            data = os.pread(fd, header.size, header.position)
            yield LogBatch(header, data, _crc_ok(data, read_header(data)))
    finally:
        os.close(fd)


def records_of(batch: LogBatch) -> list[RecordView]:
    """The batch's records (decompressed); KafkaError if they cannot be decoded."""
    header, data = batch.header, batch.data
    local = read_header(data)
    log_append_time = header.timestamp_type == "LogAppendTime"
    views = []
    for r in batch_records(data, local):
        views.append(RecordView(
            header.base_offset + r.offset_delta,
            header.max_timestamp if log_append_time else header.base_timestamp + r.timestamp_delta,
            r.key, r.value, tuple(k for k, _ in r.headers),
            increment_sequence(header.base_sequence, r.offset_delta) if header.base_sequence >= 0 else -1,
            _describe_control(data, local, r) if header.is_control else None))
    return views


def index_entries(path: Path) -> tuple[list[tuple[int, int]], int]:
    """An ``.index``'s whole entries as (absolute offset, position), and the file's size in bytes."""
    data, base = path.read_bytes(), base_offset_of(path.name)
    whole = len(data) - len(data) % OffsetIndex.ENTRY.size
    return [(base + key, position) for key, position in OffsetIndex.ENTRY.iter_unpack(data[:whole])], len(data)


def time_index_entries(path: Path) -> tuple[list[tuple[int, int]], int]:
    """A ``.timeindex``'s whole entries as (timestamp, absolute offset), and the file's size in bytes."""
    data, base = path.read_bytes(), base_offset_of(path.name)
    whole = len(data) - len(data) % TimeIndex.ENTRY.size
    return [(timestamp, base + key) for timestamp, key in TimeIndex.ENTRY.iter_unpack(data[:whole])], len(data)


def dump_path(path: Path, *, print_records: bool = False, max_payload: int = 60) -> Iterator[str]:
    path = Path(path)
    if path.is_dir():
        files = sorted((p for p in path.iterdir() if p.suffix in SUFFIX_ORDER),
                       key=lambda p: (p.name.split(".")[0], SUFFIX_ORDER[p.suffix]))
        if not files:
            yield f"{path}: no segment files"
        for file in files:
            yield from dump_file(file, print_records=print_records, max_payload=max_payload)
        for name in ("leader-epoch-checkpoint", "partition.metadata"):
            if (path / name).exists():
                yield f"Dumping {path / name}"
                yield from ((path / name).read_text().splitlines())
        return
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    yield from dump_file(path, print_records=print_records, max_payload=max_payload)


def dump_file(path: Path, *, print_records: bool = False, max_payload: int = 60) -> Iterator[str]:
    yield f"Dumping {path}"
    if path.suffix == LOG_SUFFIX:
        yield from _dump_log(path, print_records, max_payload)
    elif path.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        yield from _dump_index(path)
    elif path.suffix == TXN_INDEX_SUFFIX:
        yield from _dump_txn_index(path)
    elif path.suffix == SNAPSHOT_SUFFIX:
        yield from _dump_producer_snapshot(path)
    else:
        yield f"  not a segment file (expected {', '.join(SUFFIX_ORDER)})"


def _dump_log(path: Path, print_records: bool, max_payload: int) -> Iterator[str]:
    yield f"Starting offset: {base_offset_of(path.name)}"
    size, batches = path.stat().st_size, 0
    try:
        for batch in log_batches(path):
            yield _describe_batch(batch.header, batch.valid)
            batches += 1
            if print_records and batch.valid:
                yield from _describe_records(batch, max_payload)
    except KafkaError as exc:
        yield f"  CORRUPT: {exc} — a broker's recovery truncates the log here"
    yield f"Batches: {batches}, size: {size} bytes"


def _crc_ok(data: bytes, header: BatchHeader) -> bool:
    try:
        check_crc(data, header)
        return True
    except KafkaError:
        return False


def _describe_batch(h: BatchHeader, valid: bool) -> str:
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
            f"baseSequence: {h.base_sequence} lastSequence: {last_sequence(h)} producerId: {h.producer_id} "
            f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
            f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
            f"position: {h.position} {h.timestamp_type}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
            f"compresscodec: {h.codec_name} crc: {h.crc} isvalid: {str(valid).lower()}")


def _describe_records(batch: LogBatch, max_payload: int) -> Iterator[str]:
    try:
        records = records_of(batch)
    except KafkaError as exc:
        yield f"| cannot decode records: {exc}"
        return
    for r in records:
        line = (f"| offset: {r.offset} {batch.header.timestamp_type}: {r.timestamp} "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)} "
                f"sequence: {r.sequence} headerKeys: [{','.join(r.header_keys)}]")
        yield line + " " + (r.control if r.control is not None else _describe_data(r, max_payload))


def _describe_data(record: RecordView, max_payload: int) -> str:
    key = "null" if record.key is None else _printable(record.key, max_payload)
    value = "null" if record.value is None else _printable(record.value, max_payload)
    return f"key: {key} payload: {value}"


def _describe_control(data: bytes, header: BatchHeader, record: Record) -> str:
    """Kafka's ``endTxnMarker: COMMIT coordinatorEpoch: 5`` for a marker, ``controlType: NAME(id)`` otherwise."""
    try:
        kind = parse_control_type(record.key)
        if kind not in (ABORT, COMMIT):
            return f"controlType: {CONTROL_TYPE_NAMES.get(kind, 'UNKNOWN')}({kind})"
        marker = parse_marker(data, header)
    except KafkaError as exc:
        return f"controlType: cannot decode ({exc})"
    return f"endTxnMarker: {'COMMIT' if marker.commit else 'ABORT'} coordinatorEpoch: {marker.coordinator_epoch}"


def _printable(data: bytes, limit: int) -> str:
    text = data[:limit].decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text + (f"...(+{len(data) - limit} bytes)" if len(data) > limit else "")


def _dump_index(path: Path) -> Iterator[str]:
    base = base_offset_of(path.name)
    log_path = path.with_suffix(LOG_SUFFIX)
    cls = OffsetIndex if path.suffix == INDEX_SUFFIX else TimeIndex
    size = path.stat().st_size
    if size % cls.ENTRY.size:
        yield f"  CORRUPT: size {size} is not a multiple of {cls.ENTRY.size}; a broker rebuilds this index"
        return
    entries = list(cls.ENTRY.iter_unpack(path.read_bytes()))
    starts = _batch_last_offsets_by_position(log_path)
    mismatches = 0
    for key, value in entries:
        if cls is OffsetIndex:
            offset, ok = base + key, starts is None or starts.get(value) == base + key
            yield f"offset: {offset} position: {value}" + ("" if ok else "  MISMATCH: no batch ends at this offset there")
        else:
            offset, ok = base + value, True
            yield f"timestamp: {key} offset: {offset}"
        mismatches += not ok
    yield f"Entries: {len(entries)}" + (f", mismatches: {mismatches}" if mismatches else "")


def _batch_last_offsets_by_position(log_path: Path) -> dict[int, int] | None:
    if not log_path.exists():
        return None
    fd = os.open(log_path, os.O_RDONLY)
    try:
        found = {}
        try:
            for header in scan_batches(fd, 0, os.fstat(fd).st_size):
                found[header.position] = header.last_offset
        except KafkaError:
            pass
        return found
    finally:
        os.close(fd)


def _dump_txn_index(path: Path) -> Iterator[str]:
    data = path.read_bytes()
    try:
        entries = decode_entries(data)
    except CorruptTransactionIndexError as exc:
        yield f"  CORRUPT: {exc}"
        return
    for e in entries:
        yield (f"version: 0 producerId: {e.producer_id} firstOffset: {e.first_offset} lastOffset: {e.last_offset} "
               f"lastStableOffset: {e.last_stable_offset}")
    yield f"Entries: {len(entries)}"
    if len(data) % ENTRY_SIZE:
        yield f"  CORRUPT: {len(data) % ENTRY_SIZE} trailing bytes are not a whole {ENTRY_SIZE}-byte entry"


def _dump_producer_snapshot(path: Path) -> Iterator[str]:
    try:
        entries = decode_snapshot(path.read_bytes())
    except CorruptSnapshotError as exc:
        yield f"  CORRUPT: {exc}"
        return
    for row in entries:
        producer_id, epoch, coordinator_epoch, txn_first_offset = (
            row.producer_id, row.epoch, row.coordinator_epoch, row.current_txn_first_offset)
        batch = snapshot_batch(row)
        txn = f"Some({txn_first_offset})" if txn_first_offset >= 0 else "None"
        line = (f"producerId: {producer_id} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
                f"currentTxnFirstOffset: {txn}")
        if batch is not None:
            line += (f" firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} lastOffset: {batch.last_offset} "
                     f"offsetDelta: {batch.last_offset - batch.first_offset} timestamp: {batch.timestamp}")
        yield line


def batch_header_at(path: Path, position: int) -> BatchHeader | None:
    """The header of the batch that starts at ``position`` of a ``.log``, or None when no whole batch is there."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        try:
            return read_header(os.pread(fd, HEADER_SIZE, position), 0, position, room=size - position)
        except KafkaError:
            return None
    finally:
        os.close(fd)
