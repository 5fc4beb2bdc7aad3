"""``zkafka bench cluster``: how long the control plane takes, on real processes.

Per round, on a fresh cluster in a temp dir with free ports: ``cluster up`` until a controller is
elected; creating a topic until every partition has a leader; ``kill -9`` of the controller until
another broker is controller (bounded below by ``zookeeper.session.timeout.ms``: the dead session
must expire); a clean stop (controlled shutdown) of a partition leader until its process exits.
"""
from __future__ import annotations

import signal
import statistics
import tempfile
import time
from pathlib import Path

from scripts.local.cluster import Cluster, ClusterSpec
from scripts.tools.kafka_topics.command import main as kafka_topics


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _wait(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.01)


def one_round(base: Path, brokers: int, session_timeout_ms: int, partitions: int) -> dict[str, float]:
    spec = ClusterSpec.on_free_ports(brokers, tick_time=500, session_timeout_ms=session_timeout_ms)
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="bench-cluster-", dir=base)), spec)
    try:
        up = _timed(lambda: cluster.up(120))
        rf = str(min(3, brokers))
        create = _timed(lambda: kafka_topics(["--zookeeper", cluster.zookeeper_connect, "--create", "--topic", "bench",
                                              "--partitions", str(partitions), "--replication-factor", rf]))
        old, _ = cluster.controller()
        cluster.signal_broker(old, signal.SIGKILL)
        failover = _timed(lambda: _wait(lambda: (c := cluster.controller()) is not None and c[0] != old, 120))
        survivor = next(b for b in cluster.broker_ids if b != old and cluster.controller()[0] != b)
        controlled = _timed(lambda: cluster.stop_broker(survivor))
        return {"up": up, "create": create, "failover": failover, "controlled_stop": controlled}
    finally:
        cluster.down()


def run_cluster_bench(directory: Path | None, rounds: int, brokers: int, session_timeout_ms: int, partitions: int) -> None:
    base = Path(directory) if directory else Path(".zkafka")
    base.mkdir(parents=True, exist_ok=True)
    results = [one_round(base, brokers, session_timeout_ms, partitions) for _ in range(rounds)]
    print(f"{brokers} brokers, {partitions}-partition topic, zookeeper.session.timeout.ms={session_timeout_ms}, "
          f"{rounds} rounds (seconds: median [min-max])")
    print("| step | seconds |")
    print("|---|---|")
    labels = {"up": "cluster up (ZooKeeper + brokers registered + controller elected)",
              "create": "create topic until every partition has a leader",
              "failover": "kill -9 controller until a new controller is active",
              "controlled_stop": "clean stop of a broker (controlled shutdown) until it exits"}
    for key, label in labels.items():
        values = [r[key] for r in results]
        print(f"| {label} | {statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}] |")
