from __future__ import annotations

import pytest

from brokers.protocol.record import Record, build_batch, iter_records
from brokers.protocol.record_batch import iter_batches
from brokers.storage.log import Log
from brokers.storage.log_config import LogConfig


def batch(values, *, ts: int = 1_000, keys=None, codec: int = 0, ts_step: int = 1) -> bytearray:
    """A producer batch (base offset 0) of ``values``; record i has timestamp ts + i*ts_step."""
    keys = keys if keys is not None else [None] * len(values)
    records = [Record(i, i * ts_step, k, v) for i, (k, v) in enumerate(zip(keys, values))]
    return build_batch(records, base_timestamp=ts, codec=codec)


def read_all(log: Log, start: int | None = None, max_offset: int | None = None):
    """Every record from ``start`` (default: log start) up to ``max_offset``, via Log.read ranges."""
    offset = log.log_start_offset if start is None else start
    out = []
    while True:
        info = log.read(offset, 1 << 20, max_offset=max_offset)
        if info.records is None:
            return out
        data = info.records.read()
        out.extend(r for r in iter_records(data) if r.offset >= offset)
        offset = list(iter_batches(data))[-1].next_offset  # compaction leaves gaps at batch ends


@pytest.fixture
def make_log(tmp_path):
    logs = []

    def factory(name: str = "topic-0", clock=None, **config) -> Log:
        kwargs = {"clock": clock} if clock else {}
        log = Log(tmp_path / name, LogConfig(**config), **kwargs)
        logs.append(log)
        return log

    yield factory
    for log in logs:
        log.close()
