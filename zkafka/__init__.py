"""zkafka's public Python API for users of the product (the broker itself is ``python -m brokers``).

* ``zkafka.testing`` — zkafka in Docker for other people's test suites: ``ZkafkaContainer`` (one broker and
  its ZooKeeper in one container), ``ZkafkaCluster`` (a ZooKeeper ensemble and N brokers, with fault helpers),
  and the pytest plugin (fixtures ``zkafka`` and ``zkafka_cluster``).
* ``zkafka.images`` — the images those run (``zkafka images build``) and their names.

This package never imports the broker's packages: it speaks to a cluster the way any client does.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("zkafka")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


__version__ = _version()
__all__ = ["__version__"]
