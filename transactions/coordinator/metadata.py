"""A transactional id's metadata (Kafka's ``TransactionMetadata``) and its pure transitions.

A change is made in two steps, around the write of its record to ``__transaction_state``:
``prepare_*`` checks the move against the table of legal moves (``state.VALID_PREVIOUS_STATES``), marks it
``pending_state`` and returns the target as a ``TxnTransitMetadata`` (what the record says); once the record is
replicated, ``complete_transition_to`` applies it (or the pending state is dropped when the write failed).
Invariants: at most one transition is pending; a pending transition blocks every other one; producer epochs are
never negative and never reach Short.MAX (``is_epoch_exhausted`` at Short.MAX - 1 leaves room to fence).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from brokers.model import TopicPartition
from brokers.protocol.errors import ErrorCode
from transactions.coordinator.state import VALID_PREVIOUS_STATES, TransactionState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767
S = TransactionState


class IllegalTransitionError(RuntimeError):
    """A transition the table or the metadata forbids: a coordinator bug, never a client's error."""


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """No more epochs for this producer id: the last one is kept for fencing."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The target of one transition: the metadata as its ``__transaction_state`` record states it."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TransactionState = S.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    # a fence whose record was never written: the epoch was bumped in memory but not returned to anyone, so
    # the next fence reuses it rather than bumping again
    has_failed_epoch_fence: bool = False

    # -- questions ---------------------------------------------------------------------------------------
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # -- prepare -----------------------------------------------------------------------------------------
    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The metadata as it is, without marking anything pending."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Ongoing -> PrepareEpochFence with the epoch bumped (not again after a failed fence)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransitionError("cannot fence a producer whose epoch is Short.MAX")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), self.txn_start_timestamp, self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata | ErrorCode:
        """-> Empty with the next epoch (InitProducerId). KIP-360: a producer naming its epoch bumps it when it is
        the current one, gets the current one back when it names the previous one (a retry), else PRODUCER_FENCED."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(f"no producer epoch left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_producer_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(S.EMPTY, self.producer_id, epochs[0], epochs[1], new_txn_timeout_ms, frozenset(), -1,
                             now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """-> Empty with a new producer id at epoch 0 (the old id's epochs are exhausted)."""
        if self.has_pending_transaction:
            raise IllegalTransitionError("cannot rotate the producer id while a transaction is pending")
        last_epoch = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(S.EMPTY, new_producer_id, 0, last_epoch, new_txn_timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int) -> TxnTransitMetadata:
        """-> Ongoing with ``added``; a new transaction starts now."""
        starts = self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions | added),
                             now_ms if starts else self.txn_start_timestamp, now_ms)

    def prepare_abort_or_commit(self, new_state: TransactionState, now_ms: int) -> TxnTransitMetadata:
        """-> PrepareCommit / PrepareAbort (EndTxn, or an abort by the coordinator)."""
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions), self.txn_start_timestamp, now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort (the markers are written)."""
        new_state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        return self._prepare(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, now_ms)

    def prepare_dead(self) -> TxnTransitMetadata:
        """-> Dead: the id expired; its tombstone is being written."""
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def _prepare(self, new_state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start_ms: int, now_ms: int) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(f"{self.transactional_id}: preparing {new_state.kafka_name} while "
                                         f"{self.pending_state.kafka_name} is pending")
        if producer_id < 0 or epoch < 0:
            raise IllegalTransitionError(f"illegal producer id {producer_id} / epoch {epoch}")
        if self.state not in VALID_PREVIOUS_STATES[new_state]:
            raise IllegalTransitionError(f"{self.transactional_id}: {self.state.kafka_name} -> "
                                         f"{new_state.kafka_name} is not a legal move")
        self.pending_state = new_state
        return TxnTransitMetadata(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, new_state,
                                  partitions, start_ms, now_ms)

    # -- complete ----------------------------------------------------------------------------------------
    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply ``transit`` (its record is replicated): it must be the pending move and agree with the metadata."""
        if self.pending_state is None or self.pending_state != transit.txn_state:
            self._fail(transit)
        target = transit.txn_state
        if target == S.EMPTY:
            same_or_bump = transit.producer_epoch == self.producer_epoch or self._valid_epoch_bump(transit)
            if not same_or_bump or transit.topic_partitions or transit.txn_start_timestamp != -1:
                self._fail(transit)
            self.txn_timeout_ms, self.producer_epoch = transit.txn_timeout_ms, transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id, self.last_producer_id = transit.producer_id, transit.last_producer_id
        elif target == S.ONGOING:
            if (not self._same_producer(transit) or not self.topic_partitions <= transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._fail(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions |= transit.topic_partitions
        elif target in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            if (not self._same_producer(transit) or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or self.txn_start_timestamp != transit.txn_start_timestamp):
                self._fail(transit)
        elif target in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):
            if (not self._same_producer(transit) or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_timestamp == -1):
                self._fail(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        else:  # PrepareEpochFence is never written (it becomes PrepareAbort); Dead is removed, never applied
            self._fail(transit)
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = target

    def _same_producer(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _fail(self, transit: TxnTransitMetadata) -> None:
        raise IllegalTransitionError(f"{self.transactional_id}: cannot complete the transition to {transit} from "
                                     f"{self.state.kafka_name} (pending {self.pending_state})")

