"""The live dashboard (``/`` on a broker's HTTP port) in a real headless Chromium, against a real
3-broker cluster: it shows every broker up with one controller, the topic and its partitions fully
replicated, a Stable consumer group with the exact lag its committed offsets imply (with its member's
assignment) and both charts; then, after broker 3 is SIGKILLed, the page served by broker 1 turns its
row down and every partition under-replicated (but not offline) within seconds, without JS errors.
Screenshots of both states go to ``$ZKAFKA_TEST_ARTIFACTS`` (default ``<repo>/test-artifacts``)."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

CHROMEDRIVER = Path("/usr/bin/chromedriver")
REPO = Path(__file__).resolve().parents[2]
TOPIC, GROUP = "dash", "dash-group"
PARTITIONS, PER_PARTITION, COMMITTED = 3, 30, 10
LAG = PER_PARTITION - COMMITTED  # per partition
CHROME_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage",
               "--window-size=1400,1800"]

# One consistent snapshot of the DOM per call: the page re-renders every second, so element handles
# kept across calls would go stale.
SNAPSHOT_JS = """
const all = (root, sel) => Array.from(root.querySelectorAll(sel));
const group = document.querySelector('div.group[data-group-id="%(group)s"]');
return {
  brokers: all(document, 'tr.broker').map((r) => ({
    id: r.dataset.brokerId, alive: r.dataset.alive, down: r.classList.contains('down'),
    status: r.querySelector('td.status').textContent.trim(), controller: !!r.querySelector('.badge.controller')})),
  controller: document.querySelector('#controller').dataset.controllerId,
  topic: !!document.querySelector('tr.topic[data-topic="%(topic)s"]'),
  partitions: all(document, 'tr.partition[data-topic="%(topic)s"]').map((r) => ({
    partition: r.dataset.partition, urp: r.dataset.underReplicated, offline: r.dataset.offline})),
  group: group && {state: group.dataset.state, total_lag: group.dataset.totalLag,
    assignment: all(group, 'td.assignment').map((td) => td.textContent).join(' '),
    lags: all(group, 'tr.group-offset[data-topic="%(topic)s"]').map((r) => r.dataset.lag)},
  charts: ['#chart-throughput', '#chart-lag'].map((s) => !!document.querySelector(s + ' canvas')),
};
""" % {"group": GROUP, "topic": TOPIC}


@pytest.fixture
def cluster(tmp_path):
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=3000, properties={
                         "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"}) as c:
        yield c


class PollingConsumer:
    """A group member that has committed offset COMMITTED on every partition, then keeps polling
    (without committing) on its own thread so the group stays Stable."""

    def __init__(self, cluster: Cluster):
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        self.consumer.subscribe([TOPIC])
        wait_for(self._assigned, 30, f"{GROUP} to be assigned all of {TOPIC}", interval=0)
        self.consumer.commit(offsets=[TopicPartition(TOPIC, p, COMMITTED) for p in range(PARTITIONS)],
                             asynchronous=False)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _assigned(self) -> bool:
        self.consumer.poll(0.1)  # joining the group happens inside poll
        return len(self.consumer.assignment()) == PARTITIONS

    def _run(self):
        while not self._stop.is_set():
            self.consumer.poll(0.2)

    def close(self):
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def create_and_fill(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # must outlive the future
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(60) == 0


def wait_page(driver, condition, timeout: float, what: str, snapshot_js: str = SNAPSHOT_JS) -> dict:
    """The first DOM snapshot (``snapshot_js``'s answer: this module's, or another dashboard test's) for which
    ``condition`` holds; on timeout the last one is in the message."""
    last: list[dict] = [{}]

    def check():
        last[0] = driver.execute_script(snapshot_js)
        return condition(last[0]) and last[0]
    try:
        return wait_for(check, timeout, what, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last page state: {json.dumps(last[0], indent=1)}") from None


def healthy(s: dict) -> bool:
    group = s["group"] or {}
    return (len(s["brokers"]) == 3 and all(b["alive"] == "true" for b in s["brokers"])
            and sum(b["controller"] for b in s["brokers"]) == 1
            and s["topic"] and len(s["partitions"]) == PARTITIONS
            and all(p["urp"] == "false" and p["offline"] == "false" for p in s["partitions"])
            and group.get("state") == "Stable" and group.get("total_lag") == str(PARTITIONS * LAG)
            and group.get("lags") == [str(LAG)] * PARTITIONS and f"{TOPIC}[" in group.get("assignment", "")
            and all(s["charts"]))


def broker_3_down(s: dict) -> bool:
    row = next((b for b in s["brokers"] if b["id"] == "3"), None)
    return (row is not None and row["alive"] == "false" and row["down"] and row["status"] == "down"
            and len(s["partitions"]) == PARTITIONS
            and all(p["urp"] == "true" and p["offline"] == "false" for p in s["partitions"]))


def screenshot(driver, name: str) -> Path:
    directory = Path(os.environ.get("ZKAFKA_TEST_ARTIFACTS") or REPO / "test-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    assert driver.save_screenshot(str(path)), f"could not save {path}"
    return path


def severe_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser")
            if e.get("level") == "SEVERE" and "favicon.ico" not in e.get("message", "")]


def test_dashboard_shows_a_healthy_cluster_then_a_killed_broker(browser, cluster):  # no cluster without a browser
    create_and_fill(cluster)
    member = PollingConsumer(cluster)
    try:
        browser.get(f"http://127.0.0.1:{cluster.http_port(1)}/")
        wait_page(browser, healthy, 20, "the dashboard to show a healthy cluster with dash-group lagging by 60")
        print(f"\nscreenshot: {screenshot(browser, 'dashboard-healthy.png')}")

        killed_at = time.monotonic()
        cluster.signal_broker(3, signal.SIGKILL)
        wait_page(browser, broker_3_down, 20, "broker 3 down and every dash partition under-replicated")
        print(f"broker 3 SIGKILLed -> visible on the dashboard in {time.monotonic() - killed_at:.1f} s")
        print(f"screenshot: {screenshot(browser, 'dashboard-broker-down.png')}")
        assert severe_errors(browser) == []
    finally:
        member.close()
