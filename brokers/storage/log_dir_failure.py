"""LogDirFailureChannel: which of ``log.dirs`` are offline, and how an I/O error takes one offline (KIP-112).

Any ``OSError`` raised by a log's I/O (append, flush, roll, index or checkpoint write, segment deletion,
recovery) is caught at the storage boundary by ``guarded`` or ``storage_call``: the log's dir is marked
offline once (``maybe_add_offline_log_dir``), and the caller gets a ``KafkaStorageError`` (error code
56, KAFKA_STORAGE_ERROR). From then on every guarded operation on a log of that dir fails at once,
before touching a file: nothing more is read from or written to an offline dir. A full disk
(ENOSPC) is just another OSError.

The channel is shared by the log manager's threads (scheduler, ``to_thread`` work) and the event
loop; it is thread-safe. Listeners are called once per dir, on the thread that saw the error: the
broker hands them to its event loop (``ReplicaManager.handle_log_dir_failure``).
"""
from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path
from typing import Callable, TypeVar

from brokers.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

T = TypeVar("T")


class KafkaStorageError(KafkaError):
    """A log's dir is offline (or just went offline): the client sees KAFKA_STORAGE_ERROR (56)."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class LogRetiredError(KafkaStorageError):
    """The log was replaced (its replica moved to another log dir): a late task on it does nothing, and its
    dir stays online."""


class LogDirFailureChannel:
    """The set of offline log dirs; ``add_listener(callback)`` hears ``callback(dir)`` once per dir."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}  # dir -> the first error's message
        self._listeners: list[Callable[[Path], None]] = []

    def add_listener(self, callback: Callable[[Path], None]) -> None:
        self._listeners.append(callback)

    def maybe_add_offline_log_dir(self, log_dir: Path, message: str, exc: BaseException | None = None) -> bool:
        """Mark ``log_dir`` offline; True the first time (the listeners then run), False after."""
        key = Path(log_dir)
        with self._lock:
            if key in self._offline:
                return False
            self._offline[key] = f"{message}: {exc}" if exc is not None else message
        log.error("log dir %s is offline: %s", key, self._offline[key], exc_info=exc)
        for listener in list(self._listeners):
            try:
                listener(key)
            except Exception:  # noqa: BLE001 - a listener's bug must not hide the failure from the others
                log.exception("log dir failure listener failed for %s", key)
        return True

    def is_offline(self, log_dir: Path) -> bool:
        return Path(log_dir) in self._offline

    def offline_dirs(self) -> list[Path]:
        with self._lock:
            return sorted(self._offline)

    def reason(self, log_dir: Path) -> str | None:
        return self._offline.get(Path(log_dir))

    def check_online(self, log_dir: Path, what: str) -> None:
        """KafkaStorageError if ``log_dir`` (a Path) is offline."""
        if self._offline and log_dir in self._offline:
            raise KafkaStorageError(f"{what}: log dir {log_dir} is offline")

    def call(self, log_dir: Path, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` on ``log_dir``: refused when the dir is offline; an OSError takes the dir offline
        and comes out as KafkaStorageError."""
        self.check_online(log_dir, what)
        try:
            return fn()
        except KafkaStorageError:
            raise
        except OSError as exc:
            raise self.failed(log_dir, what, exc) from exc

    def failed(self, log_dir: Path, what: str, exc: OSError) -> KafkaStorageError:
        """Take ``log_dir`` offline for ``exc`` (seen while ``what``); the error to raise to the caller."""
        self.maybe_add_offline_log_dir(log_dir, f"error while {what}", exc)
        return KafkaStorageError(f"error while {what} in {log_dir}: {exc}")


def guarded(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Method decorator for objects with ``failure_channel`` (None: unguarded) and ``log_dir``: refused
    while the dir is offline, an OSError takes the dir offline (``LogDirFailureChannel.call``, with the
    message built only on failure: this is every append's and read's path). A ``retired`` object (a log
    replaced by its copy in another dir) refuses with LogRetiredError, its dir staying online."""
    def decorate(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def run(self, *args, **kwargs) -> T:
            if getattr(self, "retired", False):  # moved to another dir (log_dir_moves.py): its files are going
                raise LogRetiredError(f"{what} {self!r}: the log was replaced by its copy in another log dir")
            channel = self.failure_channel
            if channel is None:
                return method(self, *args, **kwargs)
            channel.check_online(self.log_dir, what)
            try:
                return method(self, *args, **kwargs)
            except KafkaStorageError:
                raise
            except OSError as exc:
                raise channel.failed(self.log_dir, f"{what} {self!r}", exc) from exc
        return run
    return decorate
