"""A real writer process for the crash-recovery test: appends a planned sequence of batches to a
LogManager-owned log until it is killed, reporting every durable point on stdout.

Run as ``python crash_writer.py <log_dir> <seed>``. Each line ``FLUSHED <offset> <segment base>
<segment size>`` promises that every offset below <offset> was fsynced, and that the active segment
<segment base> held <segment size> bytes at that moment.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brokers.model import TopicPartition  # noqa: E402
from brokers.protocol.record import Record, build_batch  # noqa: E402
from brokers.storage.log_config import LogConfig  # noqa: E402
from brokers.storage.log_manager import LogManager  # noqa: E402

TP = TopicPartition("crash-test", 0)
CONFIG = LogConfig(segment_bytes=48 * 1024, index_interval_bytes=512, flush_messages=40)


def planned_batches(seed: int):
    """The endless, deterministic sequence of (values, codec, leader epoch) the writer appends."""
    rng = random.Random(seed)
    n = 0
    while True:
        count = rng.randint(1, 12)
        values = [b"%d:%d:" % (n, j) + bytes([65 + (n + j) % 26]) * rng.randint(0, 300) for j in range(count)]
        yield values, rng.choice([0, 0, 1, 2, 3, 4]), n // 50
        n += 1


def planned_values(seed: int, count: int) -> list[bytes]:
    out: list[bytes] = []
    for values, _, _ in planned_batches(seed):
        out.extend(values)
        if len(out) >= count:
            return out[:count]
    return out


def main(log_dir: str, seed: int) -> None:
    manager = LogManager([Path(log_dir)], CONFIG)
    manager.startup()
    log = manager.get_or_create_log(TP)
    if log.log_end_offset:
        raise SystemExit("the crash writer starts from an empty log")
    reported = 0
    for i, (values, codec, epoch) in enumerate(planned_batches(seed)):
        records = [Record(j, j, b"k%d" % j, v) for j, v in enumerate(values)]
        log.append_as_leader(build_batch(records, base_timestamp=1_000_000 + i, codec=codec), epoch)
        if log.recovery_point != reported:
            reported = log.recovery_point
            if i % 3 == 0:
                manager.checkpoint_recovery_points()
            active = log.active_segment
            print(f"FLUSHED {reported} {active.base_offset} {active.size}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
