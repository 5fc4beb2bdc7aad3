"""``python -m scripts.tools.kafka_reassign_partitions``: the ``kafka-reassign-partitions`` tool (scripts/tools/kafka_reassign_partitions/command.py)."""
from __future__ import annotations

import sys

from scripts.tools.kafka_reassign_partitions.command import main

if __name__ == "__main__":
    sys.exit(main())
