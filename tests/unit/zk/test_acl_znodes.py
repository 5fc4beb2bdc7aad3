"""The ACL znodes in Kafka 2.8's exact layout (ZkData.scala: ZkAclStore, LiteralAclChangeStore,
ExtendedAclChangeStore) and brokers.security.authorizer's conditional writes and change processing, over an
in-memory ZooKeeper (the real one is in tests/integration/test_acls.py)."""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from brokers.security.authorizer import AclAuthorizer
from brokers.security.acls import ALLOW, DENY, LITERAL, PREFIXED, READ, TOPIC, GROUP, WRITE, AclEntry, ResourcePattern
from brokers.zk.errors import BadVersionError, NodeExistsError, NoNodeError
from brokers.zk.gateway import WatchEvent
from brokers.zk.paths import AclChangeNotificationZNode, AclZNode

ALICE = "User:alice"


def test_acl_znode_paths_are_kafkas():
    assert AclZNode.path("LITERAL", "Topic", "foo") == "/kafka-acl/Topic/foo"
    assert AclZNode.path("PREFIXED", "Group", "g-") == "/kafka-acl-extended/prefixed/Group/g-"
    assert AclZNode.path("LITERAL", "Cluster", "kafka-cluster") == "/kafka-acl/Cluster/kafka-cluster"


def test_acl_znode_json_round_trip():
    entry = {"principal": ALICE, "permissionType": "Allow", "operation": "Read", "host": "*"}
    data = AclZNode.encode([entry])
    assert json.loads(data) == {"version": 1, "acls": [entry]}
    assert AclZNode.decode(data) == [entry]
    assert AclZNode.decode(b"") == []
    with pytest.raises(ValueError):
        AclZNode.decode(b'{"version":1,"acls":[{"principal":"User:a"}]}')


def test_change_notifications_are_kafkas():
    assert AclChangeNotificationZNode.encode("TOPIC", "foo", "LITERAL") == b"TOPIC:foo"
    assert json.loads(AclChangeNotificationZNode.encode("TOPIC", "foo", "PREFIXED")) == {
        "version": 1, "resourceType": "TOPIC", "name": "foo", "patternType": "PREFIXED"}
    assert AclChangeNotificationZNode.decode(b"Topic:a:b", extended=False) == ("TOPIC", "a:b", "LITERAL")
    assert AclChangeNotificationZNode.decode(
        b'{"version":1,"resourceType":"GROUP","name":"g","patternType":"PREFIXED"}', extended=True) == (
        "GROUP", "g", "PREFIXED")
    assert AclChangeNotificationZNode.sequence("acl_changes_0000000012") == 12
    for bad, extended in ((b"nocolon", False), (b'{"version":2}', True)):
        with pytest.raises(ValueError):
            AclChangeNotificationZNode.decode(bad, extended)


class MemoryZk:
    """The ZkGateway calls the AclAuthorizer makes, in memory, with versions and one-shot child watches."""

    def __init__(self):
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.child_watches: dict[str, list] = {}
        self.sequence = 0
        self.conflicts = 0  # make the next N conditional writes fail with BADVERSION
        self.clock_ms = 0  # ZooKeeper's clock: each znode's ctime
        self.ctimes: dict[str, int] = {}

    def _parent(self, path):
        return path.rsplit("/", 1)[0]

    def _fire(self, parent):
        for watch in self.child_watches.pop(parent, []):
            watch(WatchEvent("CHILD", parent))

    async def ensure_path(self, path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self.nodes.setdefault("/" + "/".join(parts[:i]), (b"", 0))

    async def get(self, path, watch=None):
        if path not in self.nodes:
            raise NoNodeError(path)
        data, version = self.nodes[path]
        return data, SimpleNamespace(version=version)

    async def get_children(self, path, watch=None):
        if path not in self.nodes:
            raise NoNodeError(path)
        if watch is not None:
            self.child_watches.setdefault(path, []).append(watch)
        prefix = path + "/"
        return sorted(p[len(prefix):] for p in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):])

    async def create(self, path, data=b"", *, sequential=False, makepath=False, ephemeral=False):
        if sequential:
            path = f"{path}{self.sequence:010d}"
            self.sequence += 1
        if path in self.nodes:
            raise NodeExistsError(path)
        if makepath:
            await self.ensure_path(self._parent(path))
        self.nodes[path] = (data, 0)
        self.ctimes[path] = self.clock_ms
        self._fire(self._parent(path))
        return path

    async def exists(self, path, watch=None):
        if path not in self.nodes:
            return None
        return SimpleNamespace(version=self.nodes[path][1], ctime=self.ctimes.get(path, 0))

    async def set(self, path, data, version=-1):
        self._check(path, version)
        self.nodes[path] = (data, self.nodes[path][1] + 1)

    async def delete(self, path, version=-1, recursive=False):
        self._check(path, version)
        del self.nodes[path]
        self._fire(self._parent(path))

    def _check(self, path, version):
        if path not in self.nodes:
            raise NoNodeError(path)
        if self.conflicts:
            self.conflicts -= 1
            self.nodes[path] = (self.nodes[path][0], self.nodes[path][1] + 1)  # someone else wrote
            raise BadVersionError(path)
        if version != -1 and version != self.nodes[path][1]:
            raise BadVersionError(path)


def run(coro):
    return asyncio.run(coro)


async def _settle():
    for _ in range(20):
        await asyncio.sleep(0)


def test_start_loads_every_acl_and_writes_go_to_kafkas_znodes_with_notifications():
    async def scenario():
        zk = MemoryZk()
        await zk.create("/kafka-acl/Topic/t", AclZNode.encode(
            [{"principal": ALICE, "permissionType": "Allow", "operation": "Read", "host": "*"}]), makepath=True)
        authorizer = AclAuthorizer(zk, frozenset(), False)
        await authorizer.start()
        assert authorizer.authorize(ALICE, "h", READ, TOPIC, "t")
        assert not authorizer.authorize(ALICE, "h", WRITE, TOPIC, "t")

        pattern = ResourcePattern(GROUP, "g-", PREFIXED)
        await authorizer.update(pattern, add=frozenset({AclEntry(ALICE, "*", READ, ALLOW)}))
        data, _ = await zk.get("/kafka-acl-extended/prefixed/Group/g-")
        assert json.loads(data)["acls"] == [{"principal": ALICE, "permissionType": "Allow", "operation": "Read", "host": "*"}]
        (change,) = await zk.get_children("/kafka-acl-extended-changes")
        assert change.startswith("acl_changes_")
        assert json.loads((await zk.get(f"/kafka-acl-extended-changes/{change}"))[0])["patternType"] == "PREFIXED"
        assert authorizer.authorize(ALICE, "h", READ, GROUP, "g-1")

        removed = await authorizer.update(pattern, remove=frozenset({AclEntry(ALICE, "*", READ, ALLOW),
                                                                     AclEntry(ALICE, "*", WRITE, DENY)}))
        assert removed == {AclEntry(ALICE, "*", READ, ALLOW)}
        assert "/kafka-acl-extended/prefixed/Group/g-" not in zk.nodes  # an empty set deletes the znode
        await _settle()
        await authorizer.close()
    run(scenario())


def test_a_conflicting_write_is_retried_on_the_new_version():
    async def scenario():
        zk = MemoryZk()
        authorizer = AclAuthorizer(zk, frozenset(), False)
        await authorizer.start()
        pattern = ResourcePattern(TOPIC, "t", LITERAL)
        await authorizer.update(pattern, add=frozenset({AclEntry(ALICE, "*", READ, ALLOW)}))
        zk.conflicts = 2
        await authorizer.update(pattern, add=frozenset({AclEntry("User:bob", "*", READ, ALLOW)}))
        assert len(AclZNode.decode(zk.nodes["/kafka-acl/Topic/t"][0])) == 2
        assert (await zk.get("/kafka-acl-changes/acl_changes_0000000001"))[0] == b"TOPIC:t"
        await authorizer.close()
    run(scenario())


def test_another_brokers_change_is_applied_from_the_notification():
    async def scenario():
        zk = MemoryZk()
        mine, other = AclAuthorizer(zk, frozenset(), False), AclAuthorizer(zk, frozenset(), False)
        await mine.start()
        await other.start()
        await other.update(ResourcePattern(TOPIC, "t"), add=frozenset({AclEntry(ALICE, "*", WRITE, DENY)}))
        await _settle()
        assert mine.processed >= 1
        assert mine.acls == other.acls and mine.acls
        await zk.create("/kafka-acl-changes/acl_changes_", b"garbage", sequential=True)  # skipped, not fatal
        await other.update(ResourcePattern(TOPIC, "t"), remove=frozenset({AclEntry(ALICE, "*", WRITE, DENY)}))
        await _settle()
        assert mine.acls == {}
        await mine.close()
        await other.close()
    run(scenario())


def test_the_writer_purges_notifications_older_than_15_minutes():
    async def scenario():
        zk = MemoryZk()
        authorizer = AclAuthorizer(zk, frozenset(), False)
        await authorizer.start()
        pattern = ResourcePattern(TOPIC, "t")
        await authorizer.update(pattern, add=frozenset({AclEntry(ALICE, "*", READ, ALLOW)}))
        zk.clock_ms = 15 * 60 * 1000  # exactly 15 minutes later: kept
        await authorizer.update(pattern, add=frozenset({AclEntry(ALICE, "*", WRITE, ALLOW)}))
        assert len(await zk.get_children("/kafka-acl-changes")) == 2
        zk.clock_ms += 1
        await authorizer.update(pattern, remove=frozenset({AclEntry(ALICE, "*", WRITE, ALLOW)}))
        assert await zk.get_children("/kafka-acl-changes") == ["acl_changes_0000000001", "acl_changes_0000000002"]
        await _settle()
        await authorizer.close()
    run(scenario())


def test_sync_applies_notifications_before_the_watch_fires():
    async def scenario():
        zk = MemoryZk()
        mine, other = AclAuthorizer(zk, frozenset(), False), AclAuthorizer(zk, frozenset(), False)
        await mine.start()
        await other.start()
        zk.child_watches.clear()  # the watch has not fired yet (or its event is still on the way)
        await other.update(ResourcePattern(TOPIC, "t", PREFIXED), add=frozenset({AclEntry(ALICE, "*", READ, ALLOW)}))
        assert mine.acls == {}
        await mine.sync()
        assert mine.authorize(ALICE, "h", READ, TOPIC, "t1")
        await _settle()
        await mine.close()
        await other.close()
    run(scenario())


def test_sync_sets_no_watch_of_its_own():
    """DescribeAcls/DeleteAcls call sync(): each call must not add watchers (they would pile up forever and
    every later ACL change would run one pass per leftover watcher)."""
    async def scenario():
        zk = MemoryZk()
        authorizer = AclAuthorizer(zk, frozenset(), False)
        await authorizer.start()
        armed = {path: len(watches) for path, watches in zk.child_watches.items()}
        for _ in range(3):
            await authorizer.sync()
        assert {path: len(watches) for path, watches in zk.child_watches.items()} == armed
        await authorizer.close()
    run(scenario())
