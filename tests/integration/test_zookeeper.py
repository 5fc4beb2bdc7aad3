"""Real Apache ZooKeeper processes (the pyspark wheel's jars) on 127.0.0.1: standalone, the CLI, a 3-node ensemble.

Readiness is ``srvr``; no test sleeps blindly, every wait polls a condition against a deadline.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

from scripts.local import zookeeper as zk
from scripts.local.zookeeper.server import pid_state
from tests.integration.conditions import wait_for

ZKAFKA = Path(sys.executable).with_name("zkafka")
TICK = 500


def process_gone(pid: int) -> bool:
    """No such process, or only a zombie left (reaping it is the parent's business)."""
    return pid_state(pid) in (None, "Z", "X")


def refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def session(hosts: str, **kwargs) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10, connection_retry=KazooRetry(max_tries=-1, max_delay=0.5),
                         command_retry=KazooRetry(max_tries=-1, max_delay=0.5, deadline=15), **kwargs)
    client.start(timeout=15)
    return client


@pytest.fixture
def standalone(tmp_path):
    server = zk.ZooKeeperServer(tmp_path / "zk", zk.find_free_base_port(), tick_time=TICK)
    began = time.monotonic()
    server.start(timeout=30)
    server.ready_after = time.monotonic() - began
    try:
        yield server
    finally:
        server.stop()


def test_standalone_serves_sessions_and_stops_cleanly(standalone):
    print(f"standalone ready after {standalone.ready_after:.2f} s")
    info = standalone.srvr()
    assert info["mode"] == "standalone" and info["zookeeper_version"].startswith("3.")
    assert zk.srvr("127.0.0.1", standalone.port)["serving"]
    cfg = standalone.cfg_path.read_text()
    assert f"tickTime={TICK}\n" in cfg and "clientPortAddress=127.0.0.1\n" in cfg
    assert int(standalone.pid_path.read_text()) == standalone.pid and standalone.is_running()
    assert "binding to port" in standalone.log_path.read_text()  # log4j2 config reached the JVM

    owner, watcher = session(standalone.connect_string), session(standalone.connect_string)
    try:
        owner.create("/zkafka-test/eph", b"hello", ephemeral=True, makepath=True)
        assert watcher.get("/zkafka-test/eph")[0] == b"hello"
        owner.stop()
        owner.close()
        wait_for(lambda: watcher.exists("/zkafka-test/eph") is None, 5, "the ephemeral node to vanish")
        assert watcher.exists("/zkafka-test") is not None  # the persistent parent stays
    finally:
        for client in (owner, watcher):
            client.stop()
            client.close()

    pid = standalone.pid
    assert standalone.stop() is True
    assert process_gone(pid) and not standalone.is_running()
    assert not standalone.pid_path.exists()
    assert refuses(standalone.port)
    assert standalone.stop() is False  # idempotent


def test_a_server_that_cannot_bind_fails_fast_with_its_log(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = zk.ZooKeeperServer(tmp_path / "zk", taken.getsockname()[1], tick_time=TICK)
        began = time.monotonic()
        try:
            with pytest.raises(zk.ZooKeeperError, match="exited during start-up") as err:
                server.start(timeout=20)
        finally:
            server.stop()
    assert time.monotonic() - began < 15  # noticed the exit, did not wait for the deadline
    assert "Address already in use" in str(err.value)
    assert not server.pid_path.exists()


def test_an_open_port_is_not_readiness(tmp_path):
    """Without snappy-java the port opens but the server never serves (platform notes §1.1): start must not
    call that ready, and must clean up the process it started."""
    classpath = os.pathsep.join(p for p in zk.resolve_classpath().split(os.pathsep) if "snappy-java" not in p)
    server = zk.ZooKeeperServer(tmp_path / "zk", zk.find_free_base_port(), tick_time=TICK, classpath=classpath)
    try:
        with pytest.raises(zk.ZooKeeperError, match="not ready after") as err:
            server.start(timeout=3)
        assert not server.is_running()  # start cleaned up after itself
    finally:
        server.stop()
    assert "not currently serving" in str(err.value) or "no answer" in str(err.value)


def zkafka(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(ZKAFKA), "zookeeper", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_start_status_stop(tmp_path):
    data_dir, port = tmp_path / "zkdata", zk.find_free_base_port()
    began = time.monotonic()
    started = zkafka("start", "--port", str(port), "--data-dir", str(data_dir), "--tick-time", str(TICK))
    try:
        print(f"CLI start returned after {time.monotonic() - began:.2f} s")
        assert started.returncode == 0, started.stderr
        assert started.stdout.splitlines()[0] == f"127.0.0.1:{port}"
        assert str(data_dir.resolve() / "zookeeper.log") in started.stdout
        pid = int((data_dir / "zookeeper.pid").read_text())
        assert f"pid {pid}" in started.stdout
        assert zk.srvr("127.0.0.1", port)["mode"] == "standalone"  # serving when start returns, not later

        status = zkafka("status", "--data-dir", str(data_dir), "--json")
        assert status.returncode == 0, status.stderr
        info = json.loads(status.stdout)
        assert info["state"] == "serving" and info["connect_string"] == f"127.0.0.1:{port}"
        assert info["tick_time"] == TICK
        [node] = info["nodes"]
        assert node["pid"] == pid and node["mode"] == "standalone" and node["running"] is True

        again = zkafka("start", "--port", str(port), "--data-dir", str(data_dir))
        assert again.returncode == 1 and "already running" in again.stderr

        client = session(f"127.0.0.1:{port}")
        try:
            client.create("/cli", b"x")
        finally:
            client.stop()
            client.close()

        stopped = zkafka("stop", "--data-dir", str(data_dir))
        assert stopped.returncode == 0 and f"stopped pid {pid}" in stopped.stdout
        wait_for(lambda: process_gone(pid), 5, "the server process to be gone")
        assert refuses(port)
        after = zkafka("status", "--data-dir", str(data_dir))
        assert after.returncode == 3 and after.stdout.startswith("stopped")
        assert zkafka("stop", "--data-dir", str(data_dir)).stdout.strip() == "not running"
    finally:
        zkafka("stop", "--data-dir", str(data_dir))


def test_ensemble_forms_and_survives_losing_its_leader(tmp_path):
    ensemble = zk.ZooKeeperEnsemble(tmp_path / "ens", zk.find_free_base_port(3), 3, tick_time=TICK)
    began = time.monotonic()
    ensemble.start(timeout=45)
    print(f"ensemble ready after {time.monotonic() - began:.2f} s")
    clients: list[KazooClient] = []
    try:
        modes = sorted(n.srvr()["mode"] for n in ensemble.nodes)
        assert modes == ["follower", "follower", "leader"]
        for node in ensemble.nodes:
            assert (node.data_dir / "myid").read_text().strip() == str(node.myid)

        states: list[str] = []
        owner = session(ensemble.connect_string)
        owner.add_listener(states.append)
        clients.append(owner)
        owner.create("/ens/eph", b"before", ephemeral=True, makepath=True)
        for node in ensemble.nodes:  # replicated to every node
            direct = session(node.connect_string)
            clients.append(direct)
            direct.sync("/ens")
            assert direct.get("/ens/eph")[0] == b"before"

        leader = ensemble.leader()
        assert leader is not None
        survivors = [n for n in ensemble.nodes if n is not leader]
        killed_at = time.monotonic()
        os.kill(leader.pid, signal.SIGKILL)
        wait_for(lambda: not leader.is_running(), 5, "the old leader to die")
        new_modes = ensemble.wait_ready(timeout=15, nodes=survivors)
        elected = time.monotonic() - killed_at
        print(f"new leader after {elected:.2f} s: {new_modes}")
        assert sorted(new_modes.values()) == ["follower", "leader"]
        assert leader.myid not in new_modes

        owner.retry(owner.create, "/ens/after-kill", b"after")
        written = time.monotonic() - killed_at
        print(f"first write after the kill succeeded after {written:.2f} s")
        assert owner.get("/ens/after-kill")[0] == b"after"
        assert owner.exists("/ens/eph") is not None  # same session: its ephemeral survived
        assert KazooState.LOST not in states and owner.state == KazooState.CONNECTED
    finally:
        for client in clients:
            client.stop()
            client.close()
        pids = [n.pid for n in ensemble.nodes if n.is_running()]
        ensemble.stop()
    assert all(process_gone(p) for p in pids)
    assert all(refuses(n.port) for n in ensemble.nodes)
