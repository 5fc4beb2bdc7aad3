"""ZkGateway: the broker's only door to ZooKeeper, async on the broker's event loop.

kazoo's threaded client does the talking; every blocking call runs in ``asyncio.to_thread`` and
every watch or session-state callback hops back onto the loop with ``call_soon_threadsafe``, so
handlers only ever run on the loop. kazoo's exceptions become ``brokers.zk.errors``; kazoo's stat
becomes ``ZnodeStat``. Multi-ops take our op types (``CreateOp``, ``SetDataOp``, ``DeleteOp``,
``CheckOp``); ``fenced_multi`` prepends the ``/controller_epoch`` version check that every
controller write carries (KAFKA-6082).

Watches across a connection loss: kazoo forgets every watch when the connection drops, even while the
session lives (ZooKeeper's Java client keeps them and restores them with SetWatches on reconnect), and
tells each watcher with a type-NONE event. A watch dropped that way is delivered once the connection is
back as ``WatchEvent(WATCH_LOST, path)``: whatever it covered may have changed unnoticed, so the watcher
treats it as fired (re-reads, which arms it again). A watch dropped because the session ended (expired
or closed) is delivered as type NONE at once: that session's owner starts over on the next one.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError as KazooBadVersion,
    ConnectionLoss,
    KazooException,
    NoAuthError as KazooNoAuth,
    NodeExistsError as KazooNodeExists,
    NoNodeError as KazooNoNode,
    NotEmptyError as KazooNotEmpty,
    RolledBackError,
    SessionExpiredError as KazooSessionExpired,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

from brokers.zk.errors import (
    BadVersionError,
    ConnectionLossError,
    ControllerMovedError,
    MultiOpError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    ZkError,
)
from brokers.stats import ZOOKEEPER_BUCKETS, LatencyHistogram
from brokers.zk.gateway_batch import BatchCalls
from brokers.zk.paths import ControllerEpochZNode, world_readable
from brokers.zk.tls import ZkTls, kazoo_security

log = logging.getLogger(__name__)


class SessionState(enum.Enum):
    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"  # connection lost, session may still be alive
    LOST = "LOST"  # session expired: ephemerals and watches are gone


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    version: int
    czxid: int
    mzxid: int
    ephemeral_owner: int
    num_children: int
    ctime: int = 0  # creation time, ms since the epoch (ZooKeeper's clock)


WATCH_LOST = "WATCH_LOST"  # the connection dropped with the session alive: the watch is gone, treat it as fired


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # CREATED, DELETED, CHANGED, CHILD; NONE (the session ended); WATCH_LOST
    path: str | None


def dropped_watch_type(session_state: str) -> str:
    """What a watch that kazoo dropped (type NONE, with kazoo's ``KeeperState`` at the time) becomes:
    WATCH_LOST while the session lives (the connection is being re-established), NONE once it ended."""
    return "NONE" if session_state in ("EXPIRED_SESSION", "CLOSED", "AUTH_FAILED") else WATCH_LOST


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp

_TRANSLATE: tuple[tuple[type[BaseException], type[ZkError]], ...] = (
    (KazooNoNode, NoNodeError), (KazooNodeExists, NodeExistsError), (KazooBadVersion, BadVersionError),
    (KazooNotEmpty, NotEmptyError), (KazooSessionExpired, SessionExpiredError), (ConnectionLoss, ConnectionLossError),
    (KazooTimeoutError, ConnectionLossError), (KazooNoAuth, NoAuthError),
)


def translate(exc: BaseException) -> ZkError:
    for kazoo_type, ours in _TRANSLATE:
        if isinstance(exc, kazoo_type):
            return ours(str(exc) or kazoo_type.__name__)
    return ZkError(f"{type(exc).__name__}: {exc}")


def _stat(stat: Any) -> ZnodeStat:
    return ZnodeStat(stat.version, stat.czxid, stat.mzxid, stat.ephemeralOwner, stat.numChildren, stat.ctime)


DEFAULT_MAX_IN_FLIGHT = 50  # zookeeper.max.in.flight.requests when the caller names none


class ZkGateway(BatchCalls):
    """``digest``: ``user:password`` to authenticate with (ZooKeeper's digest scheme, ``addauth digest``);
    ``secure_acls``: ``zookeeper.set.acl`` -- every znode created through this gateway gets Kafka's secure
    ACLs (``paths.world_readable``), so a client without the credentials cannot change cluster state.
    ``max_in_flight_requests``: ``zookeeper.max.in.flight.requests``, how many requests a batch call
    (``get_many``, ``create_many``, ``fenced_multi_many``...: ``gateway_batch``) keeps in flight at once.
    ``tls``: connect over TLS (``brokers.zk.tls``; a tool's ``--zk-tls-config-file``); with a client
    certificate, that identity may own secure ACLs without ``digest``."""

    def __init__(self, connect: str, *, session_timeout_ms: int = 18000, connection_timeout_ms: int | None = None,
                 loop: asyncio.AbstractEventLoop | None = None, digest: str | None = None, secure_acls: bool = False,
                 max_in_flight_requests: int = DEFAULT_MAX_IN_FLIGHT, tls: ZkTls | None = None):
        if secure_acls and not digest and not (tls and tls.client_auth):
            raise ValueError("secure ZooKeeper ACLs need credentials to own them")
        if max_in_flight_requests < 1:
            raise ValueError("zookeeper.max.in.flight.requests must be at least 1")
        self.max_in_flight_requests = max_in_flight_requests  # the batch calls' window
        self.secure_acls = secure_acls
        self.connect_string = connect
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self._loop = loop
        self._listeners: list[Callable[[SessionState], None]] = []
        self.session_state: SessionState | None = None  # None until the first connection (set on kazoo's thread)
        self._loop_state: SessionState | None = None  # the same, as the event loop has seen it so far
        self._lost_watches: list[tuple[Callable[[WatchEvent], Any], WatchEvent]] = []  # until reconnected
        self.latency = LatencyHistogram(ZOOKEEPER_BUCKETS)  # every ZooKeeper round trip, seconds
        self._client = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000, connection_retry={"max_tries": -1, "max_delay": 1},
                                   command_retry={"max_tries": 0}, **kazoo_security(digest, tls))
        self._client.add_listener(self._on_state)

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect, creating the chroot if the connect string names one."""
        self._loop = self._loop or asyncio.get_running_loop()
        try:
            await asyncio.to_thread(self._start_quietly)
        except (KazooTimeoutError, KazooException) as exc:
            raise ConnectionLossError(
                f"could not connect to ZooKeeper at {self.connect_string} within {self.connection_timeout_ms} ms"
            ) from exc
        if self._client.chroot:
            await self.ensure_path("/")

    def _start_quietly(self) -> None:
        with warnings.catch_warnings():  # kazoo warns that a chroot is missing; start() creates it next
            warnings.filterwarnings("ignore", message="No chroot path exists")
            self._client.start(self.connection_timeout_ms / 1000)

    async def close(self) -> None:
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._client.stop()
        self._client.close()

    @property
    def session_id(self) -> int:
        client_id = self._client.client_id
        return client_id[0] if client_id else 0

    @property
    def connected(self) -> bool:
        return self._client.connected

    def add_listener(self, callback: Callable[[SessionState], None]) -> None:
        """``callback(state)`` runs on the event loop after every session state change."""
        self._listeners.append(callback)

    def _on_state(self, state: str) -> None:  # kazoo's thread
        ours = {KazooState.CONNECTED: SessionState.CONNECTED, KazooState.SUSPENDED: SessionState.SUSPENDED,
                KazooState.LOST: SessionState.LOST}[state]
        log.info("ZooKeeper session %s", ours.value)
        self.session_state = ours
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._on_loop_state, ours)
            for listener in list(self._listeners):
                self._loop.call_soon_threadsafe(listener, ours)

    def _on_loop_state(self, state: SessionState) -> None:
        """On the loop: once reconnected, the watches the connection loss dropped fire (WATCH_LOST); if
        the session is lost instead, they are told NONE (the session ended)."""
        self._loop_state = state
        if state is SessionState.SUSPENDED:
            return
        lost, self._lost_watches = self._lost_watches, []
        for callback, event in lost:
            try:
                callback(event if state is SessionState.CONNECTED else WatchEvent("NONE", event.path))
            except Exception:  # noqa: BLE001 - one watcher's failure must not cost the others their watch
                log.exception("watch callback for %s failed", event.path)

    def _hop(self, callback: Callable[[WatchEvent], Any] | None, path: str) -> Callable[[Any], None] | None:
        """A kazoo watch that runs ``callback`` on the event loop (a dropped one: see the module doc)."""
        if callback is None:
            return None
        loop = self._loop

        def watch(event: Any) -> None:
            if loop is None or loop.is_closed():
                return
            if str(event.type) == "NONE":
                dropped = WatchEvent(dropped_watch_type(str(event.state)), path)
                loop.call_soon_threadsafe(self._watch_dropped, callback, dropped)
            else:
                loop.call_soon_threadsafe(callback, WatchEvent(str(event.type), event.path))

        return watch

    def _watch_dropped(self, callback: Callable[[WatchEvent], Any], event: WatchEvent) -> None:
        """On the loop: a lost watch fires when the connection is back (now, if it already is)."""
        if event.type == WATCH_LOST and self._loop_state is not SessionState.CONNECTED:
            self._lost_watches.append((callback, event))
        else:
            callback(event)

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except (KazooException, KazooTimeoutError) as exc:
            raise translate(exc) from exc
        finally:
            self.latency.observe(time.perf_counter() - started)

    async def _read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A read survives a brief connection loss (a ZooKeeper leader change): it is retried until
        the session timeout, since reading twice is harmless. Writes are never retried blindly."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.session_timeout_ms / 1000
        delay = 0.05
        while True:
            try:
                return await self._call(fn, *args, **kwargs)
            except ConnectionLossError:
                if loop.time() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    # -- reads ---------------------------------------------------------------------------------
    async def get(self, path: str, watch: Callable[[WatchEvent], Any] | None = None) -> tuple[bytes, ZnodeStat]:
        data, stat = await self._read(self._client.get, path, watch=self._hop(watch, path))
        return data, _stat(stat)

    async def get_or_none(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return await self.get(path)
        except NoNodeError:
            return None

    async def get_children(self, path: str, watch: Callable[[WatchEvent], Any] | None = None) -> list[str]:
        return sorted(await self._read(self._client.get_children, path, watch=self._hop(watch, path)))

    async def exists(self, path: str, watch: Callable[[WatchEvent], Any] | None = None) -> ZnodeStat | None:
        stat = await self._read(self._client.exists, path, watch=self._hop(watch, path))
        return _stat(stat) if stat is not None else None

    # -- writes --------------------------------------------------------------------------------
    def _acl(self, path: str) -> list | None:
        """The ACL a created znode gets: ZooKeeper's open ACL (None: kazoo's default), or with
        ``zookeeper.set.acl`` the creator's identity only, plus world READ outside the sensitive roots."""
        if not self.secure_acls:
            return None
        return [CREATOR_ALL_ACL[0], READ_ACL_UNSAFE[0]] if world_readable(path) else list(CREATOR_ALL_ACL)

    async def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False,
                     makepath: bool = False) -> str:
        return await self._call(self._client.create, path, data, acl=self._acl(path), ephemeral=ephemeral,
                                sequence=sequential, makepath=makepath)

    async def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        return _stat(await self._call(self._client.set, path, data, version=version))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        await self._call(self._client.delete, path, version=version, recursive=recursive)

    async def ensure_path(self, path: str) -> None:
        await self._call(self._client.ensure_path, path, acl=self._acl(path))

    async def multi(self, ops: list[Op]) -> list[Any]:
        """Run ``ops`` atomically; results are created paths / ZnodeStats / True in op order.

        A failure raises MultiOpError naming the first failing op (the rest were rolled back).
        """
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(self._multi, ops)
        finally:
            self.latency.observe(time.perf_counter() - started)

    def _multi(self, ops: list[Op]) -> list[Any]:
        try:
            results = self._transaction(ops).commit()
        except (KazooException, KazooTimeoutError) as exc:
            raise translate(exc) from exc
        outcome = self._multi_results(results)
        if isinstance(outcome, MultiOpError):
            raise outcome
        return outcome

    def _transaction(self, ops: list[Op]) -> Any:
        transaction = self._client.transaction()
        for op in ops:
            if isinstance(op, CreateOp):
                transaction.create(op.path, op.data, acl=self._acl(op.path), ephemeral=op.ephemeral,
                                   sequence=op.sequential)
            elif isinstance(op, SetDataOp):
                transaction.set_data(op.path, op.data, version=op.version)
            elif isinstance(op, DeleteOp):
                transaction.delete(op.path, version=op.version)
            else:
                transaction.check(op.path, op.version)
        return transaction

    def _multi_results(self, results: list) -> list[Any] | MultiOpError:
        """A committed multi's results in our types, or the MultiOpError naming its first failing op."""
        for index, result in enumerate(results):
            if isinstance(result, BaseException) and not isinstance(result, RolledBackError):
                return MultiOpError(index, translate(result))
        return [_stat(r) if hasattr(r, "czxid") else r for r in results]

    # -- what the batch calls (gateway_batch.BatchCalls) use -----------------------------------
    def _translate(self, exc: BaseException) -> ZkError:
        return translate(exc)

    def _stat_of(self, stat: Any) -> ZnodeStat:
        return _stat(stat)

    def _check_op(self, path: str, version: int) -> CheckOp:
        return CheckOp(path, version)

    async def fenced_multi(self, epoch_zk_version: int, ops: list[Op]) -> list[Any]:
        """A controller write: ``ops`` apply only while ``/controller_epoch`` still has the version this
        controller got when it was elected; otherwise ControllerMovedError (the caller resigns)."""
        try:
            return (await self.multi([CheckOp(ControllerEpochZNode.PATH, epoch_zk_version), *ops]))[1:]
        except MultiOpError as exc:
            if exc.index == 0:
                raise ControllerMovedError(
                    f"/controller_epoch is no longer at version {epoch_zk_version}: another controller was elected"
                ) from exc
            raise MultiOpError(exc.index - 1, exc.cause) from exc
