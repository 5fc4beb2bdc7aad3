"""The transaction states, their bytes and names, and every cell of the table of legal moves (Kafka 2.8's
``TransactionMetadata.validPreviousStates``)."""
import itertools

import pytest

from transactions.coordinator.state import VALID_PREVIOUS_STATES, TransactionState as S, is_valid_transition

BYTES = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4, "CompleteAbort": 5,
         "Dead": 6, "PrepareEpochFence": 7}
LEGAL = {  # new state -> legal previous states, as the reference table
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}


def test_bytes_and_names_are_kafkas():
    assert {s.kafka_name: int(s) for s in S} == BYTES
    assert all(S.from_byte(b) == S.from_name(n) for n, b in BYTES.items())
    assert S.from_name("Bogus") is None
    with pytest.raises(ValueError):
        S.from_byte(8)


@pytest.mark.parametrize("old, new", list(itertools.product(S, S)))
def test_every_move_of_the_table(old, new):
    assert is_valid_transition(old, new) == (old.kafka_name in LEGAL[new.kafka_name])


def test_the_table_covers_every_state():
    assert set(VALID_PREVIOUS_STATES) == set(S)


def test_expiration_allowed_only_when_idle():
    assert {s.kafka_name for s in S if s.expiration_allowed} == {"Empty", "CompleteCommit", "CompleteAbort"}
