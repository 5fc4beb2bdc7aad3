"""``zkafka demo cluster`` (``make demo``): a real ZooKeeper + N brokers under ``--dir``, used by the real tools.

Steps, each on a progress line (with a spinner and elapsed seconds while it waits, on a terminal only):
preflight (Java >= 17, ZooKeeper's jars, free ports, or a healthy cluster already in ``--dir`` to reuse),
``Cluster.up``, topic ``demo`` with ``kafka-topics``, N records through ``kafka-console-producer`` and
back through ``kafka-console-consumer --from-beginning --max-messages``, a short ``zkafka demo groups``
(its output streamed through); then a box with what to connect to and how to stop. A failure is a
``DemoError`` saying what to do; a cluster that came up is left up after one, for inspection.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from scripts.local.cluster import Cluster, ClusterError, ClusterSpec
from scripts.local.zookeeper import ZooKeeperError, find_java, resolve_classpath

TOPIC = "demo"
PARTITIONS = 6
MIN_JAVA = 17
UP_TIMEOUT_S = 120.0
TOOL_TIMEOUT_S = 180.0
JAVA_VERSION = re.compile(r'version "((\d+)(?:\.(\d+))?[^"]*)"')
JAVA_INSTALL = "apt-get install openjdk-17-jre-headless"
# the groups demo's own cluster settings: no initial rebalance delay, a small __consumer_offsets
GROUP_PROPERTIES = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "6"}


class DemoError(RuntimeError):
    """A step failed; the message says what happened and what to do."""


@dataclass
class DemoOptions:
    dir: Path = Path(".zkafka")
    brokers: int = 3
    records: int = 5000
    groups_seconds: float = 20.0
    groups: bool = True
    zookeeper_port: int = 2181
    kafka_port_base: int = 9092
    http_port_base: int = 8080


def parse_java_version(text: str) -> int | None:
    """The major version in ``java -version`` output: ``"17.0.15"`` -> 17, ``"1.8.0_392"`` -> 8, ``"21"`` -> 21."""
    found = JAVA_VERSION.search(text)
    if not found:
        return None
    major = int(found[2])
    return int(found[3] or 0) if major == 1 else major


def java_problem(java: str | None, version_text: str) -> str | None:
    """None if ``java`` (a path, None when not found) is Java >= 17, else what is wrong and how to fix it."""
    if java is None:
        return (f"Java {MIN_JAVA}+ is needed (ZooKeeper runs on it) and none was found on PATH or in $JAVA_HOME: "
                f"install it with `{JAVA_INSTALL}` (Debian/Ubuntu; as root or with sudo), then run `make demo` again")
    major = parse_java_version(version_text)
    if major is None:
        first = version_text.strip().splitlines()[0] if version_text.strip() else "no output"
        return (f"could not read the version of {java} (`java -version` said: {first}); Java {MIN_JAVA}+ is "
                f"needed: `{JAVA_INSTALL}`, or set JAVA_HOME to a JDK/JRE {MIN_JAVA}+")
    if major < MIN_JAVA:
        return (f"{java} is Java {major}, ZooKeeper here needs Java {MIN_JAVA}+: `{JAVA_INSTALL}`, then point "
                "JAVA_HOME at it (e.g. JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64; it wins over PATH)")
    return None


def check_java(env: Mapping[str, str] | None = None) -> str:
    """``Java 17.0.15 (/usr/bin/java)`` if Java >= 17 is there; DemoError saying how to install it if not."""
    try:
        java = find_java(env)
    except ZooKeeperError:
        java = None
    text = ""
    if java is not None:
        try:
            done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
            text = done.stderr + done.stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            text = str(exc)
    problem = java_problem(java, text)
    if problem:
        raise DemoError(problem)
    return f"Java {JAVA_VERSION.search(text)[1]} ({java})"


def demo_ports(options: DemoOptions) -> list[tuple[str, int]]:
    ports = [("ZooKeeper", options.zookeeper_port)]
    ports += [(f"Kafka, broker {b}", options.kafka_port_base + b - 1) for b in range(1, options.brokers + 1)]
    ports += [(f"HTTP, broker {b}", options.http_port_base + b - 1) for b in range(1, options.brokers + 1)]
    return ports


def busy_ports(ports: list[tuple[str, int]], host: str = "127.0.0.1") -> list[tuple[str, int]]:
    """The ports a listener cannot bind right now (the same bind the broker and ZooKeeper will do)."""
    busy = []
    for what, port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                busy.append((what, port))
    return busy


def ports_message(busy: list[tuple[str, int]]) -> str:
    names = ", ".join(f"{port} ({what})" for what, port in busy)
    return (f"port{'s' if len(busy) > 1 else ''} already in use: {names}. See which process holds one with "
            f"`ss -ltnp 'sport = :{busy[0][1]}'`; if it is an earlier demo, stop it with `make down` in its checkout "
            "(or `zkafka cluster down --dir <its dir>`); or pick other ports with --zookeeper-port / "
            "--kafka-port-base / --http-port-base")


def reusable_cluster(directory: Path, stop_hint: str) -> Cluster | None:
    """The healthy cluster already running in ``directory``, to reuse (whatever its ports); None if nothing
    runs there; DemoError if it only partly runs."""
    if not (Path(directory) / "cluster.json").is_file():
        return None
    try:
        cluster = Cluster(directory)
    except (ClusterError, TypeError, ValueError):
        return None
    info = cluster.status()
    alive = [b["id"] for b in info["brokers"] if b["alive"]]
    if not alive and not info["zookeeper"]["alive"]:
        return None
    if len(alive) < cluster.spec.brokers or not info["zookeeper"]["alive"] or info["controller"] is None:
        raise DemoError(f"the cluster in {cluster.dir} is only partly running (brokers alive: {alive or 'none'}, "
                        f"ZooKeeper {'up' if info['zookeeper']['alive'] else 'down'}): stop it ({stop_hint}) and "
                        "run the demo again")
    return cluster


class Progress:
    """``[i/n] title`` per step: a spinner with elapsed seconds on a terminal, plain lines elsewhere."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, total: int, stream: TextIO | None = None, animate: bool | None = None):
        self.total, self.n = total, 0
        self.stream = stream or sys.stdout
        self.animate = self.stream.isatty() if animate is None else animate
        self.detail = ""

    def say(self, line: str = "") -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    @contextmanager
    def step(self, title: str, spinner: bool = True) -> Iterator[Progress]:
        self.n += 1
        label, self.detail, start = f"[{self.n}/{self.total}] {title}", "", time.monotonic()
        stop, animated = threading.Event(), self.animate and spinner
        ticker = threading.Thread(target=self._spin, args=(label, start, stop), daemon=True)
        if animated:
            ticker.start()
        else:
            self.say(f"{label} ...")
        try:
            yield self
        except BaseException:
            self._end(stop, ticker, f"✗ {label}: failed after {time.monotonic() - start:.1f} s")
            raise
        head = f"{label} —" if animated else f"[{self.n}/{self.total}]"  # plain output: the title is just above
        self._end(stop, ticker, f"✓ {head} {self.detail or 'done'} ({time.monotonic() - start:.1f} s)")

    def _spin(self, label: str, start: float, stop: threading.Event) -> None:
        frame = 0
        while not stop.wait(0.1):
            self.stream.write(f"\r\033[K{self.FRAMES[frame % len(self.FRAMES)]} {label} "
                              f"({time.monotonic() - start:.0f} s)")
            self.stream.flush()
            frame += 1

    def _end(self, stop: threading.Event, ticker: threading.Thread, line: str) -> None:
        stop.set()
        if ticker.is_alive():
            ticker.join()
            self.stream.write("\r\033[K")
        self.say(line)


def tool(name: str) -> str:
    """The console tool next to this Python (the venv's bin), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which(name)
    if not found:
        raise DemoError(f"{name} not found next to {sys.executable} or on PATH: install zkafka (`make install`)")
    return found


def tools_prefix(path: str) -> str:
    """How to type the console tools' folder in the summary: "" if PATH finds ``path``, else a relative path."""
    if shutil.which(Path(path).name) == path:
        return ""
    relative = os.path.relpath(Path(path).parent)
    return (path if relative.startswith("..") else relative).rstrip("/") + "/"


def run_tool(argv: list[str], what: str, stdin: str | None = None) -> str:
    """Run a console tool; its stdout, or DemoError with the command and the end of its stderr."""
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise DemoError(f"{what} did not finish within {TOOL_TIMEOUT_S:.0f} s: {' '.join(argv)}") from None
    if done.returncode != 0:
        raise DemoError(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def record_count(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` now (the sum of its partitions' high watermarks; 0 if it does not exist)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "zkafka-demo-count"})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in metadata.partitions)
    finally:
        consumer.close()


def dashboard_url(http_port: int, timeout: float = 2.0) -> str | None:
    """``http://127.0.0.1:<port>/`` if the broker serves an HTML page there, else None."""
    url = f"http://127.0.0.1:{http_port}/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            html = "html" in response.headers.get("Content-Type", "")
            return url if response.status == 200 and html else None
    except (OSError, urllib.error.URLError, ValueError):
        return None


def summary(cluster: Cluster, *, dashboard: str | None, stop_hint: str, bin_prefix: str = "", kcat: bool = True) -> str:
    """The closing box: what to connect to, commands to try, where the logs are, how to stop."""
    bootstrap, first = cluster.bootstrap_servers, f"127.0.0.1:{cluster.kafka_port(1)}"
    rows = [f"bootstrap servers  {bootstrap}", f"ZooKeeper connect  {cluster.zookeeper_connect}"]
    if dashboard:
        base = dashboard.rstrip("/")
        rows += [f"dashboard          {dashboard}", f"metrics            {base}/metrics",
                 f"admin API          {base}/api/v1/overview (any broker answers for the cluster)"]
    else:
        others = ", ".join(str(cluster.http_port(b)) for b in cluster.broker_ids[1:])
        rows.append(f"health             http://127.0.0.1:{cluster.http_port(1)}/healthz"
                    + (f" (broker 1; {others} for the others)" if others else ""))
    rows += ["", "try:", f"  kcat -b {first} -L" + ("" if kcat else "   (kcat: apt-get install kcat)"),
             f"  {bin_prefix}kafka-console-consumer --bootstrap-server {first} --topic {TOPIC} --from-beginning "
             "--max-messages 10", f"  {bin_prefix}kafka-console-producer --bootstrap-server {first} --topic {TOPIC}",
             f"  {bin_prefix}kafka-consumer-groups --bootstrap-server {first} --list",
             f"  {bin_prefix}kafka-topics --bootstrap-server {first} --describe --topic {TOPIC}",
             *([f"  curl -H 'Content-Type: application/json' -d '{{\"records\":[{{\"value\":\"hi\"}}]}}' "
                f"{dashboard.rstrip('/')}/api/v1/topics/{TOPIC}/records"] if dashboard else []),
             "", f"logs               {cluster.dir}/broker-<id>/broker.log, {cluster.dir}/zookeeper/zookeeper.log",
             f"stop               {stop_hint}"]
    rule = "─" * 72
    return "\n".join([f"┌─ the zkafka demo cluster is up {rule[32:]}", *(f"│ {r}".rstrip() for r in rows), f"└{rule}"])


def stop_hint_for(directory: Path) -> str:
    """``make down`` when ``directory`` is the Makefile's ./.zkafka, else the zkafka command."""
    here = Path(directory).resolve() == (Path.cwd() / ".zkafka").resolve() and Path("Makefile").is_file()
    return f"make down  (or: zkafka cluster down --dir {directory})" if here else f"zkafka cluster down --dir {directory}"


class ClusterDemo:
    def __init__(self, options: DemoOptions, stream: TextIO | None = None, animate: bool | None = None):
        self.options = options
        self.stop_hint = stop_hint_for(options.dir)
        self.progress = Progress(5 + options.groups, stream, animate)
        self.cluster: Cluster | None = None
        self.bootstrap = ""

    def run(self) -> int:
        self.progress.say(f"zkafka demo: ZooKeeper + {self.options.brokers} brokers in {self.options.dir}")
        try:
            self._preflight()
            self._up()
            self._topic()
            self._produce_and_consume()
            if self.options.groups:
                self._groups()
        except (DemoError, KeyboardInterrupt) as exc:
            self.progress.say(f"\nerror: {exc}" if isinstance(exc, DemoError) else "\ninterrupted")
            if self.cluster is not None:
                self.progress.say(f"the cluster is left running for inspection (logs: {self.cluster.dir}/broker-<id>/"
                                  f"broker.log); stop it with: {self.stop_hint}")
            return 1 if isinstance(exc, DemoError) else 130
        self.progress.say(self._summary())
        return 0

    def _preflight(self) -> None:
        with self.progress.step("preflight: Java, ZooKeeper jars, ports") as step:
            java = check_java()
            try:
                resolve_classpath()
            except ZooKeeperError as exc:
                raise DemoError(f"{exc} (`make install` installs them)") from None
            self.cluster = reusable_cluster(self.options.dir, self.stop_hint)
            if self.cluster is None:
                busy = busy_ports(demo_ports(self.options))
                if busy:
                    raise DemoError(ports_message(busy))
            step.detail = java + ("; reusing the cluster already running there" if self.cluster else "")

    def _up(self) -> None:
        title = f"starting ZooKeeper and {self.options.brokers} brokers"
        with self.progress.step(title + (" (already running)" if self.cluster else "")) as step:
            if self.cluster is None:
                o = self.options
                cluster = Cluster(o.dir, ClusterSpec(o.brokers, o.zookeeper_port, o.kafka_port_base, o.http_port_base,
                                                     properties=dict(GROUP_PROPERTIES)))
                try:
                    cluster.up(UP_TIMEOUT_S)
                except (ClusterError, ZooKeeperError) as exc:
                    raise DemoError(f"the cluster did not come up: {exc}\n(logs under {cluster.dir}; ports "
                                    "or Java are the usual suspects)") from None
                self.cluster = cluster
            self.bootstrap, controller = self.cluster.bootstrap_servers, self.cluster.controller()
            step.detail = f"controller: broker {controller[0]}" if controller else "no controller yet"

    def _topic(self) -> None:
        rf = min(3, self.options.brokers)
        with self.progress.step(f"creating topic {TOPIC} ({PARTITIONS} partitions, RF {rf}) with kafka-topics"):
            topics = tool("kafka-topics")
            run_tool([topics, "--bootstrap-server", self.bootstrap, "--create", "--if-not-exists", "--topic", TOPIC,
                      "--partitions", str(PARTITIONS), "--replication-factor", str(rf)], "kafka-topics --create")
            described = run_tool([topics, "--bootstrap-server", self.bootstrap, "--describe", "--topic", TOPIC],
                                 "kafka-topics --describe")
        for line in described.splitlines():
            self.progress.say(f"      {line.strip()}")

    def _produce_and_consume(self) -> None:
        n, run_id = self.options.records, f"{int(time.time())}-{os.getpid()}"
        before = record_count(self.bootstrap, TOPIC)
        lines = "".join(f"user-{i % 50}:demo {run_id} record {i}\n" for i in range(n))
        with self.progress.step(f"producing {n:,} records with kafka-console-producer") as step:
            start = time.monotonic()
            run_tool([tool("kafka-console-producer"), "--bootstrap-server", self.bootstrap, "--topic", TOPIC,
                      "--property", "parse.key=true", "--property", "key.separator=:"], "kafka-console-producer", lines)
            step.detail = f"{n / max(time.monotonic() - start, 1e-6):,.0f} records/s (acks=all)"
        total = before + n
        with self.progress.step(f"consuming them back with kafka-console-consumer --from-beginning "
                                f"--max-messages {total:,}") as step:
            out = run_tool([tool("kafka-console-consumer"), "--bootstrap-server", self.bootstrap, "--topic", TOPIC,
                            "--from-beginning", "--max-messages", str(total), "--timeout-ms", "60000"],
                           "kafka-console-consumer")
            mine = {line for line in out.splitlines() if line.startswith(f"demo {run_id} ")}
            if len(mine) != n:
                raise DemoError(f"read back {len(mine):,} of the {n:,} records just produced "
                                f"({len(out.splitlines()):,} lines in all); see {self.cluster.dir}/broker-*/broker.log")
            step.detail = f"all {n:,} records read back" + (f" (after {before:,} from earlier runs)" if before else "")

    def _groups(self) -> None:
        seconds = self.options.groups_seconds
        with self.progress.step(f"consumer-group demo for {seconds:g} s (zkafka demo groups)", spinner=False):
            argv = [tool("zkafka"), "demo", "groups", "--bootstrap-server", self.bootstrap, "--duration-s", f"{seconds:g}"]
            with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
                for line in proc.stdout:
                    self.progress.say(f"    │ {line.rstrip()}")
            if proc.returncode != 0:
                raise DemoError(f"zkafka demo groups failed (exit {proc.returncode}); its output is above")

    def _summary(self) -> str:
        return "\n" + summary(self.cluster, dashboard=dashboard_url(self.cluster.http_port(1)), stop_hint=self.stop_hint,
                              bin_prefix=tools_prefix(tool("kafka-topics")), kcat=shutil.which("kcat") is not None)


def demo_command(options: DemoOptions) -> int:
    return ClusterDemo(options).run()
