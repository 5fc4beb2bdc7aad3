"""The image build's pure halves: the source tree's pyproject, the build plan, and the Dockerfile's
structure (this machine has no registry, so the online path's Dockerfile logic is checked here and built
with stand-in images by tests/containers/test_images.py)."""
from __future__ import annotations

import re
import tomllib
from importlib.metadata import distribution
from pathlib import Path

import pytest

from zkafka import __version__
from zkafka.images import BUILD_COMMAND, ImageNotFound, broker_image, zookeeper_image
from zkafka.images.build import OFFLINE_BASE, ONLINE_BASE, ONLINE_ZOOKEEPER, docker_dir, plan
from zkafka.images.source_tree import PACKAGES, core_requirements, package_data, pyproject, write_source_tree

ROOT = Path(__file__).resolve().parents[3]


def test_image_names_carry_the_package_version(monkeypatch):
    monkeypatch.delenv("ZKAFKA_IMAGE", raising=False)
    monkeypatch.delenv("ZKAFKA_ZOOKEEPER_IMAGE", raising=False)
    assert (broker_image(), zookeeper_image()) == (f"zkafka:{__version__}", f"zkafka-zookeeper:{__version__}")
    monkeypatch.setenv("ZKAFKA_IMAGE", "registry.example/zkafka:dev")
    assert broker_image() == "registry.example/zkafka:dev"


def test_image_not_found_names_the_build_command():
    assert BUILD_COMMAND in str(ImageNotFound("zkafka:9.9"))
    assert "'zkafka:9.9'" in str(ImageNotFound("zkafka:9.9"))


def test_plan_resolves_auto_by_what_can_be_had_and_offline_uses_the_debian_base():
    online = plan("auto", True)
    assert (online.mode, online.base_image, online.zookeeper_base) == ("online", ONLINE_BASE, ONLINE_ZOOKEEPER)
    offline = plan("auto", False)
    assert (offline.mode, offline.base_image, offline.zookeeper_base) == ("offline", OFFLINE_BASE, OFFLINE_BASE)
    assert plan("offline", True).base_image == OFFLINE_BASE
    with pytest.raises(ValueError, match="mode must be one of"):
        plan("sideways", True)


def test_build_commands_make_both_tags_from_one_context_the_zookeeper_one_by_its_target():
    commands = plan("online", True, broker_tag="b:1", zookeeper_tag="z:1").build_commands(Path("/ctx"))
    broker, zookeeper = commands
    assert broker[-3:] == ["-t", "b:1", "/ctx"] and "--target" not in broker
    assert zookeeper[zookeeper.index("--target") + 1] == "zookeeper" and zookeeper[-3:] == ["-t", "z:1", "/ctx"]
    for command in commands:
        assert f"BASE_IMAGE={ONLINE_BASE}" in command and f"ZOOKEEPER_IMAGE={ONLINE_ZOOKEEPER}" in command


def dockerfile() -> str:
    return (docker_dir() / "Dockerfile").read_text()


def test_the_dockerfile_stages_args_and_copies_are_consistent():
    text = dockerfile()
    lines = [line.strip() for line in text.replace("\\\n", " ").splitlines() if line.strip() and not line.startswith("#")]
    global_args = {m.group(1) for line in lines[:lines.index(next(l for l in lines if l.startswith("FROM")))]
                   for m in [re.match(r"ARG (\w+)=", line)] if m}
    assert global_args == {"BASE_IMAGE", "ZOOKEEPER_IMAGE"}
    stages: list[str] = []
    for line in lines:
        if line.startswith("FROM "):
            source = line.split()[1]
            var = re.fullmatch(r"\$\{(\w+)\}", source)
            assert (var and var.group(1) in global_args) or source in stages, f"FROM {source}: no such ARG or stage"
            stages.append(line.split(" AS ")[1] if " AS " in line else "")
        if line.startswith("COPY --from="):
            assert line.split()[1].removeprefix("--from=") in stages, line
        elif line.startswith("COPY "):
            source = line.split()[1]
            assert (docker_dir() / source).exists() or source == "wheels", f"{line}: not in the build context"
    assert stages[-1] == "" and "zookeeper" in stages and "broker" in stages
    assert 'CMD ["zookeeper-server"]' in text


def test_the_online_path_copies_the_official_layout_and_the_offline_path_copies_nothing():
    """The zookeeper-dist stage finds the official image's distribution by its directory (its DISTRO_NAME is a
    build ARG: a later FROM does not see it), its logback.xml and JAVA_HOME; the entrypoint's classpath prefers
    what it copied (/opt/zookeeper/lib) and falls back to Debian's package."""
    text = dockerfile()
    assert "ls -d /apache-zookeeper-*-bin" in text and "${DISTRO_NAME" not in text
    assert "/conf/logback.xml" in text and '"${JAVA_HOME}" /export/java' in text
    assert "COPY --from=zookeeper-dist /export/ /opt/" in text
    server = (docker_dir() / "zookeeper-server.sh").read_text()
    assert server.index("/opt/zookeeper/lib") < server.index("/usr/share/java/zookeeper.jar")
    assert "/opt/java/bin" in text.split("ENV PATH=", 1)[1].split()[0]


def test_the_source_tree_pyproject_declares_what_the_installed_distribution_has(tmp_path):
    dist = distribution("zkafka")
    tree = write_source_tree(tmp_path / "src", dist)
    project = tomllib.loads((tree / "pyproject.toml").read_text())
    assert project["project"]["name"] == "zkafka" and project["project"]["version"] == __version__
    assert project["project"]["dependencies"] == core_requirements(dist)
    assert not any("pyspark" in r or "extra" in r for r in project["project"]["dependencies"])
    assert project["project"]["scripts"]["zkafka"] == "scripts.cli:main"
    assert project["project"]["entry-points"]["pytest11"] == {"zkafka": "zkafka.testing.plugin"}
    assert "docker/Dockerfile" in project["tool"]["setuptools"]["package-data"]["zkafka.images"]
    assert any(f.startswith("static/") for f in project["tool"]["setuptools"]["package-data"]["brokers.http"])
    assert not list(tree.rglob("__pycache__"))


def test_the_tree_names_the_packages_pyproject_installs():
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == [f"{p}*" for p in PACKAGES]


def test_package_data_lists_non_python_files_and_plain_subdirectories(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "data").mkdir()
    for f in ("__init__.py", "mod.py", "table.json", "sub/__init__.py", "sub/x.sh", "data/a.txt"):
        (pkg / f).write_text("")
    assert package_data(tmp_path) == {"pkg": ["table.json", "data/a.txt"], "pkg.sub": ["x.sh"]}


def test_pyproject_quotes_what_toml_needs(tmp_path):
    class Dist:
        metadata = {"Name": "zkafka", "Version": "1.0", "Requires-Python": ">=3.11"}
        requires = ['uvloop<1; sys_platform != "win32"', 'pyspark>=4; extra == "spark"']
        entry_points = []
    project = tomllib.loads(pyproject(Dist(), {"a.b": ['x "y".txt']}))
    assert project["project"]["dependencies"] == ['uvloop<1; sys_platform != "win32"']
    assert project["tool"]["setuptools"]["package-data"] == {"a.b": ['x "y".txt']}
