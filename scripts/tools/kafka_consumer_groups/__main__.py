"""``python -m scripts.tools.kafka_consumer_groups``: the ``kafka-consumer-groups`` tool
(scripts/tools/kafka_consumer_groups/command.py)."""
from __future__ import annotations

import sys

from scripts.tools.kafka_consumer_groups.command import main

if __name__ == "__main__":
    sys.exit(main())
