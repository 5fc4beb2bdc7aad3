"""``zkafka demo ...``: one module per demonstration, each with ``add_parser(subparsers)`` and ``run(args) -> int``
(the demonstration itself is imported by ``run``)."""
from __future__ import annotations

from scripts.demo.commands import cluster, groups, mirror, spark, transactions

COMMANDS = (groups, spark, cluster, transactions, mirror)
