"""kafka-dump-log's lines, exactly as Kafka 2.8.2's ``DumpLogSegments`` prints them (pure).

stdout, per file: ``Dumping <file>``, then for a ``.log`` ``Starting offset: <base>``, one batch line per batch::

    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1
    partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1600000000000
    size: 90 magic: 2 compresscodec: NONE crc: 3306358843 isvalid: true

(one line), with ``--deep-iteration`` / ``--print-data-log`` one record line after it::

    | offset: 0 isValid: true crc: null keySize: 1 valueSize: 5 CreateTime: 1600000000000 baseOffset: 0
    lastOffset: 2 baseSequence: -1 lastSequence: -1 producerEpoch: -1 partitionLeaderEpoch: 0 batchSize: 90
    magic: 2 compressType: NONE position: 0 sequence: -1 headerKeys: [] key: k payload: hello

(``endTxnMarker: COMMIT coordinatorEpoch: 0`` instead of key and payload for a transaction marker; no metadata
with ``--skip-record-metadata``), and ``Found N invalid bytes at the end of <name>`` after a torn tail.
``.index``: ``offset: O position: P`` (``<file> is empty.``; ``<file> passed sanity check.``); ``.timeindex``:
``timestamp: T offset: O``; ``.txnindex``: ``version: 0 producerId: P firstOffset: F lastOffset: L
lastStableOffset: S``; ``.snapshot``: ``producerId: P producerEpoch: E coordinatorEpoch: C
currentTxnFirstOffset: None `` (then the last batch's sequences, offset, delta and timestamp).

stderr, once every file is done (``Report``): index entries that name no batch ending there (``Mismatches in
:<path>`` / ``  Index offset: O, log offset: L``, newest first as Kafka lists them), time index mismatches,
out-of-order timestamps, indexed offsets not found, and non-consecutive record offsets.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from brokers.protocol.record_batch import BatchHeader
from brokers.storage.dump import RecordView, last_sequence

RECORD_INDENT = "|"
ENTRY_SIZES = {"index": 8, "timeindex": 12}


def codec(h: BatchHeader) -> str:
    """Java's CompressionType enum name."""
    return h.codec_name.upper()


def batch_line(h: BatchHeader, valid: bool, position: int) -> str:
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
            f"baseSequence: {h.base_sequence} lastSequence: {last_sequence(h)} producerId: {h.producer_id} "
            f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
            f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
            f"position: {position} {h.timestamp_type}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
            f"compresscodec: {codec(h)} crc: {h.crc} isvalid: {str(valid).lower()}")


def record_line(h: BatchHeader, r: RecordView, position: int, *, metadata: bool = True, key: str | None = None,
                payload: str | None = None) -> str:
    """One record of a deep iteration; ``key``/``payload`` the parser's text (None: not printed)."""
    out, prefix = "", RECORD_INDENT + " "
    if metadata:
        out += (f"{prefix}offset: {r.offset} isValid: true crc: null "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)} "
                f"{h.timestamp_type}: {r.timestamp} baseOffset: {h.base_offset} lastOffset: {h.last_offset} "
                f"baseSequence: {h.base_sequence} lastSequence: {last_sequence(h)} producerEpoch: {h.producer_epoch} "
                f"partitionLeaderEpoch: {h.partition_leader_epoch} batchSize: {h.size} magic: {h.magic} "
                f"compressType: {codec(h)} position: {position}"
                f" sequence: {r.sequence} headerKeys: [{','.join(r.header_keys)}]")
        prefix = " "
        if r.control is not None:
            out += " " + r.control
    if key is not None:
        out += f"{prefix}key: {key}"
    if payload is not None:
        out += f" payload: {payload}"
    return out


def trailing_line(invalid_bytes: int, name: str) -> str:
    return f"Found {invalid_bytes} invalid bytes at the end of {name}"


def txn_index_line(producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int) -> str:
    return (f"version: 0 producerId: {producer_id} firstOffset: {first_offset} lastOffset: {last_offset} "
            f"lastStableOffset: {last_stable_offset}")


def snapshot_line(producer_id: int, epoch: int, coordinator_epoch: int, txn_first_offset: int, batch) -> str:
    """A producer-state entry; ``batch`` (first/last sequence, last/first offset, timestamp) or None."""
    txn = f"Some({txn_first_offset})" if txn_first_offset >= 0 else "None"
    line = (f"producerId: {producer_id} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} ")
    if batch is not None:
        line += (f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} lastOffset: {batch.last_offset} "
                 f"offsetDelta: {batch.last_offset - batch.first_offset} timestamp: {batch.timestamp}")
    return line


def index_sanity_error(kind: str, path: str, base: int, size: int, entries: list[tuple[int, int]]) -> str | None:
    """Kafka's ``OffsetIndex`` / ``TimeIndex`` ``sanityCheck`` (``kind`` index | timeindex), its exception's message
    or None; ``entries`` (offset, position) or (timestamp, offset)."""
    if kind == "index":
        if entries and entries[-1][0] < base:
            return (f"Corrupt index found, index file ({path}) has non-zero size but the last offset is "
                    f"{entries[-1][0]} which is less than the base offset {base}.")
        if size % ENTRY_SIZES[kind]:
            return (f"Index file {path} is corrupt, found {size} bytes which is neither positive nor a multiple of "
                    f"{ENTRY_SIZES[kind]}.")
        return None
    if entries and entries[-1][0] < entries[0][0]:
        return (f"Corrupt time index found, time index file ({path}) has non-zero size but the last timestamp is "
                f"{entries[-1][0]} which is less than the first timestamp {entries[0][0]}")
    if entries and entries[-1][1] < base:
        return (f"Corrupt time index found, time index file ({path}) has non-zero size but the last offset is "
                f"{entries[-1][1]} which is less than the first offset {base}")
    if size % ENTRY_SIZES[kind]:
        return (f"Time index file {path} is corrupt, found {size} bytes which is neither positive nor a multiple of "
                f"{ENTRY_SIZES[kind]}.")
    return None


@dataclass
class Report:
    """What DumpLogSegments collects while dumping and prints to stderr at the end; keyed by absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @staticmethod
    def add(table: dict[str, list[tuple[int, int]]], path: str, pair: tuple[int, int]) -> None:
        table.setdefault(path, []).append(pair)

    def lines(self) -> list[str]:
        out = []
        for path, pairs in self.index_mismatches.items():
            out += [f"Mismatches in :{path}", *(f"  Index offset: {a}, log offset: {b}" for a, b in reversed(pairs))]
        for path, pairs in self.time_mismatches.items():
            out += [f"Found timestamp mismatch in :{path}",
                    *(f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs)]
        for path, pairs in self.out_of_order.items():
            out += [f"Found out of order timestamp in :{path}",
                    *(f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs)]
        for pairs in self.not_found.values():
            out += ["The following indexed offsets are not found in the log.",
                    *(f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs)]
        for path, pairs in self.non_consecutive.items():
            out += [f"Non-consecutive offsets in {path}", *(f"  {a} is followed by {b}" for a, b in reversed(pairs))]
        return out
