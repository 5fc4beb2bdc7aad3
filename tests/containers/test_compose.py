"""The compose stack's file is valid for docker-compose and wires what the README promises."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.containers.conftest import require
from zkafka import __version__
from zkafka.images import zookeeper_image

COMPOSE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"


def compose_command() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return None


def test_compose_file_is_valid_and_publishes_on_loopback_only():
    command = compose_command()
    require(None if command else "there is no docker-compose (compose/ensure-docker.sh installs it)")
    result = subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True, text=True,
                            env={**os.environ, "ZK_IMAGE": zookeeper_image()})
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    services = config["services"]
    assert {"zk1", "zk2", "zk3", "broker1", "broker2", "broker3"} <= set(services)
    env_free = {k: v for k, v in os.environ.items() if k != "ZKAFKA_IMAGE"}
    defaults = yaml.safe_load(subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True, text=True,
                                             env=env_free).stdout)["services"]
    assert defaults["broker1"]["image"] == f"zkafka:{__version__}", "compose names another version's image"
    for name, service in services.items():
        for port in service.get("ports", []):
            host_ip = port.get("host_ip") if isinstance(port, dict) else str(port).split(":")[0]
            assert host_ip == "127.0.0.1", f"{name} publishes {port} beyond loopback"
    for b in (1, 2, 3):
        env = services[f"broker{b}"]["environment"]
        assert env["KAFKA_ADVERTISED_LISTENERS"].startswith(f"INTERNAL://broker{b}:9092,")  # peers use the first
        assert "healthcheck" in services[f"broker{b}"]
