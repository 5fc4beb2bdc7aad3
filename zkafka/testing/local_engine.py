"""testcontainers settings for a machine whose Docker engine is local and that reaches no registry (CI here):
no Ryuk (its image cannot be pulled; zkafka's containers carry the label ``zkafka.testing=true`` and are
removed by ``stop``), the local socket, and loopback addresses for published ports. Set only where the
environment does not say otherwise, before testcontainers is imported."""
from __future__ import annotations

import os

SETTINGS = {
    "TESTCONTAINERS_RYUK_DISABLED": "true",
    "DOCKER_HOST": "unix:///var/run/docker.sock",
    "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
    "TC_HOST": "127.0.0.1",
}


def use_local_engine() -> None:
    for name, value in SETTINGS.items():
        os.environ.setdefault(name, value)

