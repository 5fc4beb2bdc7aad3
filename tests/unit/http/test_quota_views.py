"""brokers.http.quota_views: a broker's client quota managers as plain data (real ``QuotaManagers`` on a clock in
hand), and every broker's merged."""
from __future__ import annotations

import json

import pytest

from brokers.http import quota_views
from brokers.quotas.entities import DEFAULT, QuotaEntity, QuotaType
from brokers.quotas.manager import QuotaConfig, QuotaManagers


class Clock:
    def __init__(self, now: int = 1_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def quotas(clock) -> QuotaManagers:
    return QuotaManagers(QuotaConfig(), clock)  # 11 samples of 1 s: a rate spans at least 10 s


def sensors(quotas: QuotaManagers, broker_id: int = 1) -> dict[tuple, dict]:
    return {(s["quota_type"], s["user"], s["client_id"]): s
            for s in quota_views.local_quotas(quotas, broker_id)["sensors"]}


def test_nothing_is_shown_while_no_quota_is_configured(quotas):
    assert quotas.produce.record("alice", "app", 10_000) == 0  # not even recorded
    assert quota_views.local_quotas(quotas, 3) == {"broker_id": 3, "entities": [], "sensors": []}
    assert quota_views.readings(quotas) == []


def test_a_throttled_producer_shows_its_rate_limit_and_throttle_until_it_is_over(quotas, clock):
    quotas.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024"})
    throttle_ms = quotas.produce.record("alice", "app", 20_480)  # 19 windows' worth beyond the one-window bucket
    assert throttle_ms == 19_000
    quotas.produce.throttled("alice", "app", throttle_ms)
    clock.now += 2_500
    # a user-only quota measures all of alice's clients together: 20480 B over 10.5 s
    row = sensors(quotas)[("Produce", "alice", "")]
    assert row == {"broker": 1, "quota_type": "Produce", "quota_key": "producer_byte_rate", "user": "alice",
                   "client_id": "", "metric": "byte_rate", "unit": "bytes/s", "rate": 1950.476, "tokens": None,
                   "limit": 1024.0, "limit_unit": "bytes/s", "usage": 1.905, "throttle_time_ms_total": 19_000,
                   "throttled_responses": 1, "throttled_now": True, "throttle_remaining_ms": 16_500}
    clock.now += 16_500
    row = sensors(quotas)[("Produce", "alice", "")]
    assert (row["throttled_now"], row["throttle_remaining_ms"], row["throttle_time_ms_total"]) == (False, 0, 19_000)
    json.dumps(quota_views.local_quotas(quotas, 1), allow_nan=False)  # plain JSON: no NaN, no tuples


def test_clients_without_a_matching_quota_are_measured_unlimited(quotas):
    quotas.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024"})
    quotas.produce.record("bob", "tool", 5_000)
    row = sensors(quotas)[("Produce", "", "tool")]  # no quota: measured by client id, Kafka's default tags
    assert (row["rate"], row["limit"], row["usage"], row["throttled_now"]) == (500.0, None, None, False)


def test_request_time_and_controller_mutation_tokens(quotas, clock):
    quotas.update_entity(QuotaEntity(DEFAULT, DEFAULT), {"request_percentage": "50",
                                                        "controller_mutation_rate": "2"})
    quotas.request.record("bob", "app", 700.0)  # 7 s of handling over the 10 s window: 70 %
    assert quotas.controller_mutation.record_mutations("bob", "app", 30, strict=False) == 4_000  # 22 - 30 = -8
    quotas.controller_mutation.throttled("bob", "app", 4_000)
    clock.now += 1_000
    found = sensors(quotas)
    request = found[("Request", "bob", "app")]
    assert (request["metric"], request["unit"], request["rate"], request["limit"], request["usage"]) == (
        "request_time", "%", 70.0, 50.0, 1.4)
    mutation = found[("ControllerMutation", "bob", "app")]
    assert (mutation["metric"], mutation["rate"], mutation["tokens"], mutation["limit"], mutation["limit_unit"],
            mutation["usage"]) == ("tokens", None, -6.0, 2.0, "mutations/s", None)  # refilled 2 credits in 1 s
    assert (mutation["throttled_now"], mutation["throttle_remaining_ms"]) == (True, 3_000)
    assert [s["quota_type"] for s in quota_views.local_quotas(quotas, 1)["sensors"]] == [
        "Request", "ControllerMutation"]


def test_reading_a_sensor_changes_no_later_answer(quotas, clock):
    quotas.update_entity(QuotaEntity(None, "app"), {"producer_byte_rate": "1000",
                                                   "controller_mutation_rate": "1"})
    quotas.produce.record("u", "app", 15_000)
    quotas.controller_mutation.record_mutations("u", "app", 20, strict=False)
    clock.now += 3_000
    quota_views.readings(quotas)  # a scrape between two requests
    clock.now += 1_000
    assert quotas.produce.record("u", "app", 0) == 10_000  # the bucket: 1000 - 15000 + 4 s x 1000 = -10000 B
    assert quotas.controller_mutation.mutation_throttle_ms("u", "app") == 5_000  # 11 - 20 + 4 = -5 at 1/s


def test_the_sensors_of_a_removed_quota_type_are_not_shown(quotas):
    quotas.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024", "consumer_byte_rate": "1"})
    quotas.produce.record("alice", "app", 100)
    quotas.fetch.record("alice", "app", 100)
    quotas.update_entity(QuotaEntity("alice", None), {"consumer_byte_rate": "1"})
    assert [r.quota_type for r in quota_views.readings(quotas)] == [QuotaType.FETCH]


def test_entities_are_listed_users_first_with_their_keys():
    rows = quota_views.entity_rows({QuotaEntity("bob", DEFAULT): {"request_percentage": 200.0},
                                    QuotaEntity(None, "app"): {"producer_byte_rate": 10.0},
                                    QuotaEntity(DEFAULT, None): {"producer_byte_rate": 5.0},
                                    QuotaEntity("bob", None): {"consumer_byte_rate": 7.0, "producer_byte_rate": 8.0}})
    assert [(r["user"], r["client_id"], r["entity"]) for r in rows] == [
        (None, "app", "client-id 'app'"), ("<default>", None, "user default"), ("bob", None, "user 'bob'"),
        ("bob", "<default>", "user 'bob', client-id default")]
    assert list(rows[2]["quotas"]) == ["consumer_byte_rate", "producer_byte_rate"]


def test_the_cluster_view_merges_entities_lists_every_brokers_sensors_throttled_first_and_names_the_silent(clock):
    one, two = QuotaManagers(clock=clock), QuotaManagers(clock=clock)
    for quotas in (one, two):
        quotas.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024"})
        quotas.update_entity(QuotaEntity(None, DEFAULT), {"consumer_byte_rate": "2048"})
    two.update_entity(QuotaEntity(None, DEFAULT), {"consumer_byte_rate": "4096"})  # a change broker 1 has not seen
    one.produce.record("alice", "a", 10)
    two.fetch.record("carol", "c", 10)
    two.produce.throttled("alice", "a", two.produce.record("alice", "a", 50_000))
    merged = quota_views.cluster_quotas({1: quota_views.local_quotas(one, 1), 3: None,
                                         2: json.loads(json.dumps(quota_views.local_quotas(two, 2)))})
    assert [(e["user"], e["client_id"], e["quotas"], e["brokers"]) for e in merged["entities"]] == [
        (None, "<default>", {"consumer_byte_rate": 2048.0}, [1]),
        (None, "<default>", {"consumer_byte_rate": 4096.0}, [2]),
        ("alice", None, {"producer_byte_rate": 1024.0}, [1, 2])]
    assert [(s["broker"], s["quota_type"], s["user"], s["client_id"], s["throttled_now"])
            for s in merged["sensors"]] == [
        (2, "Produce", "alice", "", True), (1, "Produce", "alice", "", False), (2, "Fetch", "", "c", False)]
    assert (merged["throttled_now"], merged["unanswered"]) == (1, [3])
    assert quota_views.cluster_quotas({}) == {"entities": [], "sensors": [], "throttled_now": 0, "unanswered": []}
