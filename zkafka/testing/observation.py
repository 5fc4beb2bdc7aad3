"""``ZkafkaCluster``'s view of itself: each broker's ``/healthz`` (published HTTP port), the controller, a
partition's leader and ISR, the ZooKeeper nodes' modes; and waiting until the cluster is ready."""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping

from zkafka.testing.conditions import wait_for


def controller_view(health: dict | None) -> dict:
    """A broker's ``/healthz`` controller section; empty while it is down, slow to answer (None) or starting (no
    controller object yet: its HTTP port opens before the controller candidate does)."""
    return (health or {}).get("controller") or {}


def claimants(health: Mapping[int, dict | None]) -> dict[int, int]:
    """The brokers that say they are the active controller, with the controller epoch each holds."""
    return {b: controller_view(h).get("epoch") or 0 for b, h in health.items() if controller_view(h).get("is_controller")}


def newest_controller(health: Mapping[int, dict | None]) -> int | None:
    """Of the claimants, the one with the highest epoch (a broker cut off from ZooKeeper cannot learn that its
    session ended and may still claim)."""
    claims = claimants(health)
    return max(claims, key=claims.get) if claims else None


def newest_partition_state(health: Mapping[int, dict | None], topic: str, partition: int) -> dict | None:
    """A partition's state in the answering brokers' metadata: the one with the newest leader epoch."""
    states = [s for h in health.values() if h for s in [h["metadata"]["partitions"].get(f"{topic}-{partition}")] if s]
    return max(states, key=lambda s: s["leader_epoch"]) if states else None


class ClusterObservation:
    """Mixed into ``ZkafkaCluster``: uses its ``host``, ``http_ports``, ``broker_ids`` and
    ``zookeeper_containers``."""

    def health(self, b: int, timeout: float = 1.0) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.http_ports[b]}/healthz", timeout=timeout) as r:
                return json.loads(r.read())
        except Exception:  # noqa: BLE001 - down, paused, partitioned
            return None

    def healths(self, brokers: list[int] | None = None) -> dict[int, dict | None]:
        """Each broker's ``/healthz`` (None where it does not answer), asked once."""
        return {b: self.health(b) for b in brokers or self.broker_ids}

    def controllers(self, brokers: list[int] | None = None) -> set[int]:
        """The brokers that consider themselves the active controller."""
        return set(claimants(self.healths(brokers)))

    def wait_until_ready(self, brokers: list[int] | None = None, timeout: float = 90) -> None:
        ids = brokers or self.broker_ids

        def ready() -> bool:
            health = self.healths(ids)
            if not all(h and h.get("broker_epoch", -1) > 0 for h in health.values()):
                return False
            active = set(claimants(health))
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
            health = self.healths()
            controller = newest_controller(health)
            if controller is None:
                return None
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
