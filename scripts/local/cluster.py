"""``zkafka cluster up|status|down``: a real ZooKeeper and N broker processes on 127.0.0.1.

Layout under the cluster dir D (default ``./.zkafka``)::

    D/cluster.json                 ports and settings, so status/down work from any process
    D/zookeeper/                   zoo.cfg, data, zookeeper.log, zookeeper.pid
    D/broker-<id>/server.properties, broker.log, broker.pid, logs/ (log.dirs)

Broker ``i`` (1-based) listens on ``kafka_port_base + i - 1`` and serves HTTP (control plane,
``/healthz``) on ``http_port_base + i - 1``. ``up`` returns once every broker is registered and all
agree on one controller. Tests use this same code path. With ``http.ssl.enabled=true`` among the
properties the HTTP ports speak HTTPS: ``http_url`` and the health polls use https and trust
``http.ssl.truststore.location`` (else ``ssl.truststore.location``).
"""
from __future__ import annotations

import functools
import json
import shutil
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from scripts.local.processes import alive, cmdline
from scripts.local.zookeeper import ZooKeeperServer, find_free_base_port, srvr

DEFAULT_DIR = Path(".zkafka")


class ClusterError(RuntimeError):
    pass


@dataclass
class ClusterSpec:
    brokers: int = 3
    zookeeper_port: int = 2181
    kafka_port_base: int = 9092
    http_port_base: int = 8080
    tick_time: int = 2000
    session_timeout_ms: int = 18000
    properties: dict[str, str] = field(default_factory=dict)
    kafka_listener: str = "PLAINTEXT"  # the listener (and protocol) on each kafka port: PLAINTEXT or SSL
    racks: list[str] = field(default_factory=list)  # broker i's broker.rack is racks[i - 1]; empty: no racks

    @classmethod
    def on_free_ports(cls, brokers: int, **settings) -> "ClusterSpec":
        """A spec whose ZooKeeper, Kafka and HTTP ports are free right now (tests, benchmarks) and do not
        overlap: each block is found free on its own, so two of them can come back as the same port."""
        for _ in range(100):
            spec = cls(brokers, find_free_base_port(1), find_free_base_port(brokers), find_free_base_port(brokers),
                       **settings)
            ports = [spec.zookeeper_port, *range(spec.kafka_port_base, spec.kafka_port_base + brokers),
                     *range(spec.http_port_base, spec.http_port_base + brokers)]
            if len(set(ports)) == len(ports):
                return spec
        raise ClusterError(f"no {2 * brokers + 1} distinct free ports after 100 attempts")


class Cluster:
    def __init__(self, directory: Path = DEFAULT_DIR, spec: ClusterSpec | None = None):
        self.dir = Path(directory).resolve()
        self.spec = spec or self._load_spec()
        self.zookeeper = ZooKeeperServer(self.dir / "zookeeper", self.spec.zookeeper_port, tick_time=self.spec.tick_time)
        self._started: dict[int, int] = {}  # broker id -> pid of the process this object started

    def _load_spec(self) -> ClusterSpec:
        try:
            return ClusterSpec(**json.loads((self.dir / "cluster.json").read_text()))
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {self.dir} (start one with: zkafka cluster up --dir {self.dir})") from None

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.spec.brokers + 1))

    @property
    def zookeeper_connect(self) -> str:
        return f"127.0.0.1:{self.spec.zookeeper_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.kafka_port(b)}" for b in self.broker_ids)

    def kafka_port(self, broker_id: int) -> int:
        return self.spec.kafka_port_base + broker_id - 1

    def http_port(self, broker_id: int) -> int:
        return self.spec.http_port_base + broker_id - 1

    @property
    def http_scheme(self) -> str:
        return "https" if self.spec.properties.get("http.ssl.enabled", "").strip().lower() == "true" else "http"

    def http_url(self, broker_id: int, path: str = "") -> str:
        return f"{self.http_scheme}://127.0.0.1:{self.http_port(broker_id)}{path}"

    @functools.cached_property
    def http_ssl_context(self) -> ssl.SSLContext | None:
        """What a client of an https cluster trusts: the brokers' truststore (None for plain HTTP)."""
        if self.http_scheme != "https":
            return None
        props = self.spec.properties
        return ssl.create_default_context(cafile=props.get("http.ssl.truststore.location")
                                          or props.get("ssl.truststore.location"))

    def broker_dir(self, broker_id: int) -> Path:
        return self.dir / f"broker-{broker_id}"

    def log_dir(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "logs"

    # -- up ------------------------------------------------------------------------------------
    def up(self, timeout: float = 60.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "cluster.json").write_text(json.dumps(asdict(self.spec), indent=2))
        if not self.zookeeper.is_running():
            self.zookeeper.start(timeout)
        try:
            for broker_id in self.broker_ids:
                self.start_broker(broker_id)
            self.wait_until_ready(timeout, list(self.broker_ids))
        except BaseException:
            self.down()  # a half-started cluster must not outlive the failure (logs stay on disk)
            raise

    def write_properties(self, broker_id: int) -> Path:
        props = {
            "broker.id": str(broker_id),
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.session.timeout.ms": str(self.spec.session_timeout_ms),
            "log.dirs": str(self.log_dir(broker_id)),
            "listeners": f"{self.spec.kafka_listener}://127.0.0.1:{self.kafka_port(broker_id)}",
            "http.port": str(self.http_port(broker_id)),
            "offsets.topic.replication.factor": str(min(3, self.spec.brokers)),
            "default.replication.factor": str(min(3, self.spec.brokers)),
            # a local cluster's last broker has nobody to hand leadership to: don't wait 3 x 5 s for that
            "controlled.shutdown.retry.backoff.ms": "500",
            # "{kafka_port}" in a value is this broker's port (listeners of other security protocols), "{broker_id}"
            # its id (a second listener's port per broker): `zkafka cluster up --help`
            **{k: v.replace("{kafka_port}", str(self.kafka_port(broker_id))).replace("{broker_id}", str(broker_id))
               for k, v in self.spec.properties.items()},
        }
        if self.spec.racks:
            props["broker.rack"] = self.spec.racks[broker_id - 1]
        path = self.broker_dir(broker_id) / "server.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def start_broker(self, broker_id: int) -> int:
        if self.broker_pid(broker_id) is not None:
            return self.broker_pid(broker_id)
        properties = self.write_properties(broker_id)
        log_path = self.broker_dir(broker_id) / "broker.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "brokers", "--config", str(properties)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, cwd=Path(__file__).resolve().parents[1])
        (self.broker_dir(broker_id) / "broker.pid").write_text(f"{proc.pid}\n")
        self._started[broker_id] = proc.pid
        return proc.pid

    def wait_until_ready(self, timeout: float = 60.0, broker_ids: list[int] | None = None) -> dict:
        """Until every broker answers /healthz registered, all agree on one live controller, and each one's
        metadata cache (what clients are told) names that controller and every running broker."""
        ids = broker_ids or [b for b in self.broker_ids if self.broker_pid(b) is not None]
        deadline = time.monotonic() + timeout
        last: dict = {}
        while time.monotonic() < deadline:
            last = {b: self.health(b) for b in ids}
            for b in ids:
                if not self._running(b):
                    zk = "running" if self.zookeeper.is_running() else f"NOT running (pid {self.zookeeper.pid})"
                    raise ClusterError(f"broker {b} exited (ZooKeeper {zk}); see {self.broker_dir(b) / 'broker.log'}:\n"
                                       f"{self.tail(b)}")
            if all(h and h.get("broker_epoch", -1) > 0 for h in last.values()):
                controllers = {h["controller"].get("active_controller_id") for h in last.values()}
                active = [b for b, h in last.items() if h["controller"].get("is_controller")]
                if len(controllers) == 1 and len(active) == 1 and active[0] in controllers and all(
                        _metadata_knows(h, active[0], ids) for h in last.values()):
                    return last
            time.sleep(0.1)
        raise ClusterError(f"cluster not ready within {timeout:.0f} s: {json.dumps(last)[:2000]}")

    # -- inspection ----------------------------------------------------------------------------
    def _running(self, broker_id: int) -> bool:
        """A broker this object started is judged by its pid alone (no pid-file or /proc/cmdline race
        right after the start); any other by ``broker_pid``."""
        pid = self._started.get(broker_id)
        return alive(pid) if pid is not None else self.broker_pid(broker_id) is not None

    def broker_pid(self, broker_id: int) -> int | None:
        """The broker's pid if that process is alive and really runs this broker's config (a stale
        pid file after a crash or reboot may name an unrelated process)."""
        try:
            pid = int((self.broker_dir(broker_id) / "broker.pid").read_text())
        except (OSError, ValueError):
            return None
        if not alive(pid):
            return None
        return pid if str(self.broker_dir(broker_id) / "server.properties") in cmdline(pid, settle=2.0) else None

    def health(self, broker_id: int, timeout: float = 1.0) -> dict | None:
        try:
            with urllib.request.urlopen(self.http_url(broker_id, "/healthz"), timeout=timeout,
                                        context=self.http_ssl_context) as r:
                return json.loads(r.read())
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def controller(self) -> tuple[int, int] | None:
        """(broker id, epoch) of the broker that says it is the active controller."""
        for broker_id in self.broker_ids:
            health = self.health(broker_id)
            if health and health["controller"].get("is_controller"):
                return broker_id, health["controller"]["epoch"]
        return None

    def status(self) -> dict:
        try:
            zk_mode = srvr("127.0.0.1", self.spec.zookeeper_port).get("mode")
        except OSError:
            zk_mode = None
        brokers = []
        for b in self.broker_ids:
            health = self.health(b) or {}
            controller = health.get("controller", {})
            brokers.append({"id": b, "pid": self.broker_pid(b), "alive": self.broker_pid(b) is not None,
                            "kafka_port": self.kafka_port(b), "http_port": self.http_port(b),
                            "registered": health.get("broker_epoch", -1) > 0, "broker_epoch": health.get("broker_epoch"),
                            "is_controller": bool(controller.get("is_controller"))})
        found = self.controller()
        return {"dir": str(self.dir), "bootstrap_servers": self.bootstrap_servers,
                "zookeeper": {"connect": self.zookeeper_connect, "pid": self.zookeeper.pid,
                              "alive": self.zookeeper.is_running(), "mode": zk_mode},
                "brokers": brokers,
                "controller": {"id": found[0], "epoch": found[1]} if found else None}

    def tail(self, broker_id: int, lines: int = 30) -> str:
        try:
            return "".join((self.broker_dir(broker_id) / "broker.log").read_text().splitlines(True)[-lines:])
        except OSError:
            return ""

    # -- stopping ------------------------------------------------------------------------------
    def signal_broker(self, broker_id: int, sig: signal.Signals) -> None:
        pid = self.broker_pid(broker_id)
        if pid is None:
            raise ClusterError(f"broker {broker_id} is not running")
        os.kill(pid, sig)

    def stop_broker(self, broker_id: int, grace: float = 20.0) -> None:
        pid = self.broker_pid(broker_id)
        if pid is None:
            return
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid)

    def down(self) -> None:
        for broker_id in self.broker_ids:
            self.stop_broker(broker_id)
        self.zookeeper.stop()


@contextmanager
def running_cluster(directory: Path, brokers: int, *, timeout: float = 60.0, **settings) -> Iterator[Cluster]:
    """A cluster on free ports (``settings``: ClusterSpec fields), up for the ``with`` block and down after
    it, also when start-up itself fails half-way (whatever did start is stopped)."""
    cluster = Cluster(directory, ClusterSpec.on_free_ports(brokers, **settings))
    try:
        cluster.up(timeout=timeout)
        yield cluster
    finally:
        cluster.down()


@dataclass
class Scratch:
    """What ``scratch_cluster`` hands its block: where to connect, a temp dir, and whether the block failed
    (only then are the logs of a cluster it started kept)."""

    bootstrap: str
    directory: Path
    failed: bool = True


@contextmanager
def scratch_cluster(prefix: str, brokers: int, properties: dict[str, str], bootstrap: str | None,
                    out: Callable[[str], None]) -> Iterator[Scratch]:
    """The demos' cluster: ``bootstrap`` when given, else a fresh one on free ports in a temp dir, stopped
    afterwards. The temp dir goes too unless the block left ``failed`` set with a cluster of ours in it:
    then its broker logs are kept and said where."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    cluster = None
    scratch = Scratch(bootstrap or "", directory)
    try:
        if bootstrap is None:
            cluster = Cluster(directory / "cluster", ClusterSpec.on_free_ports(brokers, properties=dict(properties)))
            out(f"starting ZooKeeper + {brokers} broker(s) in {cluster.dir}")
            cluster.up(120)
            scratch.bootstrap = cluster.bootstrap_servers
            out(f"cluster up: {scratch.bootstrap}")
        yield scratch
    finally:
        if cluster is not None:
            cluster.down()
        if scratch.failed and cluster is not None:
            out(f"broker logs kept in {directory}/cluster/broker-<id>/broker.log (rm -rf {directory})")
        else:
            shutil.rmtree(directory, ignore_errors=True)


def _metadata_knows(health: dict, controller: int, broker_ids: list[int]) -> bool:
    metadata = health.get("metadata") or {}
    return metadata.get("controller_id") == controller and set(broker_ids) <= set(metadata.get("live_brokers", []))


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.02)
