"""Waiting on a condition with a deadline: how tests and the soak wait (never sleep-and-hope)."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """``condition()``'s first truthy value, polled every ``interval`` seconds (0: back to back, for
    conditions that are slow themselves); AssertionError naming ``what`` once ``timeout`` seconds pass.
    The condition is always checked once more at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if interval:
            time.sleep(interval)
