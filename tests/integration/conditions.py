"""Waiting on a condition with a deadline: how the integration tests wait (never sleep-and-hope). One
implementation, in the product's container room (the soak waits the same way)."""
from zkafka.testing.conditions import wait_for

__all__ = ["wait_for"]
