"""Controller events (Kafka's ControllerEvent family). Everything the controller reacts to, from
ZooKeeper watches, the control plane or its own timers, is one of these on one queue."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Startup:
    pass


@dataclass(frozen=True)
class Reelect:
    """``/controller`` was created, changed or deleted."""


@dataclass(frozen=True)
class Expire:
    """The ZooKeeper session expired: resign at once."""


@dataclass(frozen=True)
class RegisterBrokerAndReelect:
    """A new session is up (the broker re-registered): try to become controller again."""


@dataclass(frozen=True)
class BrokerChange:
    pass


@dataclass(frozen=True)
class TopicChange:
    pass


@dataclass(frozen=True)
class TopicDeletion:
    pass


@dataclass(frozen=True)
class PartitionModifications:
    """``/brokers/topics/<topic>`` changed (its data watch): partitions may have been added."""

    topic: str


@dataclass(frozen=True)
class IsrChangeNotification:
    pass


@dataclass(frozen=True)
class LogDirEventNotification:
    """``/log_dir_event_notification`` children changed: a broker's log dir failed (KIP-112)."""


@dataclass(frozen=True)
class LeaderAndIsrResponseReceived:
    """A broker answered LeaderAndIsr with per-partition errors (KAFKA_STORAGE_ERROR: an offline log dir)."""

    broker_id: int
    errors: tuple[tuple[str, int, int], ...]
    error_code: int


@dataclass(frozen=True)
class TopicConfigChange:
    """A topic's config overrides changed (``/config/changes``, seen by this broker's listener)."""
    topic: str
    config: dict = field(compare=False)


@dataclass(frozen=True)
class StopReplicaResponseReceived:
    broker_id: int
    errors: tuple[tuple[str, int, int], ...]
    error_code: int


@dataclass
class ControlledShutdown:
    broker_id: int
    broker_epoch: int
    result: asyncio.Future = field(compare=False)


@dataclass
class ApiPartitionReassignment:
    """AlterPartitionReassignments: ``{tp: target replicas, or None to cancel}``; the future gets
    ``{tp: (error code, message)}`` (or an ErrorCode for the whole request: NOT_CONTROLLER)."""

    reassignments: dict
    result: asyncio.Future = field(compare=False)


@dataclass
class ListPartitionReassignments:
    """ListPartitionReassignments: ``partitions`` None = every one being reassigned."""

    partitions: list | None
    result: asyncio.Future = field(compare=False)


@dataclass(frozen=True)
class ZkPartitionReassignment:
    """``/admin/reassign_partitions`` was created (``created``) or otherwise touched (re-arm the watch)."""

    created: bool = True


@dataclass(frozen=True)
class PartitionReassignmentIsrChange:
    """The state znode of a partition under reassignment changed: maybe its targets are all in the ISR."""

    topic: str
    partition: int


@dataclass
class ReplicaLeaderElection:
    """Elect leaders (Kafka's ReplicaLeaderElection). ``partitions`` None: the ones named in
    ``/admin/preferred_replica_election`` (its watch fired, or failover). Otherwise an ElectLeaders
    request: ``election_type`` 0 PREFERRED / 1 UNCLEAN, and ``result`` gets
    ``{TopicPartition: (error code, message, elected leader or -1)}``."""

    election_type: int = 0
    partitions: frozenset | None = None
    result: asyncio.Future | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AutoPreferredReplicaLeaderElection:
    """The auto leader-rebalance timer fired (``auto.leader.rebalance.enable``); ``epoch`` is the
    controller epoch that scheduled it, so a timer from an earlier term is ignored."""

    epoch: int


@dataclass(frozen=True)
class ShutdownEventThread:
    pass


ControllerEvent = (Startup | Reelect | Expire | RegisterBrokerAndReelect | BrokerChange | TopicChange | TopicDeletion
                   | PartitionModifications | IsrChangeNotification | TopicConfigChange | StopReplicaResponseReceived
                   | LogDirEventNotification | LeaderAndIsrResponseReceived
                   | ControlledShutdown
                   | ApiPartitionReassignment | ListPartitionReassignments | ZkPartitionReassignment
                   | PartitionReassignmentIsrChange | ReplicaLeaderElection | AutoPreferredReplicaLeaderElection
                   | ShutdownEventThread)
