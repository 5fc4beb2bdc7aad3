"""``zkafka images build --online`` end to end, with stand-ins for the registry's images: this machine has no
registry, so a Python 3.11 base (``zkafka-base:bookworm``) stands in for ``python:3.11-slim`` and an image
laid out like the official ``zookeeper`` one for ``zookeeper:3.8`` (as its Dockerfile makes it: ``DISTRO_NAME``
a build ARG and the working directory, the jars in ``/$DISTRO_NAME/lib``, ``logback.xml`` moved to ``/conf``, a
JRE at ``$JAVA_HOME``). The images built must take ZooKeeper and Java from that layout and work as ZkafkaContainer's."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import docker
import pytest

from zkafka.images.build import OFFLINE_BASE
from zkafka.testing import ZkafkaContainer

OFFICIAL_LAYOUT = f"""FROM {OFFLINE_BASE}
ARG DISTRO_NAME=apache-zookeeper-3.8.0-bin
ENV JAVA_HOME=/opt/java/openjdk
WORKDIR /$DISTRO_NAME
RUN mkdir -p /$DISTRO_NAME/lib /opt/java /conf && echo '<configuration/>' > /conf/logback.xml \\
 && cp -L /usr/share/java/*.jar /$DISTRO_NAME/lib/ && mv /$DISTRO_NAME/lib/zookeeper.jar /$DISTRO_NAME/lib/zookeeper-3.8.0.jar \\
 && {{ cp -aL /usr/lib/jvm/java-17-openjdk-amd64 $JAVA_HOME 2>/dev/null || true; }} && $JAVA_HOME/bin/java -version
"""  # (Debian's JRE dir holds a few dangling links: docs, an optional accessibility library)


@pytest.fixture
def stand_in_registry(tmp_path: Path):
    tag = f"zkafka-test-{uuid.uuid4().hex[:6]}"
    images = {"layout": f"{tag}/zookeeper-layout:3.8", "broker": f"{tag}/zkafka:online",
              "zookeeper": f"{tag}/zkafka-zookeeper:online"}
    (tmp_path / "Dockerfile").write_text(OFFICIAL_LAYOUT)
    subprocess.run(["docker", "build", "-q", "-t", images["layout"], str(tmp_path)], check=True, capture_output=True)
    yield images
    client = docker.from_env()
    for image in images.values():
        try:
            client.images.remove(image, force=True)
        except docker.errors.ImageNotFound:
            pass


def test_an_online_build_takes_zookeeper_and_java_from_the_official_layout(stand_in_registry):
    images = stand_in_registry
    zkafka = shutil.which("zkafka", path=os.path.dirname(sys.executable))
    env = {**os.environ, "ZKAFKA_IMAGE": images["broker"], "ZKAFKA_ZOOKEEPER_IMAGE": images["zookeeper"]}
    build = subprocess.run([zkafka, "images", "build", "--online", "--base-image", OFFLINE_BASE,
                            "--zookeeper-image", images["layout"]], env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    assert "mode: online" in build.stderr
    assert build.stdout.split() == [images["broker"], images["zookeeper"]]

    def run(image: str, *script: str) -> str:
        return subprocess.run(["docker", "run", "--rm", "--entrypoint", "sh", image, "-c", *script],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert run(images["zookeeper"], "zookeeper-server --classpath") == "/opt/zookeeper/conf:/opt/zookeeper/lib/*"
    assert run(images["zookeeper"], "cat /opt/zookeeper/conf/logback.xml") == "<configuration/>"
    assert run(images["broker"], "command -v java") == "/opt/java/bin/java"
    assert docker.from_env().images.get(images["zookeeper"]).attrs["Config"]["Cmd"] == ["zookeeper-server"]

    with ZkafkaContainer(image=images["broker"]) as kafka:  # ZooKeeper from the copied distribution
        assert kafka.ready_seconds is not None
        code, out = kafka.get_wrapped_container().exec_run(["sh", "-c", "ps -eo args | grep [Q]uorumPeerMain"])
        assert code == 0 and "/opt/zookeeper/lib/*" in out.decode()
