"""Fixtures shared by the integration tests. ``zk`` is a kazoo client on the ZooKeeper of whatever
``cluster`` fixture the test module defines (each module starts the cluster it needs); ``zookeeper`` a
bare ZooKeeper server per module; ``make_cluster`` a factory of clusters torn down after the test."""
from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from scripts.local.cluster import Cluster, ClusterError, ClusterSpec
from scripts.local.zookeeper import ZooKeeperServer, find_free_base_port
from tests.integration.znodes import connected_zk

SESSION_MS = 4000


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """A bare ZooKeeper server for the module (no brokers): the ZooKeeper-client tests."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zk"), find_free_base_port(1), tick_time=500)
    server.start(60)
    yield server
    server.stop()


@pytest.fixture
def zk(cluster):
    with connected_zk(cluster) as client:
        yield client


@pytest.fixture
def make_cluster(tmp_path):
    """``make_cluster(brokers, session_timeout_ms=..., properties={...})`` -> (Cluster, KazooClient);
    everything made is torn down after the test (SIGCONT + SIGTERM, then ZooKeeper)."""
    made: list[tuple[Cluster, KazooClient]] = []

    def make(brokers: int = 3, session_timeout_ms: int = SESSION_MS, properties: dict | None = None):
        props = {"replica.fetch.backoff.ms": "200", **(properties or {})}
        for attempt in (1, 2):
            spec = ClusterSpec.on_free_ports(brokers, tick_time=500, session_timeout_ms=session_timeout_ms, properties=props)
            cluster = Cluster(tmp_path / f"cluster-{len(made)}", spec)
            zk = KazooClient(hosts=cluster.zookeeper_connect)
            made.append((cluster, zk))
            try:
                cluster.up(timeout=60)
                break
            except ClusterError as exc:  # a port taken between choosing and binding it: once more
                if attempt == 2 or "address already in use" not in str(exc):
                    raise
                cluster.down()
        zk.start(timeout=15)
        return cluster, zk

    yield make
    for cluster, zk in made:
        try:
            zk.stop()
            zk.close()
        finally:
            cluster.down()
