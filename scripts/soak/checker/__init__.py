"""The soak's Jepsen-style checker (``jepsen.tests.kafka``'s checks over ``scripts.soak.history``): pure, no I/O.

``check(ops, config, availability) -> CheckResult``; every anomaly kind is listed in ``model.KINDS``.
"""
from scripts.soak.checker.core import check
from scripts.soak.checker.model import KINDS, Anomaly, Availability, CheckConfig, CheckResult

__all__ = ["check", "KINDS", "Anomaly", "Availability", "CheckConfig", "CheckResult"]
