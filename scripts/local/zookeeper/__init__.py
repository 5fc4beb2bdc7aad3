"""Start and stop a real Apache ZooKeeper: one standalone node or an ensemble of N nodes on 127.0.0.1.

Which ZooKeeper (``resolve_classpath``), first match wins:

1. ``$ZOOKEEPER_CLASSPATH``, used verbatim as the JVM's ``-cp``.
2. ``$ZOOKEEPER_HOME``: a ZooKeeper binary distribution, ``$ZOOKEEPER_HOME/lib/*``.
3. The pyspark wheel's ``jars`` folder (ZooKeeper 3.9.x, arrives with ``pip install``). Eight jars, picked by
   file-name prefix so a pyspark upgrade keeps working; a missing one is an error naming it (without
   metrics-core the JVM dies at once, without snappy-java the port opens but every session is dropped).
   The folder is located with ``importlib.util.find_spec``; pyspark itself is never imported.
4. Debian's ``zookeeper`` package: ``/usr/share/java/zookeeper.jar`` (its manifest lists its dependencies)
   plus ``slf4j-simple.jar`` so server errors are not swallowed by slf4j's NOP logger.

Readiness is ``srvr`` answering ``Mode: standalone|leader|follower``, never an open port (the port opens
before the server can serve) and never ``ruok`` (it answers ``imok`` on a node without quorum).

Files (standalone, everything in ``data_dir``; ensemble, node N in ``data_dir/node-N``):
``zoo.cfg``, ``log4j2.properties``, ``zookeeper.log`` (the JVM's stdout+stderr; the previous run's is kept
as ``zookeeper.log.1``), ``zookeeper.pid``, ``myid`` (ensemble), ZooKeeper's own ``version-2/``. The
top-level ``data_dir/zkafka-zookeeper.json`` records the layout so ``load``/``stop``/``status`` (and the
``zkafka zookeeper`` command) find the nodes again from another process.

Modules: ``config`` (defaults, ports, ``zoo.cfg``), ``classpath`` (jars and java), ``network`` (``srvr``, free
ports), ``server`` (one process), ``ensemble`` (a quorum), ``data_dir`` (start/stop/status by directory). Their
public names are all importable from this package. ``server_start`` is Kafka's ``zookeeper-server-start`` over a
user's own ``zookeeper.properties`` (its checks and JVM command line: ``properties``).
"""
from __future__ import annotations

from scripts.local.zookeeper.classpath import (DEBIAN_JAVA_DIR, JAR_PREFIXES, find_java, jars_by_prefix,
                                               pyspark_jars_dir, resolve_classpath)
from scripts.local.zookeeper.config import (DEFAULT_DATA_DIR, DEFAULT_PORT, DEFAULT_TICK_TIME, FIRST_PORT, JVM_FLAGS,
                                            MAX_ENSEMBLE, PORT_STRIDE, QUORUM_MAIN, SERVING_MODES, STANDALONE_MAIN,
                                            STATE_FILE, ZooKeeperError, ensemble_ports, log4j2_properties, zoo_cfg)
from scripts.local.zookeeper.data_dir import load, start, status, stop
from scripts.local.zookeeper.ensemble import ZooKeeperEnsemble
from scripts.local.zookeeper.network import find_free_base_port, parse_srvr, srvr
from scripts.local.zookeeper.server import ZooKeeperServer

__all__ = [
    "DEBIAN_JAVA_DIR", "DEFAULT_DATA_DIR", "DEFAULT_PORT", "DEFAULT_TICK_TIME", "FIRST_PORT", "JAR_PREFIXES",
    "JVM_FLAGS", "MAX_ENSEMBLE", "PORT_STRIDE", "QUORUM_MAIN", "SERVING_MODES", "STANDALONE_MAIN", "STATE_FILE",
    "ZooKeeperEnsemble", "ZooKeeperError", "ZooKeeperServer", "ensemble_ports", "find_free_base_port",
    "find_java", "jars_by_prefix", "load", "log4j2_properties", "parse_srvr", "pyspark_jars_dir",
    "resolve_classpath", "srvr", "start", "status", "stop", "zoo_cfg",
]
