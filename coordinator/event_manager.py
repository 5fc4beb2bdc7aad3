"""ControllerEventManager: the controller's single writer.

One asyncio task takes events off one queue and runs them one at a time; only this task mutates the
controller context, so no handler ever interleaves with another (Kafka's ControllerEventThread).
A handler that raises is logged and the loop goes on.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from coordinator.events import ControllerEvent, ShutdownEventThread

log = logging.getLogger(__name__)


class ControllerEventManager:
    def __init__(self, process: Callable[[ControllerEvent], Awaitable[None]]):
        self._process = process
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.processed = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="controller-event-thread")

    def put(self, event: ControllerEvent) -> None:
        """Enqueue from the loop (watch callbacks already hop onto it)."""
        self._queue.put_nowait(event)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            if isinstance(event, ShutdownEventThread):
                return
            try:
                await self._process(event)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one bad event must not stop the controller
                log.exception("controller event %s failed", type(event).__name__)
            self.processed += 1

    async def close(self) -> None:
        if self._task is None:
            return
        self.put(ShutdownEventThread())
        try:
            await asyncio.wait_for(self._task, timeout=10)
        except asyncio.TimeoutError:
            self._task.cancel()
        self._task = None
