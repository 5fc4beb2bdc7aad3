"""``zkafka bench storage``: the log's append and read speed next to raw ``os.write`` of the same bytes.

Phases, each on the same disk in the same run:
1. append: for each producer batch size, ``total_mib`` of realistic uncompressed batches of
   ``record_bytes`` records, appended with ``Log.append_as_leader`` (validate CRC32C, assign offsets,
   write) and, in the same loop iteration, ``os.write`` of the same bytes to a raw file; each call
   timed on its own; then one ``flush`` / ``fsync`` each. Three rounds, medians.
2. read: the appended log read back through ``Log.read`` ranges (page cache) vs raw ``pread``.
3. lookups: random ``read(offset)`` and ``offset_for_timestamp`` on a log of 1 segment and on the
   same data in 100 segments, to show the O(log n) index path.
"""
from __future__ import annotations

import os
import random
import shutil
import statistics
import struct
import tempfile
import time
from pathlib import Path

import crc32c

from brokers.protocol.errors import CorruptRecordError
from brokers.protocol.record import Record, build_batch
from brokers.protocol.record_batch import CRC_AT, CRC_START
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from scripts.bench.common import machine_line

MIB = 1 << 20
_TIMESTAMPS = struct.Struct(">qq")  # base_timestamp, max_timestamp at byte 27


def producer_batch(batch_bytes: int, record_bytes: int, seed: int) -> bytearray:
    """One uncompressed v2 batch of about ``batch_bytes``, records of ``record_bytes`` of text."""
    rng = random.Random(seed)
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 "
    count = max(1, (batch_bytes - 61) // (record_bytes + 8))
    records = [Record(i, i % 7, None, bytes(rng.choices(alphabet, k=record_bytes))) for i in range(count)]
    batch = build_batch(records, base_timestamp=1_700_000_000_000)
    while len(batch) > batch_bytes and len(records) > 1:  # a producer never exceeds its batch size
        records.pop()
        batch = build_batch(records, base_timestamp=1_700_000_000_000)
    return batch


def stamp(batch: bytearray, timestamp: int) -> None:
    """Give a batch new timestamps (inside the CRC, so the CRC is recomputed)."""
    _TIMESTAMPS.pack_into(batch, 27, timestamp, timestamp + 6)
    struct.pack_into(">I", batch, CRC_AT, crc32c.crc32c(memoryview(batch)[CRC_START:]))


def _mbps(nbytes: int, seconds: float) -> float:
    return nbytes / MIB / seconds if seconds > 0 else float("inf")


def _interleaved(workdir: Path, templates: list[bytearray], count: int, n: int) -> tuple[float, float, Log, Path]:
    """Append batch i to the log and os.write it to a raw file in the same iteration, timing each.

    Both writers meet the same page-cache state at the same moment (this VM backs memory lazily and
    the kernel may pause either writer), so their ratio is fair even when absolute speed drifts.
    """
    raw_path = workdir / f"raw-{n}.bin"
    fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    log = Log(workdir / f"bench-{len(templates[0])}-{n}", LogConfig())
    clock = time.perf_counter
    raw_s = log_s = 0.0
    for i in range(count):
        batch = templates[i & 7]
        t0 = clock()
        os.write(fd, batch)
        t1 = clock()
        log.append_as_leader(batch, 0)
        t2 = clock()
        raw_s += t1 - t0
        log_s += t2 - t1
    os.close(fd)
    return raw_s, log_s, log, raw_path


def _fsync_seconds(path: Path) -> float:
    fd = os.open(path, os.O_RDONLY)
    start = time.perf_counter()
    os.fsync(fd)
    os.close(fd)
    return time.perf_counter() - start


def bench_append(workdir: Path, batch_bytes: int, total_mib: int, record_bytes: int, rounds: int = 3) -> dict:
    """``rounds`` runs of ``total_mib`` each, raw and log interleaved batch by batch; then one
    fsync each, and a sequential read of both. Medians over the rounds are reported."""
    templates = [producer_batch(batch_bytes, record_bytes, seed) for seed in range(8)]
    size = len(templates[0])
    count = max(1, total_mib * MIB // size)
    total = count * size
    runs = []
    for n in range(rounds):
        raw_w, log_w, log, raw_path = _interleaved(workdir, templates, count, n)
        raw_sync = _fsync_seconds(raw_path)
        start = time.perf_counter()
        log.flush()
        log_sync = time.perf_counter() - start
        runs.append((raw_w, log_w, raw_w + raw_sync, log_w + log_sync, _raw_read(raw_path), _log_read(log)))
        segments = len(log.segments)
        log.delete()
        raw_path.unlink()
    raw_w, log_w, raw_s, log_s, raw_r, log_r = (statistics.median(r[i] for r in runs) for i in range(6))
    return {
        "batch_bytes": size, "batches": count, "mib": total / MIB, "records_per_batch": _records(templates[0]),
        "raw_write": _mbps(total, raw_w), "raw_write_fsync": _mbps(total, raw_s),
        "log_append": _mbps(total, log_w), "log_append_flush": _mbps(total, log_s),
        "batches_per_s": count / log_w, "ratio": raw_w / log_w, "ratio_fsync": raw_s / log_s,
        "raw_read": _mbps(total, raw_r), "log_read": _mbps(total, log_r), "segments": segments,
        "raw_us": raw_w / count * 1e6, "log_us": log_w / count * 1e6,
    }


def _records(batch: bytearray) -> int:
    return struct.unpack_from(">i", batch, 57)[0]


def _raw_read(path: Path) -> float:
    fd = os.open(path, os.O_RDONLY)
    start = time.perf_counter()
    position = 0
    while chunk := os.pread(fd, MIB, position):
        position += len(chunk)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def _log_read(log: Log) -> float:
    start = time.perf_counter()
    offset = 0
    while offset < log.log_end_offset:
        found = log.read(offset, MIB).records
        found.read()
        offset = _next_offset_after(found)
    return time.perf_counter() - start


def _next_offset_after(found) -> int:
    """The offset after the last whole batch in a range (what a consumer would fetch next)."""
    last = None
    try:
        for header in found.segment.iter_headers(found.position, found.position + found.size):
            last = header
    except CorruptRecordError:
        pass  # the range ends inside a batch, as Kafka's fetch ranges may
    return last.next_offset


def bench_lookups(workdir: Path, data_mib: int, lookups: int) -> list[dict]:
    template = producer_batch(16384, 100, 99)
    count = data_mib * MIB // len(template)
    per_batch = _records(template)
    results = []
    for segments_wanted in (1, 100):
        segment_bytes = max(data_mib * MIB // segments_wanted, 1 << 16) if segments_wanted > 1 else 2**31 - 1
        log = Log(workdir / f"lookup-{segments_wanted}-0", LogConfig(segment_bytes=segment_bytes))
        for i in range(count):
            stamp(template, 1_000_000 + i * 10)
            log.append_as_leader(template, 0)
        rng = random.Random(7)
        end = log.log_end_offset
        offsets = [rng.randrange(end) for _ in range(lookups)]
        start = time.perf_counter()
        for offset in offsets:
            log.read(offset, 1)
        read_us = (time.perf_counter() - start) / lookups * 1e6
        stamps = [1_000_000 + rng.randrange(count) * 10 + rng.randrange(6) for _ in range(lookups)]
        start = time.perf_counter()
        for ts in stamps:
            log.offset_for_timestamp(ts)
        ts_us = (time.perf_counter() - start) / lookups * 1e6
        results.append({"segments": len(log.segments), "offsets": end, "records_per_batch": per_batch,
                        "read_us": read_us, "offset_for_timestamp_us": ts_us})
        log.delete()
    return results


def run_storage_bench(directory: Path | None, total_mib: int, batch_sizes: list[int], record_bytes: int,
                      lookups: int) -> None:
    base = Path(directory) if directory else Path(".zkafka")
    base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=base))
    try:
        print(f"machine: {machine_line()}")
        print(f"directory: {workdir.resolve()}  ({total_mib} MiB per batch size, {record_bytes}-byte records)")
        print()
        print("| batch | records/batch | raw write MB/s | log append MB/s | append/raw | raw µs/batch | log µs/batch "
              "| batches/s | raw+fsync MB/s | log+flush MB/s | raw read MB/s | log read MB/s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for size in batch_sizes:
            r = bench_append(workdir, size, total_mib, record_bytes)
            print(f"| {r['batch_bytes']} B | {r['records_per_batch']} | {r['raw_write']:.0f} | {r['log_append']:.0f} "
                  f"| {r['ratio']:.0%} | {r['raw_us']:.1f} | {r['log_us']:.1f} | {r['batches_per_s']:.0f} | {r['raw_write_fsync']:.0f} "
                  f"| {r['log_append_flush']:.0f} | {r['raw_read']:.0f} | {r['log_read']:.0f} |", flush=True)
        print()
        print("| segments | offsets | read(offset) µs | offset_for_timestamp µs |")
        print("|---|---|---|---|")
        for r in bench_lookups(workdir, min(total_mib, 256), lookups):
            print(f"| {r['segments']} | {r['offsets']} | {r['read_us']:.1f} | {r['offset_for_timestamp_us']:.1f} |",
                  flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
