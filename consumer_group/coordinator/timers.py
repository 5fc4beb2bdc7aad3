"""Named one-shot timers on the event loop: what Kafka's heartbeat, join and sync purgatories do.

A key names one pending deadline (``("member", group, member_id)``, ``("join", group)``, ...);
scheduling a key again replaces its deadline (a heartbeat pushing the session deadline), so at most one
timer per key is ever pending. Every key's second element is the group id, so a group's timers can be
dropped together when it is unloaded or deleted.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Hashable

TimerKey = tuple[Hashable, ...]


class Timers:
    def __init__(self) -> None:
        self._handles: dict[TimerKey, asyncio.TimerHandle] = {}

    def schedule(self, key: TimerKey, delay_ms: float, callback: Callable[[], None]) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()
        self._handles[key] = loop.call_later(max(delay_ms, 0) / 1000, self._fire, key, callback)

    def _fire(self, key: TimerKey, callback: Callable[[], None]) -> None:
        self._handles.pop(key, None)
        callback()

    def cancel(self, key: TimerKey) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_group(self, group_id: str) -> None:
        for key in [k for k in self._handles if len(k) > 1 and k[1] == group_id]:
            self.cancel(key)

    def cancel_all(self) -> None:
        for key in list(self._handles):
            self.cancel(key)

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._handles

    def __len__(self) -> int:
        return len(self._handles)
