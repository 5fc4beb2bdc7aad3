"""Network faults inside the containers: iptables partitions and tc netem, as shell scripts run with
``docker exec`` as root (the brokers and the ZooKeepers have cap NET_ADMIN; both images have iptables and
iproute2).

A degraded network is netem (100 ms, 3 Mbit/s) on each node's egress, or where the kernel has no netem a
token bucket filter at the same rate.

Partitions live in one dedicated chain, ``ZKAFKA-NEMESIS``, jumped to first from INPUT and OUTPUT: a node
that must not talk to a peer drops packets from it (INPUT, ``-s``) and to it (OUTPUT, ``-d``), so a cut is
symmetric even when only one side applies it. Healing flushes that chain only; Docker's own rules (the
embedded DNS lives in the nat table) are never touched. A container that restarts gets a fresh network
namespace: its rules and its qdisc are gone, and healing it is a no-op.

The pure functions decide who drops whom (``grudge``: node name -> the node names it drops); the scripts
are strings so that one ``exec`` applies a node's whole rule set.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterable

CHAIN = "ZKAFKA-NEMESIS"
DEVICE = "eth0"


def grudge_from_groups(groups: list[set[str]], nodes: Iterable[str]) -> dict[str, set[str]]:
    """Each node of a group drops every node outside its group (nodes in no group drop nothing, but the
    grouped nodes drop them)."""
    everyone = set(nodes)
    for group in groups:
        if not group <= everyone:
            raise ValueError(f"unknown nodes {sorted(group - everyone)} in a partition group")
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            if a & b:
                raise ValueError(f"nodes {sorted(a & b)} are in two partition groups")
    return {node: everyone - group for group in groups for node in group}


def ring_grudge(nodes: list[str]) -> dict[str, set[str]]:
    """Each node reaches only its two neighbours in ``nodes``' order, taken as a ring."""
    if len(nodes) < 4:
        raise ValueError("a ring partition needs at least 4 nodes (with 3 everyone is a neighbour)")
    n = len(nodes)
    return {node: set(nodes) - {node, nodes[(i - 1) % n], nodes[(i + 1) % n]} for i, node in enumerate(nodes)}


def ensure_chain_script() -> str:
    """Create the chain and hook it first into INPUT and OUTPUT, once."""
    return " && ".join([
        f"(iptables -n -L {CHAIN} >/dev/null 2>&1 || iptables -N {CHAIN})",
        f"(iptables -C INPUT -j {CHAIN} 2>/dev/null || iptables -I INPUT 1 -j {CHAIN})",
        f"(iptables -C OUTPUT -j {CHAIN} 2>/dev/null || iptables -I OUTPUT 1 -j {CHAIN})",
    ])


def drop_script(ips: Iterable[str], port: int | None = None) -> str:
    """Append rules dropping traffic from and to each address (only TCP to/from ``port`` of this node
    when given)."""
    rules = []
    for ip in sorted(set(ips)):
        if port is None:
            rules += [f"iptables -A {CHAIN} -s {ip} -j DROP", f"iptables -A {CHAIN} -d {ip} -j DROP"]
        else:
            rules += [f"iptables -A {CHAIN} -s {ip} -p tcp --dport {port} -j DROP",
                      f"iptables -A {CHAIN} -d {ip} -p tcp --sport {port} -j DROP"]
    return " && ".join([ensure_chain_script(), *rules])


def flush_script() -> str:
    """Empty the chain if it exists (a restarted container has none): always succeeds."""
    return f"iptables -F {CHAIN} 2>/dev/null; true"


def netem_script(delay_ms: int = 100, rate: str = "3mbit") -> str:
    """netem's delay and rate on the node's egress; on a kernel without netem (CONFIG_NET_SCH_NETEM off)
    a token bucket with the same rate (no added delay). Prints the qdisc used: ``netem`` or ``tbf``."""
    rate = shlex.quote(rate)
    return (f"if tc qdisc replace dev {DEVICE} root netem delay {int(delay_ms)}ms rate {rate} 2>/dev/null; "
            f"then echo netem; else tc qdisc replace dev {DEVICE} root tbf rate {rate} burst 32kbit latency 400ms "
            f"&& echo tbf; fi")


def clear_netem_script() -> str:
    return f"tc qdisc del dev {DEVICE} root 2>/dev/null; true"
