"""The broker's event loop: uvloop when installed (the default), else asyncio's own.

The only module that imports uvloop. uvloop's cheaper socket reads, writes and wake-ups matter
because every record costs each broker several of them (measurements: BENCHMARKS.md).
``ZKAFKA_EVENT_LOOP=asyncio`` selects asyncio's loop (to compare, or to debug with asyncio's debug
mode); any other value than ``uvloop``/``asyncio`` is an error naming the variable.

Nothing in the broker depends on which loop runs it: the listener sends file ranges with
``os.sendfile`` itself, since uvloop has no ``loop.sendfile``.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any

ENV = "ZKAFKA_EVENT_LOOP"
CHOICES = ("uvloop", "asyncio")


def loop_name(environ: dict[str, str] | None = None) -> str:
    """Which loop ``run`` will use: the environment's choice, else uvloop if importable."""
    chosen = (environ if environ is not None else os.environ).get(ENV, "").strip().lower()
    if chosen and chosen not in CHOICES:
        raise ValueError(f"{ENV}={chosen!r}: expected one of {', '.join(CHOICES)}")
    if chosen == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if chosen == "uvloop":
            raise ValueError(f"{ENV}=uvloop but uvloop is not installed") from None
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run(main)`` on the chosen loop."""
    if loop_name() == "uvloop":
        import uvloop
        return uvloop.run(main)
    return asyncio.run(main)
