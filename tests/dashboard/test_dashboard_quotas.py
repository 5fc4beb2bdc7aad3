"""The dashboard's client quota panel in a real headless Chromium against a real broker: a producer_byte_rate of
1024 set on one client id (AlterClientQuotas), that client producing 40 KB in one go: the panel lists the
configured quota and the client's sensor throttled now, its rate above its limit and the throttle time it was
handed; the broker's /metrics has the same sensor. A screenshot goes to ``$ZKAFKA_TEST_ARTIFACTS`` (default
``<repo>/test-artifacts``)."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brokers.client.connection import KafkaConnection
from brokers.protocol import codec
from scripts.local.cluster import running_cluster
from tests.dashboard import test_dashboard as dashboard
from tests.dashboard.test_dashboard import REPO

TOPIC, CLIENT_ID, LIMIT = "dash-quota", "dash-throttled", 1024
ALTER_CLIENT_QUOTAS = 49
SNAPSHOT_JS = """
const sensor = document.querySelector('tr.quota-sensor[data-quota-type="Produce"][data-client-id="%(client)s"]');
const entity = document.querySelector('tr.quota-entity[data-client-id="%(client)s"]');
return {
  sensor: sensor && {user: sensor.dataset.user, throttled: sensor.dataset.throttledNow, rate: sensor.dataset.rate,
    limit: sensor.dataset.limit, throttle_ms: sensor.dataset.throttleMs,
    shown: sensor.querySelector('td.throttled-now').textContent.trim()},
  entity: entity && {user: entity.dataset.user, rate: entity.querySelector('td.producer_byte_rate').textContent.trim()},
  throttled_now: document.querySelector('#quotas-throttled').textContent.trim(),
};
""" % {"client": CLIENT_ID}


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", 1, tick_time=500, session_timeout_ms=6000) as c:
        yield c


def set_producer_quota(bootstrap: str, client_id: str, rate: int) -> None:
    """AlterClientQuotas v0 for one client id, as an admin client sends it."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)

    async def main():
        connection = KafkaConnection(host, int(port), "dash-quota-admin")
        await connection.connect(10)
        try:
            body = codec.build(codec.request_class(ALTER_CLIENT_QUOTAS, 0), validate_only=False, entries=[dict(
                entity=[dict(entity_type="client-id", entity_name=client_id)],
                ops=[dict(key="producer_byte_rate", value=float(rate), remove=False)])])
            response = await connection.request(ALTER_CLIENT_QUOTAS, 0, body, 10)
        finally:
            connection.close()
        assert [entry.error_code for entry in response.entries] == [0]
    asyncio.run(main())


def wait_page(driver, condition, timeout: float, what: str) -> dict:
    return dashboard.wait_page(driver, condition, timeout, what, SNAPSHOT_JS)


def test_a_throttled_client_and_its_quota_on_the_dashboard(cluster, browser):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    set_producer_quota(cluster.bootstrap_servers, CLIENT_ID, LIMIT)
    browser.get(f"http://127.0.0.1:{cluster.http_port(1)}/")
    wait_page(browser, lambda s: (s["entity"] or {}).get("rate") == "1,024", 20, "the configured quota on the page")

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": CLIENT_ID, "linger.ms": 50})
    for _ in range(40):
        producer.produce(TOPIC, b"x" * 1000, partition=0)
    assert producer.flush(60) == 0
    shown = wait_page(browser, lambda s: (s["sensor"] or {}).get("throttled") == "true", 20,
                      "the producer throttled now on the page")
    sensor = shown["sensor"]
    assert sensor["user"] == "" and float(sensor["limit"]) == LIMIT  # a client-id quota: all its users together
    assert float(sensor["rate"]) > LIMIT and int(sensor["throttle_ms"]) > 0
    assert sensor["shown"].startswith("throttled") and shown["throttled_now"] == "1"
    assert shown["entity"] == {"user": "", "rate": "1,024"}
    metrics = requests.get(f"http://127.0.0.1:{cluster.http_port(1)}/metrics", timeout=10).text
    labels = f'{{client_id="{CLIENT_ID}",user=""}}'
    samples = dict(line.rsplit(" ", 1) for line in metrics.splitlines()
                   if labels in line and not line.startswith("#"))
    assert float(samples[f"kafka_server_produce_byte_rate{labels}"]) > LIMIT
    assert float(samples[f"kafka_server_produce_quota_limit{labels}"]) == LIMIT
    assert float(samples[f"kafka_server_produce_throttle_time_ms_total{labels}"]) > 0
    assert float(samples[f"kafka_server_produce_throttled_responses_total{labels}"]) >= 1
    artifacts = Path(os.environ.get("ZKAFKA_TEST_ARTIFACTS", REPO / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    browser.execute_script("document.querySelector('#quotas-section').scrollIntoView()")
    browser.save_screenshot(str(artifacts / "dashboard-quotas.png"))
