"""The pytest plugin (entry point ``pytest11``: loaded in every suite where zkafka is installed).

Fixtures:

* ``zkafka`` (session): a started ``ZkafkaContainer``; ``zkafka.get_bootstrap_server()``.
* ``zkafka_cluster`` (per test: faults change it): a started ``ZkafkaCluster``, 3 brokers and 3 ZooKeeper
  nodes unless configured otherwise.

Configuration: ini options ``zkafka_properties`` (``key=value`` lines: broker properties of ``zkafka``),
``zkafka_cluster_brokers``, ``zkafka_cluster_zookeepers`` (1 or 3), ``zkafka_cluster_properties``; per test,
the marker ``@pytest.mark.zkafka_cluster(brokers=..., zookeepers=..., properties={...})`` wins. Images:
``ZKAFKA_IMAGE`` / ``ZKAFKA_ZOOKEEPER_IMAGE`` or the version's tags (``zkafka images build``).

When a test that used either fixture fails, the containers' logs (notable lines, then the tail) are
attached to its report as a section ``zkafka logs``. Nothing here imports testcontainers until a
fixture is used.
"""
from __future__ import annotations

import pytest

from zkafka.testing.properties import parse_properties


def pytest_addoption(parser) -> None:
    parser.addini("zkafka_properties", "broker properties of the zkafka fixture (key=value lines)", type="linelist",
                  default=[])
    parser.addini("zkafka_cluster_brokers", "brokers of the zkafka_cluster fixture (default 3)", default="3")
    parser.addini("zkafka_cluster_zookeepers", "ZooKeeper nodes of the zkafka_cluster fixture: 1 or 3 (default 3)",
                  default="3")
    parser.addini("zkafka_cluster_properties", "broker properties of the zkafka_cluster fixture (key=value lines)",
                  type="linelist", default=[])


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "zkafka_cluster(brokers=3, zookeepers=3, properties=None): the shape of this test's zkafka_cluster")


def _testing(module: str):
    """``zkafka.testing.<module>``, or an error saying which extra brings testcontainers."""
    import importlib

    try:
        return importlib.import_module(f"zkafka.testing.{module}")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("testcontainers", "docker"):
            raise
        raise pytest.UsageError("the zkafka fixtures need testcontainers: pip install 'zkafka[testing]'") from exc


def _ini_int(config, name: str) -> int:
    value = config.getini(name)
    try:
        return int(value)
    except ValueError:
        raise pytest.UsageError(f"ini option {name} must be an integer, got {value!r}") from None


@pytest.fixture(scope="session")
def zkafka(request):
    """A zkafka broker with its own ZooKeeper in one container, for the whole session."""
    container = _testing("container").ZkafkaContainer(properties=parse_properties(request.config.getini("zkafka_properties")))
    container.start()
    yield container
    container.stop()


@pytest.fixture
def zkafka_cluster(request):
    """A ZooKeeper ensemble and brokers in containers, for one test."""
    config = request.config
    marker = request.node.get_closest_marker("zkafka_cluster")
    shape = {"brokers": _ini_int(config, "zkafka_cluster_brokers"),
             "zookeepers": _ini_int(config, "zkafka_cluster_zookeepers"),
             "properties": parse_properties(config.getini("zkafka_cluster_properties"))}
    if marker is not None:
        unknown = set(marker.kwargs) - set(shape)
        if unknown or marker.args:
            raise pytest.UsageError(f"zkafka_cluster marker: only brokers=, zookeepers=, properties= (got "
                                    f"{sorted(unknown) or list(marker.args)})")
        shape.update(marker.kwargs)
    cluster = _testing("cluster").ZkafkaCluster(**shape)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or report.when == "teardown":
        return
    for name in ("zkafka", "zkafka_cluster"):
        source = getattr(item, "funcargs", {}).get(name)
        if source is not None:
            try:
                report.sections.append((f"zkafka logs ({name})", source.logs()))
            except Exception as exc:  # noqa: BLE001 - the engine is gone: say so, keep the report
                report.sections.append((f"zkafka logs ({name})", f"(could not read the logs: {exc})"))
