"""What the HTTP layer needs of the broker it serves: ``HttpBroker``.

The composition root hands its ``brokers.app.BrokerServer`` to ``brokers.http.server.HttpServer``; that
class satisfies ``HttpBroker`` structurally (nothing here imports it, nor the controller or the group
coordinator behind it). Members are read-only properties, so a broker may hold a narrower or a richer
type than the one named here (``KafkaController`` for ``ControllerView``).
"""
from __future__ import annotations

from typing import Protocol

from brokers.control import ControlRequestHandler
from brokers.quotas.manager import QuotaManagers
from brokers.replication.metadata_cache import MetadataCache
from brokers.replication.replica_manager import ReplicaManager
from brokers.stats import BrokerStats, LatencyHistogram
from brokers.zk.client import KafkaZkClient
from brokers.zk.gateway import SessionState


class ZkSessionView(Protocol):
    """The broker's ZooKeeper session, as /readyz and /metrics see it."""

    @property
    def connected(self) -> bool: ...

    @property
    def session_state(self) -> SessionState | None: ...

    @property
    def latency(self) -> LatencyHistogram: ...


class ControllerEpochView(Protocol):
    @property
    def epoch(self) -> int: ...


class ControllerView(Protocol):
    """This broker's controller candidate: whether it is the active controller, and its epoch."""

    @property
    def is_active(self) -> bool: ...

    @property
    def context(self) -> ControllerEpochView: ...


class GroupCoordinatorView(Protocol):
    @property
    def rebalances(self) -> int:
        """Rebalances this coordinator started."""


class BrokerState(Protocol):
    """What the admin API, /metrics, the REST proxy and the cluster reader read of the broker."""

    @property
    def broker_id(self) -> int: ...

    @property
    def broker_epoch(self) -> int: ...

    @property
    def cluster_id(self) -> str | None: ...

    @property
    def metadata_cache(self) -> MetadataCache: ...

    @property
    def replica_manager(self) -> ReplicaManager | None: ...

    @property
    def group_coordinator(self) -> GroupCoordinatorView: ...

    @property
    def controller(self) -> ControllerView | None: ...

    @property
    def kzc(self) -> KafkaZkClient: ...

    @property
    def zk(self) -> ZkSessionView: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def shutting_down(self) -> bool: ...

    @property
    def quotas(self) -> QuotaManagers:
        """The client quota managers (configured entities, sensors): read by /metrics, /api/v1/quotas and the
        dashboard's quota panel (``brokers.http.quota_views``), never changed here."""

    def group_views(self) -> list[dict]:
        """The groups this broker coordinates, as ``consumer_group.coordinator.views.group_view`` shows
        them (the composition root wires that in: the HTTP layer does not import consumer_group)."""

    def transaction_view(self) -> dict:
        """This broker's transaction coordinator as its ``describe()`` shows it (the transactions of the
        ``__transaction_state`` partitions it leads, the markers written, the aborts by timeout); ``{}``
        without one. The composition root wires it in: the HTTP layer does not import transactions."""


class HttpBroker(BrokerState, ControlRequestHandler, Protocol):
    """The broker behind the HTTP server: the control plane's handler (``health`` included) and its state."""
