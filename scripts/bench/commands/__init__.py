"""``zkafka bench ...``: one module per benchmark, each with ``add_parser(subparsers)`` and ``run(args) -> int``.

These modules are light to import (``zkafka --help`` builds every parser): a benchmark's own module is imported
by its ``run``.
"""
from __future__ import annotations

from scripts.bench.commands import (clients, cluster, formats, group, http, mirror, quotas, reassign, replication,
                                    scale, security, spark, spark_cluster, storage, suite, testcontainers, txn)

COMMANDS = (storage, cluster, clients, replication, group, spark, spark_cluster, http, suite, security, reassign,
            formats, txn, scale, testcontainers, quotas, mirror)
