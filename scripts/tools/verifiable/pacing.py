"""What ``kafka-verifiable-producer`` sends and how fast (pure): Kafka 2.8's ``VerifiableProducer`` keys, values
and creation times, and its ``ThroughputThrottler``.

- Values: the message index as a decimal string (``"0"``, ``"1"``, ...), with ``--value-prefix P`` ``"P.<i>"``.
- Keys: null, or with ``--repeating-keys N`` ``"0"``, ``"1"``, ... ``"N-1"``, then ``"0"`` again (Kafka resets the
  counter when it reaches N, so N <= 0 never resets).
- Creation time (``--message-create-time T``): the first record carries T; after each send Kafka adds the time
  elapsed since the producer started (a growing step, as Kafka's tool does it).
- Throttle (``--throughput R``): R < 0 never; R == 0 stops after the first record until the tool is stopped;
  else once the rate so far exceeds R, sleep 1/R s per record, in sleeps of at least 2 ms.
"""
from __future__ import annotations

from collections.abc import Callable

NS_PER_MS = 1_000_000
NS_PER_SEC = 1000 * NS_PER_MS
MIN_SLEEP_NS = 2 * NS_PER_MS


def value_of(index: int, prefix: int | None) -> str:
    return str(index) if prefix is None else f"{prefix}.{index}"


class Keys:
    """Kafka's ``getKey``: None without ``repeating``, else the counter as a string."""

    def __init__(self, repeating: int | None):
        self.repeating = repeating
        self.counter = 0

    def next(self) -> str | None:
        if self.repeating is None:
            return None
        key = str(self.counter)
        self.counter += 1
        if self.counter == self.repeating:
            self.counter = 0
        return key


class CreateTimes:
    """Kafka's ``createTime``: None (the producer stamps the record), else T, then T + elapsed, ..."""

    def __init__(self, first: int | None, start_ms: int):
        self.current = first
        self.start_ms = start_ms

    def next(self, now_ms: int) -> int | None:
        """The creation time of this send; ``now_ms`` is the time just after it (Kafka adds it after sending)."""
        value = self.current
        if value is not None:
            self.current = value + now_ms - self.start_ms
        return value


class Throttler:
    """Kafka's ``ThroughputThrottler``. ``sleep(seconds)`` sleeps and returns False when the tool is stopping
    (then the throttle gives up); ``now_ns`` is a monotonic clock."""

    def __init__(self, target: int, start_ms: int, sleep: Callable[[float], bool], now_ns: Callable[[], int]):
        self.target = target
        self.start_ms = start_ms
        self.sleep_time_ns = NS_PER_SEC // target if target > 0 else None
        self.deficit_ns = 0
        self._sleep = sleep
        self._now_ns = now_ns

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed_s = (send_start_ms - self.start_ms) / 1000
        return elapsed_s > 0 and amount_so_far / elapsed_s > self.target

    def throttle(self) -> None:
        if self.sleep_time_ns is None:  # target 0: wait until the tool stops
            while self._sleep(3600.0):
                pass
            return
        self.deficit_ns += self.sleep_time_ns
        if self.deficit_ns < MIN_SLEEP_NS:
            return
        start = self._now_ns()
        remaining = self.deficit_ns
        while remaining > 0:
            if not self._sleep(remaining / NS_PER_SEC):
                slept = self._now_ns() - start  # cut short: keep the deficit not slept off, as Kafka does
                if slept <= self.deficit_ns:
                    self.deficit_ns -= slept
                return
            remaining = self.deficit_ns - (self._now_ns() - start)
        self.deficit_ns = 0
