"""A broker whose ZooKeeper session expired while it was frozen (SIGSTOP past the session timeout, as
``docker pause`` does) comes back as one broker of one cluster: the frozen controller resigns and learns
the new controller, the frozen follower registers again with a new broker epoch, and afterwards exactly
one controller is named by every broker's metadata and lists every broker as live. Real ZooKeeper, real
broker processes."""
from __future__ import annotations

import signal
import time

from tests.integration.conditions import wait_for
from tests.integration.znodes import controller_id

SESSION_MS = 4000
FROZEN_S = SESSION_MS / 1000 * 2.5  # well past the session: ZooKeeper expires it
TIMEOUT = 30


def agreed(cluster, zk) -> int | None:
    """The controller every broker agrees on (ZooKeeper, each broker's controller state and metadata), or None."""
    current = controller_id(zk)
    if current is None:
        return None
    brokers = sorted(cluster.broker_ids)
    for b in brokers:
        health = cluster.health(b) or {}
        controller, metadata = health.get("controller", {}), health.get("metadata", {})
        if controller.get("is_controller") != (b == current) or controller.get("active_controller_id") != current:
            return None
        if metadata.get("controller_id") != current or sorted(map(int, metadata.get("live_brokers", []))) != brokers:
            return None
    if sorted((cluster.health(current) or {}).get("controller", {}).get("live_brokers", [])) != brokers:
        return None
    return current


def freeze(cluster, zk, b: int) -> None:
    epoch = (cluster.health(b) or {}).get("broker_epoch")
    cluster.signal_broker(b, signal.SIGSTOP)
    try:
        time.sleep(FROZEN_S)  # the fault itself: frozen for a fixed time, past the session timeout
        wait_for(lambda: zk.exists(f"/brokers/ids/{b}") is None, TIMEOUT, f"broker {b}'s session expired")
    finally:
        cluster.signal_broker(b, signal.SIGCONT)
    wait_for(lambda: (cluster.health(b) or {}).get("broker_epoch", epoch) != epoch, TIMEOUT,
             f"broker {b} registered again with a new epoch")


def test_a_frozen_controller_and_a_frozen_follower_rejoin_one_cluster(make_cluster):
    cluster, zk = make_cluster(3, session_timeout_ms=SESSION_MS)
    first = wait_for(lambda: agreed(cluster, zk), TIMEOUT, "one controller everyone agrees on")

    freeze(cluster, zk, first)
    second = wait_for(lambda: agreed(cluster, zk), TIMEOUT, "one controller everyone agrees on after the controller froze")

    follower = next(b for b in cluster.broker_ids if b != second)
    freeze(cluster, zk, follower)
    wait_for(lambda: agreed(cluster, zk), TIMEOUT, "one controller everyone agrees on after a follower froze")
