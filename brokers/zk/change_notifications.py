"""ChangeNotificationListener: Kafka's ZkNodeChangeNotificationListener, once for every notification path.

A writer creates a sequential child (``config_change_<seq>``, ``acl_changes_<seq>``) under a notification
path after each change; every broker watches the path's children. ``start()`` records the highest sequence
present (or ``after``) and arms a child watch: older notifications are not replayed (the broker read the
state they announce while starting). Each watch event runs one pass, serialized by ``lock``: list the
children again (re-arming the one-shot watch), and for each child above the last processed, in order,
``read(child)`` its content (None: purged meanwhile, skipped) and ``handle(child, content)``. A ZooKeeper
error stops the pass before that notification (the next change or session retries from there); a
notification that does not decode (ValueError) or whose handler fails is logged and skipped.
``on_new_session()`` runs a pass (watches die with the session), and so does a watch the connection
loss dropped (WATCH_LOST, ``brokers.zk.gateway``); ``sync()`` runs one on demand without
arming another watch. Watch callbacks arrive on the event loop (ZkGateway hops them).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable

from brokers.zk.errors import ZkError
from brokers.zk.gateway import WatchEvent

log = logging.getLogger(__name__)

Watch = Callable[[WatchEvent], None] | None
ListChildren = Callable[[Watch], Awaitable[list[str]]]  # the notification path's children, arming ``watch``
Read = Callable[[str], Awaitable[Any]]  # a child -> its decoded content, None if it is gone
Handle = Callable[[str, Any], Awaitable[None] | None]  # (child, content)


def unprocessed(children: list[str], last_sequence: int, sequence: Callable[[str], int]) -> list[tuple[int, str]]:
    """(sequence, child) of the notifications above ``last_sequence``, in order; foreign children skipped."""
    found = []
    for child in children:
        try:
            number = sequence(child)
        except ValueError:
            continue
        if number > last_sequence:
            found.append((number, child))
    return sorted(found)


class ChangeNotificationListener:
    def __init__(self, what: str, list_children: ListChildren, sequence: Callable[[str], int], read: Read,
                 handle: Handle, lock: asyncio.Lock | None = None):
        self.what = what  # for log lines: "config change", "ACL change"
        self._list_children = list_children
        self._sequence = sequence
        self._read = read
        self._handle = handle
        self.lock = lock or asyncio.Lock()  # shared when one owner's state spans several paths
        self.last_sequence = -1
        self.processed = 0  # notifications handled since start (for tests and /healthz)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    async def start(self, after: int | None = None) -> None:
        """Arm the watch; process only notifications above ``after`` (default: the newest present)."""
        newest = await self.skip_to_newest()
        if after is not None:
            self.last_sequence = after
        if self.last_sequence < newest:
            self._spawn(self._process())

    async def latest_sequence(self) -> int:
        """The newest notification's sequence number (-1 if none): a baseline taken before reading state."""
        return max((seq for seq, _ in unprocessed(await self._list_children(None), -1, self._sequence)), default=-1)

    async def skip_to_newest(self) -> int:
        """Arm the watch and mark everything present as processed (the caller re-reads all state itself,
        holding ``lock`` when passes may run); returns the newest sequence."""
        children = await self._list_children(self._on_watch)
        newest = max((seq for seq, _ in unprocessed(children, -1, self._sequence)), default=-1)
        self.last_sequence = max(self.last_sequence, newest)
        return newest

    def on_new_session(self) -> None:
        self._spawn(self._process())

    async def sync(self) -> None:
        await self._process(rearm=False)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_watch(self, event: WatchEvent) -> None:
        if event.type != "NONE":
            self._spawn(self._process())

    def _spawn(self, coro: Any) -> None:
        if self._closed:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, rearm: bool = True) -> None:
        """``rearm``: from a watch that fired (one-shot) or a new session: set it again; a pass on demand
        (``sync``) must not, or every call would add one more watcher."""
        async with self.lock:
            try:
                children = await self._list_children(self._on_watch if rearm else None)
            except ZkError as exc:
                log.warning("cannot read the %s notifications (%s); the next change or session retries", self.what, exc)
                return
            for sequence, child in unprocessed(children, self.last_sequence, self._sequence):
                try:
                    await self._apply(child)
                except ZkError as exc:  # not applied: the next change or session retries from here
                    log.warning("%s %s not applied yet: %s", self.what, child, exc)
                    return
                self.last_sequence = sequence
                self.processed += 1

    async def _apply(self, child: str) -> None:
        try:
            content = await self._read(child)
            if content is None:
                return
            result = self._handle(child, content)
            if inspect.isawaitable(result):
                await result
        except ZkError:
            raise
        except ValueError as exc:
            log.warning("skipping the bad %s notification %s: %s", self.what, child, exc)
        except Exception:  # one bad entity must not stop the others
            log.exception("%s %s could not be applied", self.what, child)
