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

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from zkafka.engine import DockerClient, DockerContainer, Network, docker_api, docker_host_address, ensure_reaper
from zkafka.images import broker_image, require_image, zookeeper_image
from zkafka.testing import disk
from zkafka.testing.conditions import wait_for
from zkafka.testing.disk_faults import SmallLogDirFaults
from zkafka.testing.defaults import DATA_LOG_DIR, LABELS, SESSION_TIMEOUT_MS, SMALL_LOG_DIR, SMALL_LOG_DIR_MIB
from zkafka.testing.logs import container_logs
from zkafka.testing.network_faults import NetworkFaults
from zkafka.testing.observation import ClusterObservation, controller_view
from zkafka.testing.ports import free_ports
from zkafka.testing.properties import property_env

HTTP_PORT = 8080
ENSEMBLE_SIZES = (1, 3)
__all__ = ["SESSION_TIMEOUT_MS", "ZkafkaCluster", "controller_view"]


def _start_together(containers) -> None:
    """Create and start containers concurrently (each a Docker API round trip of ~0.3 s); the first failure
    is raised once all have been tried."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(container.start) for container in containers]:
            future.result()


@dataclass
class ZkafkaCluster(ClusterObservation, NetworkFaults, SmallLogDirFaults):
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
        self.properties = dict(self.properties or {})
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

    def get_bootstrap_server(self) -> str:
        """``bootstrap_servers``, by the name ``ZkafkaContainer`` (and testcontainers' ``KafkaContainer``) use."""
        return self.bootstrap_servers

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

        for image in {self.image, self.zookeeper_image}:
            require_image(image)
        client = DockerClient()
        try:
            self.host = docker_host_address(client)
        finally:
            client.client.close()
        ensure_reaper()  # once, before the concurrent starts below
        self._create_networks()
        self.zookeeper_containers = {z: self._zookeeper(z) for z in self.zookeeper_ids}
        _start_together(self.zookeeper_containers.values())
        if self.small_log_dir is not None:
            self.disk_holder = self._disk_holder()
            self.disk_holder.start()
        # The brokers start while the ensemble elects its leader: they retry the connection (at least once a
        # second, for zookeeper.connection.timeout.ms) and are up by the time it serves.
        self.broker_containers = {b: self._broker(b) for b in self.broker_ids}
        _start_together(self.broker_containers.values())
        wait_for(lambda: self.zk_leader() is not None, timeout, "the ZooKeeper ensemble to elect a leader")
        self.wait_until_ready(timeout=timeout)
        self.ready_seconds = wait_for_acknowledged_produce(self.bootstrap_servers, timeout, min(3, self.brokers))
        for name in self.nodes:
            self.node_ip(name)

    def _create_networks(self) -> None:
        """The network the nodes join (``RackedCluster``: one per rack, and the router between them)."""
        self.network = Network(docker_network_kw={"labels": LABELS})
        self.network.create()

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
            "zookeeper.connection.timeout.ms": 120_000,  # the first connection waits out the ensemble's election
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
        docker_api().volumes.create(
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
                container.stop()  # removes it with its volumes, closes its Docker client
            except Exception:  # noqa: BLE001 - already gone
                pass
            container._container = None
        if self.disk_holder is not None:
            try:
                docker_api().volumes.get(self._small_volume).remove(force=True)
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

    def gateway_ip(self, node: str | None = None) -> str:
        """The gateway of the node's network (here every node's): the host's connections to the node's published
        ports arrive from it."""
        attrs = docker_api().networks.get(self.network.name).attrs
        return attrs["IPAM"]["Config"][0]["Gateway"]

    # -- faults: processes (the network's and the disk's are in the mixins) ------------------------------
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

