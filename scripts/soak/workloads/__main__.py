"""``python -m scripts.soak.workloads <kind> --bootstrap ... --history-dir ... --process ... [kind flags]``."""
from __future__ import annotations

import faulthandler
import importlib
import signal
import sys

from scripts.soak.workloads.common import catch_stop_signals

KINDS = ("producer", "reader", "group", "copier")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in KINDS:
        sys.stderr.write(f"usage: python -m scripts.soak.workloads {{{'|'.join(KINDS)}}} ...\n")
        return 64
    catch_stop_signals()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung workload's stacks, into its log
    return importlib.import_module(f"scripts.soak.workloads.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
