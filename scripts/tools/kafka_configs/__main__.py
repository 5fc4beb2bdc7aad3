"""``python -m scripts.tools.kafka_configs``: the ``kafka-configs`` tool (scripts/tools/kafka_configs/command.py)."""
from __future__ import annotations

import sys

from scripts.tools.kafka_configs.command import main

if __name__ == "__main__":
    sys.exit(main())
