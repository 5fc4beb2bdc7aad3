"""Transaction markers: the control batches that end a transaction on a partition (KIP-98).

A marker is a RecordBatch v2 with attributes transactional (0x10) | control (0x20), the producer's id
and epoch, base sequence -1, and exactly one record (Kafka's ``EndTransactionMarker``)::

    key    int16 version (0)  int16 type        ControlRecordType: ABORT 0, COMMIT 1
    value  int16 version (0)  int32 coordinator_epoch

The marker takes one offset, assigned on append like any batch's. Kafka's reader accepts a newer key
or value version and reads only the fields it knows; so does ``parse_marker``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from brokers.protocol.errors import CorruptRecordError, InvalidRecordError
from brokers.protocol.record import Record, batch_records, build_batch
from brokers.protocol.record_batch import BatchHeader

ABORT = 0
COMMIT = 1
CONTROL_KEY_VERSION = 0
MARKER_VALUE_VERSION = 0
NO_SEQUENCE = -1

_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch


class EndTxnMarker(NamedTuple):
    commit: bool
    coordinator_epoch: int


def marker_key(commit: bool) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, COMMIT if commit else ABORT)


def marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(MARKER_VALUE_VERSION, coordinator_epoch)


def build_marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       timestamp_ms: int) -> bytearray:
    """The control batch of one marker, base offset 0 (the log assigns the real one)."""
    record = Record(0, 0, marker_key(commit), marker_value(coordinator_epoch))
    return build_batch([record], base_timestamp=timestamp_ms, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE, transactional=True, control=True)


def parse_control_type(key: bytes | None) -> int:
    """A control record's type from its key; CorruptRecordError if the key is too short."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key of {0 if key is None else len(key)} bytes, need 4")
    return _KEY.unpack_from(key)[1]


def parse_marker(buf, header: BatchHeader) -> EndTxnMarker:
    """The marker of the control batch ``header`` in ``buf`` (at ``header.position``)."""
    if not header.is_control:
        raise InvalidRecordError(f"batch at offset {header.base_offset} is not a control batch")
    records = batch_records(buf, header)
    if len(records) != 1:
        raise InvalidRecordError(f"control batch at offset {header.base_offset} holds {len(records)} records, not 1")
    record = records[0]
    kind = parse_control_type(record.key)
    if kind not in (ABORT, COMMIT):
        raise InvalidRecordError(f"control record type {kind} is not a transaction marker")
    if record.value is None or len(record.value) < _VALUE.size:
        raise CorruptRecordError(f"end transaction marker value of {len(record.value or b'')} bytes, need 6")
    _, coordinator_epoch = _VALUE.unpack_from(record.value)
    return EndTxnMarker(kind == COMMIT, coordinator_epoch)
