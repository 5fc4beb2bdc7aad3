"""ReplicationQuota: Kafka's replication throttle (KIP-73), the part that decides.

Kafka's ``ReplicationQuotaManager``: bytes of *throttled* replicas are recorded in a rate measured over
``num_samples`` windows of ``window_ms`` (Kafka's replication quota defaults: 11 windows of 1 s); while
that rate exceeds the configured bound (``leader.replication.throttled.rate`` on the leader,
``follower.replication.throttled.rate`` on the follower; Long.MAX_VALUE = no throttle) throttled
replicas get no data. Which replicas are throttled is a topic config (``leader/follower.replication.
throttled.replicas``: ``*`` or ``partition:broker`` pairs naming this broker), and a follower that is in
the ISR is never throttled, so a throttle slows only catching-up replicas (a reassignment's new ones) and
never producers' acks=all.

Pure: time comes in as an argument (milliseconds), nothing here sleeps or awaits.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Container

from brokers.storage.log_config import LONG_MAX


class RateMeter:
    """Bytes per second over the last ``num_samples`` windows of ``window_ms`` (the current one partial).

    As Kafka's ``Rate`` with ``SampledStat``: the sum of the samples still in the window divided by the
    time they span, which is at least ``(num_samples - 1)`` whole windows so that one burst right after
    a quiet period does not read as an enormous rate.
    """

    def __init__(self, num_samples: int = 11, window_ms: int = 1000):
        self.num_samples, self.window_ms = num_samples, window_ms
        self._samples: deque[tuple[int, int]] = deque()  # (window start ms, bytes)

    def record(self, size: int, now_ms: int) -> None:
        start = now_ms - now_ms % self.window_ms
        if self._samples and self._samples[-1][0] == start:
            self._samples[-1] = (start, self._samples[-1][1] + size)
        else:
            self._samples.append((start, size))
        self._expire(now_ms)

    def rate(self, now_ms: int) -> float:
        self._expire(now_ms)
        total = sum(size for _, size in self._samples)
        oldest = self._samples[0][0] if self._samples else now_ms
        elapsed = max(now_ms - oldest, (self.num_samples - 1) * self.window_ms)
        return total * 1000 / max(1, elapsed)

    def _expire(self, now_ms: int) -> None:
        horizon = now_ms - self.num_samples * self.window_ms
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.popleft()


class ReplicationQuota:
    """One side's throttle (leader or follower) for this broker: the bound comes from ``bound()`` (the
    live dynamic broker config), the measured rate from the bytes recorded for throttled replicas."""

    def __init__(self, bound: Callable[[], int], meter: RateMeter | None = None):
        self.bound = bound
        self.meter = meter or RateMeter()
        self.throttled_bytes = 0  # for /metrics and tests

    @property
    def enabled(self) -> bool:
        return self.bound() < LONG_MAX

    def exceeded(self, now_ms: int) -> bool:
        return self.enabled and self.meter.rate(now_ms) > self.bound()

    def record(self, size: int, now_ms: int) -> None:
        if self.enabled and size:
            self.meter.record(size, now_ms)
            self.throttled_bytes += size


def is_throttled(throttled: Container[tuple[int, int]], partition: int, broker_id: int) -> bool:
    """Whether the replica ``(partition, broker_id)`` is named by a parsed throttled-replicas config
    (``LogConfig.leader_throttled_replicas``: a set of pairs, or ``ALL_REPLICAS``, which contains every one)."""
    return (partition, broker_id) in throttled


def should_throttle(quota: ReplicationQuota, throttled: Container[tuple[int, int]], partition: int, broker_id: int,
                    replica_in_sync: bool, now_ms: int) -> bool:
    """Kafka's ``shouldLeaderThrottle`` / ``shouldFollowerThrottle``: not in the ISR, a throttled replica,
    and the quota exceeded."""
    return not replica_in_sync and is_throttled(throttled, partition, broker_id) and quota.exceeded(now_ms)
