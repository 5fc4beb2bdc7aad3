"""gateway_batch.run_window: outcomes in input order, at most ``window`` requests in flight, and a request
refused before it was sent is that item's outcome (the others still run)."""
from __future__ import annotations

from brokers.zk.gateway_batch import run_window


class FakeResult:
    def __init__(self, log: list, index: int, value):
        self.log, self.index, self.value = log, index, value

    def get(self):
        self.log.append(("done", self.index))
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


def starts_for(values, log):
    def start(index, value):
        def go():
            log.append(("start", index))
            if isinstance(value, TypeError):
                raise value  # refused before sending
            return FakeResult(log, index, value)
        return go
    return [start(i, v) for i, v in enumerate(values)]


def max_in_flight(log) -> int:
    in_flight = peak = 0
    for kind, _ in log:
        in_flight += 1 if kind == "start" else -1
        peak = max(peak, in_flight)
    return peak


def test_outcomes_in_order_within_the_window():
    log: list = []
    outcomes = run_window(starts_for(list(range(10)), log), window=3)
    assert outcomes == list(range(10))
    assert max_in_flight(log) == 3


def test_errors_are_per_item():
    log: list = []
    boom, refused = KeyError("x"), TypeError("bad path")
    outcomes = run_window(starts_for([1, boom, refused, 4], log), window=2)
    assert outcomes[0] == 1 and outcomes[1] is boom and outcomes[2] is refused and outcomes[3] == 4


def test_empty_batch():
    assert run_window([], window=5) == []
