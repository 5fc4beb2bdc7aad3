"""Seeded random clean histories (interleaved sends in flight, copiers aborting at random, random poll
batching, group rebalances) are always valid, and stay invalid when one record is dropped from the reads."""
from __future__ import annotations

import pytest

from scripts.soak.checker import CheckConfig, check
from scripts.soak.history import OK, Op

from .simulation import Simulation

EOS = CheckConfig(eos_pairs={"txn-in": "txn-out"})


@pytest.mark.parametrize("seed", range(25))
def test_a_random_clean_history_is_valid(seed):
    h = Simulation(seed).run(400)
    result = check(h.ops, EOS)
    assert {k: a.count for k, a in result.anomalies.items() if a.count and not a.allowed} == {}
    assert result.valid
    assert result.stats["txns"]["committed"] > 0 and result.stats["polls"] > 0


def _drop_a_read(ops: list[Op]) -> list[Op]:
    """The reader's last poll forgets the last record it returned of one key."""
    out = list(ops)
    for i in range(len(out) - 1, -1, -1):
        op = out[i]
        if op.process == "r0" and op.f == "poll" and op.type == OK:
            reads = dict(op.value[0][1])
            keys = [k for k in reads if k.startswith("soak")]
            if not keys:
                continue
            reads[keys[0]] = reads[keys[0]][:-1]
            out[i] = Op(op.time, op.process, op.op, op.type, op.f, [["poll", reads]])
            return out
    raise AssertionError("no poll")


@pytest.mark.parametrize("seed", range(3))
def test_a_random_history_missing_a_read_is_invalid(seed):
    h = Simulation(seed).run(400)
    h.ops[:] = [op for op in h.ops if not (op.process in ("g0", "g1") and op.f == "poll")]
    result = check(_drop_a_read(h.ops), EOS)
    assert not result.valid and result.anomalies["unseen"].count >= 1
