"""Correctness at scale, in a cheap form (issue 25): 2,000 partitions at RF 3 on three brokers, created by one
CreateTopics request of 20 topics; kill -9 of the controller; the dead controller started again. Every
partition must end with a leader and its full ISR (all three replicas), and every broker's metadata
(``/healthz`` ``metadata.partitions``, what Metadata requests answer from) must say the same leader and ISR
for each partition. Deadlines are generous; times are ``zkafka bench scale``'s business, never asserted."""
from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka.admin import AdminClient, NewTopic

from scripts.bench.scale import all_led, disagreement, full_and_agreeing, topic_layout
from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

PARTITIONS = 2000
SESSION_MS = 6000


def phase(start: float, what: str) -> None:
    """Where the test's time went (pytest shows it with a failure; times are never asserted)."""
    print(f"{time.monotonic() - start:6.1f} s: {what}", flush=True)


class Views:
    """Each broker's metadata partitions, fetched in parallel; the last ones kept for a failure's message."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.pool = ThreadPoolExecutor(3)
        self.last: dict = {}

    def __call__(self, brokers: list[int]) -> dict:
        healths = self.pool.map(lambda b: self.cluster.health(b, timeout=30), brokers)
        self.last = {b: h["metadata"]["partitions"] if h else None for b, h in zip(brokers, healths)}
        return self.last

    def controller(self) -> int | None:
        """The broker that says it is the active controller (``/healthz`` of a broker busy with 2,000 partitions
        may take longer than ``Cluster.controller``'s one second)."""
        healths = self.pool.map(lambda b: (b, self.cluster.health(b, timeout=30)), self.cluster.broker_ids)
        return next((b for b, h in healths if h and h["controller"].get("is_controller")), None)

    def full_and_agreeing(self, brokers: list[int]) -> bool:
        return full_and_agreeing(self(brokers), PARTITIONS)

    def wait_full(self, brokers: list[int], timeout: float, what: str) -> None:
        try:
            wait_for(lambda: self.full_and_agreeing(brokers), timeout, what, interval=1.0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {disagreement(self.last, PARTITIONS)}") from None


def test_controller_killed_and_restarted_at_2000_partitions(tmp_path):
    with running_cluster(tmp_path / "cluster", 3, tick_time=500, session_timeout_ms=SESSION_MS) as cluster:
        start = time.monotonic()
        views = Views(cluster)
        brokers = cluster.broker_ids
        layout = topic_layout(PARTITIONS, 100)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        futures = admin.create_topics([NewTopic(t, n, 3) for t, n in layout], operation_timeout=0,
                                      request_timeout=180)
        for future in futures.values():
            future.result(210)
        del admin, futures  # no client left retrying the brokers after the test
        phase(start, "CreateTopics answered")
        views.wait_full(brokers, 240, "2,000 partitions led with full ISRs, all brokers agreeing")
        phase(start, "all led with full ISRs")

        old = wait_for(views.controller, 60, "the controller")
        cluster.signal_broker(old, signal.SIGKILL)
        survivors = [b for b in brokers if b != old]
        wait_for(lambda: views.controller() not in (None, old), 120, "a new controller")
        phase(start, f"controller {old} killed, a new one elected")
        wait_for(lambda: all(all_led(v, PARTITIONS, survivors) for v in views(survivors).values()), 180,
                 "every partition led by a survivor in every survivor's metadata", interval=1.0)

        phase(start, "every partition led by a survivor")
        cluster.start_broker(old)
        views.wait_full(brokers, 240, "the old controller back in every ISR, all brokers agreeing")
        phase(start, f"broker {old} back in every ISR")
        views.pool.shutdown()
        # a clean stop of 2,000 logs per broker takes ~5 s each (a fsynced producer snapshot per log) and is
        # not what this test is about: kill -9, the cluster's down() then only stops ZooKeeper
        for b in brokers:
            cluster.signal_broker(b, signal.SIGKILL)
