"""Fetch v0-v3: the old message formats a fetch below v4 reads (Kafka's ``KafkaApis.maybeConvertFetchedData``).

The log holds v2 batches only, so every non-empty read of a Fetch v0-3 is down-converted, after the
usual read and long poll, for that response only: Fetch v0-1 gets magic 0 message sets, v2-3 magic 1
(``protocol.format_conversion.down_convert``). Per partition:

* ``message.downconversion.enable=false`` on the topic: a consumer's fetch that would need converting
  gets UNSUPPORTED_VERSION (35) for that partition (a follower's would be converted);
* a first batch compressed with zstd: UNSUPPORTED_COMPRESSION_TYPE (76);
* the converted set stops before a batch that would take it past the size of the read (the first
  batch is always whole), as Kafka bounds it;
* a read that converts to nothing (a batch cut short by the byte limit, only control batches) sends
  Kafka's 12-byte overflow marker, a message header claiming more bytes than follow, so an old client
  reports a message larger than its fetch size instead of polling forever.

The file ranges are read on the event loop; a response converting more than ``OFFLOAD_BYTES`` is
converted on a worker thread (``asyncio.to_thread``), so one old consumer's gzip fetch does not stall
every other connection of the broker for tens of milliseconds (BENCHMARKS.md, ``zkafka bench formats``).

``message.format.version`` does not skip the conversion: the stored format is v2 whatever it says.
Fetch v0-2 have no request-level ``max_bytes`` and treat ``partition_max_bytes`` as a hard limit (no
KIP-74 "first batch whole"); errored partitions answer -1 for the high watermark, as in v4+.
"""
from __future__ import annotations

import asyncio
import struct
from typing import Any

from brokers.protocol.errors import ErrorCode, UnsupportedCompressionError
from brokers.protocol.fetch_response import LEGACY_MAX_VERSION, FetchPartitionData
from brokers.protocol.format_conversion import down_convert_counted
from brokers.protocol.message_set import MAGIC_V0, MAGIC_V1
from brokers.replication.partition import Partition
from brokers.stats import BrokerStats

INT32_MAX = 2**31 - 1
MAX_BYTES_MIN_VERSION = 3  # request-level max_bytes (KIP-74) came in Fetch v3
OVERFLOW_MARKER = struct.pack(">qi", -1, 61)  # Kafka's LazyDownConversionRecordsSend overflow batch
OFFLOAD_BYTES = 64 * 1024  # reads bigger than this in all convert on a worker thread


def is_legacy(version: int) -> bool:
    return version <= LEGACY_MAX_VERSION


def target_magic(version: int) -> int:
    """The message format a Fetch version reads: magic 0 for v0-1, magic 1 for v2-3."""
    return MAGIC_V0 if version <= 1 else MAGIC_V1


def request_max_bytes(version: int, request: Any) -> int:
    """The response byte limit: the request's from v3, none before."""
    return request.max_bytes if version >= MAX_BYTES_MIN_VERSION else INT32_MAX


def min_one_message(version: int) -> bool:
    """Whether the first batch of the response is sent whole past the byte limits (KIP-74, v3+)."""
    return version >= MAX_BYTES_MIN_VERSION


def _bytes(records: Any) -> bytes:
    if records is None:
        return b""
    return records.read() if hasattr(records, "read") else bytes(records)


def _failed(data: FetchPartitionData, code: int) -> FetchPartitionData:
    return FetchPartitionData(data.partition_index, int(code), -1, -1, -1, None)


def source_of(data: FetchPartitionData, partition: Partition, from_follower: bool) -> FetchPartitionData | bytes:
    """The bytes to convert of one partition's read, read on the event loop; or its final answer (an
    error, nothing read, down-conversion disabled)."""
    if data.error_code != ErrorCode.NONE:
        return data
    source = _bytes(data.records)
    if not source:
        return data._replace(records=None)
    if not from_follower and not partition.log.config.downconversion_enabled:
        return _failed(data, ErrorCode.UNSUPPORTED_VERSION)
    return source


def converted(data: FetchPartitionData, source: bytes, magic: int, fetch_offset: int
              ) -> tuple[FetchPartitionData, int]:
    """One partition's read in ``magic``'s format, or its error; and how many records were converted."""
    try:
        records, count = down_convert_counted(source, magic, fetch_offset, size_limit=len(source))
    except UnsupportedCompressionError:
        return _failed(data, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE), 0
    return data._replace(records=records or OVERFLOW_MARKER), count


async def down_convert_topics(topics: list[tuple[str, list[FetchPartitionData]]], resolved: list, version: int,
                              from_follower: bool, stats: BrokerStats) -> list[tuple[str, list[FetchPartitionData]]]:
    """The response topics of a Fetch v0-3 with every partition's records converted (counted in
    ``stats`` as Kafka's FetchMessageConversions).

    ``resolved`` is the handler's (topic, requested partition, Partition or error) list, in the order
    the topics' partitions were read. The file ranges are read here, on the event loop (a segment may
    be closed by retention once the loop moves on); reads of more than ``OFFLOAD_BYTES`` in all are
    converted on a worker thread, so the loop keeps serving other requests meanwhile (zlib releases
    the GIL; the record walk yields it every switch interval).
    """
    magic = target_magic(version)
    out = [(topic, list(partitions)) for topic, partitions in topics]
    slots = [(t, i) for t, (_, partitions) in enumerate(out) for i in range(len(partitions))]
    jobs = []  # (topic slot, partition slot, data, source, fetch offset)
    for (t, i), (_, wanted, partition) in zip(slots, resolved):
        if isinstance(partition, Partition):
            source = source_of(out[t][1][i], partition, from_follower)
            if isinstance(source, bytes):
                jobs.append((t, i, out[t][1][i], source, wanted.fetch_offset))
            else:
                out[t][1][i] = source

    def convert_all() -> list[tuple[FetchPartitionData, int]]:
        return [converted(data, source, magic, offset) for _, _, data, source, offset in jobs]

    offload = sum(len(job[3]) for job in jobs) > OFFLOAD_BYTES
    results = await asyncio.to_thread(convert_all) if offload else convert_all()
    for (t, i, _, _, _), (data, count) in zip(jobs, results):
        out[t][1][i] = data
        if count:
            stats.message_conversions(out[t][0], fetched=count)
    return out
