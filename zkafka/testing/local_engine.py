"""Where the Docker engine is. ``use_local_engine``: testcontainers settings for a machine whose Docker engine is
local and that reaches no registry (CI here):
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


def docker_host_address(client) -> str:
    """The address of the Docker host as this process reaches it (published ports are there), from a
    testcontainers ``DockerClient``. zkafka's brokers advertise it before their containers start, so it must
    be known without one: testcontainers' ``docker_host`` connection mode (its default outside a container).
    Inside a container (a devcontainer, a CI job with the socket mounted) set
    ``TESTCONTAINERS_CONNECTION_MODE=docker_host`` and ``TC_HOST`` to an address of the Docker host this process
    reaches."""
    from testcontainers.core.config import ConnectionMode

    mode = client.get_connection_mode()
    if mode != ConnectionMode.docker_host:
        raise RuntimeError(f"zkafka.testing needs testcontainers' docker_host connection mode, not {mode.value}: "
                           f"set TESTCONTAINERS_CONNECTION_MODE=docker_host and TC_HOST=<the Docker host's address>")
    return client.host()
