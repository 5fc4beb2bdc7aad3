"""A zkafka cluster in Docker containers, for fault tests: a 3-node ZooKeeper ensemble and N brokers from our
images on one user-defined network, started with testcontainers (no Ryuk: everything carries the label
``zkafka.tests=containers`` and is removed by ``stop``, and by label in ``.ci/run``'s trap).

Addressing: peers use container names (``zk1``, ``broker2``); the host uses 127.0.0.1 only. Each broker has
two listeners: INTERNAL ``brokerN:9092`` (first, so the controller's HTTP control plane reaches peers by
name) and EXTERNAL ``127.0.0.1:<port>``, bound inside the container on the same port number it is
published on, so the address it advertises works from the host. Its HTTP port (8080: ``/healthz``, the
control plane) and each ZooKeeper's 2181 are published on fixed free host ports too (published ports
must not change across a pause or restart; see platform-notes §3.5).
"""
from __future__ import annotations

import json
import os
import shutil
import urllib.request
import uuid
from dataclasses import dataclass, field

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from scripts.local.zookeeper import find_free_base_port
from scripts.containers.conditions import wait_for

BROKER_IMAGE = os.environ.get("ZKAFKA_BROKER_IMAGE", "zkafka-broker:local")
ZOOKEEPER_IMAGE = os.environ.get("ZKAFKA_ZOOKEEPER_IMAGE", "zkafka-zookeeper:local")
LABELS = {"zkafka.tests": "containers"}
HTTP_PORT = 8080
SESSION_TIMEOUT_MS = 6000


def docker_problem() -> str | None:
    """Why container tests cannot run here, or None."""
    if shutil.which("docker") is None:
        return "no docker client"
    try:
        import docker
        client = docker.from_env()
        client.ping()
        for image in (BROKER_IMAGE, ZOOKEEPER_IMAGE):
            client.images.get(image)
    except Exception as exc:  # noqa: BLE001 - any failure means: not here
        return f"{type(exc).__name__}: {exc}"
    return None


NOTABLE = (" WARNING ", " ERROR ", "rejecting", "Traceback", "failed")


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now, below the kernel's ephemeral range. While a broker's
    container restarts its published port is unbound; inside the ephemeral range any outgoing connection
    of the host (the clients' own reconnects among them) could take it, and the container would not start
    again."""
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(find_free_base_port(1))
    return sorted(ports)


@dataclass
class ContainerCluster:
    brokers: int = 3
    properties: dict[str, str] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"zkafka-{uuid.uuid4().hex[:8]}")

    def __post_init__(self) -> None:
        self.network: Network | None = None
        self.zookeepers: dict[int, DockerContainer] = {}
        self.broker_containers: dict[int, DockerContainer] = {}
        ports = free_ports(2 * self.brokers + 3)
        self.kafka_ports = {b: ports.pop() for b in self.broker_ids}
        self.http_ports = {b: ports.pop() for b in self.broker_ids}
        self.zk_ports = {z: ports.pop() for z in (1, 2, 3)}

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.kafka_ports[b]}" for b in self.broker_ids)

    @property
    def zookeeper_connect(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.zk_ports.values())

    # -- start and stop ------------------------------------------------------------------------
    def start(self) -> "ContainerCluster":
        self.network = Network(docker_network_kw={"labels": LABELS})
        self.network.create()
        for z in (1, 2, 3):
            self.zookeepers[z] = self._zookeeper(z).start()
        wait_for(lambda: sorted(self.zk_mode(z) or "" for z in (1, 2, 3)) == ["follower", "follower", "leader"],
                 60, "the ZooKeeper ensemble to elect a leader")
        for b in self.broker_ids:
            self.broker_containers[b] = self._broker(b).start()
        self.wait_until_ready()
        return self

    def _container(self, image: str, alias: str) -> DockerContainer:
        container = DockerContainer(image, name=f"{self.name}-{alias}")
        return container.with_network(self.network).with_network_aliases(alias).with_kwargs(labels=LABELS)

    def _zookeeper(self, z: int) -> DockerContainer:
        servers = " ".join(f"server.{i}=zk{i}:2888:3888;2181" for i in (1, 2, 3))
        container = self._container(ZOOKEEPER_IMAGE, f"zk{z}").with_envs(
            ZOO_MY_ID=str(z), ZOO_SERVERS=servers, ZOO_TICK_TIME="500")
        container.ports["2181/tcp"] = ("127.0.0.1", self.zk_ports[z])
        return container

    def _broker(self, b: int) -> DockerContainer:
        port = self.kafka_ports[b]
        env = {
            "KAFKA_BROKER_ID": str(b),
            "KAFKA_ZOOKEEPER_CONNECT": "zk1:2181,zk2:2181,zk3:2181",
            "KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "KAFKA_LISTENERS": f"INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:{port}",
            "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://broker{b}:9092,EXTERNAL://127.0.0.1:{port}",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            "KAFKA_HTTP_PORT": str(HTTP_PORT),
            **{"KAFKA_" + k.upper().replace(".", "_"): v for k, v in self.properties.items()},
        }
        container = self._container(BROKER_IMAGE, f"broker{b}").with_envs(**env).with_kwargs(labels=LABELS, cap_add=["NET_ADMIN"])
        container.ports[f"{port}/tcp"] = ("127.0.0.1", port)
        container.ports[f"{HTTP_PORT}/tcp"] = ("127.0.0.1", self.http_ports[b])
        return container

    def stop(self) -> None:
        for container in [*self.broker_containers.values(), *self.zookeepers.values()]:
            try:
                container.get_wrapped_container().remove(force=True, v=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self.network is not None:
            try:
                self.network.remove()
            except Exception:  # noqa: BLE001
                pass

    def logs(self, tail: int = 60) -> str:
        """Each container's last ``tail`` lines, after the notable lines of its whole log (warnings, errors,
        rejected requests): a CI failure is read from this alone."""
        out = []
        for name, container in [*((f"broker{b}", c) for b, c in self.broker_containers.items()),
                                *((f"zk{z}", c) for z, c in self.zookeepers.items())]:
            try:
                lines = container.get_wrapped_container().logs().decode(errors="replace").splitlines()
            except Exception as exc:  # noqa: BLE001
                lines = [f"(no logs: {exc})"]
            notable = [line for line in lines[:-tail] if any(mark in line for mark in NOTABLE)][-40:]
            out.append(f"----- {name}: notable -----\n" + "\n".join(notable) if notable else "")
            out.append(f"----- {name} -----\n" + "\n".join(lines[-tail:]))
        return "\n".join(part for part in out if part)

    # -- observation ---------------------------------------------------------------------------
    def health(self, b: int, timeout: float = 1.0) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_ports[b]}/healthz", timeout=timeout) as r:
                return json.loads(r.read())
        except Exception:  # noqa: BLE001 - down, paused, partitioned
            return None

    def controllers(self, brokers: list[int] | None = None) -> set[int]:
        """The brokers that consider themselves the active controller."""
        found = set()
        for b in brokers or self.broker_ids:
            h = self.health(b)
            if h and h.get("controller", {}).get("is_controller"):
                found.add(b)
        return found

    def wait_until_ready(self, brokers: list[int] | None = None, timeout: float = 90) -> None:
        ids = brokers or self.broker_ids

        def ready() -> bool:
            health = {b: self.health(b) for b in ids}
            if not all(h and h.get("broker_epoch", -1) > 0 for h in health.values()):
                return False
            active = self.controllers(ids)
            return len(active) == 1 and all(
                h["metadata"].get("controller_id") in active and set(ids) <= set(h["metadata"]["live_brokers"])
                for h in health.values())
        wait_for(ready, timeout, f"brokers {ids} registered, one controller, metadata everywhere")

    def zk_mode(self, z: int) -> str | None:
        """``leader`` / ``follower`` / ``standalone``, or None if the node does not serve (``srvr``, not ``ruok``)."""
        try:
            code, output = self.zookeepers[z].get_wrapped_container().exec_run(
                ["sh", "-c", "echo srvr | nc -q 1 127.0.0.1 2181 || echo srvr | nc 127.0.0.1 2181"])
        except Exception:  # noqa: BLE001 - killed or paused
            return None
        for line in output.decode(errors="replace").splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def partition_view(self, b: int, topic: str, partition: int) -> dict | None:
        h = self.health(b)
        return h["partitions"].get(f"{topic}-{partition}") if h else None

    # -- faults --------------------------------------------------------------------------------
    def wrapped(self, b: int):
        return self.broker_containers[b].get_wrapped_container()

    def kill_broker(self, b: int) -> None:
        self.wrapped(b).kill()

    def start_broker(self, b: int) -> None:
        self.wrapped(b).start()

    def restart_broker(self, b: int, timeout_s: int = 30) -> None:
        """SIGTERM (controlled shutdown), then start the same container again."""
        self.wrapped(b).restart(timeout=timeout_s)

    def pause_broker(self, b: int) -> None:
        self.wrapped(b).pause()

    def unpause_broker(self, b: int) -> None:
        self.wrapped(b).unpause()

    def isolate_broker(self, b: int) -> None:
        """Drop all traffic between broker ``b`` and every other container (brokers and ZooKeeper), with
        iptables inside its container; the host still reaches its published ports (they arrive from the
        network's gateway)."""
        for ip in self._peer_ips(b):
            self._iptables(b, f"-A INPUT -s {ip} -j DROP", f"-A OUTPUT -d {ip} -j DROP")

    def heal_broker(self, b: int) -> None:
        self._iptables(b, "-F INPUT", "-F OUTPUT")

    def _iptables(self, b: int, *rules: str) -> None:
        for rule in rules:
            code, output = self.wrapped(b).exec_run(["iptables", *rule.split()])
            if code != 0:
                raise RuntimeError(f"iptables {rule} in broker{b}: {output.decode(errors='replace')}")

    def _peer_ips(self, b: int) -> list[str]:
        ips = []
        for container in [*(c for i, c in self.broker_containers.items() if i != b), *self.zookeepers.values()]:
            wrapped = container.get_wrapped_container()
            wrapped.reload()
            ips.append(wrapped.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"])
        return ips

    def kill_zookeeper(self, z: int) -> None:
        self.zookeepers[z].get_wrapped_container().kill()

    def zk_leader(self) -> int | None:
        return next((z for z in self.zookeepers if self.zk_mode(z) == "leader"), None)

