"""ReplicationQuota: Kafka's replication throttle (KIP-73), the part that decides.

Kafka's ``ReplicationQuotaManager``: bytes of *throttled* replicas are recorded in a rate (``brokers.quotas.rates``) measured over
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

from collections.abc import Callable, Container

from brokers.quotas.rates import RateMeter
from brokers.storage.log_config import LONG_MAX

__all__ = ["RateMeter", "ReplicationQuota", "is_throttled", "should_throttle"]


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
