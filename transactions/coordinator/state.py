"""A transactional id's state (Kafka's ``TransactionState``) and the table of legal moves between states.

The byte of each state is what ``TransactionLogValue.TransactionStatus`` stores; the name is what
ListTransactions / DescribeTransactions answer (KIP-664). A transition is legal when the current state is one
of the new state's ``VALID_PREVIOUS_STATES`` (Kafka's ``TransactionMetadata.validPreviousStates``).
"""
from __future__ import annotations

from enum import IntEnum


class TransactionState(IntEnum):
    EMPTY = 0  # no transaction yet (after InitProducerId) -> Ongoing on AddPartitions / AddOffsets
    ONGOING = 1  # partitions added -> PrepareCommit / PrepareAbort on EndTxn
    PREPARE_COMMIT = 2  # the commit decided, markers being written -> CompleteCommit
    PREPARE_ABORT = 3  # the abort decided, markers being written -> CompleteAbort
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6  # the transactional id expired; only ever pending, then removed from the cache
    PREPARE_EPOCH_FENCE = 7  # bumping the epoch to fence a producer before aborting its transaction; only pending

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        """May an id idle in this state be expired (Kafka's ``isExpirationAllowed``)."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_byte(cls, value: int) -> "TransactionState":
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown transaction state byte {value}") from None

    @classmethod
    def from_name(cls, name: str) -> "TransactionState | None":
        return _BY_NAME.get(name)


_NAMES = {
    TransactionState.EMPTY: "Empty", TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit", TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit", TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead", TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

_S = TransactionState
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_valid_transition(old: TransactionState, new: TransactionState) -> bool:
    return old in VALID_PREVIOUS_STATES[new]
