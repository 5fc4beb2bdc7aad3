"""kafka-server-stop: which command lines are zkafka brokers, the --config filter, SIGNAL; and the whole tool
against stand-in "brokers" (a sleeping script named kafka-server-start, in a temporary directory that the
--config filter names, so no real broker on this machine is ever signalled)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import PurePath

import pytest

from scripts.tools import server_stop
from scripts.tools.server_stop.selection import StopError, broker_config, resolve, selected, signal_of


@pytest.mark.parametrize("argv, config", [
    (["/usr/bin/python3", "-m", "brokers", "--config", "/c/server.properties"], "/c/server.properties"),
    (["python", "-m", "brokers", "--config=/c/s.properties", "--log-level", "DEBUG"], "/c/s.properties"),
    (["python", "-u", "-X", "dev", "-m", "brokers", "cfg/s.properties", "--override", "a=b"], "cfg/s.properties"),
    (["python", "-mbrokers", "s.properties"], "s.properties"),
    (["python", "-m", "brokers", "--override", "x=y", "--log-level", "INFO", "s.properties"], "s.properties"),
    (["/v/bin/python", "/v/bin/kafka-server-start", "--override", "a=b", "c.properties"], "c.properties"),
    (["/v/bin/kafka-server-start", "c.properties"], "c.properties"),
    (["python", "-m", "brokers"], None),  # no config: nothing to match a filter against, but still a broker
])
def test_broker_command_lines(argv, config):
    assert broker_config(argv) == config


@pytest.mark.parametrize("argv", [
    ["python", "-m", "brokersx", "s.properties"],
    ["python", "script.py", "-m", "brokers", "s.properties"],
    ["python", "-c", "pass", "-m", "brokers"],
    ["java", "-cp", "x", "kafka.Kafka", "server.properties"],
    ["python", "-m", "pytest", "tests/kafka-server-start"],
    ["vim", "/v/bin/kafka-server-start"],
    ["/bin/sh", "-m", "brokers"],
    [],
])
def test_other_command_lines(argv):
    assert broker_config(argv) is None


def test_relative_configs_are_the_brokers_working_directorys():
    assert resolve("config/s.properties", "/srv/kafka") == PurePath("/srv/kafka/config/s.properties")
    assert resolve("/abs/s.properties", "/srv") == PurePath("/abs/s.properties")


def test_selection():
    config = PurePath("/c/cluster/broker-1/server.properties")
    assert selected(config, [])
    assert selected(config, [(PurePath("/c/cluster"), True)])
    assert selected(config, [(config, False)])
    assert not selected(config, [(PurePath("/c/cluster/broker-2/server.properties"), False)])
    assert not selected(config, [(PurePath("/c/clus"), True)])  # a prefix of the name is not the directory


def test_signals():
    assert signal_of(None) is signal.SIGTERM
    assert signal_of("KILL") is signal.SIGKILL and signal_of("SIGINT") is signal.SIGINT and signal_of("15") is signal.SIGTERM
    with pytest.raises(StopError, match="SIGNAL=BOOM"):
        signal_of("BOOM")


# -- the tool, against stand-ins --------------------------------------------------------------------
@pytest.fixture
def stand_ins(tmp_path):
    """Two fake brokers under tmp_path (one started with a relative config path); stopped after the test."""
    script = tmp_path / "bin" / "kafka-server-start"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(60)\n")
    procs = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "server.properties").write_text("broker.id=1\n")
        config = "server.properties" if name == "b" else str(tmp_path / name / "server.properties")
        procs[name] = subprocess.Popen([sys.executable, str(script), config], cwd=tmp_path / name)
    deadline = time.monotonic() + 10

    def listed() -> int:
        return len([p for p, _ in server_stop.broker_processes() if p in {x.pid for x in procs.values()}])

    try:
        while listed() < 2:  # until /proc shows their command lines
            assert time.monotonic() < deadline, "the stand-in brokers never showed in /proc"
            time.sleep(0.02)
        yield tmp_path, procs
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_stop_the_brokers_a_config_names(stand_ins, capsys):
    root, procs = stand_ins
    found = {pid: config for pid, config in server_stop.broker_processes()}
    assert found[procs["b"].pid] == root / "b" / "server.properties"  # relative: the process's cwd
    assert server_stop.main(["--config", str(root / "a" / "server.properties")]) == 0
    assert procs["a"].wait(10) == -signal.SIGTERM and procs["b"].poll() is None
    assert server_stop.main(["--config", str(root)]) == 0
    assert procs["b"].wait(10) == -signal.SIGTERM
    assert capsys.readouterr().out == ""
    assert server_stop.main(["--config", str(root)]) == 1
    assert capsys.readouterr().out == "No kafka server to stop\n"


def test_signal_from_the_environment(stand_ins, monkeypatch):
    root, procs = stand_ins
    monkeypatch.setenv("SIGNAL", "KILL")
    assert server_stop.main(["--config", str(root / "b")]) == 0
    assert procs["b"].wait(10) == -signal.SIGKILL and procs["a"].poll() is None


def test_bad_flags_are_one_line(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as exited:
        server_stop.main(["--config", str(tmp_path / "nope")])
    assert exited.value.code == 1 and capsys.readouterr().err == f"kafka-server-stop: --config {tmp_path / 'nope'}: no such file or directory\n"
    with pytest.raises(SystemExit) as exited:
        server_stop.main(["--process-role", "broker"])
    assert exited.value.code == 1 and "unrecognized arguments" in capsys.readouterr().err
    monkeypatch.setenv("SIGNAL", "nope")
    assert server_stop.main(["--config", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "kafka-server-stop: SIGNAL=nope: not a signal name or number\n"
