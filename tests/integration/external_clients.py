"""Running the independent clients `make tools` installs (kafkajs through node, the Sarama program built
from Debian's Go sources) and checking what they did with confluent-kafka, the suite's reference client.

A client that fails is reported with its stderr and with the brokers' reasons for closing its connections
(a broker closes the connection of a request version outside its window and logs the client id, API and
version), so that a failure says which (API, version) pair the broker refused.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.cluster import Cluster
from tests.integration.conditions import wait_for

ROOT = Path(__file__).resolve().parents[2]
KAFKAJS = ROOT / "tests" / "clients" / "kafkajs"
SARAMA = ROOT / "build" / "clients" / "sarama-client"
TIMEOUT = 60.0
CLOSING = re.compile(r"closing connection from [0-9.]+:[0-9]+: (.*)")


def refusals(cluster: Cluster) -> list[str]:
    """The brokers' distinct reasons for closing a client's connection (a request version outside the window,
    a request it cannot decode), each with the broker and the first time it was logged."""
    seen: dict[str, str] = {}
    for broker_id in cluster.broker_ids:
        try:
            text = (cluster.broker_dir(broker_id) / "broker.log").read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            found = CLOSING.search(line)
            if found:
                seen.setdefault(f"broker {broker_id}: {found.group(1)}", line[:23])
    return [f"{first} {reason}" for reason, first in seen.items()]


@pytest.fixture(autouse=True)
def versions_served(cluster):
    """Autouse where imported: after each test, no broker closed a client's connection during it (a client
    whose request was refused fails there even when it retried its way around it)."""
    before = set(refusals(cluster))
    yield
    refused = [line for line in refusals(cluster) if line not in before]
    assert not refused, "the brokers closed connections:\n" + "\n".join(refused)


def run_client(cluster: Cluster, argv: list[str], *, stdin: Any = None, timeout: float = TIMEOUT + 30) -> Any:
    """Runs one client command; its stdout's JSON document, or an AssertionError with its stderr and the
    brokers' reasons for closing connections."""
    proc = subprocess.run(argv, input=None if stdin is None else json.dumps(stdin), capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        refused = "\n".join(refusals(cluster)[-10:]) or "(none)"
        raise AssertionError(f"{' '.join(argv[:4])} ... exited {proc.returncode}\n--- stderr:\n"
                             f"{proc.stderr[-4000:]}\n--- brokers' reasons for closing connections:\n{refused}")
    return json.loads(proc.stdout)


def kafkajs(cluster: Cluster, command: str, args: dict | None = None) -> Any:
    script = KAFKAJS / "client.js"
    assert (KAFKAJS / "node_modules" / "kafkajs").is_dir(), "kafkajs is not installed: run `make tools`"
    return run_client(cluster, ["node", str(script), cluster.bootstrap_servers, command, json.dumps(args or {})])


def sarama(cluster: Cluster, version: str, command: str, *flags: str, records: list | None = None) -> Any:
    assert SARAMA.is_file(), "the Sarama client is not built: run `make tools`"
    return run_client(cluster, [str(SARAMA), "-brokers", cluster.bootstrap_servers, "-version", version, command,
                                *flags], stdin=records)


# -- confluent-kafka: the reference view ---------------------------------------------------------

def create_topic(cluster: Cluster, topic: str, partitions: int = 3, rf: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)],
                                  operation_timeout=30)
    futures[topic].result(timeout=TIMEOUT)


def topic_partitions(cluster: Cluster) -> dict[str, dict[int, list[int]]]:
    """Every topic's replicas per partition, as a metadata request sees them."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = admin.list_topics(timeout=TIMEOUT)
    return {name: {p.id: list(p.replicas) for p in t.partitions.values()} for name, t in metadata.topics.items()
            if t.error is None}


def topics_seen(cluster: Cluster, *names: str) -> dict[str, dict[int, list[int]]]:
    """``topic_partitions`` once every one of ``names`` is in it (a new topic reaches the brokers' metadata
    caches through the controller's UpdateMetadata, after CreateTopics has answered)."""
    def seen():
        topics = topic_partitions(cluster)
        return topics if set(names) <= set(topics) else None

    return wait_for(seen, TIMEOUT, f"{', '.join(names)} in metadata")


def read_all(cluster: Cluster, topic: str, partitions: int, expected: int) -> list[dict]:
    """Every record of ``topic`` from offset 0, as dicts shaped like the clients' output."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "reference-reader",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records: list[dict] = []

        def polled():
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                records.append(reference_record(msg))
            return len(records) >= expected

        wait_for(polled, TIMEOUT, f"{expected} records of {topic}", interval=0)
    finally:
        consumer.close()
    assert len(records) == expected
    return records


def reference_record(msg) -> dict:
    return {"partition": msg.partition(), "offset": msg.offset(),
            "key": None if msg.key() is None else msg.key().decode(), "value": msg.value().decode(),
            "timestamp": msg.timestamp()[1], "headers": {k: v.decode() for k, v in msg.headers() or []}}


def end_offsets(cluster: Cluster, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "reference-reader"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def committed(cluster: Cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch through confluent-kafka); partitions without one left out."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def commit(cluster: Cluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commits ``offsets`` for ``group`` as a client outside the group's membership does (generation -1)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()
