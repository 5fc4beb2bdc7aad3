"""A Spark standalone cluster on this host: one master and N workers, each its own JVM, started with the
pyspark wheel's own ``bin/spark-class`` (no Spark download).

Layout under the cluster dir D::

    D/spark-cluster.json          master URL, ports, workers' pids (status/down from any process)
    D/master.log                  the master's output
    D/worker-<i>/worker.log       worker i's output; D/worker-<i>/work/ its executors' dirs (stdout/stderr)

``up`` returns once the master's JSON view (``http://HOST:WEBUI/json/``) lists every worker ALIVE. A worker
serves executors with ``cores_per_worker`` cores and ``memory_per_worker`` of memory; an application asks for
its executors with ``spark.executor.cores`` / ``spark.executor.memory`` as on any standalone cluster. A killed
executor (``kill_executor``: SIGKILL of its ``CoarseGrainedExecutorBackend`` JVM) is replaced by the worker,
and Spark retries its tasks.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from scripts.local.processes import alive, cmdline
from scripts.local.zookeeper import find_free_base_port, pyspark_jars_dir

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class SparkClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    """The pyspark wheel's folder (it is a Spark home: ``bin/spark-class``, ``jars/``), found without importing it."""
    jars = pyspark_jars_dir()
    if jars is None or not (jars.parent / "bin" / "spark-class").exists():
        raise SparkClusterError("pyspark is not installed (pip install 'zkafka[spark]'): no bin/spark-class")
    return jars.parent


@dataclass
class SparkClusterSpec:
    workers: int = 2
    cores_per_worker: int = 1
    memory_per_worker: str = "1g"
    host: str = "127.0.0.1"
    master_port: int = 7077
    master_webui_port: int = 8180
    worker_pids: list[int] = field(default_factory=list)
    master_pid: int | None = None

    @classmethod
    def on_free_ports(cls, workers: int = 2, **settings) -> "SparkClusterSpec":
        """A spec whose master port and web UI port are free now and distinct (each is found free on its own,
        so the two can come back as the same port: drawn again then)."""
        for _ in range(100):
            master, webui = find_free_base_port(1), find_free_base_port(1)
            if master != webui:
                return cls(workers, master_port=master, master_webui_port=webui, **settings)
        raise SparkClusterError("no two distinct free ports after 100 attempts")


class SparkStandaloneCluster:
    def __init__(self, directory: Path, spec: SparkClusterSpec | None = None):
        self.dir = Path(directory).resolve()
        self.spec = spec or self._load_spec()

    def _load_spec(self) -> SparkClusterSpec:
        try:
            return SparkClusterSpec(**json.loads((self.dir / "spark-cluster.json").read_text()))
        except FileNotFoundError:
            raise SparkClusterError(f"no Spark cluster in {self.dir} (start one with: zkafka spark up --dir "
                                    f"{self.dir})") from None

    @property
    def master_url(self) -> str:
        return f"spark://{self.spec.host}:{self.spec.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.spec.host}:{self.spec.master_webui_port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_NO_DAEMONIZE="1", SPARK_LOCAL_IP=self.spec.host)
        env.pop("PYSPARK_PYTHON", None)  # an application names its executors' Python (spark.pyspark.python)
        return env

    def _spawn(self, args: list[str], log: Path) -> int:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env(),
                                       start_new_session=True)
        return process.pid

    def up(self, timeout: float = 90.0) -> "SparkStandaloneCluster":
        """Start the master and the workers; return once every worker is ALIVE at the master."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if (self.dir / "spark-cluster.json").exists() and SparkStandaloneCluster(self.dir).running_pids():
            raise SparkClusterError(f"a Spark cluster already runs from {self.dir} (zkafka spark down --dir {self.dir})")
        s = self.spec
        s.master_pid = self._spawn(["org.apache.spark.deploy.master.Master", "--host", s.host, "--port",
                                    str(s.master_port), "--webui-port", str(s.master_webui_port)],
                                   self.dir / "master.log")
        s.worker_pids = [self.start_worker(i) for i in range(1, s.workers + 1)]
        (self.dir / "spark-cluster.json").write_text(json.dumps(asdict(s)))
        self.wait_for_workers(s.workers, timeout)
        return self

    def start_worker(self, index: int) -> int:
        work = self.dir / f"worker-{index}"
        return self._spawn(["org.apache.spark.deploy.worker.Worker", "--host", self.spec.host, "--webui-port", "0",
                            "--cores", str(self.spec.cores_per_worker), "--memory", self.spec.memory_per_worker,
                            "--work-dir", str(work / "work"), self.master_url], work / "worker.log")

    def state(self) -> dict | None:
        """The master's JSON view (workers, applications), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=2) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        state = self.state() or {}
        return sum(1 for w in state.get("workers", ()) if w.get("state") == "ALIVE")

    def wait_for_workers(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_workers() < count:
            if time.monotonic() > deadline:
                raise SparkClusterError(f"{count} Spark workers not ALIVE at {self.webui_url} after {timeout:.0f} s; "
                                        f"see {self.dir}/master.log and worker-*/worker.log")
            if self.spec.master_pid and not alive(self.spec.master_pid):
                raise SparkClusterError(f"the Spark master exited; see {self.dir}/master.log")
            time.sleep(0.2)

    def executor_pids(self) -> list[int]:
        """The pids of the executor JVMs the workers of this cluster run now (an executor runs in its folder
        under its worker's work dir)."""
        work_dirs = [str(self.dir / f"worker-{i}" / "work") + "/" for i in range(1, self.spec.workers + 1)]
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and EXECUTOR_CLASS in cmdline(int(entry.name)):
                try:
                    cwd = os.readlink(entry / "cwd")
                except OSError:
                    continue
                if any(cwd.startswith(w) for w in work_dirs):
                    pids.append(int(entry.name))
        return sorted(pids)

    def kill_executor(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def running_pids(self) -> list[int]:
        """This cluster's live JVMs: its executors, then the recorded master and workers whose command line is
        still a Spark daemon of this master (a recorded pid reused by another process is left alone)."""
        recorded = [p for p in (*self.spec.worker_pids, self.spec.master_pid) if p]
        ours = [p for p in recorded if alive(p) and "org.apache.spark.deploy." in cmdline(p)
                and str(self.spec.master_port) in cmdline(p)]
        return [*self.executor_pids(), *ours]

    def down(self) -> None:
        """Stop the workers (their executors with them) and the master: SIGTERM, then SIGKILL after 10 s; the
        cluster's file goes, so a second ``down`` does nothing."""
        pids = self.running_pids()
        for pid in pids:
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in pids:
            _signal_group(pid, signal.SIGKILL)
        (self.dir / "spark-cluster.json").unlink(missing_ok=True)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """``sig`` to ``pid``'s process group (the daemons run in sessions of their own), never to ours."""
    try:
        group = os.getpgid(pid)
        if group == os.getpgrp():
            os.kill(pid, sig)
        else:
            os.killpg(group, sig)
    except ProcessLookupError:
        pass
