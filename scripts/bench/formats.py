"""``zkafka bench formats``: what the old message formats and the max_timestamp repair cost, per MiB.

In process, no cluster, page-cache-free (everything in memory):

1. down-conversion (Fetch v0-3): ``total_mib`` of v2 producer batches of ``batch_bytes`` with
   ``record_bytes`` records, uncompressed and gzip, converted to magic 0 and magic 1 message sets the
   way a Fetch v0-3 converts one read of ``read_bytes``;
2. up-conversion (Produce v0-2): the same records as magic 1 message sets of one producer batch each,
   converted to v2 batches;
3. max_timestamp repair: the append's header validation (``validate_batches``) alone, then with the
   repair on well-formed batches (a header check each) and on batches whose max_timestamp is -1 (the
   records walked, decompressed for gzip, the CRC32C recomputed).

Each phase runs ``rounds`` times; the median is reported per MiB of source bytes (what is converted
or validated: compressed for gzip) and per MiB of record values.
"""
from __future__ import annotations

import random
import statistics
import time
from typing import Callable

from brokers.protocol import compression
from brokers.protocol.format_conversion import down_convert, up_convert
from brokers.protocol.max_timestamp import repair_max_timestamps
from brokers.protocol.message_set import build_message_set
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import validate_batches
from scripts.bench.common import machine_line

MIB = 1 << 20
BASE_TS = 1_700_000_000_000
CODECS = {"none": compression.NONE, "gzip": compression.GZIP}


def _values(count: int, record_bytes: int, rng: random.Random) -> list[bytes]:
    words = [b"kafka", b"broker", b"record", b"offset", b"partition", b"leader", b"replica", b"segment"]
    out = []
    for _ in range(count):
        text = b" ".join(rng.choice(words) for _ in range(record_bytes // 5))
        out.append((text + b" " * record_bytes)[:record_bytes])
    return out


def v2_batches(total_mib: int, batch_bytes: int, record_bytes: int, codec: int, max_timestamp_known: bool = True
               ) -> list[bytearray]:
    """Producer batches of about ``batch_bytes`` (before compression) adding up to ``total_mib`` of records."""
    rng = random.Random(7)
    per_batch = max(1, batch_bytes // (record_bytes + 10))
    values = _values(per_batch * 8, record_bytes, rng)
    batches, size, n = [], 0, 0
    while size < total_mib * MIB:  # record bytes
        records = [Record(i, i, None, values[(n * per_batch + i) % len(values)]) for i in range(per_batch)]
        base = BASE_TS + n * 1000
        batch = build_batch(records, base_offset=n * per_batch, base_timestamp=base, codec=codec,
                            max_timestamp=None if max_timestamp_known else -1)
        batches.append(batch)
        size += per_batch * record_bytes
        n += 1
    return batches


def _median_seconds(action: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _row(name: str, source_bytes: int, record_bytes: int, seconds: float) -> str:
    """Source MiB (what was converted or validated, compressed for gzip), record MiB (the values in it),
    ms per MiB of each, and record MiB/s."""
    source, records = source_bytes / MIB, record_bytes / MIB
    return (f"| {name} | {source:.1f} | {records:.1f} | {1000 * seconds / source:.1f} | "
            f"{1000 * seconds / records:.1f} | {records / seconds:.1f} |")


def _record_bytes(batches: list[bytearray], record_bytes: int) -> int:
    return sum(int.from_bytes(b[57:61], "big") for b in batches) * record_bytes


def _reads(batches: list[bytearray], read_bytes: int) -> list[bytes]:
    """The log as a Fetch reads it: consecutive ranges of about ``read_bytes`` (whole batches)."""
    reads, current = [], bytearray()
    for batch in batches:
        current += batch
        if len(current) >= read_bytes:
            reads.append(bytes(current))
            current = bytearray()
    if current:
        reads.append(bytes(current))
    return reads


def down_conversion_rows(total_mib: int, batch_bytes: int, record_bytes: int, read_bytes: int, rounds: int) -> list[str]:
    rows = []
    for name, codec in CODECS.items():
        batches = v2_batches(total_mib, batch_bytes, record_bytes, codec)
        reads = _reads(batches, read_bytes)
        source, values = sum(map(len, reads)), _record_bytes(batches, record_bytes)
        for magic in (0, 1):
            seconds = _median_seconds(lambda: [down_convert(r, magic) for r in reads], rounds)
            rows.append(_row(f"down-convert {name} v2 -> magic {magic} (Fetch v{0 if magic == 0 else 2})",
                             source, values, seconds))
    return rows


def up_conversion_rows(total_mib: int, batch_bytes: int, record_bytes: int, rounds: int) -> list[str]:
    rows = []
    per_set = max(1, batch_bytes // (record_bytes + 34))
    values = _values(per_set * 8, record_bytes, random.Random(11))
    count = total_mib * MIB // (per_set * record_bytes) + 1
    for name, codec in CODECS.items():
        sets = [build_message_set([(i, BASE_TS + i, None, values[(n + i) % len(values)]) for i in range(per_set)],
                                  1, codec=codec) for n in range(count)]
        seconds = _median_seconds(lambda: [up_convert(s) for s in sets], rounds)
        rows.append(_row(f"up-convert {name} magic 1 -> v2 (Produce v2)", sum(map(len, sets)),
                         count * per_set * record_bytes, seconds))
    return rows


def repair_rows(total_mib: int, batch_bytes: int, record_bytes: int, rounds: int) -> list[str]:
    rows = []
    for name, codec in CODECS.items():
        for known in (True, False):
            batches = v2_batches(total_mib, batch_bytes, record_bytes, codec, max_timestamp_known=known)
            size, values = sum(map(len, batches)), _record_bytes(batches, record_bytes)
            copies = [bytearray(b) for b in batches]

            def validate_only():
                for batch in copies:
                    validate_batches(batch)

            def validate_and_repair():
                for batch in copies:
                    repair_max_timestamps(batch, validate_batches(batch))

            def fresh():  # a repaired batch is plausible: start each round from the producer's bytes
                copies[:] = [bytearray(b) for b in batches]

            label = "well-formed" if known else "max_timestamp -1"
            if known:
                rows.append(_row(f"append validation only, {name}", size, values,
                                 _median_seconds(validate_only, rounds)))
            times = []
            for _ in range(rounds):
                fresh()
                times.append(_median_seconds(validate_and_repair, 1))
            rows.append(_row(f"validation + repair, {name}, {label}", size, values, statistics.median(times)))
    return rows


def run_formats_bench(total_mib: int, batch_bytes: int, record_bytes: int, read_bytes: int, rounds: int,
                      out: Callable[[str], None] = print) -> None:
    out(f"machine: {machine_line()}")
    out(f"{total_mib} MiB of {record_bytes}-byte records in {batch_bytes}-byte producer batches; "
        f"fetch reads of {read_bytes} bytes; median of {rounds} rounds")
    out("")
    out("| operation | source MiB | record MiB | ms per source MiB | ms per record MiB | record MiB/s |")
    out("|---|---|---|---|---|---|")
    for row in down_conversion_rows(total_mib, batch_bytes, record_bytes, read_bytes, rounds):
        out(row)
    for row in up_conversion_rows(total_mib, batch_bytes, record_bytes, rounds):
        out(row)
    for row in repair_rows(total_mib, batch_bytes, record_bytes, rounds):
        out(row)
