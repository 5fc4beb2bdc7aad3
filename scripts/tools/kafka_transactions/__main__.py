"""``python -m scripts.tools.kafka_transactions``: the ``kafka-transactions`` tool
(scripts/tools/kafka_transactions/command.py)."""
from __future__ import annotations

import sys

from scripts.tools.kafka_transactions.command import main

if __name__ == "__main__":
    sys.exit(main())
