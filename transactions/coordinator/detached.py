"""Client requests that run to their end even when their caller stops waiting.

The listener cancels a request's task when its connection closes (a client that timed out, a broker that went
away). A coordinator request that is cancelled between preparing a transition (``pending_state`` set) and
applying the append's outcome would leave the transaction pending for ever: every later request of the id
answers CONCURRENT_TRANSACTIONS until its ``__transaction_state`` partition moves. Kafka never has this
window, since its append callback runs whether or not anyone waits for the answer; here each request runs in a
task of its own, which the caller awaits through ``asyncio.shield``: a cancelled caller drops the answer, the
request still writes (or drops) its transition. The coordinator's shutdown cancels ``tasks()`` with its own
timers and completions, where its state is thrown away with them.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class DetachedRequests:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()

    async def run(self, request: Awaitable[T], name: str) -> T:
        """``await request``, finished even if this call is cancelled (then its answer or failure is logged
        at debug / error level, as nobody reads it)."""
        task = asyncio.ensure_future(request)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                task.add_done_callback(_orphan_done)
            raise

    def tasks(self) -> list[asyncio.Task]:
        """The requests still running."""
        return list(self._tasks)


def _orphan_done(task: asyncio.Task) -> None:
    """A request whose caller was cancelled finished: nobody reads its outcome, so a failure is logged."""
    if task.cancelled():
        return
    if task.exception() is not None:
        log.error("%s (its client gone) failed", task.get_name(), exc_info=task.exception())
    else:
        log.debug("%s finished after its client went away: %s", task.get_name(), task.result())
