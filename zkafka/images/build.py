"""``zkafka images build``: the zkafka images from the installed zkafka, online or offline.

1. Wheels on the host: the installed distribution as a source tree (``source_tree``) and its core
   dependencies, ``pip wheel`` into the build context's ``wheels/`` — the image installs with
   ``pip install --no-index``, so the Docker build itself needs no network and no CA.
2. Bases: online, ``python:3.11-slim`` and the official ``zookeeper:3.8`` image (present or pulled); offline,
   ``zkafka-base:bookworm`` for both, made from Debian packages by ``docker/offline-base.sh`` (debootstrap,
   root) when missing. ``auto`` (the default) goes online when both bases are present or a registry answers.
3. ``docker build`` of the ``docker/`` directory twice: the default target as ``zkafka:<version>``, the
   ``zookeeper`` target as ``zkafka-zookeeper:<version>`` (the second build is all cache hits); then a smoke
   run of each.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from zkafka.images import broker_image, zookeeper_image
from zkafka.images.source_tree import write_source_tree

ONLINE_BASE = "python:3.11-slim"
ONLINE_ZOOKEEPER = "zookeeper:3.8"
OFFLINE_BASE = "zkafka-base:bookworm"
MODES = ("auto", "online", "offline")
SMOKE_IMPORTS = "import brokers.app, confluent_kafka, kazoo, kio, zstandard, lz4, snappy, crc32c, msgpack, aiohttp"
SMOKE_TOOLS = "kafka-server-start zkafka zkafka-entrypoint zookeeper-server iptables ip ps nc java setpriv"


class BuildError(RuntimeError):
    """A step of the build failed; the message says which and how to see more."""


@dataclass(frozen=True)
class BuildPlan:
    """What a build makes, from what (pure: ``plan`` decides it, ``build`` carries it out)."""

    mode: str  # online | offline
    base_image: str
    zookeeper_base: str
    broker_tag: str
    zookeeper_tag: str

    def build_commands(self, context: Path) -> list[list[str]]:
        common = ["docker", "build", "--force-rm", "-q", "--build-arg", f"BASE_IMAGE={self.base_image}",
                  "--build-arg", f"ZOOKEEPER_IMAGE={self.zookeeper_base}"]
        return [[*common, "-t", self.broker_tag, str(context)],
                [*common, "--target", "zookeeper", "-t", self.zookeeper_tag, str(context)]]


def plan(mode: str, online_available: bool, base_image: str = ONLINE_BASE, zookeeper_base: str = ONLINE_ZOOKEEPER,
         broker_tag: str | None = None, zookeeper_tag: str | None = None) -> BuildPlan:
    """Resolve ``auto`` (online only when its bases can be had) and name the bases and tags."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "auto":
        mode = "online" if online_available else "offline"
    if mode == "offline":
        base_image = zookeeper_base = OFFLINE_BASE
    return BuildPlan(mode, base_image, zookeeper_base, broker_tag or broker_image(), zookeeper_tag or zookeeper_image())


def log(message: str) -> None:
    print(f"[zkafka images {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def docker(*args: str, check: bool = True, timeout: float | None = None) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        raise BuildError("no docker command on PATH: install Docker first")
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


def have_or_pull(image: str) -> bool:
    if docker("image", "inspect", image, check=False).returncode == 0:
        return True
    log(f"trying to pull {image}")
    try:
        return docker("pull", "-q", image, check=False, timeout=60).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def docker_dir() -> Path:
    return Path(str(files("zkafka.images") / "docker"))


def wheel_problem() -> str | None:
    """Why this interpreter cannot build the image's wheels, or None: they are installed with ``--no-index`` into
    the image's CPython 3.11 on Linux, so compiled dependencies must be built or fetched for exactly that."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11) or not sys.platform.startswith("linux"):
        return (f"the image runs CPython 3.11 on Linux and takes its wheels from this interpreter, which is "
                f"{sys.implementation.name} {sys.version_info[0]}.{sys.version_info[1]} on {sys.platform}: run "
                f"`zkafka images build` from a CPython 3.11 environment on Linux")
    if importlib.util.find_spec("pip") is None:
        return "this environment has no pip (needed for `pip wheel`): python -m ensurepip, or a venv made with pip"
    return None


def make_context(directory: Path) -> Path:
    """The build context: ``docker/``'s files and ``wheels/`` (zkafka and its core dependencies)."""
    problem = wheel_problem()
    if problem is not None:
        raise BuildError(problem)
    context = directory / "context"
    shutil.copytree(docker_dir(), context)
    wheels = context / "wheels"
    source = write_source_tree(directory / "source")
    log(f"building wheels (zkafka and its core dependencies) -> {wheels}")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                             "--wheel-dir", str(wheels), str(source)], capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"pip wheel failed:\n{result.stderr.strip()}")
    names = sorted(p.name for p in wheels.iterdir())
    if not any(n.startswith("zkafka-") for n in names):
        raise BuildError(f"no zkafka wheel in {wheels}")
    if any(n.lower().startswith(("pyspark-", "pyarrow-")) for n in names):
        raise BuildError("pyspark/pyarrow ended up in the wheelhouse (they belong to the spark extra only)")
    log(f"wheels: {len(names)} files")
    return context


def ensure_offline_base(force: bool) -> None:
    args = ["bash", str(docker_dir() / "offline-base.sh"), "--tag", OFFLINE_BASE, *(["--force"] if force else [])]
    if subprocess.run(args).returncode != 0:
        raise BuildError("offline-base.sh failed (it needs root and debootstrap; see its output above)")


def smoke_test(build: BuildPlan) -> None:
    checks = [(build.broker_tag, ["--entrypoint", "python3", build.broker_tag, "-c", SMOKE_IMPORTS]),
              (build.broker_tag, ["--entrypoint", "sh", build.broker_tag, "-c",
                                  f"for t in {SMOKE_TOOLS}; do command -v $t >/dev/null || {{ echo missing $t; exit 1; }}; done"]),
              (build.zookeeper_tag, ["--entrypoint", "zookeeper-server", build.zookeeper_tag, "--classpath"])]
    for tag, args in checks:
        result = docker("run", "--rm", *args, check=False)
        if result.returncode != 0:
            raise BuildError(f"{tag} failed its smoke test ({' '.join(args[3:])}): {(result.stdout + result.stderr).strip()}")


def build(mode: str = "auto", force_base: bool = False, base_image: str = ONLINE_BASE,
          zookeeper_base: str = ONLINE_ZOOKEEPER) -> BuildPlan:
    """Build both images; returns what was built. Raises ``BuildError``."""
    if docker("info", check=False).returncode != 0:
        raise BuildError("no Docker engine answers `docker info`")
    online = mode != "offline" and have_or_pull(base_image) and have_or_pull(zookeeper_base)
    if mode == "online" and not online:
        raise BuildError(f"cannot get {base_image} and {zookeeper_base} (no registry? use --offline)")
    build_plan = plan(mode, online, base_image, zookeeper_base)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zkafka-images-") as tmp:
        context = make_context(Path(tmp))
        if build_plan.mode == "offline":
            ensure_offline_base(force_base)
        log(f"mode: {build_plan.mode} (FROM {build_plan.base_image}, ZooKeeper from {build_plan.zookeeper_base})")
        for command in build_plan.build_commands(context):
            log(" ".join(command[:1] + command[1:2] + command[-3:-1]))
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError(f"{' '.join(command)} failed:\n{result.stderr.strip()[-4000:]}")
    smoke_test(build_plan)
    docker("image", "prune", "-f", "--filter", "dangling=true", "--filter", "label=org.zkafka.image=true", check=False)
    log(f"built {build_plan.broker_tag} and {build_plan.zookeeper_tag} in {time.monotonic() - started:.0f} s")
    return build_plan
