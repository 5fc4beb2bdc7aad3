"""What every ``zkafka demo`` shares: running one on a scratch cluster (``scripts.local.cluster.scratch_cluster``)
with Ctrl-C and SIGTERM as a clean stop (exit 130, the cluster and its directory cleaned up), and a failed run
(a non-zero code) keeping the brokers' logs."""
from __future__ import annotations

import signal
from typing import Any, Callable


def run_on_scratch_cluster(prefix: str, brokers: int, properties: dict[str, str], bootstrap: str | None,
                           out: Callable[[str], None], demo: Callable[[Any], int]) -> int:
    """``demo(scratch)`` on ``bootstrap`` or a fresh cluster of ``brokers``; its exit code."""
    from scripts.local.cluster import scratch_cluster

    with scratch_cluster(prefix, brokers, properties, bootstrap, out) as scratch:
        try:
            code = demo(scratch)
        except KeyboardInterrupt:
            scratch.failed = False
            out("interrupted: stopping")
            return 130
        scratch.failed = code != 0
        return code


def _raise_interrupt(*_) -> None:
    raise KeyboardInterrupt


def stopped_by_sigterm(run: Callable[[], int]) -> int:
    """``run()`` with SIGTERM stopping it like Ctrl-C (a KeyboardInterrupt), the previous handler restored after."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return run()
    finally:
        signal.signal(signal.SIGTERM, previous)
