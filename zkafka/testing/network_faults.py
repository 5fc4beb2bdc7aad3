"""``ZkafkaCluster``'s network faults: partitions between groups of nodes, an isolated broker, cut clients and
netem, all inside the containers (``zkafka.testing.network``'s scripts, run as root; every node has cap
NET_ADMIN), and the heals."""
from __future__ import annotations

from zkafka.testing import network as net


class NetworkFaults:
    """Mixed into ``ZkafkaCluster``: uses its ``nodes``, ``broker_ids``, ``kafka_ports``, ``exec_root``,
    ``node_ip`` and ``gateway_ip``."""

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
        for b in self.broker_ids:
            self.exec_root(f"broker{b}", net.drop_script([self.gateway_ip(f"broker{b}")], port=self.kafka_ports[b]))

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
