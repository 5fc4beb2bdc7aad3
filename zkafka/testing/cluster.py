"""``ZkafkaCluster``: a ZooKeeper ensemble (1 or 3 nodes) and N zkafka brokers in Docker containers on a
network of their own, started with testcontainers, with the faults a test needs.

Addressing: peers use container names (``zk1``, ``broker2``); the host uses ``host`` (the Docker host's
address testcontainers reports; 127.0.0.1 locally). Each broker has two listeners: INTERNAL ``brokerN:9092``
(first, so the controller's HTTP control plane reaches peers by name) and EXTERNAL ``<host>:<port>``,
bound inside the container on the same port number it is published on, so the address it advertises works
from the host. Its HTTP port (8080: ``/healthz``, ``/api/v1``, the dashboard, the control plane) and each
ZooKeeper's 2181 are published on fixed free host ports too (published ports must not change across a pause
or restart).

Faults: ``kill_broker`` / ``restart_broker`` / ``stop_broker`` / ``pause_broker`` of any broker,
``kill_zookeeper_leader`` and ``kill_zookeeper`` / ``start_zookeeper``, ``isolate_broker`` (iptables inside
its container) and ``heal``, arbitrary ``partition``s between groups of nodes, client cuts and tc netem
(``zkafka.testing.network``; every node has cap NET_ADMIN); with ``small_log_dir=b`` broker ``b`` gets a
second log dir, a small tmpfs, and runs as an unprivileged user, for the disk faults
(``zkafka.testing.disk``). Observation: ``controller_id``, ``leader_of``, ``isr_of``, ``wait_for_isr``, and
each broker's ``/healthz`` (``health``).

Every container and the network carry the label ``zkafka.testing=true`` (and testcontainers' own, so Ryuk
reaps them where it runs); ``stop`` removes them.
"""
from __future__ import annotations

import json
import urllib.request
import uuid
from dataclasses import dataclass, field

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from zkafka.images import broker_image, require_image, zookeeper_image
from zkafka.testing import disk, network as net
from zkafka.testing.conditions import wait_for
from zkafka.testing.defaults import DATA_LOG_DIR, LABELS, SESSION_TIMEOUT_MS, SMALL_LOG_DIR, SMALL_LOG_DIR_MIB
from zkafka.testing.logs import container_logs
from zkafka.testing.ports import free_ports
from zkafka.testing.properties import property_env

HTTP_PORT = 8080
ENSEMBLE_SIZES = (1, 3)
__all__ = ["SESSION_TIMEOUT_MS", "ZkafkaCluster", "controller_view"]


def controller_view(health: dict | None) -> dict:
    """A broker's ``/healthz`` controller section; empty while it is down, slow to answer (None) or starting (no
    controller object yet: its HTTP port opens before the controller candidate does)."""
    return (health or {}).get("controller") or {}


@dataclass
class ZkafkaCluster:
    """``brokers`` zkafka brokers and a ZooKeeper ensemble of ``zookeepers`` nodes (1 or 3), each in its own
    container. ``properties``: broker properties for every broker (Kafka's names). Use as a context manager
    or ``start()`` / ``stop()``; ``start()`` returns once every broker is registered, one controller is
    elected, every broker's metadata names them all, and a produce with ``acks=all`` was acknowledged.
    Images: ``zkafka:<version>`` and ``zkafka-zookeeper:<version>`` (``ZKAFKA_IMAGE``,
    ``ZKAFKA_ZOOKEEPER_IMAGE``); a missing one raises ``zkafka.images.ImageNotFound``."""

    brokers: int = 3
    properties: dict[str, object] = field(default_factory=dict)
    zookeepers: int = 3
    name: str = field(default_factory=lambda: f"zkafka-{uuid.uuid4().hex[:8]}")
    small_log_dir: int | None = None
    image: str = field(default_factory=broker_image)
    zookeeper_image: str = field(default_factory=zookeeper_image)

    def __post_init__(self) -> None:
        if self.zookeepers not in ENSEMBLE_SIZES:
            raise ValueError(f"zookeepers={self.zookeepers}: an ensemble of 1 or 3 nodes")
        if self.brokers < 1:
            raise ValueError(f"brokers={self.brokers}: at least one")
        if self.small_log_dir is not None and self.small_log_dir not in self.broker_ids:
            raise ValueError(f"small_log_dir={self.small_log_dir}: no such broker")
        self.host = "127.0.0.1"
        self.ready_seconds: float | None = None
        self.network: Network | None = None
        self.zookeeper_containers: dict[int, DockerContainer] = {}
        self.broker_containers: dict[int, DockerContainer] = {}
        self.disk_holder: DockerContainer | None = None
        self._ips: dict[str, str] = {}
        ports = free_ports(2 * self.brokers + self.zookeepers)
        self.kafka_ports = {b: ports.pop() for b in self.broker_ids}
        self.http_ports = {b: ports.pop() for b in self.broker_ids}
        self.zk_ports = {z: ports.pop() for z in self.zookeeper_ids}

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def zookeeper_ids(self) -> list[int]:
        return list(range(1, self.zookeepers + 1))

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's EXTERNAL listener, for ``bootstrap.servers``."""
        return ",".join(f"{self.host}:{self.kafka_ports[b]}" for b in self.broker_ids)

    @property
    def nodes(self) -> list[str]:
        """Every node's name: the ZooKeepers, then the brokers."""
        return [f"zk{z}" for z in self.zookeeper_ids] + [f"broker{b}" for b in self.broker_ids]

    @property
    def zookeeper_connect(self) -> str:
        """The ensemble's client ports as published on the host (``zookeeper.connect`` of a tool)."""
        return ",".join(f"{self.host}:{self.zk_ports[z]}" for z in self.zookeeper_ids)

    def __enter__(self) -> "ZkafkaCluster":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- start and stop ------------------------------------------------------------------------
    def start(self, timeout: float = 90) -> "ZkafkaCluster":
        """Start every container and wait until the cluster is ready (see the class docstring); on failure the
        containers are removed and the error carries their logs."""
        try:
            self._start(timeout)
        except BaseException as exc:
            logs = self.logs()
            self.stop()
            if isinstance(exc, AssertionError):
                raise AssertionError(f"{exc}\n{logs}") from None
            raise
        return self

    def _start(self, timeout: float) -> None:
        from zkafka.testing.readiness import wait_for_acknowledged_produce

        probe = DockerContainer(self.image)
        client = probe.get_docker_client().client
        for image in {self.image, self.zookeeper_image}:
            require_image(client, image)
        self.host = probe.get_container_host_ip()
        self.network = Network(docker_network_kw={"labels": LABELS})
        self.network.create()
        for z in self.zookeeper_ids:
            self.zookeeper_containers[z] = self._zookeeper(z).start()
        wait_for(lambda: self.zk_leader() is not None, timeout, "the ZooKeeper ensemble to elect a leader")
        if self.small_log_dir is not None:
            self.disk_holder = self._disk_holder().start()
        for b in self.broker_ids:
            self.broker_containers[b] = self._broker(b).start()
        self.wait_until_ready(timeout=timeout)
        self.ready_seconds = wait_for_acknowledged_produce(self.bootstrap_servers, timeout, min(3, self.brokers))
        for name in self.nodes:
            self.node_ip(name)

    def _container(self, image: str, alias: str) -> DockerContainer:
        container = DockerContainer(image, name=f"{self.name}-{alias}")
        return container.with_network(self.network).with_network_aliases(alias).with_kwargs(
            labels=LABELS, cap_add=["NET_ADMIN"])

    def _zookeeper(self, z: int) -> DockerContainer:
        servers = " ".join(f"server.{i}=zk{i}:2888:3888;2181" for i in self.zookeeper_ids) if self.zookeepers > 1 else ""
        container = self._container(self.zookeeper_image, f"zk{z}").with_envs(
            ZOO_MY_ID=str(z), ZOO_SERVERS=servers, ZOO_TICK_TIME="500")
        container.ports["2181/tcp"] = self._published(self.zk_ports[z])
        return container

    def _broker(self, b: int) -> DockerContainer:
        port = self.kafka_ports[b]
        internal = min(3, self.brokers)
        env = property_env({
            "broker.id": b,
            "zookeeper.connect": ",".join(f"zk{z}:2181" for z in self.zookeeper_ids),
            "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
            "listeners": f"INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:{port}",
            "advertised.listeners": f"INTERNAL://broker{b}:9092,EXTERNAL://{self.host}:{port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "http.port": HTTP_PORT,
            "offsets.topic.replication.factor": internal,
            "transaction.state.log.replication.factor": internal,
            "transaction.state.log.min.isr": min(2, internal),
            "group.initial.rebalance.delay.ms": 0,
            **self.properties,
        })
        if b == self.small_log_dir:
            env["KAFKA_LOG_DIRS"] = f"{DATA_LOG_DIR},{SMALL_LOG_DIR}"
        container = self._container(self.image, f"broker{b}").with_envs(**env)
        if b == self.small_log_dir:
            container.with_volume_mapping(self._small_volume, SMALL_LOG_DIR, "rw").with_command(
                ["sh", "-c", disk.RUN_AS_SCRIPT])
        container.ports[f"{port}/tcp"] = self._published(port)
        container.ports[f"{HTTP_PORT}/tcp"] = self._published(self.http_ports[b])
        return container

    def _published(self, port: int) -> tuple[str, int] | int:
        """Where a published port binds: loopback only when the Docker host is this machine."""
        return ("127.0.0.1", port) if self.host in ("127.0.0.1", "localhost") else port

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
        return (DockerContainer(self.zookeeper_image, name=f"{self.name}-disk-holder")
                .with_kwargs(labels=LABELS, healthcheck={"test": ["NONE"]})
                .with_volume_mapping(self._small_volume, "/held", "rw").with_command(["sleep", "infinity"]))

    def stop(self) -> None:
        holder = [self.disk_holder] if self.disk_holder is not None else []
        for container in [*self.broker_containers.values(), *self.zookeeper_containers.values(), *holder]:
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
        containers = {**{f"broker{b}": c for b, c in self.broker_containers.items()},
                      **{f"zk{z}": c for z, c in self.zookeeper_containers.items()}}
        return container_logs({name: c.get_wrapped_container() for name, c in containers.items()
                               if c._container is not None}, tail)

    # -- observation ---------------------------------------------------------------------------
    def health(self, b: int, timeout: float = 1.0) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.http_ports[b]}/healthz", timeout=timeout) as r:
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
            code, output = self.zookeeper_containers[z].get_wrapped_container().exec_run(
                ["sh", "-c", "echo srvr | nc -q 1 127.0.0.1 2181 || echo srvr | nc 127.0.0.1 2181"])
        except Exception:  # noqa: BLE001 - killed or paused
            return None
        for line in output.decode(errors="replace").splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def controller_id(self, timeout: float = 60) -> int:
        """The active controller: of the brokers that say they are, the one with the highest controller epoch
        (a broker cut off from ZooKeeper cannot learn that its session ended and may still say so), once most
        of the brokers that answer name it in their metadata (waits up to ``timeout`` s through an election)."""
        def agreed() -> int | None:
            health = {b: self.health(b) for b in self.broker_ids}
            claims = {b: controller_view(h).get("epoch") or 0 for b, h in health.items()
                      if controller_view(h).get("is_controller")}
            if not claims:
                return None
            controller = max(claims, key=claims.get)
            answering = [h for h in health.values() if h]
            named = sum(1 for h in answering if h["metadata"].get("controller_id") == controller)
            return controller if named > len(answering) // 2 else None
        return wait_for(agreed, timeout, "a controller that most answering brokers' metadata names", 0.1)

    def partition_state(self, topic: str, partition: int) -> dict | None:
        """The partition's leader, leader epoch, replicas and ISR as the controller's broker has it in its
        metadata (the controller's UpdateMetadata reaches it like any broker); None if it has no such
        partition."""
        health = self.health(self.controller_id())
        return (health or {}).get("metadata", {}).get("partitions", {}).get(f"{topic}-{partition}")

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader's broker id (-1: no leader, or the controller does not know the partition)."""
        state = self.partition_state(topic, partition)
        return state["leader"] if state else -1

    def isr_of(self, topic: str, partition: int) -> list[int]:
        state = self.partition_state(topic, partition)
        return sorted(state["isr"]) if state else []

    def wait_for_isr(self, topic: str, partition: int, size: int, timeout: float = 60) -> list[int]:
        """Wait until the partition's ISR has ``size`` replicas (and a leader); returns it."""
        def isr() -> list[int] | None:
            state = self.partition_state(topic, partition)
            return sorted(state["isr"]) if state and state["leader"] >= 0 and len(state["isr"]) == size else None
        return wait_for(isr, timeout, f"{topic}-{partition}'s ISR to have {size} replicas", 0.1)

    def partition_view(self, b: int, topic: str, partition: int) -> dict | None:
        h = self.health(b)
        return h["partitions"].get(f"{topic}-{partition}") if h else None

    # -- nodes -------------------------------------------------------------------------------------
    def container(self, node: str):
        """The docker-py container of a node (``zk2``, ``broker1``)."""
        if node.startswith("zk"):
            return self.zookeeper_containers[int(node[2:])].get_wrapped_container()
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

    def restart_broker(self, b: int, timeout_s: int = 30, wait: bool = True) -> None:
        """Start broker ``b`` again: a running one after SIGTERM (controlled shutdown; SIGKILL after
        ``timeout_s``), a killed or stopped one as it is; a paused one is unpaused first. With ``wait``,
        returns once it is registered again and every broker's metadata names it."""
        state = self.status(f"broker{b}")
        if state == "paused":
            self.unpause_broker(b)
        if state in ("running", "paused"):
            self.wrapped(b).restart(timeout=timeout_s)
        else:
            self.start_broker(b)
        if wait:
            self.wait_until_ready([x for x in self.broker_ids if x == b or self.status(f"broker{x}") == "running"])

    def pause_broker(self, b: int) -> None:
        self.wrapped(b).pause()

    def unpause_broker(self, b: int) -> None:
        self.wrapped(b).unpause()

    def kill_zookeeper(self, z: int) -> None:
        self.zookeeper_containers[z].get_wrapped_container().kill()

    def start_zookeeper(self, z: int) -> None:
        self.zookeeper_containers[z].get_wrapped_container().start()

    def zk_leader(self) -> int | None:
        """The ensemble's leader (a single node: the node, ``standalone``); None while there is none."""
        return next((z for z in self.zookeeper_ids if self.zk_mode(z) in ("leader", "standalone")), None)

    def kill_zookeeper_leader(self) -> int:
        """SIGKILL the ZooKeeper leader; returns its id (``start_zookeeper(id)`` brings it back). With 3
        nodes the other two elect a new leader; with one the ensemble is gone until it is started again."""
        leader = wait_for(self.zk_leader, 30, "a ZooKeeper leader", 0.1)
        self.kill_zookeeper(leader)
        return leader

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

    def heal(self) -> list[str]:
        """Undo every network fault: partitions, isolations and client cuts (the nemesis chain flushed on
        every running node) and netem; returns the nodes that could not be reached (stopped or paused: a
        restarted container starts with no rules)."""
        missed = self.heal_partitions()
        self.restore_network([n for n in self.nodes if n not in missed])
        return missed

    # -- faults: the small log dir (acted on through the sidecar that holds it, whatever the broker's state)
    def _holder(self):
        if self.disk_holder is None:
            raise RuntimeError("this cluster has no small log dir (ZkafkaCluster(small_log_dir=b))")
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
