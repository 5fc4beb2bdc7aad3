"""Which ZooKeeper and which java: the server's JVM classpath (``resolve_classpath``, in the package docstring's
order) and the ``java`` binary (``find_java``)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from scripts.local.zookeeper.config import ZooKeeperError

DEBIAN_JAVA_DIR = Path("/usr/share/java")

# The minimal server classpath, as (what, file-name prefix). A jar matches when its
# name is the prefix followed by a version digit, e.g. "zookeeper-" + "3.9.5.jar" but not "zookeeper-jute-".
JAR_PREFIXES: tuple[tuple[str, str], ...] = (
    ("zookeeper", "zookeeper-3"),
    ("zookeeper-jute", "zookeeper-jute-"),
    ("slf4j-api", "slf4j-api-"),
    ("log4j-slf4j2-impl", "log4j-slf4j2-impl-"),
    ("log4j-api", "log4j-api-"),
    ("log4j-core", "log4j-core-"),
    ("metrics-core", "metrics-core-"),
    ("snappy-java", "snappy-java-"),
)
_NOT_A_RUNTIME_JAR = ("-sources.jar", "-javadoc.jar", "-tests.jar")


def pyspark_jars_dir() -> Path | None:
    """The pyspark wheel's ``jars`` folder, found without importing pyspark, or None."""
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        jars = Path(location) / "jars"
        if jars.is_dir():
            return jars
    return None


def _version_key(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.\-]", name))


def jars_by_prefix(folder: Path, prefixes: tuple[tuple[str, str], ...] = JAR_PREFIXES) -> list[Path]:
    """One jar per prefix from ``folder`` (the highest version if several), in ``prefixes`` order.

    Raises ZooKeeperError naming every missing jar.
    """
    folder = Path(folder)
    names = sorted(p.name for p in folder.glob("*.jar")) if folder.is_dir() else []
    chosen: list[Path] = []
    missing: list[str] = []
    for what, prefix in prefixes:
        stem = len(prefix.rstrip("0123456789"))  # where the version starts
        candidates = [n for n in names if n.startswith(prefix) and not n.endswith(_NOT_A_RUNTIME_JAR)
                      and n[stem:stem + 1].isdigit()]
        if not candidates:
            missing.append(f"{what} ({prefix}*.jar)")
            continue
        chosen.append(folder / max(candidates, key=lambda n: _version_key(n[stem:])))
    if missing:
        raise ZooKeeperError(f"ZooKeeper classpath incomplete: {', '.join(missing)} not found in {folder}; "
                             "reinstall the wheel (pip install --force-reinstall pyspark) or set ZOOKEEPER_CLASSPATH")
    return chosen


def resolve_classpath(env: Mapping[str, str] | None = None, *, pyspark_jars: Path | None | bool = True,
                      debian_java_dir: Path = DEBIAN_JAVA_DIR) -> str:
    """The JVM classpath for a ZooKeeper server (see the module docstring for the order).

    ``pyspark_jars``: True looks the wheel up, a Path uses that folder, None/False skips it (tests).
    """
    env = os.environ if env is None else env
    override = env.get("ZOOKEEPER_CLASSPATH", "").strip()
    if override:
        return override
    home = env.get("ZOOKEEPER_HOME", "").strip()
    if home:
        lib = Path(home) / "lib"
        if not any(lib.glob("zookeeper-3*.jar")):
            raise ZooKeeperError(f"ZOOKEEPER_HOME={home}: no zookeeper-3*.jar in {lib}")
        return f"{lib}/*"
    jars_dir = pyspark_jars_dir() if pyspark_jars is True else (pyspark_jars or None)
    if jars_dir is not None and Path(jars_dir).is_dir():
        return os.pathsep.join(str(p) for p in jars_by_prefix(Path(jars_dir)))
    debian = Path(debian_java_dir) / "zookeeper.jar"
    if debian.is_file():
        parts = [debian]
        if (Path(debian_java_dir) / "slf4j-simple.jar").is_file():
            parts.append(Path(debian_java_dir) / "slf4j-simple.jar")
        return os.pathsep.join(str(p) for p in parts)
    raise ZooKeeperError("no ZooKeeper jars found: pip install pyspark (its wheel ships ZooKeeper's jars), "
                         "or apt-get install zookeeper, or set ZOOKEEPER_CLASSPATH to a server classpath")


def find_java(env: Mapping[str, str] | None = None) -> str:
    """``$JAVA_HOME/bin/java`` if set and present, else ``java`` on PATH; ZooKeeperError if neither."""
    env = os.environ if env is None else env
    java_home = env.get("JAVA_HOME", "").strip()
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java", path=env.get("PATH", os.defpath))
    if not found:
        raise ZooKeeperError("java not found on PATH: install a JRE (apt-get install default-jre-headless) "
                             "or set JAVA_HOME")
    return found



NETTY_FACTORY = "org.apache.zookeeper.server.NettyServerCnxnFactory"
_NATIVE_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch_64", "arm64": "aarch_64", "riscv64": "riscv64"}


def netty_jars(folder: Path, machine: str | None = None) -> list[Path]:
    """Netty's jars in the pyspark wheel's folder, which ZooKeeper's ``NettyServerCnxnFactory`` needs (TLS client
    ports: ``secureClientPort``): every ``netty-*.jar`` but the native ones built for other platforms and
    BoringSSL's (the JDK's own TLS serves)."""
    import platform

    arch = _NATIVE_ARCH.get((machine or platform.machine()).lower(), "")
    native = re.compile(r"-(linux|osx|windows)-[\w]+\.jar$")
    chosen = []
    for jar in sorted(Path(folder).glob("netty-*.jar")):
        if "tcnative-boringssl" in jar.name or jar.name.endswith(_NOT_A_RUNTIME_JAR):
            continue
        if native.search(jar.name) and not jar.name.endswith(f"-linux-{arch}.jar"):
            continue
        chosen.append(jar)
    return chosen


def netty_classpath(env: Mapping[str, str] | None = None) -> list[str]:
    """The jars to add to ``resolve_classpath`` for a Netty server: Netty's from the pyspark wheel when that is
    where ZooKeeper comes from (``ZOOKEEPER_CLASSPATH`` is taken as it is; a ``ZOOKEEPER_HOME`` distribution's
    ``lib`` has Netty already)."""
    env = os.environ if env is None else env
    if env.get("ZOOKEEPER_CLASSPATH", "").strip() or env.get("ZOOKEEPER_HOME", "").strip():
        return []
    folder = pyspark_jars_dir()
    return [str(jar) for jar in netty_jars(folder)] if folder is not None else []
