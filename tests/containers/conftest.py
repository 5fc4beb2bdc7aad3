"""The container tier: real Docker containers from our images (``zkafka images build``), through the public
API (``zkafka.testing``: ``ZkafkaCluster``, and the plugin's fixtures).

In CI (``CI=true``) a missing engine or image is a failure: ``make test`` starts the engine and builds the
images first. Elsewhere the tier is skipped with a message that says how to enable it.
"""
from __future__ import annotations

import os

import pytest

from zkafka.testing.local_engine import use_local_engine

use_local_engine()  # this kind of machine (platform-notes §3.1): no registry for Ryuk, the local socket

from zkafka.images import broker_image, docker_problem, zookeeper_image  # noqa: E402
from zkafka.testing import ZkafkaCluster  # noqa: E402

HOW_TO_ENABLE = ("run compose/ensure-docker.sh (Docker engine) and zkafka images build --offline "
                 f"(images {broker_image()} and {zookeeper_image()}), as make test does")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def require(problem: str | None) -> None:
    """The one gate of the container tier. Under CI=true (as `.ci/run` and `make test` in CI run it) a
    missing engine, image or compose FAILS the test; only on a developer machine that cannot run Docker
    (no root, no apt: `make test` then warns) does it skip, saying how to enable it."""
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"container tests must run in CI, but {problem}; {HOW_TO_ENABLE}")
    pytest.skip(f"{problem}: {HOW_TO_ENABLE}")


@pytest.fixture(scope="session", autouse=True)
def docker_ready():
    """Every test of the tier, the ones written as a user would (no fixture of ours named) included."""
    problem = docker_problem()
    require(f"Docker is not ready ({problem})" if problem is not None else None)


@pytest.fixture
def make_container_cluster(docker_ready, request):
    made: list[ZkafkaCluster] = []

    def make(**settings) -> ZkafkaCluster:
        cluster = ZkafkaCluster(**settings)
        made.append(cluster)
        return cluster.start()

    yield make
    failed = getattr(request.node, "report_call", None) is None or request.node.report_call.failed
    for cluster in made:
        if failed:
            print(f"\n===== container logs ({cluster.name}) =====\n{cluster.logs()}")
        cluster.stop()
