"""The dashboard's transactions in a real headless Chromium against a real broker: a transaction left open
shows as an Ongoing row (its producer id, its partition) and holds its partition's LSO below the HW (LSO lag
shown); after the commit the row is gone and the LSO is the HW. A screenshot of the open state goes to
``$ZKAFKA_TEST_ARTIFACTS`` (default ``<repo>/test-artifacts``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


from scripts.local.cluster import running_cluster
from tests.dashboard import test_dashboard as dashboard
from tests.dashboard.test_dashboard import REPO

TOPIC, TXN_ID = "dash-txn", "dash-txn-producer"
SNAPSHOT_JS = """
const row = document.querySelector('tr.transaction[data-transactional-id="%(txn)s"]');
const part = document.querySelector('tr.partition[data-topic="%(topic)s"][data-partition="0"]');
return {
  transaction: row && {state: row.dataset.state, ongoing: row.dataset.ongoing,
    partitions: row.querySelector('td.txn-partitions').textContent.trim()},
  ongoing: document.querySelector('#transactions-ongoing').textContent.trim(),
  partition: part && {hw: part.dataset.hw, lso: part.dataset.lso,
    lag: part.querySelector('td.lso-lag').textContent.trim()},
};
""" % {"txn": TXN_ID, "topic": TOPIC}


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", 1, tick_time=500, session_timeout_ms=6000, properties={
            "transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1", "offsets.topic.num.partitions": "1"}) as c:
        yield c


def wait_page(driver, condition, timeout: float, what: str) -> dict:
    return dashboard.wait_page(driver, condition, timeout, what, SNAPSHOT_JS)


def test_open_transaction_and_lso_on_the_dashboard(cluster, browser):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": TXN_ID})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(TOPIC, f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    browser.get(f"http://127.0.0.1:{cluster.http_port(1)}/")
    opened = wait_page(browser, lambda s: (s["transaction"] or {}).get("state") == "Ongoing"
                       and (s["partition"] or {}).get("hw") == "5", 30, "the open transaction on the page")
    assert opened["transaction"] == {"state": "Ongoing", "ongoing": "true", "partitions": f"{TOPIC}-0"}
    assert opened["partition"] == {"hw": "5", "lso": "0", "lag": "5"} and opened["ongoing"] == "1"
    artifacts = Path(os.environ.get("ZKAFKA_TEST_ARTIFACTS", REPO / "test-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(artifacts / "dashboard-transactions.png"))

    producer.commit_transaction(60)
    committed = wait_page(browser, lambda s: s["transaction"] is None and (s["partition"] or {}).get("lso") == "6",
                          30, "the committed transaction gone and the LSO at the HW")
    assert committed["partition"] == {"hw": "6", "lso": "6", "lag": "0"} and committed["ongoing"] == "0"
