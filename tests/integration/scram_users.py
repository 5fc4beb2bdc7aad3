"""SCRAM users for the security tests, made as an operator would: ``kafka-configs --zookeeper``."""
from __future__ import annotations

from scripts.local.cluster import Cluster
from scripts.tools.kafka_configs import command as kafka_configs

# The brokers' own SCRAM identity in the SASL tests (a super user, or replication could not fetch)
ADMIN_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'


def add_scram_users(cluster: Cluster, users: dict[str, str], mechanism: str = "SCRAM-SHA-512") -> None:
    for user, password in users.items():
        assert kafka_configs.main(["--zookeeper", cluster.zookeeper_connect, "--alter", "--entity-type", "users",
                                   "--entity-name", user, "--add-config", f"{mechanism}=[password={password}]"]) == 0
