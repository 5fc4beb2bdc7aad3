"""The measurements quotas are enforced on: Kafka's ``Rate`` over a ``SampledStat`` (client bandwidth and request
time quotas, the replication throttles) and its ``TokenBucket`` (KIP-599's controller mutation quota). Pure:
time comes in as an argument (milliseconds); nothing here sleeps, awaits or locks.
"""
from __future__ import annotations

from collections import deque


class RateMeter:
    """A value per second over the last ``num_samples`` windows of ``window_ms`` (the current one partial):
    Kafka's ``Rate`` with ``SampledStat`` (``quota.window.num`` = 11, ``quota.window.size.seconds`` = 1).

    The rate is the sum of the samples still kept divided by the time they span (``window_size_ms``), which
    counts at least ``num_samples - 1`` whole windows, so that one burst after a quiet period does not read as
    an enormous rate. A sample older than ``num_samples`` windows is dropped. A negative value takes back what
    was recorded (a throttled Fetch that sends nothing, Kafka's ``unrecordQuotaSensor``).
    """

    __slots__ = ("num_samples", "window_ms", "_samples", "_total")

    def __init__(self, num_samples: int = 11, window_ms: int = 1000):
        if num_samples < 1 or window_ms < 1:
            raise ValueError(f"a rate needs at least 1 sample of at least 1 ms, got {num_samples} x {window_ms} ms")
        self.num_samples, self.window_ms = num_samples, window_ms
        self._samples: deque[list] = deque()  # [window start ms, value], oldest first
        self._total = 0.0

    def record(self, value: float, now_ms: int) -> None:
        start = now_ms - now_ms % self.window_ms
        samples = self._samples
        if samples and samples[-1][0] == start:  # windows are aligned: nothing expires before the next one starts
            samples[-1][1] += value
        else:
            self._expire(now_ms)
            samples.append([start, value])
        self._total += value

    def window_size_ms(self, now_ms: int) -> int:
        """Kafka's ``Rate.windowSize``: from the oldest kept sample's start to now, at least
        ``num_samples - 1`` whole windows (plus the part of the current one)."""
        self._expire(now_ms)
        elapsed = now_ms - self._samples[0][0] if self._samples else 0
        full_windows = elapsed // self.window_ms
        if full_windows < self.num_samples - 1:
            elapsed += (self.num_samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def rate(self, now_ms: int) -> float:
        window = self.window_size_ms(now_ms)
        return self._total * 1000.0 / window

    def throttle_time_ms(self, bound: float, now_ms: int) -> int:
        """Kafka's ``QuotaUtils.throttleTime``: how long the client must stay quiet for the rate to come back
        to ``bound`` (O * W / (W + X) = T, so X = (O - T) / T * W), 0 within the bound."""
        if self._total * 1000.0 <= bound * max(1, (self.num_samples - 1) * self.window_ms):
            return 0  # the window is never shorter than that, and an unexpired total only overstates the rate
        window = self.window_size_ms(now_ms)
        observed = self._total * 1000.0 / window
        if observed <= bound:
            return 0
        return round((observed - bound) / bound * window)

    def _expire(self, now_ms: int) -> None:
        horizon = now_ms - self.num_samples * self.window_ms
        samples = self._samples
        while samples and samples[0][0] <= horizon:
            self._total -= samples.popleft()[1]
        if not samples:
            self._total = 0.0  # no float drift carried past an idle period


class TokenBucket:
    """Kafka's ``TokenBucket`` (KIP-599): credits refill at ``rate`` per second up to a burst of
    ``num_samples * window_s * rate``; a recorded mutation takes its credits, possibly below zero. It starts
    full. A strict quota refuses mutations while the credits are below zero; the throttle time is how long
    the refill takes to bring them back to zero."""

    __slots__ = ("num_samples", "window_ms", "_tokens", "_updated_ms")

    def __init__(self, num_samples: int = 11, window_ms: int = 1000):
        self.num_samples, self.window_ms = num_samples, window_ms
        self._tokens: float | None = None  # None: full at the first look
        self._updated_ms = 0

    def burst(self, rate: float) -> float:
        return self.num_samples * self.window_ms / 1000.0 * rate

    def tokens(self, rate: float, now_ms: int) -> float:
        burst = self.burst(rate)
        if self._tokens is None:
            self._tokens = burst
        else:
            elapsed_s = max(0, now_ms - self._updated_ms) / 1000.0
            self._tokens = min(burst, self._tokens + rate * elapsed_s)
        self._updated_ms = now_ms
        return self._tokens

    def record(self, value: float, rate: float, now_ms: int) -> None:
        self._tokens = min(self.burst(rate), self.tokens(rate, now_ms) - value)

    def throttle_time_ms(self, rate: float, now_ms: int) -> int:
        """Kafka's ``ControllerMutationQuotaManager.throttleTimeMs``: -tokens / rate seconds, 0 while the
        bucket holds credits."""
        tokens = self.tokens(rate, now_ms)
        return 0 if tokens >= 0 else round(-tokens / rate * 1000)
