"""ShellClient: a synchronous ZooKeeper session for ``zookeeper-shell`` (ZooKeeperMain's commands), in our types.

``ZkGateway`` is the broker's asynchronous door and keeps only the stat fields Kafka uses; a shell command
wants the whole stat (``FullStat``: what ZooKeeper's ``StatPrinter`` prints), ACLs (``ZnodeAcl``), null data
told apart from empty data, and ZooKeeper's own error codes: every failure is a ``ZkCommandError`` with the
``KeeperException`` code (``NONODE`` -101, ``NOAUTH`` -102, ...) and the path, so the shell prints ZooKeeper
CLI's message for it. Watches are delivered as ``ShellWatchEvent`` in ZooKeeper's Java names
(``NodeDataChanged``, ``SyncConnected``) on kazoo's thread. Digest credentials and TLS as ``brokers.zk.tls``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import ACL, Id

from brokers.zk.errors import ConnectionLossError, ZkError
from brokers.zk.tls import ZkTls, kazoo_security

CONNECTION_LOSS = -4  # ZooKeeper's KeeperException.Code.CONNECTIONLOSS
EVENT_TYPES = {"CREATED": "NodeCreated", "DELETED": "NodeDeleted", "CHANGED": "NodeDataChanged",
               "CHILD": "NodeChildrenChanged", "NONE": "None"}
KEEPER_STATES = {"CONNECTED": "SyncConnected", "CONNECTED_RO": "ConnectedReadOnly", "CONNECTING": "Disconnected",
                 "EXPIRED_SESSION": "Expired", "AUTH_FAILED": "AuthFailed", "CLOSED": "Closed"}
SESSION_STATES = {"CONNECTED": "CONNECTED", "SUSPENDED": "CONNECTING", "LOST": "CLOSED"}  # kazoo's -> ZooKeeper's


@dataclass(frozen=True)
class FullStat:
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int


@dataclass(frozen=True)
class ZnodeAcl:
    scheme: str
    id: str
    perms: int  # ZooDefs.Perms bits: READ 1, WRITE 2, CREATE 4, DELETE 8, ADMIN 16


@dataclass(frozen=True)
class ShellWatchEvent:
    type: str  # NodeCreated | NodeDeleted | NodeDataChanged | NodeChildrenChanged | None
    state: str  # SyncConnected | Disconnected | Expired | ...
    path: str | None


class ZkCommandError(ZkError):
    """A request ZooKeeper failed: ``code`` is ZooKeeper's ``KeeperException.Code`` value, ``path`` the request's."""

    def __init__(self, code: int, path: str, detail: str = ""):
        super().__init__(detail or f"ZooKeeper error {code} for {path}")
        self.code = code
        self.path = path


def _stat(stat: Any) -> FullStat:
    return FullStat(stat.czxid, stat.mzxid, stat.ctime, stat.mtime, stat.version, stat.cversion, stat.aversion,
                    stat.ephemeralOwner, stat.dataLength, stat.numChildren, stat.pzxid)


class ShellClient:
    """``ShellClient("h:p/chroot", timeout_ms=30000, digest="user:pw", tls=ZkTls(...))``; ``start()`` first."""

    def __init__(self, connect: str, *, timeout_ms: int = 30000, digest: str | None = None, tls: ZkTls | None = None):
        self.connect_string = connect
        self.timeout_ms = timeout_ms
        self._client = KazooClient(hosts=connect, timeout=timeout_ms / 1000,
                                   connection_retry={"max_tries": -1, "max_delay": 1}, **kazoo_security(digest, tls))

    def start(self) -> None:
        """Connect; ConnectionLossError if no server answers within the timeout."""
        try:
            with warnings.catch_warnings():  # kazoo warns about a missing chroot; commands report NoNode
                warnings.filterwarnings("ignore", message="No chroot path exists")
                self._client.start(self.timeout_ms / 1000)
        except (KazooTimeoutError, KazooException) as exc:
            self._client.stop()
            raise ConnectionLossError(f"could not connect to ZooKeeper at {self.connect_string} "
                                      f"within {self.timeout_ms} ms") from exc

    def close(self) -> None:
        self._client.stop()
        self._client.close()

    @property
    def state(self) -> str:
        """ZooKeeper's name for the session's state (CONNECTED, CONNECTING, CLOSED)."""
        return SESSION_STATES.get(str(self._client.state), str(self._client.state))

    def _call(self, path: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KazooTimeoutError as exc:
            raise ZkCommandError(CONNECTION_LOSS, path, str(exc)) from exc
        except KazooException as exc:
            code = getattr(exc, "code", None)
            if not isinstance(code, int):
                raise ZkError(f"{type(exc).__name__}: {exc}") from exc
            raise ZkCommandError(code, path, type(exc).__name__) from exc

    @staticmethod
    def _watch(callback: Callable[[ShellWatchEvent], None] | None) -> Callable[[Any], None] | None:
        if callback is None:
            return None
        return lambda event: callback(ShellWatchEvent(EVENT_TYPES.get(str(event.type), str(event.type)),
                                                      KEEPER_STATES.get(str(event.state), str(event.state)),
                                                      event.path))

    # -- the commands' requests ------------------------------------------------------------------
    def get(self, path: str, watch: Callable[[ShellWatchEvent], None] | None = None) -> tuple[bytes | None, FullStat]:
        data, stat = self._call(path, self._client.get, path, watch=self._watch(watch))
        return data, _stat(stat)

    def children(self, path: str, watch: Callable[[ShellWatchEvent], None] | None = None) -> tuple[list[str], FullStat]:
        children, stat = self._call(path, self._client.get_children, path, watch=self._watch(watch), include_data=True)
        return list(children), _stat(stat)

    def exists(self, path: str, watch: Callable[[ShellWatchEvent], None] | None = None) -> FullStat | None:
        stat = self._call(path, self._client.exists, path, watch=self._watch(watch))
        return None if stat is None else _stat(stat)

    def create(self, path: str, data: bytes | None, acl: list[ZnodeAcl] | None = None, *, ephemeral: bool = False,
               sequential: bool = False) -> str:
        """The created path (with its sequence number); ``acl`` None: ZooKeeper's open ACL."""
        kazoo_acl = None if acl is None else [ACL(a.perms, Id(a.scheme, a.id)) for a in acl]
        return self._call(path, self._client.create, path, data, acl=kazoo_acl, ephemeral=ephemeral,
                          sequence=sequential)

    def set(self, path: str, data: bytes, version: int = -1) -> FullStat:
        return _stat(self._call(path, self._client.set, path, data, version=version))

    def delete(self, path: str, version: int = -1) -> None:
        self._call(path, self._client.delete, path, version=version)

    def delete_all(self, path: str) -> None:
        """The node and everything below it (ZooKeeper's ``ZKUtil.deleteRecursive``); NONODE if it is missing."""
        if self.exists(path) is None:
            raise ZkCommandError(-101, path, "NoNodeError")
        self._call(path, self._client.delete, path, recursive=True)

    def get_acl(self, path: str) -> tuple[list[ZnodeAcl], FullStat]:
        acls, stat = self._call(path, self._client.get_acls, path)
        return [ZnodeAcl(a.id.scheme, a.id.id, a.perms) for a in acls], _stat(stat)
