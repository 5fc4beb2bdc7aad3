"""How each fault kind starts and heals on a ``ZkafkaCluster``.

``Faults(cluster, hot_key).start(spec)`` resolves the spec's role to nodes now, applies the fault and returns
an ``Applied``: the nodes hit (``brokers``: their broker ids), a detail line and ``heal()``. A fault that
cannot start raises ``FaultError`` (e.g. no controller right now) and leaves nothing behind.

Roles: ``leader`` = the leader of ``hot_key`` ("topic/partition") in the brokers' ``/healthz`` metadata (the
view with the highest leader epoch), ``controller`` (the active controller, the newest epoch if a zombie
still claims it), ``random`` (a running broker), ``zk-leader``, ``random-zk`` (a running ZooKeeper),
``all``, ``small-log-dir``, ``hot-partition``.

Mechanisms: kill = SIGKILL (``docker kill``), heal = start; term = SIGTERM with 30 s to finish the controlled
shutdown, heal = start; pause = the cgroup freezer, heal = unpause; partitions = iptables in every node
involved, in the nemesis' own chain (``zkafka.testing.network``), heal = flush it; the ring orders the
nodes zk1, zk2, zk3, broker1.. so the ZooKeepers keep a quorum through zk2 while broker2 (in the middle of the
brokers) is cut from ZooKeeper; degrade = netem (or tbf) on every node, heal = delete the qdisc; disk faults
act on the small log dir (``zkafka.testing.disk``), heal = undo and restart the broker (an offline log
dir comes back only with a restart); reassign = the project's ``kafka-reassign-partitions`` moves the hot
partition to another replica order (or swaps a follower for a broker outside its replicas when there is one),
heal = wait (bounded) until ``--verify`` says completed; preferred-election = ``kafka-leader-election
--election-type preferred --all-topic-partitions``, a membership operation: heal is a no-op.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zkafka.testing.cluster import ZkafkaCluster
from zkafka.testing import network as net
from zkafka.testing.observation import newest_controller, newest_partition_state
from scripts.soak.history import split_key
from scripts.soak.nemesis.schedule import FaultSpec

TERM_TIMEOUT_S = 30
TOOL_TIMEOUT_S = 90
REASSIGN_BOUND_S = 60.0


class FaultError(Exception):
    """The fault cannot start now (its target does not exist, a tool failed)."""


@dataclass
class Applied:
    nodes: list[str]
    detail: str
    heal: Callable[[], str] = field(repr=False)

    @property
    def brokers(self) -> list[int]:
        return sorted(int(n[6:]) for n in self.nodes if n.startswith("broker"))


class Faults:
    def __init__(self, cluster: ZkafkaCluster, hot_key: str):
        self.cluster = cluster
        self.hot_key = hot_key
        self.topic, self.partition = split_key(hot_key)
        self.rng = random.Random()

    def start(self, spec: FaultSpec) -> Applied:
        self.rng = random.Random(repr(spec))  # the same spec picks the same "random" node among the same candidates
        starter = STARTERS.get(spec.kind)
        if starter is None:
            raise FaultError(f"unknown fault kind {spec.kind!r}")
        return starter(self, spec)

    # -- roles -------------------------------------------------------------------------------------
    def broker(self, role: str) -> int:
        if role == "leader":
            return self.leader()
        if role == "controller":
            return self.controller()
        if role == "random":
            running = [b for b in self.cluster.broker_ids if self.cluster.status(f"broker{b}") == "running"]
            if not running:
                raise FaultError("no running broker")
            return self.rng.choice(running)
        if role == "small-log-dir":
            if self.cluster.small_log_dir is None:
                raise FaultError("the cluster has no small log dir")
            return self.cluster.small_log_dir
        raise FaultError(f"role {role!r} is not a broker")

    def hot_state(self) -> dict:
        """The hot partition's state in the metadata of the live brokers: the newest leader epoch."""
        state = newest_partition_state(self.cluster.healths(), self.topic, self.partition)
        if state is None:
            raise FaultError(f"no broker knows {self.hot_key}")
        return state

    def leader(self) -> int:
        leader = self.hot_state()["leader"]
        if leader < 0:
            raise FaultError(f"{self.hot_key} has no leader")
        return leader

    def controller(self) -> int:
        controller = newest_controller(self.cluster.healths())
        if controller is None:
            raise FaultError("no active controller")
        return controller

    def zookeeper(self, role: str) -> int:
        if role == "zk-leader":
            z = self.cluster.zk_leader()
            if z is None:
                raise FaultError("no ZooKeeper leader")
            return z
        running = [z for z in (1, 2, 3) if self.cluster.status(f"zk{z}") == "running"]
        if not running:
            raise FaultError("no running ZooKeeper")
        return self.rng.choice(running)

    def all_brokers(self) -> list[str]:
        return [f"broker{b}" for b in self.cluster.broker_ids]

    # -- tools -------------------------------------------------------------------------------------
    def tool(self, module: str, *args: str) -> tuple[int, str]:
        try:
            done = subprocess.run([sys.executable, "-m", module, "--bootstrap-server", self.cluster.bootstrap_servers,
                                   *args], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return -1, f"{module} timed out after {TOOL_TIMEOUT_S} s"
        return done.returncode, (done.stdout + done.stderr).strip()


# -- starters: one per kind; each returns what it did and how to undo it ------------------------------
def _kill(f: Faults, spec: FaultSpec) -> Applied:
    b = f.broker(spec.target)
    f.cluster.kill_broker(b)
    return Applied([f"broker{b}"], f"SIGKILL broker {b}", lambda: _started(f, [b]))


def _term(f: Faults, spec: FaultSpec) -> Applied:
    b = f.broker(spec.target)
    began = time.monotonic()
    f.cluster.stop_broker(b, TERM_TIMEOUT_S)
    return Applied([f"broker{b}"], f"SIGTERM broker {b}: stopped in {time.monotonic() - began:.1f} s",
                   lambda: _started(f, [b]))


def _started(f: Faults, brokers: list[int]) -> str:
    for b in brokers:
        f.cluster.start_broker(b)
    return f"started broker{'s' if len(brokers) > 1 else ''} {','.join(map(str, brokers))}"


def _kill_all(f: Faults, spec: FaultSpec) -> Applied:
    running = [b for b in f.cluster.broker_ids if f.cluster.status(f"broker{b}") == "running"]
    if not running:
        raise FaultError("no running broker")
    for b in running:
        f.cluster.kill_broker(b)
    return Applied([f"broker{b}" for b in running], f"SIGKILL brokers {','.join(map(str, running))}",
                   lambda: _started(f, running))


def _kill_zookeeper(f: Faults, spec: FaultSpec) -> Applied:
    z = f.zookeeper(spec.target)
    f.cluster.kill_zookeeper(z)

    def heal() -> str:
        f.cluster.start_zookeeper(z)
        return f"started zk{z}"
    return Applied([f"zk{z}"], f"SIGKILL zk{z}", heal)


def _pause(f: Faults, spec: FaultSpec) -> Applied:
    b = f.broker(spec.target)
    f.cluster.pause_broker(b)

    def heal() -> str:
        f.cluster.unpause_broker(b)
        return f"unpaused broker {b}"
    return Applied([f"broker{b}"], f"paused broker {b} for {spec.duration_s:.1f} s", heal)


def _flush(f: Faults, nodes: list[str]) -> Callable[[], str]:
    def heal() -> str:
        missed = f.cluster.heal_partitions(nodes)
        return "flushed the nemesis chain" + (f" (not running, nothing to flush: {', '.join(missed)})" if missed else "")
    return heal


def _grudge(f: Faults, grudge: dict[str, set[str]], targets: list[str], detail: str) -> Applied:
    """Apply the rules; the fault's targets are the nodes cut off (the rules may sit on every node)."""
    ruled = sorted(n for n, peers in grudge.items() if peers)
    try:
        f.cluster.apply_grudge(grudge)
    except Exception:
        f.cluster.heal_partitions(ruled)  # nothing half-applied stays
        raise
    return Applied(sorted(targets), detail, _flush(f, ruled))


def _partition_broker(f: Faults, spec: FaultSpec) -> Applied:
    node = f"broker{f.broker(spec.target)}"
    rest = set(f.cluster.nodes) - {node}
    return _grudge(f, net.grudge_from_groups([{node}, rest], f.cluster.nodes), [node], f"{node} | everyone else")


def _partition_controller_zk(f: Faults, spec: FaultSpec) -> Applied:
    node = f"broker{f.controller()}"
    return _grudge(f, {node: {"zk1", "zk2", "zk3"}}, [node], f"{node} (controller) cut from ZooKeeper only")


def _partition_minority(f: Faults, spec: FaultSpec) -> Applied:
    minority = {f"broker{f.broker(spec.target)}", f"zk{f.rng.choice((1, 2, 3))}"}
    rest = set(f.cluster.nodes) - minority
    return _grudge(f, net.grudge_from_groups([minority, rest], f.cluster.nodes), sorted(minority),
                   f"{' '.join(sorted(minority))} | everyone else")


def _partition_ring(f: Faults, spec: FaultSpec) -> Applied:
    ring = f.cluster.nodes
    return _grudge(f, net.ring_grudge(ring), ring, f"ring {' - '.join(ring)}")


def _partition_clients(f: Faults, spec: FaultSpec) -> Applied:
    brokers = f.all_brokers()
    try:
        f.cluster.cut_clients()
    except Exception:
        f.cluster.heal_partitions(brokers)
        raise
    return Applied(brokers, "the host cut from every broker's Kafka port", _flush(f, brokers))


def _degrade(f: Faults, spec: FaultSpec) -> Applied:
    nodes = f.cluster.nodes
    try:
        qdiscs = f.cluster.degrade_network(nodes)
    except Exception:
        f.cluster.restore_network(nodes)
        raise

    def heal() -> str:
        missed = f.cluster.restore_network(nodes)
        return "qdisc deleted" + (f" (not running: {', '.join(missed)})" if missed else "")
    kinds = sorted(set(qdiscs.values()))
    return Applied(nodes, f"100 ms, 3 Mbit/s on every node's egress ({'/'.join(kinds)})", heal)


def _disk(f: Faults, spec: FaultSpec) -> Applied:
    b = f.broker("small-log-dir")
    if spec.kind == "disk-full":
        detail = f"broker {b}'s small log dir filled: {f.cluster.fill_small_dir()} used"
    else:
        f.cluster.make_small_dir_unwritable()
        detail = f"broker {b}'s small log dir made unwritable (chmod 000)"

    def heal() -> str:
        f.cluster.restore_small_dir()
        f.cluster.restart_broker(b, TERM_TIMEOUT_S)
        return f"small log dir restored, broker {b} restarted"
    return Applied([f"broker{b}"], detail, heal)


def _reassign(f: Faults, spec: FaultSpec) -> Applied:
    state = f.hot_state()
    replicas = list(state["replicas"])
    live = [b for b in f.cluster.broker_ids if f.cluster.status(f"broker{b}") == "running"]
    target = new_replicas(replicas, live, f.rng)
    plan = {"version": 1, "partitions": [{"topic": f.topic, "partition": f.partition, "replicas": target}]}
    path = Path(tempfile.mkdtemp(prefix="nemesis-")) / "reassign.json"
    path.write_text(json.dumps(plan))
    code, output = f.tool("scripts.tools.kafka_reassign_partitions", "--execute", "--additional",
                          "--reassignment-json-file", str(path))
    if code != 0:
        raise FaultError(f"kafka-reassign-partitions --execute exited {code}: {output[-300:]}")

    def heal() -> str:
        deadline = time.monotonic() + REASSIGN_BOUND_S
        while True:
            code, output = f.tool("scripts.tools.kafka_reassign_partitions", "--verify",
                                  "--reassignment-json-file", str(path))
            if code == 0 and "is completed" in output:
                return f"reassignment of {f.hot_key} to {target} completed"
            if time.monotonic() > deadline:
                return f"reassignment of {f.hot_key} to {target} not completed after {REASSIGN_BOUND_S:.0f} s: {output[-200:]}"
            time.sleep(1.0)
    return Applied([f"broker{b}" for b in sorted(set(replicas) | set(target))],
                   f"{f.hot_key}: replicas {replicas} -> {target}", heal)


def new_replicas(replicas: list[int], live: list[int], rng: random.Random) -> list[int]:
    """Another replica list for a move: a follower swapped for a live broker outside the replicas when
    there is one (half the time), else the same brokers in another order (another preferred leader)."""
    outside = [b for b in live if b not in replicas]
    if outside and len(replicas) > 1 and rng.random() < 0.5:
        target = list(replicas)
        target[rng.randrange(1, len(target))] = rng.choice(outside)
        return target
    if len(replicas) < 2:
        return [rng.choice(outside)] if outside else list(replicas)
    return replicas[1:] + replicas[:1]


def _preferred_election(f: Faults, spec: FaultSpec) -> Applied:
    code, output = f.tool("scripts.tools.kafka_leader_election", "--election-type", "preferred",
                          "--all-topic-partitions")
    if code != 0:
        raise FaultError(f"kafka-leader-election exited {code}: {output[-300:]}")
    summary = "; ".join(line[:160] for line in output.splitlines()[:3])
    return Applied(f.all_brokers(), summary, lambda: "nothing to heal (a membership operation)")


STARTERS: dict[str, Callable[[Faults, FaultSpec], Applied]] = {
    "kill-broker": _kill, "kill-leader": _kill, "kill-controller": _kill, "kill-all-brokers": _kill_all,
    "kill-zookeeper": _kill_zookeeper, "kill-zookeeper-leader": _kill_zookeeper,
    "term-leader": _term, "term-controller": _term, "pause-broker": _pause, "pause-controller": _pause,
    "partition-broker": _partition_broker, "partition-controller-zk": _partition_controller_zk,
    "partition-minority": _partition_minority, "partition-ring": _partition_ring,
    "partition-clients": _partition_clients, "degrade-network": _degrade,
    "disk-unwritable": _disk, "disk-full": _disk, "reassign": _reassign, "preferred-election": _preferred_election,
}


def heal_everything(cluster: ZkafkaCluster) -> list[str]:
    """Undo any fault, whatever started it: unpause, start stopped ZooKeepers then brokers, flush the
    nemesis chain and delete the qdisc on every node, restore the small log dir (restarting its broker if
    it was faulty). Idempotent; returns what it did."""
    done = []
    for node in cluster.nodes:
        if cluster.status(node) == "paused":
            cluster.container(node).unpause()
            done.append(f"unpaused {node}")
    for node in cluster.nodes:  # ZooKeepers first
        if cluster.status(node) in ("exited", "created", "dead"):
            cluster.container(node).start()
            done.append(f"started {node}")
    cluster.heal_partitions()
    cluster.restore_network()
    if cluster.small_log_dir is not None and cluster.small_dir_faulty():
        cluster.restore_small_dir()
        cluster.restart_broker(cluster.small_log_dir, TERM_TIMEOUT_S)
        done.append(f"restored the small log dir, restarted broker {cluster.small_log_dir}")
    return done
