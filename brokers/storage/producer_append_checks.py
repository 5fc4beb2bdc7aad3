"""The checks of one leader append against a producer's state (Kafka's ``ProducerAppendInfo``), pure:
the int32 sequence ring, the epoch and sequence rules (``check_sequence``) and KIP-890's verification
guard (``VerificationGuard``, ``verification_missing``). ``producer_state.py`` applies them.

Epoch and sequence rules (Kafka 2.8): a batch whose epoch equals the stored one and whose (first,
last) sequence equals a retained batch's is a duplicate (producer_state.py finds it first); otherwise
an epoch below the stored one is INVALID_PRODUCER_EPOCH, a higher epoch must start at sequence 0 and
the same epoch must continue at last sequence + 1 (0 after INT32_MAX), else
OUT_OF_ORDER_SEQUENCE_NUMBER. A producer id without state may start at any sequence: since Kafka 2.5
(KIP-360) brokers no longer answer UNKNOWN_PRODUCER_ID, since the state of a live producer can be
lost to retention (as in Kafka, that holds for the rest of the append too).

Invariants: sequences live on ``[0, INT32_MAX]`` and ``INT32_MAX + 1`` wraps to 0; a
``VerificationGuard`` is compared by identity only, and ``SENTINEL_VERIFICATION_GUARD`` never
matches a registered guard.
"""
from __future__ import annotations

from brokers.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from brokers.storage.segment import INT32_MAX


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` on Kafka's int32 sequence ring (INT32_MAX + 1 wraps to 0)."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


def check_sequence(producer_id: int, current: tuple[int, int] | None, epoch: int, first_seq: int) -> None:
    """Kafka 2.8's checkProducerEpoch + checkSequence for a leader append. ``current`` is the
    producer's (epoch, last sequence) so far, None for a producer id without state."""
    if current is None:
        return  # KIP-360: any first sequence from an unknown producer id
    current_epoch, last_seq = current
    if epoch < current_epoch:
        raise InvalidProducerEpochError(
            f"producer {producer_id} has epoch {epoch}, older than the partition's {current_epoch}")
    if epoch != current_epoch:
        if first_seq != 0:
            raise OutOfOrderSequenceError(
                f"producer {producer_id} starts new epoch {epoch} at sequence {first_seq}, not 0")
    elif not in_sequence(last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"producer {producer_id} epoch {epoch} sent sequence {first_seq} after {last_seq}")


class VerificationGuard:
    """KIP-890's token for one verification: compared by identity only."""

    __slots__ = ("created_ms", "producer_id")

    def __init__(self, producer_id: int, created_ms: int = -1):
        self.producer_id = producer_id
        self.created_ms = created_ms

    def __repr__(self) -> str:
        return f"VerificationGuard({self.producer_id}, {id(self):#x})"


SENTINEL_VERIFICATION_GUARD = VerificationGuard(-1)  # "already in a transaction here": verifies nothing


def verification_missing(txn_open: bool, guard: VerificationGuard | None,
                         registered: VerificationGuard | None) -> bool:
    """Kafka 3.6's check of a transactional data batch: True when it would open a transaction that the
    coordinator's answer no longer covers. ``guard`` is the append's (None: verification is off),
    ``registered`` the producer's current one."""
    if guard is None or txn_open:
        return False
    return guard is SENTINEL_VERIFICATION_GUARD or guard is not registered
