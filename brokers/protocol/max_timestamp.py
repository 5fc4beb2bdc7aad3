"""A produced batch's max_timestamp, recomputed where the producer's cannot be right.

Kafka's LogValidator sets every appended batch's max_timestamp from its records (or to the append
time under LogAppendTime); ListOffsets by time, the time index and time-based retention and rolling
all read it. Some producers write -1 there (Sarama does in every batch). Recomputing it for every
batch would mean decompressing every batch on append, so the broker trusts a *plausible* value and
walks only the others:

* plausible: ``max_timestamp >= base_timestamp`` and not -1 unless the base is -1 too (the first record's
  timestamp is the base plus a delta that is never negative for an in-order producer). Such a batch
  is left untouched, its bytes unread;
* otherwise the records are walked (decompressed if need be), ``max_timestamp`` is set to the largest
  record timestamp and the
  batch's CRC32C is recomputed (the field is inside it).

LogAppendTime batches are skipped: the append stamps them anyway.
"""
from __future__ import annotations

from brokers.protocol.record import record_timestamps
from brokers.protocol.record_batch import TIMESTAMP_TYPE_BIT, BatchHeader, BatchSetInfo, stamp_max_timestamp

NO_TIMESTAMP = -1


def plausible(header: BatchHeader) -> bool:
    """Whether ``header``'s max_timestamp is kept as the producer wrote it: at or above the base timestamp,
    and -1 only in a batch with no timestamps at all (base -1 too: an up-converted magic-0 set)."""
    return header.max_timestamp >= header.base_timestamp and (header.max_timestamp != NO_TIMESTAMP
                                                              or header.base_timestamp == NO_TIMESTAMP)


def records_max_timestamp(buf, header: BatchHeader) -> int:
    """The largest record timestamp of ``header``'s batch in ``buf`` (-1 if none has one)."""
    return max((timestamp for _, timestamp in record_timestamps(buf, header)), default=NO_TIMESTAMP)


set_max_timestamp = stamp_max_timestamp  # the field and the CRC, in place


def _repaired(buf, header: BatchHeader) -> BatchHeader:
    if plausible(header) or header.attributes & TIMESTAMP_TYPE_BIT:
        return header
    actual = records_max_timestamp(buf, header)
    return header if actual == header.max_timestamp else set_max_timestamp(buf, header, actual)


def repair_max_timestamps(buf, info: BatchSetInfo) -> BatchSetInfo:
    """``info`` for ``buf`` after every implausible max_timestamp is recomputed in place.

    Returns ``info`` itself, having read nothing past the headers, when every batch is plausible.
    Raises CorruptRecordError if a walked batch's records do not decode.
    """
    for header in info.headers:  # the append's hot path: two comparisons per batch, no call
        if header.max_timestamp < header.base_timestamp or header.max_timestamp == NO_TIMESTAMP != header.base_timestamp:
            break
    else:
        return info
    headers = tuple(_repaired(buf, header) for header in info.headers)
    max_timestamp, max_delta, delta = NO_TIMESTAMP, 0, 0
    for header in headers:
        delta += header.last_offset_delta + 1
        if header.max_timestamp > max_timestamp:
            max_timestamp, max_delta = header.max_timestamp, delta - 1
    return info._replace(headers=headers, max_timestamp=max_timestamp, shallow_offset_delta_of_max_timestamp=max_delta)
