"""The one door to Docker: docker-py and testcontainers enter zkafka here, and nowhere else (an import contract).

Importing this module imports testcontainers, which reads its settings from the environment then: set them
first (``zkafka.testing.local_engine.use_local_engine``). ``zkafka.images`` imports it only inside the functions
that talk to the engine, so naming images needs neither library.
"""
from __future__ import annotations

import functools

import docker
import docker.errors
from testcontainers.core.config import ConnectionMode, testcontainers_config
from testcontainers.core.container import DockerContainer, Reaper
from testcontainers.core.docker_client import DockerClient
from testcontainers.core.network import Network

ImageNotFoundError = docker.errors.ImageNotFound
NotFound = docker.errors.NotFound

__all__ = ["DockerClient", "DockerContainer", "ImageNotFoundError", "Network", "NotFound", "docker_api",
           "docker_host_address", "ensure_reaper"]


@functools.cache
def docker_api() -> docker.DockerClient:
    """One docker-py client for this process (volumes, networks, images); testcontainers' containers keep their
    own."""
    return docker.from_env()


def ensure_reaper() -> None:
    """Create testcontainers' Ryuk reaper now where it runs: once, before containers are started concurrently
    (each start would race to create it)."""
    if not testcontainers_config.ryuk_disabled:
        Reaper.get_instance()


def docker_host_address(client: DockerClient) -> str:
    """The address of the Docker host as this process reaches it (published ports are there). zkafka's brokers
    advertise it before their containers start, so it must be known without one: testcontainers' ``docker_host``
    connection mode (its default outside a container). Inside a container (a devcontainer, a CI job with the
    socket mounted) set ``TESTCONTAINERS_CONNECTION_MODE=docker_host`` and ``TC_HOST`` to an address of the
    Docker host this process reaches."""
    mode = client.get_connection_mode()
    if mode != ConnectionMode.docker_host:
        raise RuntimeError(f"zkafka.testing needs testcontainers' docker_host connection mode, not {mode.value}: "
                           f"set TESTCONTAINERS_CONNECTION_MODE=docker_host and TC_HOST=<the Docker host's address>")
    return client.host()
