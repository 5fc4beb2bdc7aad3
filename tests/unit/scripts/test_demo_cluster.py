"""``zkafka demo cluster``'s pure parts: the preflight messages (Java, ports, a cluster already in the
dir), the progress lines, the closing summary, and the CLI's flag checks."""
from __future__ import annotations

import io
import json
import socket
import time
from pathlib import Path

import pytest

from scripts.demo import cluster as demo_cluster
from scripts.cli import build_parser, main
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.demo.cluster import (DemoError, DemoOptions, Progress, busy_ports, check_java, demo_ports,
                                  java_problem, parse_java_version, ports_message, reusable_cluster, stop_hint_for,
                                  summary)

OPENJDK_17 = ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n'
              'OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)\n')
OPENJDK_11 = 'openjdk version "11.0.22" 2024-01-16\nOpenJDK Runtime Environment (build 11.0.22+7-post-Debian-1)\n'
ORACLE_8 = 'java version "1.8.0_392"\nJava(TM) SE Runtime Environment (build 1.8.0_392-b08)\n'
TEMURIN_21 = 'openjdk version "21" 2023-09-19\nOpenJDK Runtime Environment Temurin-21+35 (build 21+35)\n'


@pytest.mark.parametrize("text, major", [(OPENJDK_17, 17), (OPENJDK_11, 11), (ORACLE_8, 8), (TEMURIN_21, 21),
                                         ("Picked up JAVA_TOOL_OPTIONS: -Xmx1g\n" + OPENJDK_17, 17),
                                         ("bash: java: command not found", None), ("", None)])
def test_parse_java_version(text, major):
    assert parse_java_version(text) == major


def test_java_17_and_newer_pass():
    assert java_problem("/usr/bin/java", OPENJDK_17) is None
    assert java_problem("/opt/jdk/bin/java", TEMURIN_21) is None


def test_missing_java_says_how_to_install_it():
    message = java_problem(None, "")
    assert message.startswith("Java 17+ is needed") and "none was found on PATH or in $JAVA_HOME" in message
    assert "apt-get install openjdk-17-jre-headless" in message
    assert "make demo" in message


@pytest.mark.parametrize("text, found", [(OPENJDK_11, "Java 11"), (ORACLE_8, "Java 8")])
def test_old_java_names_the_version_and_the_fix(text, found):
    message = java_problem("/usr/lib/jvm/old/bin/java", text)
    assert f"/usr/lib/jvm/old/bin/java is {found}," in message
    assert "needs Java 17+" in message
    assert "apt-get install openjdk-17-jre-headless" in message and "JAVA_HOME" in message


def test_unreadable_java_version_quotes_what_java_said():
    message = java_problem("/usr/bin/java", "Error: could not open `/usr/lib/jvm/jvm.cfg'\n")
    assert "could not read the version of /usr/bin/java" in message
    assert "Error: could not open" in message and "openjdk-17-jre-headless" in message


def _fake_java(tmp_path: Path, output: str) -> dict[str, str]:
    """A JAVA_HOME whose bin/java prints ``output`` on stderr, as ``java -version`` does."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    (tmp_path / "version.txt").write_text(output)
    java.write_text(f"#!/bin/sh\ncat {tmp_path / 'version.txt'} >&2\n")
    java.chmod(0o755)
    return {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": "/nonexistent"}


def test_check_java_runs_java_version(tmp_path):
    env = _fake_java(tmp_path, OPENJDK_17)
    assert check_java(env) == f"Java 17.0.15 ({tmp_path / 'jdk' / 'bin' / 'java'})"


def test_check_java_rejects_an_old_one(tmp_path):
    with pytest.raises(DemoError, match=r"is Java 11, ZooKeeper here needs Java 17\+"):
        check_java(_fake_java(tmp_path, OPENJDK_11))


def test_check_java_without_any_java(tmp_path):
    with pytest.raises(DemoError, match="apt-get install openjdk-17-jre-headless"):
        check_java({"PATH": str(tmp_path)})


def test_demo_ports_default_to_kafkas_usual_ones():
    assert demo_ports(DemoOptions()) == [
        ("ZooKeeper", 2181), ("Kafka, broker 1", 9092), ("Kafka, broker 2", 9093), ("Kafka, broker 3", 9094),
        ("HTTP, broker 1", 8080), ("HTTP, broker 2", 8081), ("HTTP, broker 3", 8082)]


def test_a_bound_port_is_busy_and_a_released_one_is_not():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert busy_ports([("Kafka, broker 1", port)]) == [("Kafka, broker 1", port)]
    assert busy_ports([("Kafka, broker 1", port)]) == []


def test_a_bound_but_not_listening_port_is_busy_too():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        assert busy_ports([("ZooKeeper", port)]) == [("ZooKeeper", port)]


def test_ports_message_names_the_ports_and_how_to_find_the_process():
    message = ports_message([("Kafka, broker 1", 9092), ("HTTP, broker 1", 8080)])
    assert message.startswith("ports already in use: 9092 (Kafka, broker 1), 8080 (HTTP, broker 1).")
    assert "ss -ltnp 'sport = :9092'" in message
    assert "make down" in message and "--kafka-port-base" in message
    assert ports_message([("ZooKeeper", 2181)]).startswith("port already in use: 2181 (ZooKeeper).")


def test_no_cluster_json_means_nothing_to_reuse(tmp_path):
    assert reusable_cluster(tmp_path, "make down") is None


def test_a_stopped_cluster_is_not_reused(tmp_path):
    spec = ClusterSpec(3, 1, 2, 3)  # ports nobody serves: every health check fails at once
    (tmp_path / "cluster.json").write_text(json.dumps(spec.__dict__))
    assert reusable_cluster(tmp_path, "make down") is None


def test_a_partly_running_cluster_says_to_stop_it(tmp_path, monkeypatch):
    (tmp_path / "cluster.json").write_text(json.dumps(ClusterSpec(3, 1, 2, 3).__dict__))
    status = {"zookeeper": {"alive": True}, "controller": None,
              "brokers": [{"id": 1, "alive": True}, {"id": 2, "alive": False}, {"id": 3, "alive": False}]}
    monkeypatch.setattr(Cluster, "status", lambda self: status)
    with pytest.raises(DemoError, match=r"only partly running \(brokers alive: \[1\], ZooKeeper up\): stop it "
                                        r"\(make down\)"):
        reusable_cluster(tmp_path, "make down")


def test_stop_hint_is_make_down_only_for_the_makefiles_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Makefile").write_text("")
    assert stop_hint_for(Path(".zkafka")) == "make down  (or: zkafka cluster down --dir .zkafka)"
    assert stop_hint_for(tmp_path / "other") == f"zkafka cluster down --dir {tmp_path / 'other'}"


def test_plain_progress_prints_a_line_before_and_after_each_step():
    out = io.StringIO()
    progress = Progress(2, out, animate=False)
    with progress.step("starting things") as step:
        step.detail = "controller: broker 1"
    with pytest.raises(DemoError):
        with progress.step("breaking things"):
            raise DemoError("boom")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/2] starting things ..."
    assert lines[1].startswith("✓ [1/2] controller: broker 1 (") and lines[1].endswith(" s)")
    assert lines[2] == "[2/2] breaking things ..."
    assert lines[3].startswith("✗ [2/2] breaking things: failed after ")
    assert "\r" not in out.getvalue() and "\033" not in out.getvalue()


def test_animated_progress_spins_then_replaces_the_line():
    out = io.StringIO()
    progress = Progress(1, out, animate=True)
    with progress.step("waiting"):
        time.sleep(0.35)
    text = out.getvalue()
    assert "\r\033[K" in text and "[1/1] waiting (0 s)" in text
    assert text.splitlines()[-1].split("\033[K")[-1].startswith("✓ [1/1] waiting — done (")


def test_progress_animates_only_on_a_terminal():
    assert Progress(1, io.StringIO()).animate is False


def _cluster(tmp_path: Path) -> Cluster:
    return Cluster(tmp_path / ".zkafka", ClusterSpec(3, 2181, 9092, 8080))


def test_summary_lists_bootstrap_zookeeper_health_examples_and_how_to_stop(tmp_path):
    text = summary(_cluster(tmp_path), dashboard=None, stop_hint="make down", bin_prefix=".venv/bin/", kcat=True)
    lines = text.splitlines()
    assert lines[0].startswith("┌─ the zkafka demo cluster is up ") and lines[-1].startswith("└─")
    assert all(line.startswith("│") for line in lines[1:-1])
    assert "│ bootstrap servers  127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094" in lines
    assert "│ ZooKeeper connect  127.0.0.1:2181" in lines
    assert "│ health             http://127.0.0.1:8080/healthz (broker 1; 8081, 8082 for the others)" in lines
    assert "dashboard" not in text
    assert "│   kcat -b 127.0.0.1:9092 -L" in lines
    assert ("│   .venv/bin/kafka-console-consumer --bootstrap-server 127.0.0.1:9092 --topic demo --from-beginning "
            "--max-messages 10") in lines
    assert "│   .venv/bin/kafka-consumer-groups --bootstrap-server 127.0.0.1:9092 --list" in lines
    assert f"│ logs               {tmp_path / '.zkafka'}/broker-<id>/broker.log, " in text
    assert lines[-2] == "│ stop               make down"


def test_summary_shows_a_dashboard_when_there_is_one_and_how_to_get_kcat(tmp_path):
    text = summary(_cluster(tmp_path), dashboard="http://127.0.0.1:8080/", stop_hint="make down", kcat=False)
    assert "│ dashboard          http://127.0.0.1:8080/" in text.splitlines()
    assert "healthz" not in text
    assert "kcat -b 127.0.0.1:9092 -L   (kcat: apt-get install kcat)" in text
    assert "│   kafka-topics --bootstrap-server 127.0.0.1:9092 --describe --topic demo" in text.splitlines()
    assert "│ metrics            http://127.0.0.1:8080/metrics" in text.splitlines()
    assert "http://127.0.0.1:8080/api/v1/topics/demo/records" in text  # the REST proxy, with curl


def test_dashboard_url_is_none_when_nothing_serves_html():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert demo_cluster.dashboard_url(port, timeout=0.5) is None


def test_cli_parses_demo_cluster_with_defaults():
    args = build_parser().parse_args(["demo", "cluster"])
    assert (args.dir, args.brokers, args.records, args.groups_seconds, args.groups) == (Path(".zkafka"), 3, 5000,
                                                                                          20.0, True)
    assert (args.zookeeper_port, args.kafka_port_base, args.http_port_base) == (2181, 9092, 8080)
    assert build_parser().parse_args(["demo", "cluster", "--no-groups"]).groups is False


def test_cli_passes_the_options_through(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(demo_cluster, "demo_command", lambda options: seen.append(options) or 7)
    code = main(["demo", "cluster", "--dir", str(tmp_path), "--records", "500", "--groups-seconds", "12",
                 "--zookeeper-port", "3000", "--kafka-port-base", "4000", "--http-port-base", "5000"])
    assert code == 7
    assert seen == [DemoOptions(tmp_path, 3, 500, 12.0, True, 3000, 4000, 5000)]


@pytest.mark.parametrize("argv", [["--groups-seconds", "5"], ["--records", "0"], ["--brokers", "0"],
                                  ["--kafka-port-base", "65535"]])
def test_cli_rejects_bad_flags(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["demo", "cluster", *argv])
    assert exc.value.code == 2
