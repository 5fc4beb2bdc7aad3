"""Rates, token buckets, the quota managers and one request's throttle (pure, with a clock in hand)."""
from __future__ import annotations

import asyncio

import pytest

from brokers.quotas.entities import DEFAULT, QuotaEntity, QuotaType
from brokers.quotas.manager import SENSOR_EXPIRY_MS, ClientQuotaManager, QuotaConfig, QuotaManagers
from brokers.quotas.rates import RateMeter, TokenBucket
from brokers.quotas.request_throttle import LoopTime, RequestThrottle


class Clock:
    def __init__(self, now: int = 1_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_the_window_counts_at_least_all_but_one_whole_window_as_kafkas_rate():
    meter = RateMeter(11, 1000)
    assert meter.window_size_ms(5_250) == 10_000  # nothing recorded: ten whole windows
    meter.record(1, 5_000)
    assert meter.window_size_ms(5_250) == 10_250  # the current quarter window plus ten whole ones
    meter = RateMeter(11, 1000)
    meter.record(1000, 0)
    assert meter.window_size_ms(12_500) == 10_000  # the sample at 0 has left the 11 windows: none kept
    meter.record(5000, 13_000)
    assert meter.rate(13_000) == 5000 * 1000 / 10_000


def test_throttle_time_brings_the_rate_back_to_the_bound():
    meter = RateMeter(11, 1000)
    meter.record(20_000, 0)  # 2000 B/s over the 10 s minimum window, bound 1000 B/s
    throttle = meter.throttle_time_ms(1000, 0)
    assert throttle == 10_000  # (2000 - 1000) / 1000 * 10 s
    assert meter.rate(throttle) * 10_000 / (10_000 + throttle) <= 1000  # O * W / (W + X) = T
    assert meter.throttle_time_ms(3000, 0) == 0


def test_unrecording_takes_a_value_back_and_idle_periods_start_from_zero():
    meter = RateMeter(2, 1000)
    meter.record(500, 0)
    meter.record(-500, 10)
    assert meter.rate(10) == 0
    meter.record(300, 100)
    assert meter.rate(5000) == 0.0 and meter.window_size_ms(5000) == 1000


def test_a_token_bucket_starts_full_refills_and_throttles_below_zero():
    bucket = TokenBucket(11, 1000)
    assert bucket.tokens(2.0, 0) == 22.0  # burst: 11 windows of 1 s at 2 per second
    bucket.record(30, 2.0, 0)
    assert bucket.tokens(2.0, 0) == -8.0
    assert bucket.throttle_time_ms(2.0, 0) == 4000
    assert bucket.throttle_time_ms(2.0, 4000) == 0
    assert bucket.tokens(2.0, 100_000) == 22.0  # never above the burst


def manager(quota_type=QuotaType.PRODUCE, clock=None) -> ClientQuotaManager:
    return ClientQuotaManager(quota_type, 11, 1000, clock or Clock())


def test_nothing_is_recorded_without_a_quota_of_the_type():
    m = manager()
    assert m.record("alice", "app", 10**9) == 0 and not m.sensors


def test_a_client_over_its_quota_is_throttled_and_others_are_not():
    m = manager()
    m.update(QuotaEntity(None, "noisy"), 1000.0)
    assert m.record("ANONYMOUS", "noisy", 20_000) == 19_000  # the one-window bucket: 1000 - 20000 B at 1000 B/s
    assert m.record("ANONYMOUS", "quiet", 20_000) == 0
    assert m.max_value_in_window("ANONYMOUS", "noisy") == 1000 and m.max_value_in_window("x", "quiet") is None


def test_a_byte_rate_is_held_window_by_window_not_in_kafkas_ten_window_bursts():
    clock = Clock(0)
    m = manager(clock=clock)
    m.update(QuotaEntity(None, "c"), 1000.0)
    assert m.record("u", "c", 1000) == 0  # one window's worth at once
    assert m.record("u", "c", 1000) == 1000  # Kafka's rate alone would let 9 more through now
    clock.now = 2000
    assert m.record("u", "c", 1000) == 0
    taken = ClientQuotaManager(QuotaType.REQUEST, 11, 1000, Clock(0))
    taken.update(QuotaEntity(None, "c"), 1000.0)
    assert taken.record("u", "c", 10_000) == 0  # the request-time quota is Kafka's alone


def test_a_changed_quota_applies_to_existing_sensors_at_once():
    m = manager()
    m.update(QuotaEntity(None, DEFAULT), 1000.0)
    m.record("u", "c", 15_000)
    assert m.record("u", "c", 0) > 0
    assert m.update(QuotaEntity(None, "c"), 10_000.0) and m.record("u", "c", 0) == 0
    assert not m.update(QuotaEntity(None, "c"), 10_000.0)  # no change
    m.update(QuotaEntity(None, "c"), None)
    assert m.record("u", "c", 0) > 0  # back to the default


def test_a_user_quota_moves_a_client_to_a_shared_sensor():
    m = manager()
    m.update(QuotaEntity(None, DEFAULT), 1.0)
    m.record("alice", "a", 1)
    m.update(QuotaEntity("alice", None), 5.0)
    m.record("alice", "a", 1)
    m.record("alice", "b", 1)
    assert set(m.sensors) == {("", "a"), ("alice", "")} and m.sensors[("alice", "")].recorded_total == 2


def test_idle_sensors_expire():
    clock = Clock()
    m = manager(clock=clock)
    m.update(QuotaEntity(None, DEFAULT), 1.0)
    m.record("u", "old", 1)
    clock.now += SENSOR_EXPIRY_MS + 1
    m.record("u", "new", 1)
    assert set(m.sensors) == {("", "new")}


def test_strict_mutations_are_refused_only_once_the_bucket_is_empty():
    clock = Clock(0)
    m = manager(QuotaType.CONTROLLER_MUTATION, clock)
    m.update(QuotaEntity(None, "admin"), 1.0)  # burst 11
    assert m.record_mutations("u", "admin", 30, strict=True) == 0  # credits were there: taken whole
    assert m.record_mutations("u", "admin", 1, strict=True) == 19_000  # -19 credits at 1/s
    clock.now = 19_000
    assert m.record_mutations("u", "admin", 1, strict=True) == 0
    assert m.record_mutations("u", "other", 1000, strict=True) == 0  # no quota for it


def test_permissive_mutations_always_go_ahead_with_a_throttle():
    m = manager(QuotaType.CONTROLLER_MUTATION, Clock(0))
    m.update(QuotaEntity(None, DEFAULT), 2.0)
    assert m.record_mutations("u", "c", 22, strict=False) == 0
    assert m.record_mutations("u", "c", 4, strict=False) == 2000
    assert m.mutation_throttle_ms("u", "c") == 2000


def test_quota_managers_take_an_entitys_whole_config():
    quotas = QuotaManagers(QuotaConfig(num_samples=11, window_ms=1000, controller_num_samples=11,
                                       controller_window_ms=1000), Clock())
    entity = QuotaEntity("alice", None)
    assert not quotas.enabled
    quotas.update_entity(entity, {"producer_byte_rate": "100", "request_percentage": "50", "SCRAM-SHA-256": "x"})
    assert quotas.enabled and quotas.entities() == {entity: {"producer_byte_rate": 100.0, "request_percentage": 50.0}}
    quotas.update_entity(entity, {"consumer_byte_rate": "7"})
    assert quotas.entities() == {entity: {"consumer_byte_rate": 7.0}}
    quotas.update_entity(entity, {})
    assert not quotas.enabled


def test_a_request_answers_its_longest_throttle_and_charges_that_quota():
    clock = Clock()
    quotas = QuotaManagers(QuotaConfig(), clock)
    quotas.update_entity(QuotaEntity(None, "c"), {"producer_byte_rate": "1000", "request_percentage": "1"})
    throttle = RequestThrottle(quotas, "u", "c")
    assert throttle.bandwidth(quotas.produce, 30_000) == 29_000
    assert throttle.throttle_time_ms() == 29_000 and throttle.throttle_time_ms() == 29_000
    assert quotas.produce.sensors[("", "c")].throttled == 1 and not quotas.request.sensors
    exempt = RequestThrottle(quotas, "u", "c")
    exempt.exempt = True
    assert exempt.bandwidth(quotas.produce, 10**9) == 0 and exempt.throttle_time_ms() == 0


def test_request_time_is_what_the_handler_ran_on_the_loop_not_what_it_waited():
    async def handler() -> str:
        await asyncio.sleep(0.2)  # waiting: not request time
        for _ in range(3):
            await asyncio.sleep(0)
        return "answer"

    async def main() -> LoopTime:
        timed = LoopTime(handler())
        assert await timed == "answer"
        return timed

    timed = asyncio.run(main())
    assert 0 < timed.seconds < 0.05


def test_a_cancelled_handler_sees_the_cancellation():
    seen = []

    async def handler() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def _run(h):
        return await LoopTime(h())

    async def cancel() -> None:
        task = asyncio.create_task(_run(handler))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    assert seen == ["cancelled"]


def test_request_time_counts_against_the_request_quota():
    clock = Clock()
    quotas = QuotaManagers(QuotaConfig(), clock)
    quotas.update_entity(QuotaEntity("u", None), {"request_percentage": "1"})  # 10 ms of handling per second

    class Elapsed:
        def elapsed(self) -> float:
            return 0.5  # 50 %-seconds over the 10 s minimum window: 5 % against 1 %

    throttle = RequestThrottle(quotas, "u", "c")
    throttle.timer = Elapsed()  # type: ignore[assignment]
    assert throttle.throttle_time_ms() == 1000  # Kafka bounds the request throttle to one window
    assert quotas.request.sensors[("u", "")].throttled == 1
