"""``spark-submit`` of a PySpark application that uses zkafka, to a Spark cluster, in one step: the
executors' Python environment (``executor_env.pack``, cached) goes with ``--archives ENV#zkafka-env`` and
``spark.pyspark.python=./zkafka-env/bin/python``; zkafka's code with ``--py-files``; the driver (client
mode, this host) runs this interpreter. The driver's JVM starts Python workers of its own (a Python data
source plans its partitions there) with that same relative path, so spark-submit runs in a folder where
``zkafka-env`` is the environment unpacked (once per archive): application paths should be absolute. ``zkafka:NAME`` as the application is one of zkafka's ready-made
jobs (``consumer_group/spark/jobs.py``: ``count``, ``copy``).
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from scripts.local.spark.executor_env import ENV_NAME, code_zip, pack
from scripts.local.spark.standalone import spark_home

JOBS = Path(__file__).resolve().parents[3] / "consumer_group" / "spark" / "jobs.py"
DEFAULT_CACHE = Path.home() / ".cache" / "zkafka" / "spark"
RESULT_PREFIX = "ZKAFKA-JOB-RESULT "
KEEP_CODE_ZIPS = 5


def on_loopback(master: str) -> bool:
    """Whether the master URL names this host's loopback (then the driver binds and advertises 127.0.0.1)."""
    host = urlparse(master.replace("spark://", "http://", 1)).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def application(app: str) -> tuple[str, list[str]]:
    """``(file, leading arguments)``: ``zkafka:NAME`` is jobs.py with NAME first, anything else a file."""
    if app.startswith("zkafka:"):
        return str(JOBS), [app.split(":", 1)[1]]
    if not Path(app).is_file():
        raise FileNotFoundError(f"application {app!r} is not a file (or zkafka:count / zkafka:copy)")
    return str(Path(app).resolve()), []  # spark-submit runs in the driver folder: the path must not be relative


def submit_command(master: str, app: str, app_args: Sequence[str], *, env_archive: Path, code: Path,
                   conf: Mapping[str, str] = {}, driver_python: str = sys.executable) -> list[str]:
    """The spark-submit command line (pure)."""
    file, leading = application(app)
    settings = {"spark.pyspark.python": f"./{ENV_NAME}/bin/python", "spark.pyspark.driver.python": driver_python}
    if on_loopback(master):
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    settings.update(conf)
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master,
               "--archives", f"{env_archive}#{ENV_NAME}", "--py-files", str(code)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, file, *leading, *app_args]


def driver_dir(env_archive: Path) -> Path:
    """A folder holding ``zkafka-env``, the archive unpacked (made once: renamed into place when complete)."""
    run_dir = env_archive.with_name(env_archive.name.removesuffix(".tar.gz") + ".driver")
    if not (run_dir / ENV_NAME).is_dir():
        partial = Path(tempfile.mkdtemp(dir=env_archive.parent))
        try:
            with tarfile.open(env_archive) as tar:
                tar.extractall(partial / ENV_NAME, filter="tar")
            run_dir.mkdir(exist_ok=True)
            try:
                os.rename(partial / ENV_NAME, run_dir / ENV_NAME)
            except OSError:  # another submission got there first
                pass
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return run_dir


def start(master: str, app: str, app_args: Sequence[str], *, conf: Mapping[str, str] = {},
          cache_dir: Path = DEFAULT_CACHE, log: Path | None = None) -> subprocess.Popen:
    """Pack (or reuse) the environment, zip the code and start spark-submit; its output goes to ``log`` (to
    this process's when None). The caller waits for it (``submit`` does)."""
    application(app)  # a missing application is an error before anything is packed
    env_archive = pack(cache_dir)
    run_dir = driver_dir(env_archive)
    code = _content_named(code_zip(run_dir / f"zkafka-code-{os.getpid()}-{time.monotonic_ns()}.partial"))
    command = submit_command(master, app, app_args, env_archive=env_archive, code=code, conf=conf)
    # the driver JVM's own Python workers (a streaming source's planner) see --py-files only through PYTHONPATH;
    # zkafka's jobs resolve their relative paths against the caller's folder (spark-submit runs in run_dir)
    env = dict(os.environ, SPARK_HOME=str(spark_home()), ZKAFKA_SUBMIT_CWD=os.getcwd(),
               PYTHONPATH=os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])))
    if on_loopback(master):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    out = None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "w")
    try:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
                                stdin=subprocess.DEVNULL, cwd=run_dir, start_new_session=True)
    finally:
        if out is not None:
            out.close()


def _content_named(path: Path) -> Path:
    """``path`` renamed after its contents' hash (one file per code version however often it is submitted)."""
    named = path.with_name(f"zkafka-code-{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}.zip")
    os.replace(path, named)
    named.touch()  # newest use: the ones not used for longest go first
    for old in sorted(path.parent.glob("zkafka-code-*.zip"), key=lambda p: p.stat().st_mtime)[:-KEEP_CODE_ZIPS]:
        old.unlink(missing_ok=True)
    return named


def submit(master: str, app: str, app_args: Sequence[str], *, conf: Mapping[str, str] = {},
           cache_dir: Path = DEFAULT_CACHE, log: Path | None = None, timeout: float | None = None) -> int:
    """``start`` and wait: spark-submit's exit code. After ``timeout``, or when the wait is interrupted (Ctrl-C:
    spark-submit runs in a session of its own, so the terminal's signal does not reach it), its process group
    is stopped: SIGTERM, then SIGKILL after 10 s."""
    process = start(master, app, app_args, conf=conf, cache_dir=cache_dir, log=log)
    try:
        return process.wait(timeout)
    except BaseException:
        stop(process)
        raise


def stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a ``start``ed spark-submit and everything in its process group (the driver's Python workers)."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def job_result(log: Path) -> dict | None:
    """The JSON result line a zkafka job prints (``ZKAFKA-JOB-RESULT {...}``), or None."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return None
