"""No rebalance when a broker restarts while the controller is cut off (the soak's seed 1544237110): the
restarted broker serves clients before the controller's first UpdateMetadata. Its Metadata answers must not
tell the group members that their topic and every broker are gone (librdkafka then revokes and rejoins, or
loses every broker and its session), so the members keep their assignment throughout.

Members refresh topic metadata every 200 ms so that some of their refreshes reach the restarted broker in its
window without metadata (asserted through its ``/healthz``); the brokers' ZooKeeper session is Kafka's
default 18 s so that the window outlasts the restart."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conditions import wait_for

TOPIC, GROUP, MEMBER_SESSION_MS = "window", "g-window", 45000  # librdkafka's default


class Member(threading.Thread):
    def __init__(self, name: str, bootstrap: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.rebalances: list[tuple[float, str, list[int]]] = []
        self.last_value = 0.0  # the newest produce time it read
        self.stop_event = stop
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "session.timeout.ms": MEMBER_SESSION_MS, "topic.metadata.refresh.interval.ms": 200})
        self.consumer.subscribe([TOPIC], on_assign=lambda _c, ps: self._event("assign", ps),
                                on_revoke=lambda _c, ps: self._event("revoke", ps))

    def _event(self, kind, partitions) -> None:
        self.rebalances.append((time.time(), kind, sorted(p.partition for p in partitions)))

    def run(self) -> None:
        while not self.stop_event.is_set():
            good = [m for m in self.consumer.consume(100, timeout=0.3) if m.error() is None]
            if good:
                self.last_value = max(self.last_value, *(float(m.value()) for m in good))
                self.consumer.commit(asynchronous=True)
        self.consumer.close()


def _without_metadata(health: dict | None) -> bool:
    return health is not None and not (health.get("metadata") or {}).get("partitions")


def test_a_broker_restarted_while_the_controller_is_cut_off_causes_no_rebalance(make_container_cluster):
    cluster = make_container_cluster(properties={"group.initial.rebalance.delay.ms": "0",
                                                 "zookeeper.session.timeout.ms": "18000"})
    cluster.wait_until_ready()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 6, 3)])[TOPIC].result(30)
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})

    def produce() -> None:
        while not stop.is_set():
            producer.produce(TOPIC, str(time.time()).encode())
            producer.poll(0.02)

    members = [Member(f"m{i}", cluster.bootstrap_servers, stop) for i in (0, 1)]
    threading.Thread(target=produce, daemon=True).start()
    for m in members:
        m.start()
    try:
        wait_for(lambda: all(m.rebalances and m.rebalances[-1][1] == "assign" and m.rebalances[-1][2]
                             for m in members), 60, "both members assigned")
        wait_for(lambda: all(m.last_value > 0 for m in members), 30, "both members consuming")
        steady = [len(m.rebalances) for m in members]
        (controller,) = cluster.controllers()
        coordinator = admin.describe_consumer_groups([GROUP])[GROUP].result(10).coordinator.id
        # neither the controller nor the group's coordinator: no outage of the group's coordinator at all
        restarted = next(b for b in cluster.broker_ids if b not in (controller, coordinator))
        cluster.isolate_broker(controller)
        cluster.kill_broker(restarted)
        cluster.start_broker(restarted)
        fault_at = time.time()
        wait_for(lambda: _without_metadata(cluster.health(restarted)), 30, f"broker {restarted} up without metadata")
        wait_for(lambda: time.time() - fault_at > 15, 20, "the controller cut off for 15 s")
        cluster.heal_broker(controller)
        healed_at = time.time()
        wait_for(lambda: time.time() - fault_at > 30 and all(m.last_value > healed_at for m in members), 90,
                 "both members reading records produced after the heal, 30 s after the restart")
        assert [m.rebalances[n:] for m, n in zip(members, steady)] == [[], []]
    finally:
        stop.set()
        for m in members:
            m.join(20)
        producer.flush(10)
