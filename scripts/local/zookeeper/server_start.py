"""``zookeeper-server-start [-daemon] config/zookeeper.properties``: Kafka 2.8's script, on the ZooKeeper this
package finds (``classpath``: the pyspark wheel's jars, ``ZOOKEEPER_HOME``, ...; ``java`` from ``JAVA_HOME``/PATH).

In the foreground the process becomes the ZooKeeper JVM (exec: Ctrl-C / SIGTERM stop ZooKeeper itself), logging
to the terminal. With ``-daemon`` the JVM runs detached, its output in ``$LOG_DIR/zookeeper.out`` (``LOG_DIR``
defaults to ``./logs``), and the command returns at once, as Kafka's does. The checks and the JVM's command line
are ``scripts.local.zookeeper.properties``'; a missing or bad file, no java or no ZooKeeper jars is one line on
stderr and exit 1. A file that asks for ``serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory``
(what a ``secureClientPort``, ZooKeeper's TLS, needs) gets Netty's jars from the pyspark wheel too.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from brokers.config import ConfigError, parse_properties
from scripts.local.zookeeper.classpath import NETTY_FACTORY, find_java, netty_classpath, resolve_classpath
from scripts.local.zookeeper.config import ZooKeeperError
from scripts.local.zookeeper.properties import (DAEMON_OUT, LOG4J_FILE, check, java_command, log4j2_console,
                                                parse_argv)


def prepare(argv: list[str], env: dict[str, str]) -> tuple[list[str], bool, Path]:
    """(the JVM's argv, daemon?, LOG_DIR) once the file passed its checks; ZooKeeperError otherwise."""
    args = parse_argv(argv)
    path = Path(args.properties)
    try:
        props = parse_properties(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise ZooKeeperError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ConfigError, UnicodeDecodeError) as exc:
        raise ZooKeeperError(f"{path} is not a properties file: {exc}") from None
    check(props, str(path))
    log_dir = Path(env.get("LOG_DIR") or "logs").resolve()
    classpath = resolve_classpath(env)
    if props.get("serverCnxnFactory", "").strip() == NETTY_FACTORY:  # TLS client ports: Netty on the classpath
        classpath = os.pathsep.join([classpath, *netty_classpath(env)])
    try:
        command = java_command(find_java(env), classpath, path.resolve(), log_dir, env)
    except ValueError as exc:  # an unbalanced quote in a KAFKA_* variable
        raise ZooKeeperError(f"KAFKA_* JVM options: {exc}") from None
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / LOG4J_FILE).write_text(log4j2_console())
    except OSError as exc:
        raise ZooKeeperError(f"LOG_DIR {log_dir}: {exc.strerror or exc}") from None
    return command, args.daemon, log_dir


def main(argv: list[str] | None = None) -> int:
    try:
        command, daemon, log_dir = prepare(sys.argv[1:] if argv is None else argv, dict(os.environ))
    except ZooKeeperError as exc:
        print(f"zookeeper-server-start: {exc}", file=sys.stderr)
        return 1
    if not daemon:
        sys.stdout.flush()
        os.execv(command[0], command)  # becomes ZooKeeper: its signals, its exit code
    with open(log_dir / DAEMON_OUT, "ab") as out:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, close_fds=True)
    return 0
