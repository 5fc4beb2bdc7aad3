"""brokers.security.credential_cache.CredentialCache: one read per user until an invalidation, never a stale store."""
from __future__ import annotations

import asyncio

from brokers.security.credential_cache import CredentialCache


class Users:
    def __init__(self) -> None:
        self.configs = {"alice": {"SCRAM-SHA-512": "v1"}, "zoë@x": {"SCRAM-SHA-256": "z"}}
        self.reads: list[str] = []
        self.gate: asyncio.Event | None = None

    async def read(self, user: str) -> dict[str, str]:
        self.reads.append(user)
        snapshot = dict(self.configs.get(user, {}))
        if self.gate is not None:
            await self.gate.wait()
        return snapshot


def test_reads_once_until_invalidated_by_the_sanitized_name():
    async def main() -> None:
        users = Users()
        cache = CredentialCache(users.read)
        assert await cache.credential("alice", "SCRAM-SHA-512") == "v1"
        assert await cache.credential("alice", "SCRAM-SHA-256") is None
        assert users.reads == ["alice"]
        users.configs["alice"] = {"SCRAM-SHA-512": "v2"}
        cache.invalidate("alice")
        assert await cache.credential("alice", "SCRAM-SHA-512") == "v2"
        assert await cache.credential("zoë@x", "SCRAM-SHA-256") == "z"
        cache.invalidate("zo%C3%AB%40x")  # Kafka's Sanitizer URL-encodes the znode name
        await cache.credential("zoë@x", "SCRAM-SHA-256")
        assert users.reads == ["alice", "alice", "zoë@x", "zoë@x"] and cache.reads == 4
        cache.clear()
        await cache.credential("alice", "SCRAM-SHA-512")
        assert users.reads[-1] == "alice" and cache.reads == 5

    asyncio.run(main())


def test_a_read_overtaken_by_an_invalidation_is_not_kept():
    async def main() -> None:
        users = Users()
        users.gate = asyncio.Event()
        cache = CredentialCache(users.read)
        pending = asyncio.ensure_future(cache.credential("alice", "SCRAM-SHA-512"))
        await asyncio.sleep(0)  # the read has started with the old credential
        users.configs["alice"] = {"SCRAM-SHA-512": "v2"}
        cache.invalidate("alice")
        users.gate.set()
        assert await pending == "v1"  # what was read is answered...
        users.gate = None
        assert await cache.credential("alice", "SCRAM-SHA-512") == "v2"  # ...but not kept
        assert len(users.reads) == 2

    asyncio.run(main())


def test_fresh_reads_every_time_and_a_zookeeper_error_is_no_credential():
    from brokers.zk.errors import ZkError

    async def main() -> None:
        users = Users()
        cache = CredentialCache(users.read)
        assert [await cache.fresh("alice", "SCRAM-SHA-512") for _ in range(2)] == ["v1", "v1"]
        assert users.reads == ["alice", "alice"]

        async def broken(user: str) -> dict[str, str]:
            raise ZkError("connection loss")
        down = CredentialCache(broken)
        assert await down.credential("alice", "SCRAM-SHA-512") is None
        assert await down.fresh("alice", "SCRAM-SHA-512") is None

    asyncio.run(main())
