"""ControllerEventManager: the controller's single writer.

One asyncio task takes events off one queue and runs them one at a time; only this task mutates the
controller context, so no handler ever interleaves with another (Kafka's ControllerEventThread).
A handler that raises is logged and the loop goes on.

ZooKeeper watches only enqueue: :meth:`ControllerEventManager.watch` is how the controller and its
managers arm every watch (Kafka's ZNodeChangeHandler / ZNodeChildChangeHandler, whose callbacks put
a ControllerEvent on this queue and nothing else).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from brokers.zk.gateway import WatchEvent
from coordinator.events import ControllerEvent, ShutdownEventThread

log = logging.getLogger(__name__)

WatchCallback = Callable[[WatchEvent], None]
EventFor = Callable[[str], "ControllerEvent | None"]  # a fired watch's type (or WATCH_LOST) -> the event, or None


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

    def watch(self, event: ControllerEvent | EventFor) -> WatchCallback:
        """A ZooKeeper watch callback that enqueues ``event`` when the watch fires. ``event`` may instead
        be a function of the fired watch's type (CREATED, DELETED, CHANGED, CHILD) returning the event
        to enqueue, or None for none. A watch the connection loss dropped (WATCH_LOST, delivered once
        reconnected) counts as fired: the event re-reads the znode and arms the watch again, or a
        change made while the connection was down would never reach the controller. A watch that
        ended with the session (type NONE) enqueues nothing: the session's loss reaches the controller
        as Expire, and the new session's RegisterBrokerAndReelect arms every watch again."""

        def fire(watch_event: WatchEvent) -> None:
            if watch_event.type == "NONE":
                return
            chosen = event(watch_event.type) if callable(event) else event
            if chosen is not None:
                self.put(chosen)

        return fire

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
