"""Reading znodes from a test's own kazoo client, without check-then-act races: an ephemeral znode (the
``/controller`` of a killed broker) can vanish between ``exists`` and ``get``, so each reader makes one read
and answers None for a znode that is not there. ``connected_zk``: a test's own client of a cluster's ZooKeeper."""
from __future__ import annotations

import json
from contextlib import contextmanager

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def controller_id(zk: KazooClient) -> int | None:
    """The broker id in ``/controller``, or None while no broker holds it."""
    try:
        return json.loads(zk.get("/controller")[0])["brokerid"]
    except NoNodeError:
        return None


def committed_offset(zk: KazooClient, group: str, topic: str, partition: int) -> int | None:
    """The group's committed offset of the partition in ``/consumers/<group>/offsets/<topic>/<partition>``, or None
    while none is committed."""
    try:
        return int(zk.get(f"/consumers/{group}/offsets/{topic}/{partition}")[0])
    except NoNodeError:
        return None


@contextmanager
def connected_zk(cluster):
    """A started kazoo client of ``cluster``'s ZooKeeper, stopped and closed on exit."""
    client = KazooClient(hosts=cluster.zookeeper_connect)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()
