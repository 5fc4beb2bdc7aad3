"""CredentialCache: the SCRAM credentials of ``/config/users/<user>`` as last read (Kafka's CredentialCache).

HTTP basic auth (``brokers.http.auth``) asks it on every request; a ZooKeeper read per request would
cost more than everything else the REST proxy does (``BENCHMARKS.md``, "HTTP with security"). An entry
stays until a ``users`` config-change notification for that user (``/config/changes``, written by
``kafka-configs`` and AlterUserScramCredentials) or a new ZooKeeper session (notifications may have been
missed) drops it. A read that was in flight when an invalidation arrived is returned but not kept: the
next call reads again, so a changed credential is never cached stale. SASL logins use ``fresh`` instead
(a ZooKeeper read each: a new or deleted credential counts at the very next login). A ZooKeeper error
answers None (no credential: the login fails) with a warning.
"""
from __future__ import annotations

import logging
import urllib.parse
from typing import Awaitable, Callable

from brokers.zk.errors import ZkError

log = logging.getLogger(__name__)

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
            config = await self._read_config(user)
            if config is not None and generation == self._generation:
                self._configs[user] = config
        return (config or {}).get(mechanism)

    async def fresh(self, user: str, mechanism: str) -> str | None:
        """The same, read from ZooKeeper now (and not kept)."""
        return ((await self._read_config(user)) or {}).get(mechanism)

    async def _read_config(self, user: str) -> dict[str, str] | None:
        self.reads += 1
        try:
            return await self._read(user)
        except ZkError as exc:
            log.warning("cannot read the SCRAM credentials of a user: %s", exc)
            return None

    def invalidate(self, entity: str) -> None:
        """A ``users`` notification's entity name (Kafka's sanitized, URL-encoded user name)."""
        self._generation += 1
        self._configs.pop(urllib.parse.unquote(entity), None)

    def clear(self) -> None:
        self._generation += 1
        self._configs.clear()
