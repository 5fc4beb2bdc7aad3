"""A broker restarted at once after kill -9 (its previous ZooKeeper session still alive) waits that session
out and registers, instead of exiting "already registered"; a genuinely different live broker with the same
broker.id still stops start-up (brokers.app.previous_incarnation). Real ZooKeeper, real broker processes."""
from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.local.zookeeper import find_free_base_port
from tests.integration.conditions import wait_for

SESSION_MS = 6000
TOPIC = "restarted"
TIMEOUT = 30
REPO = Path(__file__).resolve().parents[2]
WAITING = "is this broker's previous incarnation"


def produce(cluster, value: bytes) -> int:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    offsets = []
    producer.produce(TOPIC, value, partition=0, on_delivery=lambda err, msg: offsets.append((err, msg.offset())))
    assert producer.flush(TIMEOUT) == 0
    ((error, offset),) = offsets
    assert error is None
    return offset


def fetch_all(cluster, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    try:
        def more():
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
            return len(values) >= count
        wait_for(more, TIMEOUT, f"{count} records fetched", interval=0)
    finally:
        consumer.close()
    return values


def start_extra_broker(cluster, tmp_path: Path, name: str, port: int, http_port: int) -> subprocess.CompletedProcess:
    properties = tmp_path / f"{name}.properties"
    properties.write_text(f"broker.id=1\nzookeeper.connect={cluster.zookeeper_connect}\n"
                          f"log.dirs={tmp_path / name}\nlisteners=PLAINTEXT://127.0.0.1:{port}\n"
                          f"http.port={http_port}\nzookeeper.session.timeout.ms={SESSION_MS}\n")
    return subprocess.run([sys.executable, "-m", "brokers", "--config", str(properties)], capture_output=True,
                          text=True, timeout=60, cwd=REPO)


def test_a_broker_restarted_after_kill_9_waits_out_its_old_session_and_serves(make_cluster):
    cluster, zk = make_cluster(1, session_timeout_ms=SESSION_MS)
    (broker,) = cluster.broker_ids
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=TIMEOUT)[TOPIC].result(TIMEOUT)
    assert produce(cluster, b"before") == 0
    _, old = zk.get(f"/brokers/ids/{broker}")
    log_path = cluster.broker_dir(broker) / "broker.log"
    logged_before = len(log_path.read_text())

    cluster.signal_broker(broker, signal.SIGKILL)
    wait_for(lambda: cluster.broker_pid(broker) is None, 10, "the killed broker gone")
    cluster.start_broker(broker)  # at once: the old session lives on for about SESSION_MS
    new_log = lambda: log_path.read_text()[logged_before:]  # noqa: E731
    wait_for(lambda: WAITING in new_log(), TIMEOUT, "the restarted broker's waiting line")
    assert zk.exists(f"/brokers/ids/{broker}").ephemeralOwner == old.ephemeralOwner  # still the old session

    cluster.wait_until_ready(TIMEOUT + SESSION_MS / 1000)
    _, new = zk.get(f"/brokers/ids/{broker}")
    assert new.ephemeralOwner != old.ephemeralOwner and new.czxid > old.czxid
    text = new_log()
    (waiting,) = [line for line in text.splitlines() if WAITING in line]  # ONE line
    assert f"session {old.ephemeralOwner:#x}" in waiting and "waiting at most 11.0 s" in waiting
    assert text.index(WAITING) < text.index(f"broker {broker} registered with epoch {new.czxid}")
    assert "already registered" not in text

    assert produce(cluster, b"after") == 1
    assert fetch_all(cluster, 2) == [b"before", b"after"]


def test_another_live_broker_with_the_same_id_still_stops_start_up(make_cluster, tmp_path):
    cluster, zk = make_cluster(1, session_timeout_ms=SESSION_MS)
    (broker,) = cluster.broker_ids
    _, live = zk.get(f"/brokers/ids/{broker}")
    live_endpoint = f"PLAINTEXT://127.0.0.1:{cluster.kafka_port(broker)}"

    other_port = find_free_base_port(1)  # different endpoints: another broker, whatever answers
    result = start_extra_broker(cluster, tmp_path, "other", other_port, find_free_base_port(1))
    assert result.returncode == 1, result.stderr
    assert (f"broker id {broker} is already registered by another live broker (session "
            f"{live.ephemeralOwner:#x}, endpoints {live_endpoint})") in result.stderr
    assert "differ from ours" in result.stderr and WAITING not in result.stderr

    # the same endpoints as the live broker: it answers there, so it is not a previous incarnation
    result = start_extra_broker(cluster, tmp_path, "same", cluster.kafka_port(broker), cluster.http_port(broker))
    assert result.returncode == 1, result.stderr
    assert "already registered by another live broker" in result.stderr and "answers" in result.stderr
    assert WAITING not in result.stderr
    _, still = zk.get(f"/brokers/ids/{broker}")
    assert still.czxid == live.czxid and cluster.health(broker)["broker_epoch"] == live.czxid
