"""zookeeper-server-start's pure side: its command line, the checks a Kafka-style ``zookeeper.properties``
must pass before a JVM is started for it, and that JVM's command line.

The file is ZooKeeper's own configuration (``QuorumPeerConfig``), handed to ``QuorumPeerMain`` as it is, as
Kafka's script does: Kafka's ``config/zookeeper.properties`` is ``dataDir=/tmp/zookeeper``, ``clientPort=2181``,
``maxClientCnxns=0``, ``admin.enableServer=false``; ``tickTime``, ``initLimit``, ``syncLimit``, ``server.N=...``
(an ensemble), ``4lw.commands.whitelist`` and the rest mean what ZooKeeper says. Checked here, so that a bad file
is one line and exit 1 rather than a JVM stack trace: the file is readable ``.properties``, ``dataDir`` is set, a
client port (``clientPort`` or ``secureClientPort``) is set, and every numeric setting is a number in range.

The JVM: ``KAFKA_HEAP_OPTS`` (else zkafka's small heap, ``config.JVM_FLAGS``), ``KAFKA_JVM_PERFORMANCE_OPTS``,
``KAFKA_OPTS`` (e.g. ``-Djava.security.auth.login.config=`` for ZooKeeper's own SASL), log4j2 to the console
(``LOG_DIR``'s ``zookeeper-log4j2.properties``; ``KAFKA_LOG4J_OPTS`` replaces it), the admin server off unless the
file turns it on (its jars are not on the classpath), then ``QuorumPeerMain <file>``.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scripts.local.zookeeper.config import JVM_FLAGS, QUORUM_MAIN, ZooKeeperError

USAGE = "USAGE: zookeeper-server-start [-daemon] zookeeper.properties"
PORT_KEYS = ("clientPort", "secureClientPort")
NUMBER_KEYS = ("tickTime", "initLimit", "syncLimit", "maxClientCnxns", "minSessionTimeout", "maxSessionTimeout",
               "globalOutstandingLimit", "preAllocSize", "snapCount", "autopurge.snapRetainCount",
               "autopurge.purgeInterval")
LOG4J_FILE = "zookeeper-log4j2.properties"
DAEMON_OUT = "zookeeper.out"


@dataclass(frozen=True)
class StartArgs:
    properties: str
    daemon: bool = False


def parse_argv(argv: list[str]) -> StartArgs:
    """``[-daemon] zookeeper.properties``; ZooKeeperError(USAGE) for anything else."""
    daemon = bool(argv) and argv[0] == "-daemon"
    rest = argv[1:] if daemon else argv
    if len(rest) != 1 or rest[0].startswith("-"):
        raise ZooKeeperError(USAGE)
    return StartArgs(rest[0], daemon)


def check(props: Mapping[str, str], source: str) -> None:
    """ZooKeeperError naming the key when ``props`` cannot start a server."""
    if not props.get("dataDir", "").strip():
        raise ZooKeeperError(f"{source}: dataDir is not set (where ZooKeeper keeps its snapshots, "
                             "e.g. dataDir=/tmp/zookeeper)")
    if not any(props.get(key, "").strip() for key in PORT_KEYS):
        raise ZooKeeperError(f"{source}: clientPort is not set (e.g. clientPort=2181)")
    for key in PORT_KEYS:
        value = props.get(key, "").strip()
        if value and not (value.isdigit() and 0 < int(value) < 65536):
            raise ZooKeeperError(f"{source}: {key}={value} is not a port (1-65535)")
    for key in NUMBER_KEYS:
        value = props.get(key, "").strip()
        if value and not value.lstrip("-").isdigit():
            raise ZooKeeperError(f"{source}: {key}={value} is not a number")
    if props.get("tickTime", "").strip() and int(props["tickTime"]) <= 0:
        raise ZooKeeperError(f"{source}: tickTime={props['tickTime'].strip()} must be positive")


def log4j2_console(level: str = "INFO") -> str:
    """Everything to the JVM's stdout (the terminal, or ``zookeeper.out`` with -daemon), Kafka's pattern."""
    return ("status = warn\nappender.console.type = Console\nappender.console.name = STDOUT\n"
            "appender.console.target = SYSTEM_OUT\nappender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = [%d] %p %m (%c)%n\n"
            f"rootLogger.level = {level}\nrootLogger.appenderRef.console.ref = STDOUT\n")


def java_command(java: str, classpath: str, properties: Path, log_dir: Path, env: Mapping[str, str]) -> list[str]:
    """The JVM's argv for ``properties`` (absolute), with the environment's KAFKA_* options."""
    heap = shlex.split(env.get("KAFKA_HEAP_OPTS", ""))
    flags = [f for f in JVM_FLAGS if not (heap and f.startswith(("-Xmx", "-Xms")))]
    log4j = shlex.split(env.get("KAFKA_LOG4J_OPTS", "")) or [f"-Dlog4j2.configurationFile={log_dir / LOG4J_FILE}"]
    return [java, *heap, *flags, *shlex.split(env.get("KAFKA_JVM_PERFORMANCE_OPTS", "")), *log4j,
            "-Dzookeeper.admin.enableServer=false", *shlex.split(env.get("KAFKA_OPTS", "")),
            "-cp", classpath, QUORUM_MAIN, str(properties)]
