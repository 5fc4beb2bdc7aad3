"""Readers on other threads see whole, CRC-valid batches while appends roll segments and
retention deletes them (ARCHITECTURE: blocking storage work runs off the event loop)."""
from __future__ import annotations

import threading
import time

from brokers.protocol.errors import OffsetOutOfRangeError
from brokers.protocol.record_batch import batch_size_at, iter_batches
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig
from brokers.storage.scheduler import Scheduler

from .conftest import batch


def test_reads_during_appends_rolls_and_retention(tmp_path):
    scheduler = Scheduler()
    config = LogConfig(segment_bytes=2000, retention_bytes=8000, retention_ms=-1, file_delete_delay_ms=500)
    log = Log(tmp_path / "c-0", config, scheduler=scheduler)
    stop = threading.Event()
    problems: list[str] = []
    reads = [0]

    def reader():
        while not stop.is_set():
            start = log.log_start_offset
            try:
                found = log.read(start, 4096).records
            except OffsetOutOfRangeError:
                continue  # retention moved the start meanwhile: a consumer would reset
            if found is None:
                continue
            data = found.read()
            try:
                headers = [h for h in iter_batches(data[: _whole(data)], verify_crc=True)]
            except Exception as exc:  # noqa: BLE001 - any failure is a finding
                problems.append(repr(exc))
                return
            offsets = [h.base_offset for h in headers]
            if offsets != sorted(offsets) or (headers and headers[0].last_offset < start):
                problems.append(f"bad offsets {offsets} from {start}")
            reads[0] += 1

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    deadline, hard_deadline = time.monotonic() + 1.5, time.monotonic() + 60
    i = 0
    # at least 1.5 s of appends, and on a loaded machine on until retention has really run
    while (time.monotonic() < deadline and i < 3000) or (log.log_start_offset == 0 and time.monotonic() < hard_deadline):
        log.append_as_leader(batch([b"v%d" % i, b"x" * 50]), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
        if i % 20 == 0:
            log.delete_old_segments()
        i += 1
    stop.set()
    for t in threads:
        t.join(timeout=10)
    scheduler.shutdown()
    scheduler.run_pending_once_tasks()
    assert not problems, problems[:3]
    assert reads[0] > 0
    assert log.log_start_offset > 0  # retention really ran during the reads
    log.close()


def _whole(data: bytes) -> int:
    """Length of the whole-batch prefix (a read may end inside a batch, as Kafka's do)."""
    position = 0
    while (size := batch_size_at(data, position)) is not None and position + size <= len(data):
        position += size
    return position
