"""Partition reassignment decisions (KIP-455), pure: data in, data out.

Kafka 2.4+'s rules from ``KafkaController``:

- a target replica list is valid when it is not empty, has no duplicates, no negative ids, and every
  replica it *adds* (target minus the original replicas) is a live broker (``validate_target``);
- a request for a partition builds the assignment to move to (``build_reassignment``): a target
  reassigns from the *original* replicas (a reassignment of a partition already moving starts over
  from its origin, not from the union); ``None`` cancels, reverting a running reassignment to its
  original replicas, and is NO_REASSIGNMENT_IN_PROGRESS for a partition that is not moving;
- a reassignment is complete when every target replica is in the ISR (``is_complete``); only then are
  the removed replicas dropped, so the partition never has fewer in-sync copies than it started with;
- during a move the leader stays if it is a target replica and alive, otherwise the first target
  replica that is live and in the ISR leads (``coordinator.leader_election.reassign_election``).
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from brokers.model import ReplicaAssignment
from brokers.protocol.errors import ErrorCode

Error = tuple[ErrorCode, str]


def validate_target(target: Sequence[int], current: ReplicaAssignment, live: Collection[int]) -> Error | None:
    """Kafka's ``validateReplicas``: None when ``target`` may be reassigned to, else the error."""
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica ids in partition reassignment replica list: {list(target)}")
    if any(r < 0 for r in target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {list(target)}"
    adding = current.reassign_to(tuple(target)).adding
    if not set(adding) <= set(live):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
                f"live broker list: {sorted(live)}")
    return None


def build_reassignment(current: ReplicaAssignment, target: Sequence[int] | None) -> ReplicaAssignment | None:
    """Kafka's ``maybeBuildReassignment``: the assignment to move to, or None when there is nothing to
    cancel. A running reassignment with ``target`` None reverts to its origin replicas."""
    if current.is_being_reassigned:
        return current.reassign_to(tuple(target) if target is not None else current.origin_replicas)
    if target is None:
        return None
    return current.reassign_to(tuple(target))


def is_complete(assignment: ReplicaAssignment, isr: Collection[int]) -> bool:
    """Every target replica is in the ISR: the removed replicas may go."""
    return set(assignment.target_replicas) <= set(isr)


def completed(assignment: ReplicaAssignment) -> ReplicaAssignment:
    """The assignment once the move is done: RS = target, nothing adding or removing."""
    return ReplicaAssignment(assignment.target_replicas)


def leader_must_move(leader: int, assignment: ReplicaAssignment, live: Collection[int]) -> bool:
    """At completion: a new leader is elected from the targets unless the current one is a live target."""
    return leader not in assignment.target_replicas or leader not in live


__all__ = ["build_reassignment", "completed", "is_complete", "leader_must_move", "validate_target"]
