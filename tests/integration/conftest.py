"""Fixtures shared by the integration tests. ``zk`` is a kazoo client on the ZooKeeper of whatever
``cluster`` fixture the test module defines (each module starts the cluster it needs)."""
from __future__ import annotations

import pytest
from kazoo.client import KazooClient


@pytest.fixture
def zk(cluster):
    client = KazooClient(hosts=cluster.zookeeper_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()
