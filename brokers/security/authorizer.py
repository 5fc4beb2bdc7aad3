"""AclAuthorizer: Kafka 2.8's ZooKeeper-backed authorizer (``authorizer.class.name=
kafka.security.authorizer.AclAuthorizer``): the broker's in-memory copy of every ACL, kept current by
the ACL change notifications, and the CreateAcls/DeleteAcls writes.

Storage (``brokers.zk.paths.AclZNode``): one znode per resource pattern, literal patterns under
``/kafka-acl/<ResourceType>/<name>``, prefixed ones under ``/kafka-acl-extended/prefixed/...``. A write
reads the znode and its version, computes the new ACL set and writes it back conditionally on that
version (create if absent, delete when the set becomes empty), retrying on BADVERSION / NODEEXISTS /
NONODE as Kafka's ``updateResourceAcls`` does; then it creates an ``acl_changes_<seq>`` notification
(``AclChangeNotificationZNode``) naming the pattern, and every broker (the writer included) re-reads
that one znode; the writer then purges notifications older than 15 minutes (ZooKeeper's ctime).

``start()`` loads every ACL and arms child watches on both change paths; notifications present at
start are not replayed (the load saw their effect). Each watch event runs one serialized pass over the
children above the last processed sequence; ``sync()`` runs the same pass on demand (DescribeAcls and
DeleteAcls, so that they see what another broker wrote just before). After a new session,
``on_new_session()`` reloads all and re-arms the watches. Decisions (``authorize``) read only memory: ``brokers.security.acls.decide``.
"""
from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

from brokers.security import acls as acl
from brokers.security.acls import AclEntry, AclFilter, Acls, ResourcePattern
from brokers.zk.change_notifications import ChangeNotificationListener
from brokers.zk.client import KafkaZkClient
from brokers.zk.errors import BadVersionError, NodeExistsError, NoNodeError, ZkError
from brokers.zk.gateway import ZkGateway
from brokers.zk.paths import AclChangeNotificationZNode, AclZNode

log = logging.getLogger(__name__)
WRITE_ATTEMPTS = 20


def _znode_path(pattern: ResourcePattern) -> str:
    return AclZNode.path(acl.PATTERN_TYPE_NAMES[pattern.pattern_type], acl.RESOURCE_TYPE_NAMES[pattern.resource_type],
                         pattern.name)


def _to_json(entry: AclEntry) -> dict[str, str]:
    return {"principal": entry.principal, "permissionType": acl.PERMISSION_NAMES[entry.permission],
            "operation": acl.OPERATION_NAMES[entry.operation], "host": entry.host}


def pattern_znode(pattern: ResourcePattern, entries: frozenset[AclEntry]) -> tuple[str, bytes]:
    """The znode (path, data) holding ``entries`` for ``pattern``: for loading ACLs straight into ZooKeeper
    before any broker runs (``zkafka bench security``), which the brokers' start-up load then reads."""
    return _znode_path(pattern), AclZNode.encode([_to_json(e) for e in sorted(entries)])


def _from_json(item: dict[str, str]) -> AclEntry:
    operation = acl.OPERATIONS_BY_NAME.get(item["operation"].lower())
    permission = acl.PERMISSIONS_BY_NAME.get(item["permissionType"].lower())
    if operation is None or permission is None:
        raise ValueError(f"acl: unknown operation or permission type in {item}")
    return AclEntry(item["principal"], item["host"], operation, permission)


def _changes_path(extended: bool) -> str:
    return AclChangeNotificationZNode.EXTENDED_PATH if extended else AclChangeNotificationZNode.LITERAL_PATH


def _pattern_from_change(resource_type: str, name: str, pattern_type: str) -> ResourcePattern:
    codes = {v: k for k, v in acl.ENUM_RESOURCE_TYPE.items()}
    codes.update({v.upper(): k for k, v in acl.RESOURCE_TYPE_NAMES.items()})
    patterns = {v: k for k, v in acl.PATTERN_TYPE_NAMES.items()}
    if resource_type not in codes or pattern_type not in patterns:
        raise ValueError(f"acl change: unknown resource type {resource_type} or pattern type {pattern_type}")
    return ResourcePattern(codes[resource_type], name, patterns[pattern_type])


class AclAuthorizer:
    def __init__(self, zk: ZkGateway, super_users: frozenset[str], allow_if_no_acl: bool):
        self.zk = zk
        self.kzc = KafkaZkClient(zk)
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: Acls = {}
        self._prefixed: acl.PrefixIndex = {}
        # one lock for both paths' passes and the reload after a new session, which must not interleave
        self._lock = asyncio.Lock()
        self._listeners = [ChangeNotificationListener("ACL change", partial(self._change_children, extended),
                                                      AclChangeNotificationZNode.sequence,
                                                      partial(self._read_change, extended), self._on_change,
                                                      lock=self._lock)
                           for extended in (False, True)]
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def processed(self) -> int:
        """Change notifications applied (tests, /healthz)."""
        return sum(listener.processed for listener in self._listeners)

    @property
    def acls(self) -> Acls:
        return self._acls

    @acls.setter
    def acls(self, acls: Acls) -> None:  # replaced whole (copy-on-write), with its prefix index
        self._acls, self._prefixed = acls, acl.prefix_index(acls)

    # -- decisions -------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        if principal in self.super_users:  # before any lookup, as Kafka's authorizeAction: the brokers'
            return True                    # own fetchers are super users, on every replica Fetch
        applicable = acl.matching_acls(self._acls, resource_type, name, self._prefixed)
        return acl.decide(applicable, principal, host, operation, allow_if_no_acl=self.allow_if_no_acl)

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        return acl.decide_any(self.acls, resource_type, principal, host, operation, super_users=self.super_users,
                              allow_if_no_acl=self.allow_if_no_acl)

    def describe(self, flt: AclFilter) -> list[tuple[ResourcePattern, AclEntry]]:
        return acl.filter_acls(self.acls, flt)

    # -- start-up and notifications (brokers.zk.change_notifications) --------------------------------
    async def start(self) -> None:
        for path in (AclZNode.LITERAL_ROOT, AclZNode.PREFIXED_ROOT, AclChangeNotificationZNode.LITERAL_PATH,
                     AclChangeNotificationZNode.EXTENDED_PATH):
            await self.zk.ensure_path(path)
        for listener in self._listeners:
            await listener.start()
        await self._load_all()

    def on_new_session(self) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._resync())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for listener in self._listeners:
            await listener.close()

    async def _resync(self) -> None:
        """After a new session: re-arm both watches and reload everything (changes may have been missed)."""
        async with self._lock:
            try:
                for listener in self._listeners:
                    await listener.skip_to_newest()
                await self._load_all()
            except ZkError as exc:
                log.warning("reloading the ACLs after a new session failed (%s); the next session retries", exc)

    async def _load_all(self) -> None:
        loaded: Acls = {}
        for pattern_type, type_name in acl.PATTERN_TYPE_NAMES.items():
            for resource_type, resource_name in acl.RESOURCE_TYPE_NAMES.items():
                for name in await self._children(f"{AclZNode.root(type_name)}/{resource_name}"):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    entries, _ = await self._read(pattern)
                    if entries:
                        loaded[pattern] = entries
        self.acls = loaded

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.zk.get_children(path)
        except NoNodeError:
            return []

    async def _change_children(self, extended: bool, watch: Any) -> list[str]:
        return await self.zk.get_children(_changes_path(extended), watch)

    async def _read_change(self, extended: bool, child: str) -> ResourcePattern | None:
        try:
            data, _ = await self.zk.get(f"{_changes_path(extended)}/{child}")
        except NoNodeError:
            return None  # purged
        return _pattern_from_change(*AclChangeNotificationZNode.decode(data, extended))

    async def _on_change(self, _child: str, pattern: ResourcePattern) -> None:
        await self._refresh(pattern)

    async def sync(self) -> None:
        """Apply every change notification already in ZooKeeper now (DescribeAcls and DeleteAcls call it,
        so that a change made through another broker a moment ago is seen, not only once the watch fires)."""
        for listener in self._listeners:
            await listener.sync()

    async def _refresh(self, pattern: ResourcePattern) -> None:
        entries, _ = await self._read(pattern)
        self._apply(pattern, entries)

    def _apply(self, pattern: ResourcePattern, entries: frozenset[AclEntry]) -> None:
        acls = dict(self.acls)  # copy-on-write: decisions in flight keep a consistent view
        if entries:
            acls[pattern] = entries
        else:
            acls.pop(pattern, None)
        self.acls = acls

    async def _read(self, pattern: ResourcePattern) -> tuple[frozenset[AclEntry], int]:
        """The pattern's ACLs and znode version (-1: no znode)."""
        try:
            data, stat = await self.zk.get(_znode_path(pattern))
        except NoNodeError:
            return frozenset(), -1
        try:
            return frozenset(_from_json(item) for item in AclZNode.decode(data)), stat.version
        except (ValueError, KeyError) as exc:
            log.warning("ignoring the unreadable ACL znode %s: %s", _znode_path(pattern), exc)
            return frozenset(), stat.version

    # -- writes (CreateAcls / DeleteAcls) --------------------------------------------------------
    async def update(self, pattern: ResourcePattern, add: frozenset[AclEntry] = frozenset(),
                     remove: frozenset[AclEntry] = frozenset()) -> frozenset[AclEntry]:
        """Add and remove ACLs of one pattern with a conditional write, then notify; returns the ACLs
        that were actually removed (present before the write)."""
        path = _znode_path(pattern)
        for _ in range(WRITE_ATTEMPTS):
            current, version = await self._read(pattern)
            updated = (current | add) - remove
            if updated == current:
                self._apply(pattern, current)
                return current & remove
            try:
                if not updated:
                    await self.zk.delete(path, version)
                elif version < 0:
                    await self.zk.create(path, AclZNode.encode([_to_json(e) for e in updated]), makepath=True)
                else:
                    await self.zk.set(path, AclZNode.encode([_to_json(e) for e in updated]), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # someone else wrote it since our read: read again
            await self._notify(pattern)
            self._apply(pattern, frozenset(updated))
            return current & remove
        raise ZkError(f"{path}: gave up after {WRITE_ATTEMPTS} conflicting writes")

    async def _notify(self, pattern: ResourcePattern) -> None:
        pattern_type = acl.PATTERN_TYPE_NAMES[pattern.pattern_type]
        parent = AclChangeNotificationZNode.path(pattern_type)
        created = await self.zk.create(
            f"{parent}/{AclChangeNotificationZNode.PREFIX}",
            AclChangeNotificationZNode.encode(acl.ENUM_RESOURCE_TYPE[pattern.resource_type], pattern.name, pattern_type),
            sequential=True, makepath=True)
        try:
            stat = await self.zk.exists(created)
            if stat is not None:
                await self.kzc.purge_change_notifications(parent, stat.ctime)
        except ZkError as exc:  # the next write purges
            log.info("purging old ACL change notifications failed: %s", exc)
