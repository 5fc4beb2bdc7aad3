"""The zkafka images and their names: ``zkafka:<version>`` (broker, tools and ZooKeeper; ``standalone`` runs
both in one container) and ``zkafka-zookeeper:<version>`` (the same image, ZooKeeper by default). Built by
``zkafka images build`` (``zkafka.images.build``); the Dockerfile and entrypoints are this package's
``docker/`` directory.

``ZKAFKA_IMAGE`` / ``ZKAFKA_ZOOKEEPER_IMAGE`` in the environment name other images (a registry's copy, a
tag of your own)."""
from __future__ import annotations

import os

from zkafka import __version__

BUILD_COMMAND = "zkafka images build"


def broker_image() -> str:
    return os.environ.get("ZKAFKA_IMAGE", f"zkafka:{__version__}")


def zookeeper_image() -> str:
    return os.environ.get("ZKAFKA_ZOOKEEPER_IMAGE", f"zkafka-zookeeper:{__version__}")


class ImageNotFound(RuntimeError):
    """A zkafka image is not in the Docker engine; the message names the command that builds it."""

    def __init__(self, image: str):
        self.image = image
        super().__init__(f"Docker image {image!r} not found: build it with `{BUILD_COMMAND}` "
                         f"(add --offline on a machine without a container registry)")


def require_image(image: str) -> None:
    """Raise ``ImageNotFound`` unless the Docker engine has ``image``."""
    from zkafka.engine import ImageNotFoundError, docker_api

    try:
        docker_api().images.get(image)
    except ImageNotFoundError:
        raise ImageNotFound(image) from None




def docker_problem(images: tuple[str, ...] | None = None) -> str | None:
    """Why zkafka's containers cannot run here (no docker client, no engine, an image missing), or None."""
    import shutil

    if shutil.which("docker") is None:
        return "no docker client"
    try:
        from zkafka.engine import docker_api

        docker_api().ping()
        for image in images or (broker_image(), zookeeper_image()):
            require_image(image)
    except Exception as exc:  # noqa: BLE001 - any failure means: not here
        return f"{type(exc).__name__}: {exc}"
    return None


__all__ = ["BUILD_COMMAND", "ImageNotFound", "broker_image", "docker_problem", "require_image", "zookeeper_image"]
