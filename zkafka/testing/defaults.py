"""Settings of the container cluster that pure code needs too (the nemesis' schedule sizes its pauses by
the brokers' ZooKeeper session timeout) without importing Docker's client."""
from __future__ import annotations

SESSION_TIMEOUT_MS = 6000
DATA_LOG_DIR = "/var/lib/zkafka/data"  # the image's log.dirs (the image's KAFKA_LOG_DIRS)
SMALL_LOG_DIR = "/var/lib/zkafka/small"
SMALL_LOG_DIR_MIB = 64
# On every container and network zkafka.testing starts (.ci/run removes what a killed run left by it).
LABELS = {"zkafka.testing": "true"}
