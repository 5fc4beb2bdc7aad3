"""The types of what KafkaController hands its managers at construction (typing only).

The managers (TopicDeletionManager, PartitionReassignments, ReplicaLeaderElections, the topic-change
processor) get the pieces they use passed in, the way Kafka's controller passes its context, request
batch and state machines to them; none of them sees the controller itself.
"""
from __future__ import annotations

from typing import Callable, Protocol

from coordinator.event_manager import EventFor, WatchCallback
from coordinator.events import ControllerEvent

Enqueue = Callable[[ControllerEvent], None]  # ControllerEventManager.put
IsActive = Callable[[], bool]  # whether this broker is the active controller, asked when it matters


class WatchFactory(Protocol):
    """ControllerEventManager.watch: a ZooKeeper watch callback that enqueues a controller event."""

    def __call__(self, event: ControllerEvent | EventFor) -> WatchCallback: ...


class AutoRebalanceConfig(Protocol):
    """The settings of the auto leader rebalance (a ControllerConfig has them)."""

    @property
    def auto_leader_rebalance_enable(self) -> bool: ...

    @property
    def leader_imbalance_check_interval_seconds(self) -> float: ...

    @property
    def leader_imbalance_per_broker_percentage(self) -> int: ...
