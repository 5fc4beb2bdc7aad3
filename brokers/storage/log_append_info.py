"""What a Log answers: ``LogAppendInfo`` for an append, ``FetchDataInfo`` for a read; and the
``Scheduler`` it hands deferred flushes and deletions to."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Protocol

from brokers.storage.segment import FileRange


class Scheduler(Protocol):
    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> None: ...


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    records_count: int
    valid_bytes: int
    log_append_time: int = -1
    duplicate: bool = False  # a retried idempotent batch: nothing written, the original's offsets


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    fetch_offset: int
    records: FileRange | None

    @property
    def size(self) -> int:
        return self.records.size if self.records else 0
