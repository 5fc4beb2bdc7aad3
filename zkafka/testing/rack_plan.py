"""The plan of a racked cluster (``zkafka.testing.racks``), pure: which node lives in which rack, each rack's
subnet and every node's address in it, the routes through the router, the hosts file, and the router's
cut and heal scripts. No Docker here: ``RackedCluster`` carries the plan out.

Layout: brokers are numbered rack by rack in the order the racks are given (``{"a": 2, "b": 1, "c": 1}``:
brokers 1 and 2 in rack ``a``, 3 in ``b``, 4 in ``c``); ZooKeeper node ``z`` lives in the ``(z - 1) % len(racks)``-th
rack (round robin: with three racks, one node each, so losing a rack leaves a quorum of two).

Addresses: each rack is a /24 of ``SUBNET_POOL``; in it the Docker bridge (the host) is ``.1``, the router
``.254`` and the rack's nodes ``.10``, ``.11``, ... (ZooKeepers first, then brokers, by id). A node reaches the
other racks' subnets through the router's address on its own rack's network (``route_script``) and finds its
peers by name in its hosts file (``hosts``): Docker's DNS, which answers only inside one network, is not used.
"""
from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from zkafka.testing.network import CHAIN

SUBNET_POOL = ipaddress.ip_network("10.231.0.0/16")
GATEWAY_HOST = 1  # Docker's bridge on each rack network: the host, and the published ports' traffic
ROUTER_HOST = 254
FIRST_NODE_HOST = 10
MAX_NODES_PER_RACK = ROUTER_HOST - FIRST_NODE_HOST  # .10 .. .253
RACK_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,23}")
ENTRYPOINT = "zkafka-entrypoint"  # the images' entrypoint, run again by the routed command


@dataclass(frozen=True)
class RackLayout:
    """Which rack each broker and each ZooKeeper node lives in; ``racks`` in the order given."""

    racks: tuple[str, ...]
    broker_rack: dict[int, str]
    zookeeper_rack: dict[int, str]

    def rack_of(self, node: str) -> str:
        """The rack of a node (``zk2``, ``broker3``)."""
        if node.startswith("zk") and node[2:].isdigit() and int(node[2:]) in self.zookeeper_rack:
            return self.zookeeper_rack[int(node[2:])]
        if node.startswith("broker") and node[6:].isdigit() and int(node[6:]) in self.broker_rack:
            return self.broker_rack[int(node[6:])]
        raise ValueError(f"no node {node!r}")

    def nodes_in(self, rack: str) -> list[str]:
        """The rack's nodes: its ZooKeepers, then its brokers."""
        if rack not in self.racks:
            raise ValueError(f"no rack {rack!r} (racks: {', '.join(self.racks)})")
        return ([f"zk{z}" for z, r in sorted(self.zookeeper_rack.items()) if r == rack]
                + [f"broker{b}" for b, r in sorted(self.broker_rack.items()) if r == rack])

    def addresses(self, subnets: Mapping[str, ipaddress.IPv4Network]) -> dict[str, str]:
        """Every node's address: ``.10``, ``.11``, ... of its rack's subnet."""
        return {node: str(subnets[rack][FIRST_NODE_HOST + i])
                for rack in self.racks for i, node in enumerate(self.nodes_in(rack))}


def rack_layout(racks: Mapping[str, int], zookeepers: int) -> RackLayout:
    """The layout of ``racks`` (rack name -> number of brokers) and ``zookeepers`` ZooKeeper nodes."""
    if not racks:
        raise ValueError("racks: at least one rack")
    for rack, count in racks.items():
        if not isinstance(rack, str) or not RACK_NAME.fullmatch(rack):
            raise ValueError(f"rack name {rack!r}: lowercase letters, digits and '-' (it names containers too)")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"rack {rack!r}: a number of brokers, not {count!r}")
    names = tuple(racks)
    brokers = [rack for rack in names for _ in range(racks[rack])]
    if not brokers:
        raise ValueError("racks: at least one broker")
    zookeepers_per_rack = -(-zookeepers // len(names))
    crowded = [r for r in names if racks[r] + zookeepers_per_rack > MAX_NODES_PER_RACK]
    if crowded:
        raise ValueError(f"rack {crowded[0]!r}: more than {MAX_NODES_PER_RACK} nodes do not fit its /24 "
                         f"(.{FIRST_NODE_HOST} up to the router's .{ROUTER_HOST})")
    return RackLayout(names, {b: rack for b, rack in enumerate(brokers, start=1)},
                      {z: names[(z - 1) % len(names)] for z in range(1, zookeepers + 1)})


def candidate_subnets(taken: Iterable[str], start: int = 0) -> Iterator[ipaddress.IPv4Network]:
    """The /24s of ``SUBNET_POOL`` that overlap none of ``taken`` (subnets in use), from the ``start``-th on,
    wrapping around."""
    used = [ipaddress.ip_network(s) for s in taken if ipaddress.ip_network(s).version == 4]
    pool = list(SUBNET_POOL.subnets(new_prefix=24))
    for i in range(len(pool)):
        subnet = pool[(start + i) % len(pool)]
        if not any(subnet.overlaps(u) for u in used):
            yield subnet


def gateway(subnet: ipaddress.IPv4Network) -> str:
    return str(subnet[GATEWAY_HOST])


def router_address(subnet: ipaddress.IPv4Network) -> str:
    return str(subnet[ROUTER_HOST])


def route_script(rack: str, subnets: Mapping[str, ipaddress.IPv4Network]) -> str:
    """A node of ``rack``: a route to every other rack's subnet through the router's address on its own
    network (``replace``: a restarted container gets a fresh namespace, and the script runs again)."""
    via = router_address(subnets[rack])
    routes = [f"ip route replace {subnet} via {via}" for other, subnet in subnets.items() if other != rack]
    return " && ".join(routes) or "true"


def routed_command(script: str, command: list[str]) -> list[str]:
    """The container's command: ``script`` as root, then the image's entrypoint with ``command`` (its own
    ``exec``: the node's process stays PID 1 and gets Docker's SIGTERM)."""
    return ["sh", "-c", f'{script} && exec "$@"', "routed", ENTRYPOINT, *command]


def hosts(addresses: Mapping[str, str], node: str) -> dict[str, str]:
    """The hosts-file entries of ``node``: every other node's name and address (Docker adds its own)."""
    return {name: ip for name, ip in addresses.items() if name != node}


def cut_forwarding_script(subnets: Iterable[ipaddress.IPv4Network]) -> str:
    """On the router: stop forwarding packets from and to each subnet (``ZKAFKA-NEMESIS``, hooked into FORWARD)."""
    rules = [f"iptables -A {CHAIN} {flag} {subnet} -j DROP" for subnet in subnets for flag in ("-s", "-d")]
    return " && ".join([
        f"(iptables -n -L {CHAIN} >/dev/null 2>&1 || iptables -N {CHAIN})",
        f"(iptables -C FORWARD -j {CHAIN} 2>/dev/null || iptables -I FORWARD 1 -j {CHAIN})",
        *rules,
    ])


def heal_forwarding_script() -> str:
    return f"iptables -F {CHAIN} 2>/dev/null; true"


def reachable_script(host: str, port: int, timeout_s: int = 1) -> str:
    """Exits 0 if a TCP connection to ``host:port`` opens within ``timeout_s`` seconds."""
    return f"nc -z -w {int(timeout_s)} {shlex.quote(host)} {int(port)}"
