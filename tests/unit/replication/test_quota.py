"""The replication throttle's decisions (pure): the rate meter, which replicas are throttled, when."""
from __future__ import annotations

from brokers.replication.quota import LONG_MAX, RateMeter, ReplicationQuota, is_throttled, should_throttle
from brokers.storage.log_config import ALL_REPLICAS


def test_the_rate_is_bytes_over_at_least_the_full_window_minus_one():
    meter = RateMeter(num_samples=11, window_ms=1000)
    meter.record(10_000, 0)
    assert meter.rate(0) == 1000.0  # one burst alone reads over 10 s, not as 10 MB/s
    for second in range(1, 11):
        meter.record(10_000, second * 1000)
    assert meter.rate(10_500) == 110_000 * 1000 / 10_500


def test_samples_older_than_the_window_are_forgotten():
    meter = RateMeter(num_samples=3, window_ms=1000)
    meter.record(9_000, 0)
    assert meter.rate(1000) == 4500.0
    assert meter.rate(3500) == 0.0


def test_a_quota_at_long_max_never_throttles_nor_records():
    quota = ReplicationQuota(lambda: LONG_MAX)
    quota.record(10**12, 0)
    assert not quota.exceeded(0) and quota.throttled_bytes == 0


def test_a_quota_is_exceeded_while_the_rate_is_above_the_bound_and_recovers():
    bound = [1000]
    quota = ReplicationQuota(lambda: bound[0], RateMeter(num_samples=2, window_ms=1000))
    quota.record(1600, 0)
    assert quota.exceeded(500)  # 1600 B over 1.5 s (one whole window plus the current half)
    assert not quota.exceeded(2500)  # the window has passed
    quota.record(1600, 3000)
    bound[0] = 2000  # the dynamic config changed: the new bound applies at once
    assert not quota.exceeded(3000)


def test_throttled_replica_lists_name_partition_and_broker_or_everything():
    assert is_throttled(frozenset({(0, 1), (1, 2)}), 0, 1)
    assert not is_throttled(frozenset({(0, 1), (1, 2)}), 0, 2)
    assert is_throttled(ALL_REPLICAS, 5, 9)
    assert not is_throttled(frozenset(), 0, 1)


def test_in_sync_replicas_are_never_throttled():
    quota = ReplicationQuota(lambda: 1, RateMeter(num_samples=2, window_ms=1000))
    quota.record(10_000, 0)
    assert should_throttle(quota, ALL_REPLICAS, 0, 3, replica_in_sync=False, now_ms=10)
    assert not should_throttle(quota, ALL_REPLICAS, 0, 3, replica_in_sync=True, now_ms=10)
    assert not should_throttle(quota, frozenset({(1, 3)}), 0, 3, replica_in_sync=False, now_ms=10)
