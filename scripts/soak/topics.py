"""The soak's topics and what the runner asks the cluster about them: creating them (RF 3) and waiting for full
ISRs, their high watermarks (the drain's target), and which keys are led by a live broker (availability).

Keys are the history's ``"topic/partition"``; the brokers' ``/healthz`` metadata names a partition
``"topic-partition"``.
"""
from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zkafka.testing.cluster import ZkafkaCluster
from zkafka.testing.conditions import wait_for
from scripts.soak.history import key_of, split_key

REPLICATION_FACTOR = 3


def plan_topics(plan) -> dict[str, int]:
    """Topic -> partitions of a ``WorkloadPlan``: the producers' topic, and the copiers' input and output."""
    topics = {plan.topic: plan.partitions}
    if plan.copiers:
        topics[plan.txn_input] = plan.txn_partitions
        topics[plan.txn_output] = plan.txn_partitions
    return topics


def plan_keys(plan) -> list[str]:
    return [key_of(topic, p) for topic, partitions in plan_topics(plan).items() for p in range(partitions)]


def health_name(key: str) -> str:
    topic, partition = split_key(key)
    return f"{topic}-{partition}"


def create_topics(cluster: ZkafkaCluster, topics: dict[str, int], timeout_s: float = 60) -> None:
    """Creates ``topics`` with RF 3 and waits until every live broker's metadata shows each partition led, with
    all replicas in its ISR."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(t, n, REPLICATION_FACTOR) for t, n in topics.items()],
                                  operation_timeout=timeout_s)
    for future in futures.values():
        future.result(timeout_s)
    keys = [key_of(t, p) for t, n in topics.items() for p in range(n)]
    wait_for(lambda: full_isr(views(cluster), keys, cluster.broker_ids), timeout_s,
             f"topics {sorted(topics)}: every partition led, with a full ISR", interval=0.5)


def views(cluster: ZkafkaCluster) -> dict[int, dict | None]:
    """Each broker's ``/healthz`` (None: it does not answer: down, paused, cut off)."""
    return {b: cluster.health(b) for b in cluster.broker_ids}


def full_isr(views: dict[int, dict | None], keys: list[str], replicas: list[int]) -> bool:
    """Every broker answers and its metadata shows every key led, with exactly ``replicas`` in the ISR."""
    if not views or any(h is None for h in views.values()):
        return False
    for h in views.values():
        partitions = h.get("metadata", {}).get("partitions", {})
        for key in keys:
            state = partitions.get(health_name(key))
            if not state or state.get("leader", -1) < 0 or sorted(state.get("isr", [])) != sorted(replicas):
                return False
    return True


def led_keys(views: dict[int, dict | None], keys: list[str]) -> set[str]:
    """The keys that every live broker's metadata shows led by a live broker (live: its ``/healthz``
    answers). No live broker: none."""
    live = {b for b, h in views.items() if h is not None}
    if not live:
        return set()
    led = set(keys)
    for b in live:
        partitions = views[b].get("metadata", {}).get("partitions", {})
        led = {k for k in led if (partitions.get(health_name(k)) or {}).get("leader", -1) in live}
    return led


class Watermarks:
    """High watermarks through one plain consumer (no group): ``get_watermark_offsets`` asks each partition's
    leader."""

    def __init__(self, bootstrap: str):
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-watermarks",
                                   "enable.auto.commit": False})

    def high(self, keys: list[str], timeout_s: float = 5.0) -> dict[str, int] | None:
        """key -> high watermark, or None when a leader did not answer in time."""
        ends = {}
        try:
            for key in keys:
                topic, partition = split_key(key)
                ends[key] = self._consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)[1]
        except KafkaException:
            return None
        return ends

    def close(self) -> None:
        self._consumer.close()
