"""ConfigChangeListener: every broker's watch on ``/config/changes`` (Kafka's
ZkNodeChangeNotificationListener with DynamicConfigManager's handlers).

``start()`` records the highest notification sequence number present and arms a child watch: older
notifications are not replayed (the broker read every config it needs while starting). Each child
change runs one pass, serialized: read the children again (re-arming the one-shot watch), and for each
``config_change_<seq>`` above the last processed, in order, decode the entity and call its handler
(``handlers["topics"](name)``, ``handlers["brokers"](name)``), which re-reads ``/config/<type>/<name>``
itself, so a notification for a config that changed again since only applies the latest. A handler
that fails is logged and the pass goes on, except on a ZooKeeper error, which stops the pass before
that notification (the next change or session retries it). After a new ZooKeeper session, ``on_new_session()`` runs a pass
(watches die with the session). Entity types without a handler are skipped (clients, ips); ``users`` drops
the user from the broker's ``CredentialCache``.

Watch callbacks arrive on the event loop (ZkGateway hops them); ZooKeeper reads are awaited, never
blocking the loop.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable

from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import ZkError
from brokers.zk.gateway import WatchEvent
from brokers.zk.paths import ConfigChangeNotificationZNode

log = logging.getLogger(__name__)

Handler = Callable[[str], Awaitable[None] | None]


def unprocessed(children: list[str], last_sequence: int) -> list[tuple[int, str]]:
    """(sequence, child) of the notifications above ``last_sequence``, in order; foreign children skipped."""
    found = []
    for child in children:
        try:
            sequence = ConfigChangeNotificationZNode.sequence(child)
        except ValueError:
            continue
        if sequence > last_sequence:
            found.append((sequence, child))
    return sorted(found)


class ConfigChangeListener:
    def __init__(self, kzc: KafkaZkClient, handlers: dict[str, Handler]):
        self.kzc = kzc
        self.handlers = handlers
        self.last_sequence = -1
        self.processed = 0  # notifications handled since start (for tests and /metrics)
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    async def start(self, after: int | None = None) -> None:
        """Arm the watch; process only notifications above ``after`` (default: the newest present)."""
        children = await self.kzc.get_config_change_notifications(watch=self._on_watch)
        newest = max((seq for seq, _ in unprocessed(children, -1)), default=-1)
        self.last_sequence = newest if after is None else after
        if self.last_sequence < newest:
            self._spawn()

    async def latest_sequence(self) -> int:
        """The newest notification's sequence number (-1 if none): a baseline taken before reading configs."""
        children = await self.kzc.get_config_change_notifications()
        return max((seq for seq, _ in unprocessed(children, -1)), default=-1)

    def on_new_session(self) -> None:
        self._spawn()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _on_watch(self, event: WatchEvent) -> None:
        if event.type != "NONE":
            self._spawn()

    def _spawn(self) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._process())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self) -> None:
        async with self._lock:
            try:
                children = await self.kzc.get_config_change_notifications(watch=self._on_watch)
            except ZkError as exc:
                log.warning("cannot read /config/changes (%s); the next session or change retries", exc)
                return
            for sequence, child in unprocessed(children, self.last_sequence):
                try:
                    await self._handle(child)
                except ZkError as exc:  # not applied: the next change or session retries from here
                    log.warning("config change %s not applied yet: %s", child, exc)
                    return
                self.last_sequence = sequence
                self.processed += 1

    async def _handle(self, child: str) -> None:
        try:
            entity = await self.kzc.read_config_change_notification(child)
            if entity is None:
                return
            entity_type, name = entity
            handler = self.handlers.get(entity_type)
            if handler is None:
                return
            log.info("config change %s: %s/%s", child, entity_type, name)
            result = handler(name)
            if inspect.isawaitable(result):
                await result
        except ZkError:
            raise
        except ValueError as exc:
            log.warning("skipping the bad config change notification %s: %s", child, exc)
        except Exception:  # one bad entity must not stop the others
            log.exception("config change %s could not be applied", child)
