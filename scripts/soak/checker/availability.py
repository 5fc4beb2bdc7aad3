"""The liveness checks of what the runner measured: unavailable (a key leaderless longer than
``leader_bound_s`` after the final heal) and workload-unfinished (a workload process that did not stop
cleanly)."""
from __future__ import annotations

from scripts.soak.checker.model import Availability, CheckConfig, Findings


def check_availability(availability: Availability | None, config: CheckConfig, findings: Findings) -> None:
    if availability is None:
        return
    for key, seconds in sorted(availability.leaderless_after_heal.items()):
        if seconds > config.leader_bound_s:
            findings.add("unavailable", {"key": key, "seconds": seconds, "bound_s": config.leader_bound_s})
    for process, finished in sorted(availability.workloads_finished.items()):
        if not finished:
            findings.add("workload-unfinished", {"process": process})
