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

Ensemble ports, from the base client port P, node N = 1..size (``ensemble_ports``)::

    client   P + (N-1)          e.g. 2181, 2182, 2183
    quorum   P + 10 + (N-1)     e.g. 2191, 2192, 2193   (followers <-> leader)
    election P + 20 + (N-1)     e.g. 2201, 2202, 2203   (leader election)

so an ensemble of up to 10 nodes owns the block P .. P+29 and nothing outside it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_DATA_DIR", "DEFAULT_PORT", "DEFAULT_TICK_TIME", "JAR_PREFIXES", "MAX_ENSEMBLE", "PORT_STRIDE",
    "QUORUM_MAIN", "STANDALONE_MAIN", "STATE_FILE",
    "ZooKeeperEnsemble", "ZooKeeperError", "ZooKeeperServer", "ensemble_ports", "find_free_base_port",
    "find_java", "jars_by_prefix", "load", "log4j2_properties", "parse_srvr", "pyspark_jars_dir",
    "resolve_classpath", "srvr", "start", "status", "stop", "zoo_cfg",
]

DEFAULT_PORT = 2181
DEFAULT_DATA_DIR = Path(".zkafka/zookeeper")
DEFAULT_TICK_TIME = 2000
PORT_STRIDE = 10
FIRST_PORT = 10000  # free ports for tests and benchmarks are drawn from here up to the ephemeral range
MAX_ENSEMBLE = PORT_STRIDE
STATE_FILE = "zkafka-zookeeper.json"
SERVING_MODES = frozenset({"standalone", "leader", "follower"})
JVM_FLAGS = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEBIAN_JAVA_DIR = Path("/usr/share/java")

# The minimal server classpath (platform-notes §1.1), as (what, file-name prefix). A jar matches when its
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


class ZooKeeperError(RuntimeError):
    """ZooKeeper could not be found, started, or reached. The message says what to do about it."""


# --------------------------------------------------------------------------------------- classpath, java

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


# --------------------------------------------------------------------------------------- config files

def zoo_cfg(data_dir: Path, client_port: int, *, tick_time: int = DEFAULT_TICK_TIME,
            servers: Mapping[int, tuple[int, int]] | None = None, init_limit: int = 10, sync_limit: int = 5,
            max_session_timeout: int | None = None) -> str:
    """zoo.cfg text. ``servers`` maps myid -> (quorum port, election port) for an ensemble on 127.0.0.1.

    maxSessionTimeout defaults to max(60 s, 20 ticks), so Kafka-style 18 s sessions work with tickTime 500.
    (The format has no inline comments: a '#' after a value becomes part of it.)
    """
    if tick_time <= 0:
        raise ValueError(f"tick_time must be positive, got {tick_time}")
    max_session = max_session_timeout if max_session_timeout is not None else max(60_000, 20 * tick_time)
    lines = [
        "# generated by zkafka (scripts/local/zookeeper.py); rewritten on every start",
        f"tickTime={tick_time}",
        f"dataDir={Path(data_dir).resolve()}",
        f"clientPort={client_port}",
        "clientPortAddress=127.0.0.1",
        f"maxSessionTimeout={max_session}",
        "admin.enableServer=false",
        "4lw.commands.whitelist=srvr,mntr,stat,ruok",
        "maxClientCnxns=0",
    ]
    if servers:
        lines += [f"initLimit={init_limit}", f"syncLimit={sync_limit}", "quorumListenOnAllIPs=false"]
        lines += [f"server.{myid}=127.0.0.1:{quorum}:{election}" for myid, (quorum, election) in sorted(servers.items())]
    return "\n".join(lines) + "\n"


def log4j2_properties(level: str = "INFO") -> str:
    """log4j2 config: everything to the console (the JVM's stdout, i.e. zookeeper.log)."""
    return (
        "status = warn\n"
        "appender.console.type = Console\n"
        "appender.console.name = CONSOLE\n"
        "appender.console.target = SYSTEM_OUT\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1} - %m%n\n"
        f"rootLogger.level = {level}\n"
        "rootLogger.appenderRef.console.ref = CONSOLE\n"
    )


def ensemble_ports(base_port: int, size: int) -> list[tuple[int, int, int]]:
    """[(client, quorum, election)] for myid 1..size; see the module docstring for the scheme."""
    if not 1 <= size <= MAX_ENSEMBLE:
        raise ValueError(f"ensemble size must be between 1 and {MAX_ENSEMBLE}, got {size}")
    top = base_port + 2 * PORT_STRIDE + size - 1 if size > 1 else base_port
    if not 1 <= base_port <= 65535:
        raise ValueError(f"port must be between 1 and 65535, got {base_port}")
    if top > 65535:
        raise ValueError(f"port {base_port} leaves no room for a {size}-node ensemble (needs {base_port}..{top})")
    return [(base_port + i, base_port + PORT_STRIDE + i, base_port + 2 * PORT_STRIDE + i) for i in range(size)]


# --------------------------------------------------------------------------------------- srvr

def parse_srvr(text: str) -> dict:
    """The ``srvr`` four-letter-word response as a dict with snake_case keys.

    ``{"serving": True, "mode": "leader", "zxid": "0x100000002", "zookeeper_version": "3.9.5-...", ...}``;
    a node without quorum answers "This ZooKeeper instance is not currently serving requests", giving
    ``{"serving": False, "mode": None, "message": ...}``.
    """
    result: dict = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            result[re.sub(r"\s+", "_", key.strip().lower())] = value.strip()
    mode = result.get("mode")
    result["mode"] = mode
    result["serving"] = mode in SERVING_MODES
    if not result["serving"]:
        result["message"] = text.strip()
    for key in ("received", "sent", "connections", "outstanding", "node_count"):
        if key in result and result[key].isdigit():
            result[key] = int(result[key])
    return result


def srvr(host: str, port: int, timeout: float = 2.0) -> dict:
    """Send ``srvr`` and parse the answer. Raises OSError if nothing answers (refused, reset, timeout)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"srvr")
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace")
    if not text:
        raise ConnectionResetError(f"{host}:{port} closed the connection without answering srvr")
    return parse_srvr(text)


def _try_srvr(port: int, timeout: float = 1.0) -> dict | None:
    try:
        return srvr("127.0.0.1", port, timeout)
    except OSError:
        return None


def find_free_base_port(size: int = 1, attempts: int = 200) -> int:
    """A client port P such that every port ``ensemble_ports(P, size)`` uses is free now. P is drawn below
    the kernel's ephemeral range: a port found free inside it (binding port 0) can be taken by any outgoing
    connection before the server that was meant to get it binds (seen in CI: a broker's ``address already
    in use`` seconds after its port was chosen)."""
    low, high = FIRST_PORT, _ephemeral_low() - 1
    for _ in range(attempts):
        base = random.randint(low, high)
        try:
            wanted = [p for ports in ensemble_ports(base, size) for p in ports]
        except ValueError:
            continue
        if max(wanted) <= high and all(_port_free(p) for p in set(wanted)):
            return base
    raise ZooKeeperError(f"no free block of ports for a {size}-node ensemble after {attempts} attempts")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# --------------------------------------------------------------------------------------- processes

def _pid_state(pid: int) -> str | None:
    """The /proc state letter, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return "?"
    return stat.rpartition(")")[2].split()[0]


def _pid_is(pid: int, marker: str) -> bool:
    """True if ``pid`` is a live (not zombie) process whose command line contains ``marker``."""
    if not Path("/proc").is_dir():  # not Linux: best effort
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state = _pid_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return marker in cmdline


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@dataclass(frozen=True)
class _Peers:
    myid: int
    servers: dict[int, tuple[int, int]]  # myid -> (quorum port, election port)


class ZooKeeperServer:
    """One ZooKeeper server process: standalone, or one member of a ``ZooKeeperEnsemble``.

    ``with ZooKeeperServer(dir, port, tick_time=500) as zk: ...`` starts (waits for ``srvr``) and stops.
    A server object can also be made for a process another Python process started (``load``): it finds
    the process through the pid file, checking the pid still runs our zoo.cfg.
    """

    def __init__(self, data_dir: Path | str, port: int = DEFAULT_PORT, *, tick_time: int = DEFAULT_TICK_TIME,
                 classpath: str | None = None, java: str | None = None, peers: _Peers | None = None,
                 host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.tick_time = tick_time
        self.host = host
        self._classpath = classpath
        self._java = java
        self._peers = peers
        self._proc: subprocess.Popen | None = None

    # paths
    cfg_path = property(lambda self: self.data_dir / "zoo.cfg")
    log_path = property(lambda self: self.data_dir / "zookeeper.log")
    pid_path = property(lambda self: self.data_dir / "zookeeper.pid")
    log4j_path = property(lambda self: self.data_dir / "log4j2.properties")

    @property
    def myid(self) -> int | None:
        return self._peers.myid if self._peers else None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        if self._proc is not None:
            return self._proc.pid
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    def __repr__(self) -> str:
        who = f"myid={self.myid} " if self.myid else ""
        return f"ZooKeeperServer({who}{self.connect_string}, {self.data_dir})"

    # lifecycle
    def write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        servers = self._peers.servers if self._peers else None
        self.cfg_path.write_text(zoo_cfg(self.data_dir, self.port, tick_time=self.tick_time, servers=servers))
        self.log4j_path.write_text(log4j2_properties())
        if self._peers:
            (self.data_dir / "myid").write_text(f"{self._peers.myid}\n")

    def command(self) -> list[str]:
        java = self._java or find_java()
        classpath = self._classpath or resolve_classpath()
        main = QUORUM_MAIN if self._peers else STANDALONE_MAIN
        return [java, *JVM_FLAGS, f"-Dlog4j2.configurationFile={self.log4j_path}",
                "-Dzookeeper.admin.enableServer=false", "-cp", classpath, main, str(self.cfg_path)]

    def spawn(self) -> None:
        """Write the config and start the JVM in the background (its own session); don't wait."""
        if self.is_running():
            raise ZooKeeperError(f"ZooKeeper already running in {self.data_dir} (pid {self.pid})")
        cmd = self.command()  # resolve java and jars before touching anything
        self.write_config()
        if self.log_path.exists():
            self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          cwd=self.data_dir, start_new_session=True, close_fds=True)
        self.pid_path.write_text(f"{self._proc.pid}\n")

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Spawn, then wait until ``srvr`` reports a serving mode; on failure stop it and raise with the log."""
        self.spawn()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 30.0, modes: frozenset[str] = SERVING_MODES) -> dict:
        deadline = time.monotonic() + timeout
        last: dict | None = None
        while True:
            if not self.is_running():
                raise ZooKeeperError(f"{self!r} exited during start-up (code {self.returncode}); "
                                     f"last lines of {self.log_path}:\n{_tail(self.log_path)}")
            last = _try_srvr(self.port, timeout=1.0)
            if last and last["mode"] in modes:
                return last
            if time.monotonic() >= deadline:
                seen = f"srvr said {last.get('mode') or last.get('message')!r}" if last else "srvr got no answer"
                raise ZooKeeperError(f"{self!r} not ready after {timeout:.0f} s ({seen}); "
                                     f"last lines of {self.log_path}:\n{_tail(self.log_path)}")
            time.sleep(0.05)

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def is_running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        pid = self.pid
        return pid is not None and _pid_is(pid, str(self.cfg_path))

    def srvr(self, timeout: float = 2.0) -> dict:
        return srvr("127.0.0.1", self.port, timeout)

    def kill(self) -> None:
        """SIGKILL, no grace (fault injection), and wait until the process is gone."""
        self._signal_and_wait(signal.SIGKILL, 10.0)
        self.pid_path.unlink(missing_ok=True)

    def stop(self, grace: float = 10.0) -> bool:
        """SIGTERM, SIGKILL after ``grace`` seconds; returns whether a process was running."""
        was_running = self.is_running()
        if was_running and not self._signal_and_wait(signal.SIGTERM, grace):
            self._signal_and_wait(signal.SIGKILL, 10.0)
        if self.is_running():
            raise ZooKeeperError(f"{self!r} (pid {self.pid}) survived SIGKILL")
        self.pid_path.unlink(missing_ok=True)
        return was_running

    def signal(self, sig: signal.Signals) -> bool:
        """Send ``sig`` if the process runs; returns whether it did."""
        pid = self.pid
        if pid is None or not self.is_running():
            return False
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def _signal_and_wait(self, sig: signal.Signals, timeout: float) -> bool:
        """Send ``sig`` if running; True once the process is gone, False if it outlived ``timeout``."""
        if not self.signal(sig):
            return not self.is_running()
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def status(self) -> dict:
        info = {"myid": self.myid, "port": self.port, "connect_string": self.connect_string, "pid": self.pid,
                "running": self.is_running(), "data_dir": str(self.data_dir), "log": str(self.log_path)}
        answer = _try_srvr(self.port) if info["running"] else None
        info["mode"] = answer["mode"] if answer else None
        info["serving"] = bool(answer and answer["serving"])
        info["zxid"] = answer.get("zxid") if answer else None
        if not info["running"]:
            info["pid"] = None
        return info

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ZooKeeperEnsemble:
    """``size`` ZooKeeper servers on 127.0.0.1 forming one quorum; node N lives in ``data_dir/node-N``.

    Ready when every node's ``srvr`` says leader or follower (exactly one leader).
    """

    def __init__(self, data_dir: Path | str, base_port: int = DEFAULT_PORT, size: int = 3, *,
                 tick_time: int = DEFAULT_TICK_TIME, classpath: str | None = None, java: str | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.base_port = base_port
        self.size = size
        self.tick_time = tick_time
        ports = ensemble_ports(base_port, size)
        servers = {i + 1: (quorum, election) for i, (_, quorum, election) in enumerate(ports)}
        self.nodes = [ZooKeeperServer(self.data_dir / f"node-{i + 1}", client, tick_time=tick_time,
                                      classpath=classpath, java=java, peers=_Peers(i + 1, servers))
                      for i, (client, _, _) in enumerate(ports)]

    @property
    def connect_string(self) -> str:
        return ",".join(n.connect_string for n in self.nodes)

    def __repr__(self) -> str:
        return f"ZooKeeperEnsemble({self.connect_string}, {self.data_dir})"

    def start(self, timeout: float = 60.0) -> ZooKeeperEnsemble:
        classpath, java = None, None
        try:
            for node in self.nodes:
                if classpath is None:  # resolve once, hand the same to every node
                    classpath, java = node._classpath or resolve_classpath(), node._java or find_java()
                node._classpath, node._java = classpath, java
                node.spawn()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0, nodes: list[ZooKeeperServer] | None = None) -> dict[int, str]:
        """Wait until every node in ``nodes`` (default all) is leader or follower, with exactly one leader.

        Returns {myid: mode}. A node that exits, or the deadline, raises with the log tails.
        """
        nodes = self.nodes if nodes is None else nodes
        deadline = time.monotonic() + timeout
        while True:
            dead = [n for n in nodes if not n.is_running()]
            if dead:
                raise ZooKeeperError(f"{dead[0]!r} exited during start-up; last lines of {dead[0].log_path}:\n"
                                     f"{_tail(dead[0].log_path)}")
            modes = {n.myid: (_try_srvr(n.port) or {}).get("mode") for n in nodes}
            values = list(modes.values())
            if all(m in ("leader", "follower") for m in values) and values.count("leader") == 1:
                return modes
            if time.monotonic() >= deadline:
                tails = "\n".join(f"--- {n.log_path}\n{_tail(n.log_path, 15)}" for n in nodes)
                raise ZooKeeperError(f"{self!r}: no quorum after {timeout:.0f} s (modes {modes}); logs:\n{tails}")
            time.sleep(0.05)

    def leader(self) -> ZooKeeperServer | None:
        for node in self.nodes:
            if node.is_running() and (_try_srvr(node.port) or {}).get("mode") == "leader":
                return node
        return None

    def is_running(self) -> bool:
        return any(n.is_running() for n in self.nodes)

    def stop(self, grace: float = 10.0) -> bool:
        for node in self.nodes:  # signal all first so they shut down in parallel
            node.signal(signal.SIGTERM)
        stopped = [n.stop(grace) for n in self.nodes]  # a node's own error is raised after trying them all
        return any(stopped)

    def status(self) -> list[dict]:
        return [n.status() for n in self.nodes]

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------------------- by data dir (the CLI)

def _state_path(data_dir: Path) -> Path:
    return Path(data_dir).resolve() / STATE_FILE


def _build(data_dir: Path, port: int, ensemble: int, tick_time: int) -> ZooKeeperServer | ZooKeeperEnsemble:
    if ensemble == 1:
        return ZooKeeperServer(data_dir, port, tick_time=tick_time)
    return ZooKeeperEnsemble(data_dir, port, ensemble, tick_time=tick_time)


def load(data_dir: Path | str) -> ZooKeeperServer | ZooKeeperEnsemble:
    """The server or ensemble that ``start`` set up in ``data_dir`` (running or not)."""
    path = _state_path(Path(data_dir))
    try:
        state = json.loads(path.read_text())
        return _build(Path(data_dir), int(state["port"]), int(state["ensemble"]), int(state["tick_time"]))
    except FileNotFoundError:
        raise ZooKeeperError(f"no ZooKeeper was started in {Path(data_dir).resolve()} ({path.name} not found)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ZooKeeperError(f"{path} is unreadable: {exc!r}") from None


def start(data_dir: Path | str = DEFAULT_DATA_DIR, port: int = DEFAULT_PORT, *, ensemble: int = 1,
          tick_time: int = DEFAULT_TICK_TIME, timeout: float = 60.0) -> ZooKeeperServer | ZooKeeperEnsemble:
    """Start ZooKeeper in the background in ``data_dir``; return once it serves. The processes outlive the caller."""
    data_dir = Path(data_dir)
    try:
        previous = load(data_dir)
    except ZooKeeperError:
        previous = None
    if previous is not None and previous.is_running():
        raise ZooKeeperError(f"ZooKeeper already running in {data_dir.resolve()} ({previous.connect_string}); "
                             "stop it first: zkafka zookeeper stop --data-dir " + str(data_dir))
    zk = _build(data_dir, port, ensemble, tick_time)
    zk.data_dir.mkdir(parents=True, exist_ok=True)
    _state_path(data_dir).write_text(json.dumps({"port": port, "ensemble": ensemble, "tick_time": tick_time}) + "\n")
    return zk.start(timeout)


def stop(data_dir: Path | str = DEFAULT_DATA_DIR, grace: float = 10.0) -> list[int]:
    """Stop what ``start`` started in ``data_dir``; returns the pids that were running (empty: nothing was)."""
    zk = load(data_dir)
    nodes = zk.nodes if isinstance(zk, ZooKeeperEnsemble) else [zk]
    pids = [n.pid for n in nodes if n.is_running()]
    zk.stop(grace)
    return [p for p in pids if p is not None]


def status(data_dir: Path | str = DEFAULT_DATA_DIR) -> dict:
    """``{"data_dir", "connect_string", "ensemble", "state": serving|degraded|stopped, "nodes": [...]}``.

    serving: every node runs and serves; degraded: some node runs; stopped: none runs.
    """
    zk = load(data_dir)
    nodes = zk.status() if isinstance(zk, ZooKeeperEnsemble) else [zk.status()]
    if all(n["serving"] for n in nodes):
        state = "serving"
    elif any(n["running"] for n in nodes):
        state = "degraded"
    else:
        state = "stopped"
    return {"data_dir": str(zk.data_dir), "connect_string": zk.connect_string, "ensemble": len(nodes),
            "tick_time": zk.tick_time, "state": state, "nodes": nodes}
