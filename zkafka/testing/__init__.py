"""zkafka in Docker for your tests: ``ZkafkaContainer`` (one broker and its own ZooKeeper in one
container), ``ZkafkaCluster`` (a ZooKeeper ensemble of 1 or 3 and N brokers, with fault helpers),
``RackedCluster`` (the same in racks: one Docker network per rack joined by a router, ``broker.rack`` set), and
the pytest plugin ``zkafka.testing.plugin`` (fixtures ``zkafka`` and ``zkafka_cluster``, loaded by
pytest through the ``pytest11`` entry point).

::

    from zkafka.testing import ZkafkaContainer

    with ZkafkaContainer() as kafka:
        bootstrap = kafka.get_bootstrap_server()

Needs testcontainers (``pip install 'zkafka[testing]'``), a Docker engine and the images
(``zkafka images build``); a missing image raises ``ImageNotFound``, naming that command.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from zkafka.images import ImageNotFound
from zkafka.testing.conditions import wait_for

if TYPE_CHECKING:
    from zkafka.testing.cluster import ZkafkaCluster
    from zkafka.testing.container import ContainerNotReady, ZkafkaContainer
    from zkafka.testing.racks import RackedCluster

_LAZY = {"ZkafkaContainer": "zkafka.testing.container", "ContainerNotReady": "zkafka.testing.container",
         "ZkafkaCluster": "zkafka.testing.cluster", "RackedCluster": "zkafka.testing.racks"}
__all__ = ["ContainerNotReady", "ImageNotFound", "RackedCluster", "ZkafkaCluster", "ZkafkaContainer", "wait_for"]


def __getattr__(name: str):
    """The container classes import testcontainers: only when asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zkafka.testing' has no attribute {name!r}")
