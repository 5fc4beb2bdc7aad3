"""``RackedCluster``: a ``ZkafkaCluster`` whose nodes are separate hosts in racks, as far as one Docker engine
can make them so. Each rack is a user-defined Docker network of its own; each node (``zk1``, ``broker3``)
is one container on its rack's network only, with its own hostname, a fixed address, no volume shared with
another, and ``broker.rack`` set on the brokers. The racks are joined only through a router: one more
container, on every rack network (``.254`` of each), with ``net.ipv4.ip_forward=1``. Every node routes the
other racks' subnets through the router's address on its own network (``ip route`` in the container's
command, before the node's process starts, so a restarted container gets them again) and resolves its
peers' names from its hosts file (Docker's DNS answers only inside one network and is not used). Without
the router no packet crosses racks: Docker isolates its networks from each other.

The host reaches each broker as with ``ZkafkaCluster``: its EXTERNAL listener on a published port,
advertised as ``<docker host>:<port>``. The address plan is ``zkafka.testing.rack_plan`` (pure).

Faults, besides ``ZkafkaCluster``'s (they take the routed addresses: a partition or an isolated broker works
across racks as within one): ``kill_rack`` (every container of a rack, its ZooKeeper nodes and brokers, killed
at once) and ``start_rack``; ``cut_routes`` (the router stops forwarding from and to some racks, or all) and
``heal_routes`` (``heal`` heals them too).
"""
from __future__ import annotations

import ipaddress
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from zkafka.engine import DockerContainer, Network, docker_api
from zkafka.testing import rack_plan as plan
from zkafka.testing.cluster import ZkafkaCluster
from zkafka.testing.defaults import LABELS
from zkafka.testing.properties import property_env

DEFAULT_RACKS = {"a": 2, "b": 1, "c": 1}
ROUTER = "router"
__all__ = ["DEFAULT_RACKS", "RackedCluster"]


def _endpoint(ip: str) -> dict:
    """A container's endpoint on a network at a fixed address (the Docker API's EndpointSettings)."""
    return {"IPAMConfig": {"IPv4Address": ip}}


def _taken_subnets() -> list[str]:
    """The subnets of the engine's networks."""
    return [c["Subnet"] for n in docker_api().networks.list()
            for c in (n.attrs.get("IPAM") or {}).get("Config") or [] if c.get("Subnet")]


@dataclass
class RackedCluster(ZkafkaCluster):
    """``racks``: rack name -> number of brokers (default ``{"a": 2, "b": 1, "c": 1}``), brokers numbered rack by
    rack in that order; ``zookeepers`` (1 or 3) nodes placed round robin over the racks (three racks: one
    each). ``brokers`` follows from ``racks`` (given, it must agree). Everything else as ``ZkafkaCluster``
    (``properties``, images, readiness, the faults and the observation); no ``small_log_dir``."""

    brokers: int | None = None  # type: ignore[assignment]  # sum(racks.values())
    racks: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RACKS))

    def __post_init__(self) -> None:
        self.layout = plan.rack_layout(self.racks, self.zookeepers)
        if self.brokers is not None and self.brokers != len(self.layout.broker_rack):
            raise ValueError(f"brokers={self.brokers}, but the racks hold {len(self.layout.broker_rack)}")
        if self.small_log_dir is not None:
            raise ValueError("small_log_dir: not with racks (its disk is a volume shared with a sidecar)")
        self.brokers = len(self.layout.broker_rack)
        super().__post_init__()
        self.rack_networks: dict[str, Network] = {}
        self.subnets: dict[str, ipaddress.IPv4Network] = {}
        self.addresses: dict[str, str] = {}
        self.router: DockerContainer | None = None

    # -- the racks ---------------------------------------------------------------------------------
    @property
    def broker_racks(self) -> dict[int, str]:
        """Broker id -> its rack (its ``broker.rack``)."""
        return dict(self.layout.broker_rack)

    def rack_of(self, node: str | int) -> str:
        """The rack of a node (``zk1``, ``broker3``) or of a broker id."""
        return self.layout.rack_of(f"broker{node}" if isinstance(node, int) else node)

    def nodes_in(self, rack: str) -> list[str]:
        """The rack's nodes: its ZooKeepers, then its brokers."""
        return self.layout.nodes_in(rack)

    def brokers_in(self, rack: str) -> list[int]:
        return [int(n[6:]) for n in self.nodes_in(rack) if n.startswith("broker")]

    # -- start and stop: the rack networks and the router, the nodes on them ---------------------------
    def _create_networks(self) -> None:
        for rack in self.layout.racks:
            self.rack_networks[rack] = self._rack_network(rack)
        self.addresses = self.layout.addresses(self.subnets)
        self.router = self._router()
        self.router.start()
        router_id = self.router.get_wrapped_container().id
        for rack in self.layout.racks[1:]:
            docker_api().networks.get(self.rack_networks[rack].name).connect(
                router_id, ipv4_address=plan.router_address(self.subnets[rack]))

    def _rack_network(self, rack: str) -> Network:
        """The rack's network on the first free /24 of the pool (another process may take one between the
        look and the create: then the next)."""
        start = random.randrange(256)  # concurrent clusters rarely race for the same subnet
        for subnet in plan.candidate_subnets([*_taken_subnets(), *map(str, self.subnets.values())], start):
            network = Network(docker_network_kw={"labels": LABELS, "ipam": {
                "Driver": "default", "Config": [{"Subnet": str(subnet), "Gateway": plan.gateway(subnet)}]}})
            network.name = f"{self.name}-rack-{rack}"
            try:
                network.create()
            except Exception as exc:  # noqa: BLE001 - docker's APIError; only an overlap is worth the next one
                if "overlap" not in str(exc).lower():
                    raise
                continue
            self.subnets[rack] = subnet
            return network
        raise RuntimeError(f"no free /24 in {plan.SUBNET_POOL} for rack {rack!r}")

    def _router(self) -> DockerContainer:
        """The router, on the first rack's network (``connect`` adds the others): forwarding on, nothing else."""
        first = self.layout.racks[0]
        network = self.rack_networks[first]
        return (DockerContainer(self.zookeeper_image, name=f"{self.name}-{ROUTER}").with_network(network)
                .with_kwargs(labels=LABELS, cap_add=["NET_ADMIN"], hostname=ROUTER, healthcheck={"test": ["NONE"]},
                             sysctls={"net.ipv4.ip_forward": "1"},
                             networking_config={network.name: _endpoint(plan.router_address(self.subnets[first]))})
                .with_command(["sleep", "infinity"]))

    def _container(self, image: str, alias: str) -> DockerContainer:
        """A node: its own hostname, on its rack's network only at its fixed address, its peers in its hosts
        file (no network alias: Docker's DNS does not know it)."""
        network = self.rack_networks[self.rack_of(alias)]
        return (DockerContainer(image, name=f"{self.name}-{alias}").with_network(network)
                .with_kwargs(labels=LABELS, cap_add=["NET_ADMIN"], hostname=alias,
                             extra_hosts=plan.hosts(self.addresses, alias),
                             networking_config={network.name: _endpoint(self.addresses[alias])}))

    def _routed(self, container: DockerContainer, alias: str, command: list[str]) -> DockerContainer:
        script = plan.route_script(self.rack_of(alias), self.subnets)
        return container.with_command(plan.routed_command(script, command))

    def _zookeeper(self, z: int) -> DockerContainer:
        return self._routed(super()._zookeeper(z), f"zk{z}", ["zookeeper-server"])  # the zookeeper image's CMD

    def _broker(self, b: int) -> DockerContainer:
        container = super()._broker(b).with_envs(**property_env({"broker.rack": self.layout.broker_rack[b]}))
        return self._routed(container, f"broker{b}", [])  # the broker image has no CMD

    def stop(self) -> None:
        super().stop()  # the nodes first: a network with containers on it cannot be removed
        if self.router is not None:
            try:
                self.router.stop()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self.router._container = None
        for network in self.rack_networks.values():
            try:
                network.remove()
            except Exception:  # noqa: BLE001
                pass

    # -- addresses -----------------------------------------------------------------------------------
    def node_ip(self, node: str) -> str:
        """The node's fixed address on its rack's network (the same while it is stopped)."""
        if node not in self.addresses:
            raise RuntimeError(f"no address for {node!r}: is the cluster started?")
        return self.addresses[node]

    def gateway_ip(self, node: str | None = None) -> str:
        """The gateway of the node's rack network (of the first rack's without a node)."""
        return plan.gateway(self.subnets[self.rack_of(node) if node else self.layout.racks[0]])

    def container(self, node: str):
        if node == ROUTER and self.router is not None:
            return self.router.get_wrapped_container()
        return super().container(node)

    # -- faults: racks and routes ----------------------------------------------------------------------
    def kill_rack(self, rack: str) -> list[str]:
        """SIGKILL every container of the rack at once (a rack's power lost); returns the nodes killed."""
        nodes = self.nodes_in(rack)
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            for future in [pool.submit(lambda n=n: self.container(n).kill()) for n in nodes]:
                future.result()
        return nodes

    def start_rack(self, rack: str) -> None:
        """Start the rack's containers again (each routes and resolves as before; wait with
        ``wait_until_ready``)."""
        for node in self.nodes_in(rack):
            self.container(node).start()

    def cut_routes(self, racks: list[str] | None = None) -> None:
        """The router drops every packet from and to the racks named (all by default): each named rack is cut
        off from every other rack, while the nodes inside one rack still talk."""
        names = racks if racks is not None else list(self.layout.racks)
        for rack in names:
            self.nodes_in(rack)  # ValueError for a rack that does not exist
        self.exec_root(ROUTER, plan.cut_forwarding_script(self.subnets[r] for r in names))

    def heal_routes(self) -> None:
        self.exec_root(ROUTER, plan.heal_forwarding_script())

    def heal(self) -> list[str]:
        """``ZkafkaCluster.heal``, and the router forwards everything again."""
        missed = super().heal()
        self.heal_routes()
        return missed

    def reaches(self, node: str, peer: str, port: int, timeout_s: int = 1) -> bool:
        """Whether ``node`` opens a TCP connection to ``peer``'s ``port`` (by name, as the cluster does) within
        ``timeout_s`` seconds."""
        return self.exec_root(node, plan.reachable_script(peer, port, timeout_s) + " && echo open",
                              check=False).strip().endswith("open")
