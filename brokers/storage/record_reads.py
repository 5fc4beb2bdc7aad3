"""The few record-level reads a Log makes (everything else in it works on batch headers): keyless
records on a compacted topic, and the first record at or after a timestamp."""
from __future__ import annotations

from brokers.model import TopicPartition
from brokers.protocol.errors import RecordValidationError
from brokers.protocol.record_batch import BatchSetInfo


def require_keys(buf, info: BatchSetInfo, tp: TopicPartition) -> None:
    """Compacted topics reject records without a key (INVALID_RECORD, Kafka 2.4+): each keyless record is a
    record error at its index in its batch, as Kafka's LogValidator reports them."""
    from brokers.protocol.record import batch_records

    errors = [(index, f"Compacted topic cannot accept message without key in topic partition {tp}.")
              for header in info.headers for index, record in enumerate(batch_records(buf, header))
              if record.key is None]
    if errors:
        raise RecordValidationError(errors)


def first_record_at_or_after(batch, timestamp: int) -> tuple[int, int] | None:
    """Read one batch's record timestamps (the only record-level work on this path)."""
    from brokers.protocol.record import record_timestamps
    from brokers.protocol.record_batch import read_header

    for offset, record_timestamp in record_timestamps(batch, read_header(batch)):
        if record_timestamp >= timestamp:
            return offset, record_timestamp
    return None
