"""``zkafka zookeeper ...`` and ``zkafka cluster ...``: the launchers' commands, each module with
``add_parser(subparsers)`` and ``run(args) -> int``."""
from __future__ import annotations

from scripts.local.commands import cluster, spark, zookeeper

COMMANDS = (zookeeper, cluster, spark)
