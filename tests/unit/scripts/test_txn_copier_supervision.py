"""The transactional copier's supervisor (``tests.integration.txn_support.CopierSupervisor``): which ``stuck`` report
is librdkafka 2.16's known hang and is excused with a replacement copier. The container test of a killed output
leader had no supervisor: when the broker it killed was also the copier group's coordinator, the copier's
``send_offsets_to_transaction`` blocked past its own timeout for the rest of the test (CI, 2026-11-27)."""
from __future__ import annotations

from tests.integration.txn_support import KNOWN_STUCK_CALL, unexcused_stuck


def stuck(call: str = KNOWN_STUCK_CALL) -> dict:
    return {"event": "stuck", "call": call, "txn": 3, "seconds": 40.5}


def test_a_copier_stuck_in_send_offsets_after_a_broker_bounce_is_excused():
    assert unexcused_stuck(stuck(), stuck_before=0, bounces=1) is None
    assert unexcused_stuck(stuck(), stuck_before=1, bounces=2) is None


def test_only_one_stuck_copier_per_broker_bounce_is_excused():
    assert "2 stuck copiers in 1 broker bounces" in unexcused_stuck(stuck(), stuck_before=1, bounces=1)
    assert unexcused_stuck(stuck(), stuck_before=0, bounces=0) is not None  # no bounce, no excuse


def test_a_copier_stuck_in_any_other_call_is_a_defect():
    for call in ("commit_transaction", "abort_transaction", "flush", "init_transactions"):
        assert "elsewhere than librdkafka's known bug" in unexcused_stuck(stuck(call), stuck_before=0, bounces=1)
