"""zookeeper-server-start and zookeeper-shell, as the installed console scripts: a real ZooKeeper started from a
Kafka-style zookeeper.properties in the foreground (the process becomes the JVM; SIGTERM stops it) and with
-daemon (detached, output in $LOG_DIR/zookeeper.out); zookeeper-shell's commands against it, one per run and from
stdin, their output parsed as ZooKeeper 3.5's CLI prints it; a bad properties file is one line, exit 1."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.local.zookeeper import find_free_base_port
from scripts.local.zookeeper.network import try_srvr
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
CONNECTED = ["", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null"]


def properties(directory: Path, port: int) -> Path:
    path = directory / "zookeeper.properties"
    path.write_text(f"# Kafka's config/zookeeper.properties, on a free port\ndataDir={directory / 'data'}\n"
                    f"clientPort={port}\nmaxClientCnxns=0\nadmin.enableServer=false\ntickTime=500\n")
    return path


def serving(port: int) -> bool:
    answer = try_srvr(port, timeout=1.0)
    return bool(answer and answer["mode"] == "standalone")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """zookeeper-server-start in the foreground: (port, the process, its properties file)."""
    directory = tmp_path_factory.mktemp("zk-start")
    port = find_free_base_port(1)
    path = properties(directory, port)
    process = subprocess.Popen([str(BIN / "zookeeper-server-start"), str(path)], cwd=directory,
                               env={**os.environ, "LOG_DIR": str(directory / "logs")},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: serving(port) or process.poll() is not None, 60, "ZooKeeper to serve")
        assert process.poll() is None, process.stdout.read().decode()
        yield port, process, path
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(30)


def shell(port: int, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "zookeeper-shell"), f"127.0.0.1:{port}", *args], input=stdin,
                            capture_output=True, text=True, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def output(result: subprocess.CompletedProcess, port: int) -> list[str]:
    """stdout after zookeeper-shell's connection banner."""
    lines = result.stdout.splitlines()
    assert lines[:5] == [f"Connecting to 127.0.0.1:{port}", *CONNECTED], result.stdout
    return lines[5:]


def test_the_foreground_process_is_zookeeper_and_logs_to_the_terminal(server):
    port, process, path = server
    cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
    assert b"org.apache.zookeeper.server.quorum.QuorumPeerMain" in cmdline and str(path).encode() in cmdline
    assert (path.parent / "data" / "version-2").is_dir()  # the file's dataDir


def test_one_command_per_run(server):
    port = server[0]
    created = shell(port, "create", "/tool", "hello")
    assert (created.returncode, created.stderr, output(created, port)) == (0, "Created /tool\n", [])
    got = shell(port, "get", "-s", "/tool")
    data, *stat = output(got, port)
    assert data == "hello" and got.returncode == 0
    fields = dict(line.split(" = ", 1) for line in stat)
    assert list(fields) == ["cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion", "dataVersion", "aclVersion",
                            "ephemeralOwner", "dataLength", "numChildren"]
    assert fields["cZxid"].startswith("0x") and fields["dataLength"] == "5" and fields["ephemeralOwner"] == "0x0"
    listed = shell(port, "ls", "/")
    assert output(listed, port) == ["[tool, zookeeper]"]
    missing = shell(port, "ls", "/nope")
    assert (missing.returncode, missing.stderr) == (1, "Node does not exist: /nope\n")
    missing_get = shell(port, "get", "/nope")
    assert missing_get.stderr == "org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for /nope\n"


def test_commands_from_stdin(server):
    port = server[0]
    script = "\n".join(["create /batch", "create -s /batch/n- one", "create -e /batch/eph", "set /batch/n-0000000000 two",
                        "get /batch/n-0000000000", "ls /batch", "getAcl /batch", "delete /batch",
                        "stat /batch/eph", "deleteall /batch", "stat /batch", "quit"]) + "\n"
    result = shell(port, stdin=script)
    lines = result.stdout.splitlines()
    assert lines[:3] == [f"Connecting to 127.0.0.1:{port}", "Welcome to ZooKeeper!", "JLine support is disabled"]
    body = lines[3 + len(CONNECTED):]
    assert body[:4] == ["two", "[eph, n-0000000000]", "'world,'anyone", ": cdrwa"], result.stdout
    assert body[4].startswith("cZxid = 0x") and body[12] != "ephemeralOwner = 0x0"  # stat of the ephemeral node
    assert result.stderr.splitlines() == ["Created /batch", "Created /batch/n-0000000000", "Created /batch/eph",
                                          "Node not empty: /batch", "Node does not exist: /batch"]
    assert result.returncode == 1  # quit exits with the last command's code: stat /batch failed


def test_daemon_mode_returns_at_once_and_logs_to_zookeeper_out(tmp_path):
    port = find_free_base_port(1)
    path = properties(tmp_path, port)
    started = subprocess.run([str(BIN / "zookeeper-server-start"), "-daemon", str(path)], capture_output=True,
                             text=True, timeout=30, env={**os.environ, "LOG_DIR": str(tmp_path / "logs")})
    assert (started.returncode, started.stdout, started.stderr) == (0, "", "")

    def daemon_pid() -> int | None:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and str(path).encode() in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
        return None

    try:
        wait_for(lambda: serving(port), 60, "the daemon ZooKeeper to serve")
        assert "binding to port" in (tmp_path / "logs" / "zookeeper.out").read_text()
    finally:
        pid = daemon_pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: daemon_pid() is None, 30, "the daemon to stop")


@pytest.mark.parametrize("text, expected", [
    (None, "cannot read"),
    ("clientPort=2181\n", "dataDir is not set"),
    ("dataDir=/tmp/x\n", "clientPort is not set"),
    ("dataDir=/tmp/x\nclientPort=21a\n", "clientPort=21a is not a port"),
])
def test_a_bad_properties_file_is_one_line(tmp_path, text, expected):
    path = tmp_path / "zookeeper.properties"
    if text is not None:
        path.write_text(text)
    result = subprocess.run([str(BIN / "zookeeper-server-start"), str(path)], capture_output=True, text=True,
                            timeout=30)
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and expected in result.stderr, result.stderr
