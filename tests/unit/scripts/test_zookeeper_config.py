"""scripts/local/zookeeper.py without processes or sockets: zoo.cfg, classpath by prefix, java lookup, srvr parsing,
the state file, and the ``zkafka zookeeper`` flags."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.cli import build_parser, main
from scripts.local import zookeeper as zk

PYSPARK_LIKE = [  # the 8 we need, as pyspark 4.3.0 names them
    "zookeeper-3.9.5.jar", "zookeeper-jute-3.9.5.jar", "slf4j-api-2.0.17.jar", "log4j-slf4j2-impl-2.25.4.jar",
    "log4j-api-2.25.4.jar", "log4j-core-2.25.4.jar", "metrics-core-4.2.37.jar", "snappy-java-1.1.10.8.jar",
]
DISTRACTORS = [  # near-misses that share a prefix with one of the 8 (all really in the wheel, or plausible)
    "log4j-1.2-api-2.25.4.jar", "log4j-layout-template-json-2.25.4.jar", "curator-client-5.9.0.jar",
    "slf4j-api-2.0.17-sources.jar", "metrics-core-ext.jar", "zookeeper-tests.jar", "jul-to-slf4j-2.0.17.jar",
    "snappy-java.txt",
]


def cfg_dict(text: str) -> dict[str, str]:
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def jar_folder(root: Path, names: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        (root / name).write_bytes(b"PK")
    return root


# --------------------------------------------------------------------------- zoo.cfg and log4j2

def test_standalone_cfg_has_loopback_port_ticks_and_no_admin_server(tmp_path):
    cfg = cfg_dict(zk.zoo_cfg(tmp_path / "d", 2999))
    assert cfg["tickTime"] == "2000"
    assert cfg["dataDir"] == str((tmp_path / "d").resolve())
    assert cfg["clientPort"] == "2999" and cfg["clientPortAddress"] == "127.0.0.1"
    assert cfg["admin.enableServer"] == "false"
    assert set(cfg["4lw.commands.whitelist"].split(",")) == {"srvr", "mntr", "stat", "ruok"}
    assert int(cfg["maxSessionTimeout"]) >= 60_000
    assert not any(k.startswith("server.") for k in cfg) and "initLimit" not in cfg
    assert all("#" not in v for v in cfg.values())  # the format has no inline comments


def test_tick_time_is_configurable_and_max_session_follows_large_ticks(tmp_path):
    assert cfg_dict(zk.zoo_cfg(tmp_path, 1, tick_time=500))["tickTime"] == "500"
    assert cfg_dict(zk.zoo_cfg(tmp_path, 1, tick_time=5000))["maxSessionTimeout"] == "100000"
    with pytest.raises(ValueError, match="tick_time"):
        zk.zoo_cfg(tmp_path, 1, tick_time=0)


def test_ensemble_cfg_lists_every_server_on_loopback(tmp_path):
    servers = {1: (3010, 3020), 2: (3011, 3021), 3: (3012, 3022)}
    text = zk.zoo_cfg(tmp_path, 3001, tick_time=500, servers=servers)
    cfg = cfg_dict(text)
    assert cfg["initLimit"] == "10" and cfg["syncLimit"] == "5"
    assert [cfg[f"server.{i}"] for i in (1, 2, 3)] == ["127.0.0.1:3010:3020", "127.0.0.1:3011:3021",
                                                      "127.0.0.1:3012:3022"]


def test_log4j2_config_is_a_console_appender_at_info():
    props = dict(ln.split(" = ", 1) for ln in zk.log4j2_properties().splitlines())
    assert props["appender.console.type"] == "Console"
    assert props["appender.console.target"] == "SYSTEM_OUT"
    assert props["rootLogger.level"] == "INFO"
    assert props["rootLogger.appenderRef.console.ref"] == props["appender.console.name"]


def test_ensemble_port_scheme():
    assert zk.ensemble_ports(2181, 3) == [(2181, 2191, 2201), (2182, 2192, 2202), (2183, 2193, 2203)]
    assert zk.ensemble_ports(2181, 1) == [(2181, 2191, 2201)]
    ten = [p for ports in zk.ensemble_ports(40000, 10) for p in ports]
    assert len(set(ten)) == 30 and min(ten) == 40000 and max(ten) == 40029
    for bad_size in (0, 11):
        with pytest.raises(ValueError, match="ensemble size"):
            zk.ensemble_ports(2181, bad_size)
    with pytest.raises(ValueError, match="65520..65542"):
        zk.ensemble_ports(65520, 3)
    with pytest.raises(ValueError, match="between 1 and 65535"):
        zk.ensemble_ports(0, 1)


def test_ensemble_nodes_get_myid_files_and_the_quorum_main_class(tmp_path):
    ens = zk.ZooKeeperEnsemble(tmp_path, 5000, 3, tick_time=500, classpath="CP", java="/bin/java")
    assert ens.connect_string == "127.0.0.1:5000,127.0.0.1:5001,127.0.0.1:5002"
    node = ens.nodes[1]
    node.write_config()
    assert (tmp_path / "node-2" / "myid").read_text().strip() == "2"
    cfg = cfg_dict(node.cfg_path.read_text())
    assert cfg["clientPort"] == "5001" and cfg["server.3"] == "127.0.0.1:5012:5022"
    assert cfg["dataDir"] == str(tmp_path.resolve() / "node-2")
    cmd = node.command()
    assert cmd[0] == "/bin/java" and cmd[cmd.index("-cp") + 1] == "CP"
    assert cmd[-2:] == [zk.QUORUM_MAIN, str(node.cfg_path)]


def test_standalone_command_line(tmp_path):
    server = zk.ZooKeeperServer(tmp_path, 2999, classpath="a.jar:b.jar", java="/usr/bin/java")
    cmd = server.command()
    assert {"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"} <= set(cmd)
    assert f"-Dlog4j2.configurationFile={tmp_path.resolve() / 'log4j2.properties'}" in cmd
    assert cmd[-2:] == [zk.STANDALONE_MAIN, str(tmp_path.resolve() / "zoo.cfg")]
    assert server.connect_string == "127.0.0.1:2999" and server.myid is None
    server.write_config()
    assert not (tmp_path / "myid").exists() and cfg_dict(server.cfg_path.read_text())["clientPort"] == "2999"


# --------------------------------------------------------------------------- classpath

def test_the_eight_jars_are_picked_by_prefix_in_order(tmp_path):
    folder = jar_folder(tmp_path / "jars", PYSPARK_LIKE + DISTRACTORS)
    assert [p.name for p in zk.jars_by_prefix(folder)] == PYSPARK_LIKE
    assert all(p.parent == folder for p in zk.jars_by_prefix(folder))


def test_an_upgraded_wheel_keeps_working_and_the_highest_version_wins(tmp_path):
    upgraded = [n.replace("3.9.5", "3.10.1").replace("2.25.4", "2.26.0") for n in PYSPARK_LIKE]
    folder = jar_folder(tmp_path / "jars", upgraded + ["log4j-core-2.9.0.jar", "zookeeper-3.9.5.jar"])
    names = [p.name for p in zk.jars_by_prefix(folder)]
    assert names[0] == "zookeeper-3.10.1.jar"  # 3.10 > 3.9: versions compare as numbers, not strings
    assert "log4j-core-2.26.0.jar" in names and "log4j-core-2.9.0.jar" not in names


@pytest.mark.parametrize("missing", PYSPARK_LIKE)
def test_a_missing_jar_is_named(tmp_path, missing):
    folder = jar_folder(tmp_path / "jars", [n for n in PYSPARK_LIKE if n != missing] + DISTRACTORS)
    what = missing.rsplit("-", 1)[0]
    with pytest.raises(zk.ZooKeeperError) as err:
        zk.jars_by_prefix(folder)
    assert f"{what} (" in str(err.value) and str(folder) in str(err.value)
    with pytest.raises(zk.ZooKeeperError, match=what):  # resolve_classpath does not fall back past it
        zk.resolve_classpath({}, pyspark_jars=folder, debian_java_dir=jar_folder(tmp_path / "deb", ["zookeeper.jar"]))


def test_resolution_order(tmp_path):
    pyspark = jar_folder(tmp_path / "jars", PYSPARK_LIKE)
    debian = jar_folder(tmp_path / "java", ["zookeeper.jar", "slf4j-simple.jar", "slf4j-api.jar"])
    nowhere = tmp_path / "nowhere"
    override = {"ZOOKEEPER_CLASSPATH": "/opt/x/*:/opt/y.jar"}
    assert zk.resolve_classpath(override, pyspark_jars=pyspark, debian_java_dir=debian) == "/opt/x/*:/opt/y.jar"
    from_wheel = zk.resolve_classpath({"ZOOKEEPER_CLASSPATH": "  "}, pyspark_jars=pyspark, debian_java_dir=debian)
    assert from_wheel.split(os.pathsep) == [str(pyspark / n) for n in PYSPARK_LIKE]
    assert zk.resolve_classpath({}, pyspark_jars=None, debian_java_dir=debian).split(os.pathsep) == [
        str(debian / "zookeeper.jar"), str(debian / "slf4j-simple.jar")]
    assert zk.resolve_classpath({}, pyspark_jars=nowhere, debian_java_dir=debian).startswith(str(debian))
    with pytest.raises(zk.ZooKeeperError, match="pip install pyspark"):
        zk.resolve_classpath({}, pyspark_jars=None, debian_java_dir=nowhere)


def test_zookeeper_home(tmp_path):
    home = tmp_path / "apache-zookeeper-3.9.5-bin"
    jar_folder(home / "lib", ["zookeeper-3.9.5.jar", "logback-classic-1.2.13.jar"])
    assert zk.resolve_classpath({"ZOOKEEPER_HOME": str(home)}, pyspark_jars=None) == f"{home / 'lib'}/*"
    with pytest.raises(zk.ZooKeeperError, match="no zookeeper-3"):
        zk.resolve_classpath({"ZOOKEEPER_HOME": str(tmp_path)}, pyspark_jars=None)


def test_the_installed_wheel_resolves_without_importing_pyspark():
    code = ("import sys; from scripts.local import zookeeper as z; cp = z.resolve_classpath({}); "
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'; print(cp)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    jars = out.strip().split(os.pathsep)
    assert len(jars) == 8 and all(Path(j).is_file() for j in jars)
    assert Path(jars[0]).name.startswith("zookeeper-3") and Path(jars[0]).parent == zk.pyspark_jars_dir()


# --------------------------------------------------------------------------- java

def test_missing_java_says_what_to_install(tmp_path):
    env = {"PATH": str(tmp_path)}
    with pytest.raises(zk.ZooKeeperError, match=r"apt-get install default-jre-headless"):
        zk.find_java(env)


def test_java_on_path_and_java_home(tmp_path):
    for d in ("bin", "jdk/bin"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "java").write_text("#!/bin/sh\n")
        (tmp_path / d / "java").chmod(0o755)
    assert zk.find_java({"PATH": str(tmp_path / "bin")}) == str(tmp_path / "bin" / "java")
    assert zk.find_java({"PATH": str(tmp_path / "bin"), "JAVA_HOME": str(tmp_path / "jdk")}) == str(
        tmp_path / "jdk" / "bin" / "java")


def test_spawn_without_java_fails_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    server = zk.ZooKeeperServer(tmp_path / "zk", 2999)
    with pytest.raises(zk.ZooKeeperError, match="install a JRE"):
        server.start(timeout=5)
    assert not (tmp_path / "zk" / "zookeeper.pid").exists() and not server.is_running()


# --------------------------------------------------------------------------- srvr

STANDALONE = """Zookeeper version: 3.9.5-293c895a8d966a3ecb92872be4a1daf87d725da2, built on 2026-02-11 20:18 UTC
Latency min/avg/max: 0/0.0/0
Received: 4
Sent: 3
Connections: 1
Outstanding: 0
Zxid: 0x0
Mode: standalone
Node count: 5
"""
LEADER = STANDALONE.replace("Mode: standalone", "Mode: leader").replace("Zxid: 0x0", "Zxid: 0x100000002") + \
    "Proposal sizes last/min/max: 48/48/92\n"
NOT_SERVING = "This ZooKeeper instance is not currently serving requests\n"


def test_parse_srvr_standalone():
    info = zk.parse_srvr(STANDALONE)
    assert info["mode"] == "standalone" and info["serving"] is True
    assert info["zookeeper_version"].startswith("3.9.5-")  # the first ':' splits, the time's ':' stays
    assert info["zookeeper_version"].endswith("20:18 UTC")
    assert info["node_count"] == 5 and info["connections"] == 1 and info["zxid"] == "0x0"
    assert info["latency_min/avg/max"] == "0/0.0/0"


def test_parse_srvr_leader_and_follower():
    info = zk.parse_srvr(LEADER)
    assert info["mode"] == "leader" and info["serving"] and info["zxid"] == "0x100000002"
    assert info["proposal_sizes_last/min/max"] == "48/48/92"
    assert zk.parse_srvr(STANDALONE.replace("standalone", "follower"))["serving"] is True


def test_parse_srvr_not_serving():
    info = zk.parse_srvr(NOT_SERVING)
    assert info["serving"] is False and info["mode"] is None and "not currently serving" in info["message"]
    assert zk.parse_srvr("Mode: observer\n")["serving"] is False  # an observer cannot vote: not "ready"


# --------------------------------------------------------------------------- state file, pid safety

def test_load_rebuilds_the_layout_from_the_state_file(tmp_path):
    (tmp_path / zk.STATE_FILE).write_text(json.dumps({"port": 7000, "ensemble": 3, "tick_time": 500}))
    ens = zk.load(tmp_path)
    assert isinstance(ens, zk.ZooKeeperEnsemble) and ens.tick_time == 500
    assert [n.port for n in ens.nodes] == [7000, 7001, 7002] and ens.nodes[2].data_dir == tmp_path / "node-3"
    (tmp_path / zk.STATE_FILE).write_text(json.dumps({"port": 7000, "ensemble": 1, "tick_time": 2000}))
    assert isinstance(zk.load(tmp_path), zk.ZooKeeperServer)
    with pytest.raises(zk.ZooKeeperError, match="no ZooKeeper was started"):
        zk.load(tmp_path / "other")


def test_a_recycled_pid_is_not_mistaken_for_our_server(tmp_path):
    (tmp_path / zk.STATE_FILE).write_text(json.dumps({"port": 7000, "ensemble": 1, "tick_time": 2000}))
    (tmp_path / "zookeeper.pid").write_text(f"{os.getpid()}\n")  # alive, but it is pytest, not our java
    info = zk.status(tmp_path)
    assert info["state"] == "stopped" and info["nodes"][0]["running"] is False and info["nodes"][0]["pid"] is None
    assert zk.stop(tmp_path) == []  # and stop must not signal it


# --------------------------------------------------------------------------- CLI flags

@pytest.mark.parametrize("argv, flag", [
    (["start", "--ensemble", "11"], "--ensemble"),
    (["start", "--ensemble", "0"], "--ensemble"),
    (["start", "--tick-time", "0"], "--tick-time"),
    (["start", "--port", "70000"], "--port"),
    (["start", "--port", "65530", "--ensemble", "3"], "--port"),
    (["start", "--port", "abc"], "--port"),
    (["start", "--timeout", "-1"], "--timeout"),
    (["status", "--ensemble", "3"], "--ensemble"),
])
def test_bad_flags_are_argparse_errors_naming_the_flag(capsys, argv, flag):
    with pytest.raises(SystemExit) as exit_:
        main(["zookeeper", *argv])
    assert exit_.value.code == 2
    assert flag in capsys.readouterr().err


def test_defaults_and_the_other_subcommands_still_parse():
    args = build_parser().parse_args(["zookeeper", "start"])
    assert (args.port, args.data_dir, args.ensemble, args.tick_time) == (2181, Path(".zkafka/zookeeper"), 1, 2000)
    assert build_parser().parse_args(["zookeeper", "stop"]).data_dir == Path(".zkafka/zookeeper")
    assert build_parser().parse_args(["zookeeper", "status", "--json", "--data-dir", "x"]).json is True
    assert build_parser().parse_args(["log", "dump", "p"]).path == Path("p")
    assert build_parser().parse_args(["bench", "storage", "--total-mib", "1"]).total_mib == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["zookeeper"])


def test_status_and_stop_of_a_dir_where_nothing_was_started(capsys, tmp_path):
    assert main(["zookeeper", "status", "--data-dir", str(tmp_path)]) == 3
    assert "no ZooKeeper was started" in capsys.readouterr().err
    assert main(["zookeeper", "stop", "--data-dir", str(tmp_path)]) == 1
