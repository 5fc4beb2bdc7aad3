"""A real writer process for the crash-recovery test: appends a planned sequence of batches to a
LogManager-owned log until it is killed, reporting every durable point on stdout.

Run as ``python crash_writer.py <log_dir> <seed> [compact|txn]``; with ``compact`` the topic is
compacted, keys come from a small key space and the cleaner runs every few batches in the same
process, so kills also land inside cleaning and segment swaps. With ``txn`` three transactional
producers interleave batches and COMMIT/ABORT markers (``planned_txn_steps``). Each line ``FLUSHED <offset> <segment base>
<segment size>`` promises that every offset below <offset> was fsynced, and that the active segment
<segment base> held <segment size> bytes at that moment.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brokers.model import TopicPartition  # noqa: E402
from brokers.protocol.record import Record, build_batch  # noqa: E402
from brokers.storage.log_config import LogConfig  # noqa: E402
from brokers.storage.log_manager import LogManager  # noqa: E402

TP = TopicPartition("crash-test", 0)
CONFIG = LogConfig(segment_bytes=48 * 1024, index_interval_bytes=512, flush_messages=40)
COMPACT_CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512, flush_messages=40,
                           cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, delete_retention_ms=0)
KEY_SPACE = 40


def key_of(batch: int, j: int, compact: bool) -> bytes:
    return b"k%d" % ((batch * 7 + j) % KEY_SPACE if compact else j)


def planned_batches(seed: int):
    """The endless, deterministic sequence of (values, codec, leader epoch) the writer appends."""
    rng = random.Random(seed)
    n = 0
    while True:
        count = rng.randint(1, 12)
        values = [b"%d:%d:" % (n, j) + bytes([65 + (n + j) % 26]) * rng.randint(0, 300) for j in range(count)]
        yield values, rng.choice([0, 0, 1, 2, 3, 4]), n // 50
        n += 1


def planned_records(seed: int, count: int, compact: bool = False) -> list[tuple[bytes, bytes]]:
    """The first ``count`` (key, value) pairs the writer appends."""
    out: list[tuple[bytes, bytes]] = []
    for n, (values, _, _) in enumerate(planned_batches(seed)):
        out.extend((key_of(n, j, compact), v) for j, v in enumerate(values))
        if len(out) >= count:
            return out[:count]
    return out


def planned_values(seed: int, count: int) -> list[bytes]:
    return [value for _, value in planned_records(seed, count)]


TXN_PIDS = (1, 2, 3)


def planned_txn_steps(seed: int):
    """The endless, deterministic sequence of ("data", pid, values) and ("marker", pid, commit) steps:
    a marker only ends an open transaction."""
    rng = random.Random(seed)
    open_txns: set[int] = set()
    n = 0
    while True:
        pid = rng.choice(TXN_PIDS)
        if pid in open_txns and rng.random() < 0.3:
            open_txns.discard(pid)
            yield "marker", pid, rng.random() < 0.5
        else:
            open_txns.add(pid)
            yield "data", pid, [b"%d:%d:" % (n, j) + b"t" * rng.randint(0, 300) for j in range(rng.randint(1, 8))]
        n += 1


def expected_txn_state(seed: int, log_end: int) -> tuple[dict[int, int], list[tuple[int, int, int, int]]]:
    """What the first ``log_end`` offsets of the txn plan leave: open transactions (pid -> first offset)
    and the aborted ones as .txnindex entries (pid, first, marker offset, LSO after the marker)."""
    ongoing: dict[int, int] = {}
    aborted = []
    offset = 0
    for kind, pid, payload in planned_txn_steps(seed):
        if offset >= log_end:
            break
        if kind == "data":
            ongoing.setdefault(pid, offset)
            offset += len(payload)
            continue
        first = ongoing.pop(pid)
        if not payload:
            aborted.append((pid, first, offset, min(ongoing.values(), default=offset + 1)))
        offset += 1
    assert offset == log_end, "recovery cut the log inside a batch"
    return ongoing, aborted


def write_transactions(log, seed: int, reported: int) -> None:
    sequences = dict.fromkeys(TXN_PIDS, 0)
    for kind, pid, payload in planned_txn_steps(seed):
        if kind == "marker":
            log.append_marker(pid, 0, payload, 0, 0)
        else:
            records = [Record(j, j, None, v) for j, v in enumerate(payload)]
            log.append_as_leader(build_batch(records, base_timestamp=int(time.time() * 1000), producer_id=pid,
                                             producer_epoch=0, base_sequence=sequences[pid], transactional=True), 0)
            sequences[pid] += len(records)
        if log.recovery_point != reported:
            reported = log.recovery_point
            active = log.active_segment
            print(f"FLUSHED {reported} {active.base_offset} {active.size}", flush=True)


def main(log_dir: str, seed: int, compact: bool, txn: bool = False) -> None:
    manager = LogManager([Path(log_dir)], COMPACT_CONFIG if compact else CONFIG)
    manager.startup()
    log = manager.get_or_create_log(TP)
    if log.log_end_offset:
        raise SystemExit("the crash writer starts from an empty log")
    reported = 0
    if txn:
        write_transactions(log, seed, reported)
    for i, (values, codec, epoch) in enumerate(planned_batches(seed)):
        records = [Record(j, j, key_of(i, j, compact), v) for j, v in enumerate(values)]
        log.append_as_leader(build_batch(records, base_timestamp=1_000_000 + i, codec=codec), epoch)
        if compact and i % 10 == 9:
            log.update_high_watermark(log.log_end_offset)
            manager.clean_logs()
        if log.recovery_point != reported:
            reported = log.recovery_point
            if i % 3 == 0:
                manager.checkpoint_recovery_points()
            active = log.active_segment
            print(f"FLUSHED {reported} {active.base_offset} {active.size}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["compact"], sys.argv[3:] == ["txn"])
