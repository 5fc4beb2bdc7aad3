"""Group states and the legal moves between them (Kafka's ``GroupState``, reference §5.2).

==================== ================================================================= =====================
state                what it means                                                      entered from
==================== ================================================================= =====================
Empty                no members; offsets may remain. New members may join; simple      PreparingRebalance
                     consumers (generation -1) may commit
PreparingRebalance   collecting JoinGroups until every known member rejoined or the    Stable, Completing-
                     rebalance timeout fires; heartbeats answer REBALANCE_IN_PROGRESS   Rebalance, Empty
CompletingRebalance  join answered, waiting for the leader's SyncGroup (the           PreparingRebalance
                     assignment); followers' SyncGroups are parked
Stable               assignment handed out; members heartbeat                          CompletingRebalance
Dead                 being removed (offsets expired, group deleted, coordinator moved)  any state
==================== ================================================================= =====================

``VALID_PREVIOUS_STATES`` is the whole table; ``check_transition`` is the only way a group changes state.
"""
from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A move the table does not allow: a coordinator bug, never a client's fault."""


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"group {group_id}: illegal transition {current} -> {target}")


def can_rebalance(state: GroupState) -> bool:
    """Whether a rebalance may start from ``state`` (Kafka's ``canRebalance``)."""
    return state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]
