"""``python -m scripts.tools.kafka_topics``: the ``kafka-topics`` tool (scripts/tools/kafka_topics/command.py)."""
from __future__ import annotations

import sys

from scripts.tools.kafka_topics.command import main

if __name__ == "__main__":
    sys.exit(main())
