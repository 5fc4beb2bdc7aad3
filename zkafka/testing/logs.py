"""Containers' logs as a failing test wants them: each container's notable lines (warnings, errors,
rejected requests, tracebacks) from its whole log, then its last lines."""
from __future__ import annotations

from collections.abc import Mapping

NOTABLE = (" WARNING ", " ERROR ", "rejecting", "Traceback", "failed")


def container_logs(containers: Mapping[str, object], tail: int = 60) -> str:
    """``containers``: name -> docker-py container."""
    out = []
    for name, container in containers.items():
        try:
            lines = container.logs().decode(errors="replace").splitlines()
        except Exception as exc:  # noqa: BLE001 - removed, or the engine is gone
            lines = [f"(no logs: {exc})"]
        notable = [line for line in lines[:-tail] if any(mark in line for mark in NOTABLE)][-40:]
        if notable:
            out.append(f"----- {name}: notable -----\n" + "\n".join(notable))
        out.append(f"----- {name} -----\n" + "\n".join(lines[-tail:]))
    return "\n".join(out)
