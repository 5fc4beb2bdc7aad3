"""Conversion between magic 0/1 message sets and v2 record batches, as Kafka 2.8 does it.

**Up-conversion** (``up_convert``, Kafka's LogValidator on append when the set's magic is below the
topic's format): a Produce v0-2 message set becomes one v2 batch, which then takes the usual append
path (offsets assigned by the log, LogAppendTime stamped there). Uncompressed messages become one
uncompressed batch; a compressed set (exactly one wrapper) becomes one batch re-compressed with the
same codec. Offset deltas are 0..n-1 whatever offsets the producer wrote. Magic 0 messages have no
timestamp: their records carry -1 (NO_TIMESTAMP); magic 1 keep theirs. Keys and values are kept;
the batch has no producer id. A producer may not claim LogAppendTime (INVALID_TIMESTAMP), messages
of different magics may not share a request, and a wrapper may not share it with anything
(INVALID_RECORD).

**Down-conversion** (``down_convert``, Kafka's RecordsUtil.downConvert behind
LazyDownConversionRecords): the v2 batches a Fetch v0-3 reads become a magic 0 (Fetch v0-1) or
magic 1 (Fetch v2-3) message set with the same absolute offsets. Headers are dropped, control
batches are dropped, and a batch cut short at the end (the fetch's byte limit) is dropped. A
compressed batch becomes one wrapper with the same codec; an uncompressed one becomes one message
per record, leaving out records below the fetch offset. zstd has no magic 0/1 form: if the first
batch is zstd the partition answers UNSUPPORTED_COMPRESSION_TYPE; after converted batches the
conversion stops before it, and the consumer meets the error on its next fetch.
"""
from __future__ import annotations

from brokers.protocol import compression
from brokers.protocol.errors import (
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    UnsupportedCompressionError,
)
from brokers.protocol.message_set import (
    MAGIC_V0,
    MAGIC_V1,
    Message,
    build_message_set,
    inner_messages,
    shallow_messages,
)
from brokers.protocol.record import Record, batch_records, build_batch
from brokers.protocol.record_batch import LOG_OVERHEAD, TIMESTAMP_TYPE_BIT, batch_size_at, read_header

NO_TIMESTAMP = -1


# --- up-conversion (produce) ---------------------------------------------------------------------


def _messages_to_convert(message_set, producer: bool) -> tuple[list[Message], int, bool]:
    """(the messages as records will hold them, the codec, whether LogAppendTime) of a produced set."""
    shallow, _ = shallow_messages(message_set)
    if not shallow:
        raise InvalidRecordError("the message set holds no complete message")
    magic = shallow[0].magic
    for message in shallow:
        if message.magic != magic:
            raise InvalidRecordError(f"message magic {message.magic} is not the same as the first message's {magic}")
    codec = next((m.compression for m in shallow if m.compression), compression.NONE)
    if codec and len(shallow) > 1:
        raise InvalidRecordError("a compressed message set must be one wrapper message")
    messages = inner_messages(shallow[0]) if codec else shallow
    append_time = (shallow[0] if codec else messages[0]).log_append_time
    if producer and any(m.log_append_time for m in shallow):
        raise KafkaError("producers may not set the timestamp type to LogAppendTime", ErrorCode.INVALID_TIMESTAMP)
    return messages, codec, append_time


def up_convert(message_set, *, producer: bool = True) -> bytearray:
    """One v2 batch (base offset 0, no producer id) holding the records of a magic 0/1 message set."""
    messages, codec, append_time = _messages_to_convert(message_set, producer)
    timestamps = [m.timestamp if m.magic >= MAGIC_V1 else NO_TIMESTAMP for m in messages]
    base = timestamps[0]
    records = [Record(i, ts - base, m.key, m.value) for i, (m, ts) in enumerate(zip(messages, timestamps))]
    try:
        return build_batch(records, base_timestamp=base, max_timestamp=max(timestamps), codec=codec,
                           timestamp_type_log_append=append_time)
    except ValueError as exc:  # a timestamp delta beyond an int64
        raise KafkaError(f"message timestamps {min(timestamps)}..{max(timestamps)} do not fit one batch: {exc}",
                         ErrorCode.INVALID_TIMESTAMP) from None


# --- down-conversion (fetch) ---------------------------------------------------------------------


def _batch_entries(buf, header, to_magic: int, first_offset: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    base_offset, skip = header.base_offset, not header.compression
    if to_magic < MAGIC_V1:
        stamp = None
    else:
        stamp = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
    base_ts = header.base_timestamp
    entries = []
    for record in batch_records(buf, header):  # headers are read and dropped: the old formats have none
        offset, key, value = base_offset + record.offset_delta, record.key, record.value
        if skip and offset < first_offset:
            continue
        if to_magic < MAGIC_V1:
            timestamp = NO_TIMESTAMP
        else:
            timestamp = stamp if stamp is not None else base_ts + record.timestamp_delta
        entries.append((offset, timestamp, key, value))
    return entries


def down_convert(records, to_magic: int, first_offset: int = 0, size_limit: int | None = None) -> bytes:
    """The magic ``to_magic`` message set for the v2 batches in ``records`` (a fetch's read).

    ``size_limit`` stops the conversion before a batch whose message set would take the output past
    it; the first converted batch is always whole (Kafka sends at most the size of the read, or of
    the first converted batch if that is bigger).
    """
    return down_convert_counted(records, to_magic, first_offset, size_limit)[0]


def down_convert_counted(records, to_magic: int, first_offset: int = 0, size_limit: int | None = None
                         ) -> tuple[bytes, int]:
    """``down_convert``'s message set and how many messages it holds (Kafka's records converted)."""
    if to_magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"down-conversion is to magic 0 or 1, not {to_magic}")
    view = memoryview(records)
    out: list[bytes] = []
    position, end, total, count = 0, len(view), 0, 0
    while True:
        size = batch_size_at(view, position)
        if size is None or size < LOG_OVERHEAD or position + size > end:
            break
        header = read_header(view, position)
        position = header.end
        if header.is_control:
            continue
        if header.compression == compression.ZSTD:
            if out:
                break
            raise UnsupportedCompressionError("zstd-compressed batches cannot be down-converted")
        entries = _batch_entries(view, header, to_magic, first_offset)
        if not entries:
            continue
        append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
        converted = build_message_set(entries, to_magic, codec=header.compression, log_append_time=append_time)
        if out and size_limit is not None and total + len(converted) > size_limit:
            break
        out.append(converted)
        total += len(converted)
        count += len(entries)
    return b"".join(out), count
