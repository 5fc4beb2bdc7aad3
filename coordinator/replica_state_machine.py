"""Replica states and their legal moves (pure): Kafka's ``ReplicaStateMachine`` bookkeeping.

A replica is one partition on one broker. A move to a state is legal only from one of that state's
valid previous states, exactly as Kafka 2.8 (``ReplicaStateMachine.scala``) declares them:

| target                     | valid previous states                                               |
|----------------------------|---------------------------------------------------------------------|
| NewReplica                 | NonExistentReplica                                                  |
| OnlineReplica              | NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible |
| OfflineReplica             | NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible |
| ReplicaDeletionStarted     | OfflineReplica                                                      |
| ReplicaDeletionSuccessful  | ReplicaDeletionStarted                                              |
| ReplicaDeletionIneligible  | OfflineReplica, ReplicaDeletionStarted                              |
| NonExistentReplica         | ReplicaDeletionSuccessful                                           |

Topic deletion walks OfflineReplica (StopReplica delete=false) -> ReplicaDeletionStarted
(StopReplica delete=true) -> ReplicaDeletionSuccessful -> NonExistentReplica; a replica whose
deletion fails, or whose broker is down, is ReplicaDeletionIneligible until it can be retried.
The actions that go with each move live in the controller; this module only records states.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from brokers.model import TopicPartition
from coordinator.partition_state_machine import IllegalStateTransition, StateMap


@dataclass(frozen=True, order=True, slots=True)
class PartitionAndReplica:
    """Replica ``replica`` (a broker id) of ``topic_partition``."""

    topic_partition: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"[Topic={self.topic_partition.topic},Partition={self.topic_partition.partition},Replica={self.replica}]"


class ReplicaState(Enum):
    """Kafka's replica states; values are Kafka's state bytes."""

    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7


_S = ReplicaState
VALID_PREVIOUS_REPLICA_STATES: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    _S.NewReplica: frozenset({_S.NonExistentReplica}),
    _S.OnlineReplica: frozenset({_S.NewReplica, _S.OnlineReplica, _S.OfflineReplica, _S.ReplicaDeletionIneligible}),
    _S.OfflineReplica: frozenset({_S.NewReplica, _S.OnlineReplica, _S.OfflineReplica, _S.ReplicaDeletionIneligible}),
    _S.ReplicaDeletionStarted: frozenset({_S.OfflineReplica}),
    _S.ReplicaDeletionSuccessful: frozenset({_S.ReplicaDeletionStarted}),
    _S.ReplicaDeletionIneligible: frozenset({_S.OfflineReplica, _S.ReplicaDeletionStarted}),
    _S.NonExistentReplica: frozenset({_S.ReplicaDeletionSuccessful}),
}
del _S


def check_replica_transition(current: ReplicaState, target: ReplicaState, key: object = "replica") -> None:
    """Raise :class:`IllegalStateTransition` unless ``current -> target`` is a legal replica move."""
    valid = VALID_PREVIOUS_REPLICA_STATES[target]
    if current not in valid:
        raise IllegalStateTransition(key, current, target, valid)


check_transition = check_replica_transition
"""Same name as ``partition_state_machine.check_transition``, for callers that import by module."""


class ReplicaStates(StateMap[PartitionAndReplica, ReplicaState]):
    """Every replica's :class:`ReplicaState`; unknown replicas are NonExistentReplica.

    ``transition(replicas, target)`` is atomic: an illegal move for any replica raises
    :class:`IllegalStateTransition` and changes nothing.
    """

    def __init__(self) -> None:
        super().__init__(ReplicaState.NonExistentReplica, VALID_PREVIOUS_REPLICA_STATES)

    def replicas_of(self, tp: TopicPartition) -> list[PartitionAndReplica]:
        """Recorded replicas of ``tp``, sorted by broker id."""
        return sorted(r for r in self if r.topic_partition == tp)


__all__ = [
    "IllegalStateTransition",
    "PartitionAndReplica",
    "ReplicaState",
    "ReplicaStates",
    "VALID_PREVIOUS_REPLICA_STATES",
    "check_replica_transition",
    "check_transition",
]
