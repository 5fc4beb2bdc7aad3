"""CredentialCache: the SCRAM credentials of ``/config/users/<user>`` as last read (Kafka's CredentialCache).

HTTP basic auth (``brokers.http.auth``) asks it on every request; a ZooKeeper read per request would
cost more than everything else the REST proxy does (``BENCHMARKS.md``, "HTTP with security"). An entry
stays until a ``users`` config-change notification for that user (``/config/changes``, written by
``kafka-configs`` and AlterUserScramCredentials) or a new ZooKeeper session (notifications may have been
missed) drops it. A read that was in flight when an invalidation arrived is returned but not kept: the
next call reads again, so a changed credential is never cached stale.
"""
from __future__ import annotations

import urllib.parse
from typing import Awaitable, Callable

UserConfigReader = Callable[[str], Awaitable[dict[str, str]]]  # user -> its /config/users overrides


class CredentialCache:
    def __init__(self, read: UserConfigReader):
        self._read = read
        self._configs: dict[str, dict[str, str]] = {}
        self._generation = 0  # bumped by every invalidation
        self.reads = 0  # ZooKeeper reads made (for /healthz and tests)

    async def credential(self, user: str, mechanism: str) -> str | None:
        """The user's stored credential for ``mechanism``, or None."""
        config = self._configs.get(user)
        if config is None:
            generation = self._generation
            self.reads += 1
            config = await self._read(user)
            if generation == self._generation:
                self._configs[user] = config
        return config.get(mechanism)

    def invalidate(self, entity: str) -> None:
        """A ``users`` notification's entity name (Kafka's sanitized, URL-encoded user name)."""
        self._generation += 1
        self._configs.pop(urllib.parse.unquote(entity), None)

    def clear(self) -> None:
        self._generation += 1
        self._configs.clear()
