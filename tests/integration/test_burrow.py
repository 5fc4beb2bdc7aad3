"""Burrow 1.2.1 (LinkedIn's consumer-lag monitor, Debian's ``burrow``, built on Sarama) reading a real
3-broker cluster. Its two sources meet in its lag:

- the **kafka cluster module** (Sarama at the profile's ``kafka-version``: Metadata v0 at "0.8", v5 at
  "2.1.0"; ListOffsets v0 for every partition's end offset, refreshed each second here);
- the **kafka_zk consumer module**, which watches ``/consumers/<group>/offsets/<topic>/<partition>`` in
  ZooKeeper, where zkafka's group coordinator stores committed offsets in Kafka 2.8's shape.

Burrow's other consumer module (class ``kafka``) reads commits from the ``__consumer_offsets`` log; zkafka
keeps committed offsets in ZooKeeper and writes no offset records there, so that module sees no group.

The test commits offsets with confluent-kafka and asserts Burrow's ``/v3/kafka/<cluster>/consumer/<group>/lag``
reports exactly end offset minus committed offset per partition, then that it follows a new end offset
and a new commit.
"""
from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from scripts.local.cluster import Cluster, running_cluster
from scripts.local.zookeeper.network import find_free_base_port
from tests.integration.conditions import wait_for
from tests.integration.external_clients import (  # versions_served: an autouse fixture
    TIMEOUT, commit, create_topic, refusals, versions_served)

BURROW = "/usr/bin/Burrow"
CLUSTER = "zkafka"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("burrow") / "cluster", 3, tick_time=500,
                         session_timeout_ms=6000) as c:
        yield c


def burrow_config(cluster: Cluster, directory: Path, http_port: int, kafka_version: str) -> str:
    brokers = json.dumps(cluster.bootstrap_servers.split(","))
    zookeeper = json.dumps([cluster.zookeeper_connect])
    return f"""
[general]
pidfile="{directory}/burrow.pid"

[logging]
level="info"

[zookeeper]
servers={zookeeper}
timeout=6
root-path="/burrow"

[client-profile.zkafka]
client-id="burrow-{kafka_version}"
kafka-version="{kafka_version}"

[cluster.{CLUSTER}]
class-name="kafka"
servers={brokers}
client-profile="zkafka"
topic-refresh=1
offset-refresh=1

[consumer.zookeeper]
class-name="kafka_zk"
cluster="{CLUSTER}"
servers={zookeeper}
zookeeper-timeout=6

[storage.default]
class-name="inmemory"
intervals=10
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1

[httpserver.default]
address="127.0.0.1:{http_port}"
"""


class Burrow:
    """One Burrow process on a generated configuration; its log (stdout) stays in ``directory``."""

    def __init__(self, cluster: Cluster, directory: Path, kafka_version: str):
        directory.mkdir(parents=True)
        self.cluster, self.directory = cluster, directory
        self.port = find_free_base_port(1)
        (directory / "burrow.toml").write_text(burrow_config(cluster, directory, self.port, kafka_version))
        self.log = directory / "burrow.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen([BURROW, "-config-dir", str(directory)], stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def get(self, path: str) -> dict | None:
        """The JSON of ``GET path``, None while Burrow cannot answer it; AssertionError once Burrow exited."""
        if self.process.poll() is not None:
            refused = "\n".join(refusals(self.cluster)[-10:]) or "(none)"
            raise AssertionError(f"Burrow exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}\n"
                                 f"--- brokers' reasons for closing connections:\n{refused}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return json.loads(response.read())
        except OSError:  # not listening yet, or 404 until the topic or group is known
            return None

    def wait(self, condition, what: str, interval: float = 0.2):
        """``wait_for`` whose timeout also shows Burrow's warnings and errors."""
        try:
            return wait_for(condition, TIMEOUT, f"Burrow's {what}", interval=interval)
        except AssertionError as exc:
            problems = [line for line in self.log.read_text().splitlines() if '"level":"info"' not in line]
            raise AssertionError(f"{exc}\n--- Burrow's warnings and errors:\n" + "\n".join(problems[-15:])) from None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def produce(cluster: Cluster, topic: str, counts: dict[int, int], tag: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20})
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, value=f"{tag}-{partition}-{i}".encode(), partition=partition)
    assert producer.flush(TIMEOUT) == 0


def lag_is(burrow: Burrow, group: str, topic: str, ends: dict[int, int], commits: dict[int, int]):
    """Burrow's lag for ``group`` when it reports exactly ``ends[p] - commits[p]`` for every partition."""
    body = burrow.get(f"/v3/kafka/{CLUSTER}/consumer/{group}/lag")
    if not body or body.get("error"):
        return None
    partitions = {p["partition"]: p for p in body["status"]["partitions"] if p and p["topic"] == topic}
    seen = {p: (s["end"]["offset"] if s["end"] else None, s["current_lag"]) for p, s in partitions.items()}
    wanted = {p: (commits[p], ends[p] - commits[p]) for p in ends}
    return body["status"] if seen == wanted else None


@pytest.mark.parametrize("kafka_version", ["0.8", "2.1.0"])
def test_burrow_reports_exact_lag_from_the_brokers_and_zookeeper(cluster, tmp_path, kafka_version):
    topic, group = f"burrow-{kafka_version}", f"burrow-group-{kafka_version}"
    create_topic(cluster, topic, partitions=3)
    ends = {0: 10, 1: 20, 2: 30}
    produce(cluster, topic, ends, "first")

    burrow = Burrow(cluster, tmp_path / "burrow", kafka_version)
    try:
        commits = {0: 4, 1: 20, 2: 7}

        def committed_and_reported():
            # Burrow drops a commit for a partition whose end offset its cluster module has not fetched yet,
            # so the commit is repeated until Burrow holds both (a repeated commit is a new znode version)
            commit(cluster, group, topic, commits)
            return lag_is(burrow, group, topic, ends, commits)

        status = burrow.wait(committed_and_reported, f"lag of {group} at {commits}", interval=1.0)
        assert (status["partition_count"], status["totallag"]) == (3, 6 + 0 + 23)
        assert (status["maxlag"]["partition"], status["maxlag"]["current_lag"]) == (2, 23)
        assert group in burrow.get(f"/v3/kafka/{CLUSTER}/consumer")["consumers"]

        produce(cluster, topic, {1: 5}, "second")
        ends[1] = 25
        burrow.wait(lambda: lag_is(burrow, group, topic, ends, commits), "lag after 5 more records in partition 1")
        commits = {**commits, 1: 22}
        commit(cluster, group, topic, {1: 22})
        burrow.wait(lambda: lag_is(burrow, group, topic, ends, commits), "lag after a new commit in partition 1")
    finally:
        burrow.stop()
