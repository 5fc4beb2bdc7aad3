"""Client quotas on a broker's HTTP server: the /metrics families (Kafka's quota sensors, flattened), ``GET
/api/v1/quotas`` (this broker, or ``?scope=cluster``), the overview's ``quotas`` (the dashboard's panel) and who may
see them (DescribeConfigs on the cluster). Real ``QuotaManagers`` on a clock in hand; handlers called on mocked
requests, the fan-out replaced: no sockets."""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from prometheus_client import CollectorRegistry, generate_latest

from brokers.http import admin_api, quota_views
from brokers.http.auth import IDENTITY_KEY, SECURITY_KEY, HttpIdentity, HttpSecurity
from brokers.http.cluster_reader import LOCAL_VIEWS, ClusterReader
from brokers.http.metrics import BrokerCollector
from brokers.model import BrokerInfo, EndPoint
from brokers.quotas.entities import DEFAULT, QuotaEntity
from brokers.quotas.manager import QuotaManagers
from brokers.security.acls import CLUSTER, DESCRIBE, DESCRIBE_CONFIGS


class Clock:
    def __init__(self, now: int = 1_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


class Zk:
    async def get_controller_epoch(self):
        return 4, None


def info(broker_id: int) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", 9091 + broker_id),), None, 1, 8079 + broker_id)


def fake_broker(quotas: QuotaManagers, broker_id: int = 1, live=(1,)):
    """What the overview, /api/v1/quotas and /metrics read of a broker: no partitions, groups or transactions."""
    cache = SimpleNamespace(partitions={}, live_brokers={b: info(b) for b in live}, controller_id=broker_id)
    return SimpleNamespace(broker_id=broker_id, cluster_id="c", quotas=quotas, metadata_cache=cache,
                           replica_manager=None, kzc=Zk(), group_views=lambda: [], transaction_view=lambda: {})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def quotas(clock) -> QuotaManagers:
    quotas = QuotaManagers(clock=clock)
    quotas.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024", "consumer_byte_rate": "4096"})
    quotas.update_entity(QuotaEntity(DEFAULT, DEFAULT), {"request_percentage": "50", "controller_mutation_rate": "2"})
    quotas.produce.throttled("alice", "app", quotas.produce.record("alice", "app", 20_480))
    quotas.produce.record("bob", "tool", 1_000)  # no produce quota of bob's: unlimited
    quotas.request.record("bob", "tool", 300.0)
    quotas.controller_mutation.record_mutations("bob", "tool", 30, strict=False)
    quotas.controller_mutation.throttled("bob", "tool", 4_000)
    return quotas


# -- /metrics ------------------------------------------------------------------------------------------------------
def _registry(broker) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    return registry


def scrape(broker) -> dict[str, float]:
    out = {}
    for line in generate_latest(_registry(broker)).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def quota_samples(samples: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in samples.items()
            if k.startswith(("kafka_server_produce_", "kafka_server_fetch_", "kafka_server_request_",
                             "kafka_server_controllermutation_"))
            and not k.startswith(("kafka_server_produce_purgatory", "kafka_server_fetch_purgatory",
                                  "kafka_server_fetch_session"))}


def test_metrics_are_kafkas_quota_sensors_with_user_and_client_id_labels(quotas):
    assert quota_samples(scrape(fake_broker(quotas))) == {
        'kafka_server_produce_byte_rate{client_id="",user="alice"}': 2048.0,
        'kafka_server_produce_byte_rate{client_id="tool",user=""}': 100.0,
        'kafka_server_produce_quota_limit{client_id="",user="alice"}': 1024.0,  # none for the unlimited tags
        'kafka_server_produce_throttle_time_ms_total{client_id="",user="alice"}': 19_000.0,
        'kafka_server_produce_throttle_time_ms_total{client_id="tool",user=""}': 0.0,
        'kafka_server_produce_throttled_responses_total{client_id="",user="alice"}': 1.0,
        'kafka_server_produce_throttled_responses_total{client_id="tool",user=""}': 0.0,
        'kafka_server_request_request_time{client_id="tool",user="bob"}': 30.0,
        'kafka_server_request_quota_limit{client_id="tool",user="bob"}': 50.0,
        'kafka_server_request_throttle_time_ms_total{client_id="tool",user="bob"}': 0.0,
        'kafka_server_request_throttled_responses_total{client_id="tool",user="bob"}': 0.0,
        'kafka_server_controllermutation_tokens{client_id="tool",user="bob"}': -8.0,
        'kafka_server_controllermutation_quota_limit{client_id="tool",user="bob"}': 2.0,
        'kafka_server_controllermutation_throttle_time_ms_total{client_id="tool",user="bob"}': 4_000.0,
        'kafka_server_controllermutation_throttled_responses_total{client_id="tool",user="bob"}': 1.0,
    }  # the fetch quota is configured but nobody fetched: no sensor, no series


def test_metrics_types_and_no_series_without_a_quota(clock):
    quotas = QuotaManagers(clock=clock)
    assert quota_samples(scrape(fake_broker(quotas))) == {}
    quotas.update_entity(QuotaEntity(None, "app"), {"consumer_byte_rate": "100"})
    quotas.fetch.record("u", "app", 50)
    text = generate_latest(_registry(fake_broker(quotas))).decode()
    assert "# TYPE kafka_server_fetch_byte_rate gauge" in text
    assert "# TYPE kafka_server_fetch_quota_limit gauge" in text
    assert "# TYPE kafka_server_fetch_throttle_time_ms_total counter" in text
    assert "# TYPE kafka_server_fetch_throttled_responses_total counter" in text
    assert 'kafka_server_fetch_byte_rate{client_id="app",user=""} 5.0' in text
    assert "kafka_server_produce_byte_rate" not in text


def test_metrics_of_a_broker_without_quota_managers_leave_them_out():
    broker = SimpleNamespace(**{k: v for k, v in vars(fake_broker(QuotaManagers())).items() if k != "quotas"})
    assert quota_samples(scrape(broker)) == {}


# -- the admin API ---------------------------------------------------------------------------------------------------
class Authorizer:
    """Grants ``granted`` (principal -> operations on the cluster)."""

    def __init__(self, granted: dict[str, set[int]]):
        self.granted = granted

    def authorize(self, principal, host, operation, resource_type, name) -> bool:
        return resource_type == CLUSTER and operation in self.granted.get(principal, set())


def app_for(broker, authorizer=None) -> web.Application:
    app = web.Application()
    app[SECURITY_KEY] = HttpSecurity(authorizer=authorizer)
    app[admin_api.BROKER_KEY] = broker
    app[admin_api.READER_KEY] = ClusterReader(broker)
    return app


def call(app: web.Application, handler, path: str, principal: str | None = None, **match_info) -> tuple[int, dict]:
    async def main():
        request = make_mocked_request("GET", path, app=app, match_info=match_info)
        if principal is not None:
            request[IDENTITY_KEY] = HttpIdentity(principal)
        response = await handler(request)
        return response.status, json.loads(response.text)
    return asyncio.run(main())


def test_the_quotas_endpoint_answers_this_brokers_entities_and_sensors(quotas):
    status, body = call(app_for(fake_broker(quotas, 2)), admin_api.quotas, "/api/v1/quotas")
    assert status == 200
    assert body == json.loads(json.dumps(quota_views.local_quotas(quotas, 2)))
    assert [(e["user"], e["client_id"]) for e in body["entities"]] == [("<default>", "<default>"), ("alice", None)]
    alice = next(s for s in body["sensors"] if s["user"] == "alice")
    assert (alice["broker"], alice["rate"], alice["limit"], alice["throttle_time_ms_total"], alice["throttled_now"],
            alice["throttle_remaining_ms"]) == (2, 2048.0, 1024.0, 19_000, True, 19_000)


def test_the_cluster_scope_asks_every_live_broker_and_merges(quotas, clock, monkeypatch):
    other = QuotaManagers(clock=clock)
    other.update_entity(QuotaEntity("alice", None), {"producer_byte_rate": "1024", "consumer_byte_rate": "4096"})
    other.fetch.record("alice", "app", 100)
    app = app_for(fake_broker(quotas, 1, live=(1, 2, 3)))
    answers = {2: quota_views.local_quotas(other, 2), 3: None}  # broker 3 does not answer
    asked = []

    async def ask(info, what):
        asked.append((info.id, what))
        return answers[info.id]
    monkeypatch.setattr(app[admin_api.READER_KEY], "_ask", ask)
    status, body = call(app, admin_api.quotas, "/api/v1/quotas?scope=cluster")
    assert status == 200 and sorted(asked) == [(2, "quotas"), (3, "quotas")]
    assert body["unanswered"] == [3] and body["throttled_now"] == 2  # alice's produce and bob's mutations on 1
    assert [(s["broker"], s["quota_type"], s["user"]) for s in body["sensors"][:2]] == [
        (1, "Produce", "alice"), (1, "ControllerMutation", "bob")]
    assert (2, "Fetch", "alice") in {(s["broker"], s["quota_type"], s["user"]) for s in body["sensors"]}
    alice = next(e for e in body["entities"] if e["user"] == "alice")
    assert alice["brokers"] == [1, 2]
    assert call(app, admin_api.quotas, "/api/v1/quotas?scope=everything")[0] == 400


def test_without_any_quota_nobody_is_asked(clock, monkeypatch):
    app = app_for(fake_broker(QuotaManagers(clock=clock), 1, live=(1, 2)))

    async def ask(info, what):
        raise AssertionError(f"asked broker {info.id} for {what}")
    monkeypatch.setattr(app[admin_api.READER_KEY], "_ask", ask)
    status, body = call(app, admin_api.quotas, "/api/v1/quotas?scope=cluster")
    assert (status, body) == (200, {"entities": [], "sensors": [], "throttled_now": 0, "unanswered": []})


def test_the_overview_carries_the_cluster_quotas_for_those_who_may_describe_configs(quotas):
    authorizer = Authorizer({"User:admin": {DESCRIBE, DESCRIBE_CONFIGS}, "User:bob": {DESCRIBE}})
    app = app_for(fake_broker(quotas), authorizer)
    status, body = call(app, admin_api.overview, "/api/v1/overview", "User:admin")
    assert status == 200
    assert body["quotas"]["throttled_now"] == 2 and len(body["quotas"]["entities"]) == 2
    status, body = call(app, admin_api.overview, "/api/v1/overview", "User:bob")
    assert status == 200 and body["quotas"] is None and body["cluster"]["controller_epoch"] == 4
    status, body = call(app, admin_api.quotas, "/api/v1/quotas", "User:bob")
    assert (status, body["kafka_error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")
    status, body = call(app, admin_api.local, "/api/v1/local/quotas", "User:bob", what="quotas")
    assert status == 403  # Describe on the cluster is enough for the other local views, not for quotas
    status, body = call(app, admin_api.local, "/api/v1/local/quotas", "User:admin", what="quotas")
    assert status == 200 and body["broker_id"] == 1 and len(body["sensors"]) == 4


def test_the_local_quota_view_is_the_fan_outs_answer(quotas):
    assert LOCAL_VIEWS["quotas"](fake_broker(quotas, 5)) == quota_views.local_quotas(quotas, 5)
