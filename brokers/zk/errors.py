"""ZooKeeper errors in our own types, so that callers never import kazoo (only brokers.zk does)."""
from __future__ import annotations


class ZkError(Exception):
    """Any ZooKeeper failure."""


class NoNodeError(ZkError):
    pass


class NodeExistsError(ZkError):
    pass


class BadVersionError(ZkError):
    """A conditional write met a different znode version: someone else wrote first."""


class NotEmptyError(ZkError):
    pass


class NoAuthError(ZkError):
    """The znode's ACL does not let this session do that (``zookeeper.set.acl`` and no credentials)."""


class ConnectionLossError(ZkError):
    """The connection dropped; the operation may or may not have been applied."""


class SessionExpiredError(ZkError):
    """The session is gone, and with it every ephemeral node it owned."""


class ControllerMovedError(ZkError):
    """A fenced write failed its ``/controller_epoch`` check: another controller has been elected."""


class MultiOpError(ZkError):
    """One operation of a multi failed (the whole multi was rolled back)."""

    def __init__(self, index: int, cause: ZkError):
        super().__init__(f"operation {index} of the multi failed: {cause!r}")
        self.index = index
        self.cause = cause
