"""A zkafka cluster in Docker containers, for fault tests: a 3-node ZooKeeper ensemble and N brokers from our
images on one user-defined network, started with testcontainers (no Ryuk: everything carries the label
``zkafka.tests=containers`` and is removed by ``stop``, and by label in ``.ci/run``'s trap).

Addressing: peers use container names (``zk1``, ``broker2``); the host uses 127.0.0.1 only. Each broker has
two listeners: INTERNAL ``brokerN:9092`` (first, so the controller's HTTP control plane reaches peers by
name) and EXTERNAL ``127.0.0.1:<port>``, bound inside the container on the same port number it is
published on, so the address it advertises works from the host. Its HTTP port (8080: ``/healthz``, the
control plane) and each ZooKeeper's 2181 are published on fixed free host ports too (published ports
must not change across a pause or restart; see platform-notes §3.5).

Nodes are named ``zk1..3`` and ``broker1..N`` (their network aliases). Faults: kill/SIGTERM/pause of any
node, iptables partitions between arbitrary groups of nodes and tc netem (``scripts.containers.network``;
every node has cap NET_ADMIN), and with ``small_log_dir=b`` broker ``b`` gets a second log dir, a small
tmpfs, and runs as an unprivileged user, for the disk faults (``scripts.containers.disk``).
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
from scripts.containers import disk, network as net
from scripts.containers.conditions import wait_for
from scripts.containers.defaults import DATA_LOG_DIR, SESSION_TIMEOUT_MS, SMALL_LOG_DIR, SMALL_LOG_DIR_MIB

BROKER_IMAGE = os.environ.get("ZKAFKA_BROKER_IMAGE", "zkafka-broker:local")
ZOOKEEPER_IMAGE = os.environ.get("ZKAFKA_ZOOKEEPER_IMAGE", "zkafka-zookeeper:local")
LABELS = {"zkafka.tests": "containers"}
HTTP_PORT = 8080
__all__ = ["ContainerCluster", "SESSION_TIMEOUT_MS", "docker_problem", "free_ports"]


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


def controller_view(health: dict | None) -> dict:
    """A broker's ``/healthz`` controller section; empty while it is down, slow to answer (None) or starting (no
    controller object yet: its HTTP port opens before the controller candidate does)."""
    return (health or {}).get("controller") or {}


@dataclass
class ContainerCluster:
    brokers: int = 3
    properties: dict[str, str] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"zkafka-{uuid.uuid4().hex[:8]}")
    small_log_dir: int | None = None

    def __post_init__(self) -> None:
        if self.small_log_dir is not None and self.small_log_dir not in self.broker_ids:
            raise ValueError(f"small_log_dir={self.small_log_dir}: no such broker")
        self.network: Network | None = None
        self.zookeepers: dict[int, DockerContainer] = {}
        self.broker_containers: dict[int, DockerContainer] = {}
        self.disk_holder: DockerContainer | None = None
        self._ips: dict[str, str] = {}
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
    def nodes(self) -> list[str]:
        """Every node's name: the ZooKeepers, then the brokers."""
        return [f"zk{z}" for z in (1, 2, 3)] + [f"broker{b}" for b in self.broker_ids]

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
        if self.small_log_dir is not None:
            self.disk_holder = self._disk_holder().start()
        for b in self.broker_ids:
            self.broker_containers[b] = self._broker(b).start()
        self.wait_until_ready()
        for name in self.nodes:
            self.node_ip(name)
        return self

    def _container(self, image: str, alias: str) -> DockerContainer:
        container = DockerContainer(image, name=f"{self.name}-{alias}")
        return container.with_network(self.network).with_network_aliases(alias).with_kwargs(labels=LABELS)

    def _zookeeper(self, z: int) -> DockerContainer:
        servers = " ".join(f"server.{i}=zk{i}:2888:3888;2181" for i in (1, 2, 3))
        container = self._container(ZOOKEEPER_IMAGE, f"zk{z}").with_envs(
            ZOO_MY_ID=str(z), ZOO_SERVERS=servers, ZOO_TICK_TIME="500").with_kwargs(labels=LABELS, cap_add=["NET_ADMIN"])
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
        if b == self.small_log_dir:
            env["KAFKA_LOG_DIRS"] = f"{DATA_LOG_DIR},{SMALL_LOG_DIR}"
        container = self._container(BROKER_IMAGE, f"broker{b}").with_envs(**env).with_kwargs(labels=LABELS, cap_add=["NET_ADMIN"])
        if b == self.small_log_dir:
            container.with_volume_mapping(self._small_volume, SMALL_LOG_DIR, "rw").with_command(
                ["sh", "-c", disk.RUN_AS_SCRIPT])
        container.ports[f"{port}/tcp"] = ("127.0.0.1", port)
        container.ports[f"{HTTP_PORT}/tcp"] = ("127.0.0.1", self.http_ports[b])
        return container

    @property
    def _small_volume(self) -> str:
        return f"{self.name}-small"

    def _disk_holder(self) -> DockerContainer:
        """A sidecar that keeps the small dir's tmpfs volume mounted while the broker restarts (the volume
        is unmounted, and its contents dropped, only when no container uses it)."""
        import docker
        docker.from_env().volumes.create(
            name=self._small_volume, driver="local", labels=LABELS,
            driver_opts={"type": "tmpfs", "device": "tmpfs",
                         "o": f"size={SMALL_LOG_DIR_MIB}m,uid={disk.RUN_AS_UID},gid={disk.RUN_AS_UID},mode=0755"})
        return (DockerContainer(ZOOKEEPER_IMAGE, name=f"{self.name}-disk-holder")
                .with_kwargs(labels=LABELS, healthcheck={"test": ["NONE"]})
                .with_volume_mapping(self._small_volume, "/held", "rw").with_command(["sleep", "infinity"]))

    def stop(self) -> None:
        holder = [self.disk_holder] if self.disk_holder is not None else []
        for container in [*self.broker_containers.values(), *self.zookeepers.values(), *holder]:
            try:
                container.get_wrapped_container().remove(force=True, v=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self.disk_holder is not None:
            try:
                import docker
                docker.from_env().volumes.get(self._small_volume).remove(force=True)
            except Exception:  # noqa: BLE001
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
        return {b for b in brokers or self.broker_ids if controller_view(self.health(b)).get("is_controller")}

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

    # -- nodes -------------------------------------------------------------------------------------
    def container(self, node: str):
        """The docker-py container of a node (``zk2``, ``broker1``)."""
        if node.startswith("zk"):
            return self.zookeepers[int(node[2:])].get_wrapped_container()
        if node.startswith("broker"):
            return self.broker_containers[int(node[6:])].get_wrapped_container()
        raise ValueError(f"no node {node!r}")

    def status(self, node: str) -> str:
        """Docker's state: ``running``, ``paused``, ``exited``, ..."""
        container = self.container(node)
        container.reload()
        return container.status

    def exec_root(self, node: str, script: str, check: bool = True) -> str:
        """Run a shell script in the node's container as root; its output (RuntimeError if it failed and
        ``check``)."""
        code, output = self.container(node).exec_run(["sh", "-c", script], user="root")
        text = output.decode(errors="replace")
        if check and code != 0:
            raise RuntimeError(f"{node}: `{script}` exited {code}: {text.strip()}")
        return text

    def node_ip(self, node: str) -> str:
        """The node's address on the cluster network (the last known one while it is stopped)."""
        container = self.container(node)
        container.reload()
        ip = container.attrs["NetworkSettings"]["Networks"].get(self.network.name, {}).get("IPAddress")
        if ip:
            self._ips[node] = ip
        if node not in self._ips:
            raise RuntimeError(f"{node} has no address on {self.network.name}")
        return self._ips[node]

    def gateway_ip(self) -> str:
        """The network's gateway: the host's connections to published ports arrive from it."""
        import docker
        attrs = docker.from_env().networks.get(self.network.name).attrs
        return attrs["IPAM"]["Config"][0]["Gateway"]

    # -- faults: processes -------------------------------------------------------------------------
    def wrapped(self, b: int):
        return self.broker_containers[b].get_wrapped_container()

    def kill_broker(self, b: int) -> None:
        self.wrapped(b).kill()

    def start_broker(self, b: int) -> None:
        self.wrapped(b).start()

    def stop_broker(self, b: int, timeout_s: int = 30) -> None:
        """SIGTERM (controlled shutdown), SIGKILL after ``timeout_s``."""
        self.wrapped(b).stop(timeout=timeout_s)

    def restart_broker(self, b: int, timeout_s: int = 30) -> None:
        """SIGTERM (controlled shutdown), then start the same container again."""
        self.wrapped(b).restart(timeout=timeout_s)

    def pause_broker(self, b: int) -> None:
        self.wrapped(b).pause()

    def unpause_broker(self, b: int) -> None:
        self.wrapped(b).unpause()

    def kill_zookeeper(self, z: int) -> None:
        self.zookeepers[z].get_wrapped_container().kill()

    def start_zookeeper(self, z: int) -> None:
        self.zookeepers[z].get_wrapped_container().start()

    def zk_leader(self) -> int | None:
        return next((z for z in self.zookeepers if self.zk_mode(z) == "leader"), None)

    # -- faults: network ---------------------------------------------------------------------------
    def partition(self, groups: list[set[str]]) -> dict[str, set[str]]:
        """Cut the cluster into ``groups`` of node names: each node of a group drops traffic to and from
        every node outside it. Returns who drops whom."""
        grudge = net.grudge_from_groups(groups, self.nodes)
        self.apply_grudge(grudge)
        return grudge

    def apply_grudge(self, grudge: dict[str, set[str]]) -> None:
        """Each node drops traffic to and from the nodes it names (added to the rules in place)."""
        for node, peers in grudge.items():
            if peers:
                self.exec_root(node, net.drop_script(self.node_ip(p) for p in sorted(peers)))

    def cut_clients(self) -> None:
        """Every broker drops the host's connections to its published Kafka port; its HTTP port, the
        inter-broker traffic and ZooKeeper stay."""
        gateway = self.gateway_ip()
        for b in self.broker_ids:
            self.exec_root(f"broker{b}", net.drop_script([gateway], port=self.kafka_ports[b]))

    def heal_partitions(self, nodes: list[str] | None = None) -> list[str]:
        """Flush the nemesis chain on every running node; returns the nodes that could not be reached."""
        missed = []
        for node in nodes or self.nodes:
            try:
                self.exec_root(node, net.flush_script())
            except Exception:  # noqa: BLE001 - stopped or paused: its rules die with its network namespace
                missed.append(node)
        return missed

    def degrade_network(self, nodes: list[str] | None = None, delay_ms: int = 100, rate: str = "3mbit") -> dict[str, str]:
        """Delay and rate-limit each node's egress; returns the qdisc each node got (``netem``, or ``tbf``
        where the kernel lacks netem: the rate only)."""
        return {node: self.exec_root(node, net.netem_script(delay_ms, rate)).strip() for node in nodes or self.nodes}

    def restore_network(self, nodes: list[str] | None = None) -> list[str]:
        missed = []
        for node in nodes or self.nodes:
            try:
                self.exec_root(node, net.clear_netem_script())
            except Exception:  # noqa: BLE001
                missed.append(node)
        return missed

    def isolate_broker(self, b: int) -> None:
        """Drop all traffic between broker ``b`` and every other container (brokers and ZooKeeper), with
        iptables inside its container; the host still reaches its published ports (they arrive from the
        network's gateway)."""
        self.apply_grudge({f"broker{b}": set(self.nodes) - {f"broker{b}"}})

    def heal_broker(self, b: int) -> None:
        self.exec_root(f"broker{b}", net.flush_script())

    # -- faults: the small log dir (acted on through the sidecar that holds it, whatever the broker's state)
    def _holder(self):
        if self.disk_holder is None:
            raise RuntimeError("this cluster has no small log dir (ContainerCluster(small_log_dir=b))")
        return self.disk_holder.get_wrapped_container()

    def _holder_exec(self, script: str) -> str:
        code, output = self._holder().exec_run(["sh", "-c", script], user="root")
        text = output.decode(errors="replace")
        if code != 0:
            raise RuntimeError(f"disk holder: `{script}` exited {code}: {text.strip()}")
        return text

    def fill_small_dir(self) -> str:
        """Fill the small log dir's file system; returns ``df``'s use% of it."""
        self._holder_exec(disk.fill_script())
        return self.small_dir_usage()

    def small_dir_usage(self) -> str:
        return self._holder_exec(disk.usage_script()).strip()

    def small_dir_faulty(self) -> bool:
        """A filler is in the small log dir or its permissions are taken away."""
        code, _ = self._holder().exec_run(["sh", "-c", disk.faulty_script()], user="root")
        return code == 0

    def make_small_dir_unwritable(self) -> None:
        self._holder_exec(disk.unwritable_script())

    def small_dir_writable_by_broker(self) -> bool:
        """Whether the broker's user can create a file in the small log dir (its container must run)."""
        code, _ = self.wrapped(self.small_log_dir).exec_run(["sh", "-c", disk.probe_write_script()],
                                                            user=str(disk.RUN_AS_UID))
        return code == 0

    def restore_small_dir(self) -> None:
        """Remove the filler and give the directory back to the broker's user (the broker still needs a
        restart to bring an offline log dir back)."""
        self._holder_exec(f"{disk.unfill_script()} && {disk.writable_script()}")
