"""Partition states and their legal moves (pure): Kafka's ``PartitionStateMachine`` bookkeeping.

``NonExistent -> New -> Online <-> Offline -> NonExistent`` (reference §2.4). A move to a state is
legal only from one of that state's valid previous states, exactly as Kafka 2.8 declares them:

| target      | valid previous states   |
|-------------|-------------------------|
| New         | NonExistent             |
| Online      | New, Online, Offline    |
| Offline     | New, Online, Offline    |
| NonExistent | Offline                 |

Online -> Online is legal: it is how a leader is re-elected (preferred election, controlled shutdown,
reassignment). The actions that go with each move (elections, ZooKeeper writes, requests to brokers)
live in ``coordinator.leadership``; this module only records states and refuses illegal moves.

:class:`StateMap` is the generic, atomic store that both this module and
``coordinator.replica_state_machine`` use.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Generic, TypeVar

from brokers.model import TopicPartition


class IllegalStateTransition(Exception):
    """A move a state machine does not allow; ``key`` is the partition (or replica) concerned."""

    def __init__(self, key: object, current: Enum, target: Enum, valid_previous: Iterable[Enum]) -> None:
        allowed = ", ".join(sorted(s.name for s in valid_previous))
        super().__init__(f"{key}: illegal state transition from {current.name} to {target.name} "
                         f"({target.name} may only be entered from: {allowed})")
        self.key = key
        self.current = current
        self.target = target


class PartitionState(Enum):
    """Kafka's partition states; values are Kafka's state bytes."""

    New = 0
    Online = 1
    Offline = 2
    NonExistent = 3


VALID_PREVIOUS_PARTITION_STATES: Mapping[PartitionState, frozenset[PartitionState]] = {
    PartitionState.New: frozenset({PartitionState.NonExistent}),
    PartitionState.Online: frozenset({PartitionState.New, PartitionState.Online, PartitionState.Offline}),
    PartitionState.Offline: frozenset({PartitionState.New, PartitionState.Online, PartitionState.Offline}),
    PartitionState.NonExistent: frozenset({PartitionState.Offline}),
}


def check_transition(current: PartitionState, target: PartitionState, key: object = "partition") -> None:
    """Raise :class:`IllegalStateTransition` unless ``current -> target`` is a legal partition move."""
    valid = VALID_PREVIOUS_PARTITION_STATES[target]
    if current not in valid:
        raise IllegalStateTransition(key, current, target, valid)


K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound=Enum)


class StateMap(Generic[K, S]):
    """Current state per key, changed only through legal moves.

    A key never seen (or moved to the initial state) reads as ``initial`` and is not stored, so the
    map does not grow with deleted partitions. :meth:`transition` is atomic: when any requested
    move is illegal it raises and changes nothing.
    """

    def __init__(self, initial: S, valid_previous: Mapping[S, frozenset[S]]) -> None:
        self._initial = initial
        self._valid_previous = valid_previous
        self._states: dict[K, S] = {}

    def get(self, key: K) -> S:
        """The state of ``key``; the initial state if it has none recorded."""
        return self._states.get(key, self._initial)

    def set_initial(self, key: K, state: S) -> None:
        """Record ``state`` without checks: the controller's failover initialisation from ZooKeeper."""
        self._put(key, state)

    def transition(self, keys: Iterable[K], target: S) -> list[K]:
        """Move every key in ``keys`` to ``target``; return those whose state changed, in input order.

        Legal self-moves (Online -> Online) are accepted and not listed. Duplicates count once.
        If any move is illegal, :class:`IllegalStateTransition` is raised for the first one and no
        key changes state.
        """
        unique = list(dict.fromkeys(keys))
        valid = self._valid_previous[target]
        for key in unique:
            current = self.get(key)
            if current not in valid:
                raise IllegalStateTransition(key, current, target, valid)
        moved = [key for key in unique if self.get(key) is not target]
        for key in unique:
            self._put(key, target)
        return moved

    def in_state(self, state: S) -> list[K]:
        """Keys recorded in ``state`` (never lists the initial state's unrecorded keys), in insertion order."""
        return [key for key, current in self._states.items() if current is state]

    def remove(self, key: K) -> None:
        """Forget ``key`` (it reads as the initial state again)."""
        self._states.pop(key, None)

    def clear(self) -> None:
        self._states.clear()

    def _put(self, key: K, state: S) -> None:
        if state is self._initial:
            self._states.pop(key, None)
        else:
            self._states[key] = state

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._states))

    def __len__(self) -> int:
        return len(self._states)

    def items(self) -> list[tuple[K, S]]:
        return list(self._states.items())


class PartitionStates(StateMap[TopicPartition, PartitionState]):
    """Every partition's :class:`PartitionState`; unknown partitions are NonExistent."""

    def __init__(self) -> None:
        super().__init__(PartitionState.NonExistent, VALID_PREVIOUS_PARTITION_STATES)


__all__ = [
    "IllegalStateTransition",
    "PartitionState",
    "PartitionStates",
    "StateMap",
    "VALID_PREVIOUS_PARTITION_STATES",
    "check_transition",
]
