"""zookeeper-server-start: its command line, a Kafka-style zookeeper.properties' checks (one line each), the JVM's
command line with Kafka's environment variables; and `zkafka cluster up --help` naming its placeholders."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.local.zookeeper import ZooKeeperError
from scripts.local.zookeeper.properties import StartArgs, check, java_command, log4j2_console, parse_argv
from scripts.local.zookeeper.server_start import main, prepare

KAFKA_DEFAULTS = {"dataDir": "/tmp/zookeeper", "clientPort": "2181", "maxClientCnxns": "0",
                  "admin.enableServer": "false"}


def test_argv():
    assert parse_argv(["z.properties"]) == StartArgs("z.properties")
    assert parse_argv(["-daemon", "z.properties"]) == StartArgs("z.properties", daemon=True)
    for bad in ([], ["-daemon"], ["a", "b"], ["--help"]):
        with pytest.raises(ZooKeeperError, match=r"USAGE: zookeeper-server-start \[-daemon\] zookeeper.properties"):
            parse_argv(bad)


def test_kafkas_own_file_passes():
    check(KAFKA_DEFAULTS, "zookeeper.properties")
    check({"dataDir": "/d", "secureClientPort": "2281", "tickTime": "500", "server.1": "h:2888:3888"}, "z")


@pytest.mark.parametrize("change, message", [
    ({"dataDir": ""}, "z: dataDir is not set"),
    ({"clientPort": ""}, "z: clientPort is not set"),
    ({"clientPort": "70000"}, "z: clientPort=70000 is not a port"),
    ({"secureClientPort": "x"}, "z: secureClientPort=x is not a port"),
    ({"tickTime": "2s"}, "z: tickTime=2s is not a number"),
    ({"tickTime": "0"}, "z: tickTime=0 must be positive"),
    ({"maxSessionTimeout": "lots"}, "z: maxSessionTimeout=lots is not a number"),
])
def test_bad_settings_name_the_key(change, message):
    with pytest.raises(ZooKeeperError, match=message):
        check({**KAFKA_DEFAULTS, **change}, "z")


def test_the_jvm_command_line():
    command = java_command("/j/java", "cp1:cp2", Path("/c/z.properties"), Path("/logs"), {})
    assert command[0] == "/j/java" and command[-4:] == ["-cp", "cp1:cp2", "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                                       "/c/z.properties"]
    assert "-Dlog4j2.configurationFile=/logs/zookeeper-log4j2.properties" in command
    assert "-Dzookeeper.admin.enableServer=false" in command and "-Xmx128m" in command
    env = {"KAFKA_HEAP_OPTS": "-Xmx512M -Xms512M", "KAFKA_OPTS": "-Djava.security.auth.login.config=/j.conf",
           "KAFKA_LOG4J_OPTS": "-Dlog4j2.configurationFile=/mine.properties", "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseG1GC"}
    command = java_command("java", "cp", Path("/z"), Path("/logs"), env)
    assert command[1:3] == ["-Xmx512M", "-Xms512M"] and "-Xmx128m" not in command
    assert "-XX:+UseG1GC" in command and "-Djava.security.auth.login.config=/j.conf" in command
    assert "-Dlog4j2.configurationFile=/mine.properties" in command
    assert "rootLogger.appenderRef.console.ref = STDOUT" in log4j2_console()


def test_prepare_reads_and_checks_the_file(tmp_path):
    path = tmp_path / "zookeeper.properties"
    path.write_text("dataDir=/tmp/zk\nclientPort=2181\n")
    env = {"ZOOKEEPER_CLASSPATH": "/opt/zk/*", "LOG_DIR": str(tmp_path / "logs"), "PATH": "/usr/bin:/bin",
           "JAVA_HOME": ""}
    try:
        command, daemon, log_dir = prepare(["-daemon", str(path)], env)
    except ZooKeeperError as exc:  # no java on this machine: the one line names it
        assert "java not found" in str(exc)
        return
    assert daemon and log_dir == tmp_path / "logs" and command[-1] == str(path.resolve())
    assert (log_dir / "zookeeper-log4j2.properties").is_file() and "/opt/zk/*" in command


def test_main_prints_one_line_and_exits_1(tmp_path, capsys):
    assert main([str(tmp_path / "nope.properties")]) == 1
    assert capsys.readouterr().err == f"zookeeper-server-start: cannot read {tmp_path / 'nope.properties'}: No such file or directory\n"
    (tmp_path / "bad.properties").write_bytes(b"\xff\xfe")
    assert main([str(tmp_path / "bad.properties")]) == 1
    assert "is not a properties file" in capsys.readouterr().err


def test_cluster_up_help_names_the_placeholders():
    result = subprocess.run([sys.executable, "-m", "scripts.cli", "cluster", "up", "--help"], capture_output=True,
                            text=True, timeout=60, cwd=Path(__file__).resolve().parents[3],
                            env={**os.environ, "COLUMNS": "1000"})  # one line per flag: nothing wrapped mid-word
    assert result.returncode == 0
    assert "{kafka_port} is the broker's own Kafka port" in result.stdout and "{broker_id} its id" in result.stdout
    assert "'listeners=SASL_SSL://127.0.0.1:{kafka_port}'" in result.stdout


def test_netty_jars_for_a_tls_server(tmp_path):
    from scripts.local.zookeeper.classpath import netty_classpath, netty_jars

    names = ["netty-handler-4.2.1.Final.jar", "netty-transport-native-epoll-4.2.1.Final-linux-x86_64.jar",
             "netty-transport-native-epoll-4.2.1.Final-linux-aarch_64.jar", "netty-transport-native-kqueue-4.2.1.Final-osx-x86_64.jar",
             "netty-tcnative-boringssl-static-2.0.7.Final-linux-x86_64.jar", "netty-tcnative-classes-2.0.7.Final.jar",
             "arrow-memory-netty-19.jar", "netty-common-4.2.1.Final-sources.jar"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in netty_jars(tmp_path, "x86_64")] == [
        "netty-handler-4.2.1.Final.jar", "netty-tcnative-classes-2.0.7.Final.jar",
        "netty-transport-native-epoll-4.2.1.Final-linux-x86_64.jar"]
    assert "netty-transport-native-epoll-4.2.1.Final-linux-aarch_64.jar" in [p.name for p in netty_jars(tmp_path, "aarch64")]
    assert netty_classpath({"ZOOKEEPER_HOME": "/opt/zookeeper"}) == []  # its lib/ has Netty already
