"""``zkafka demo cluster`` (what ``make demo`` runs) end to end on free ports: preflight, a real ZooKeeper
+ 3 brokers, topic demo, records through the console tools, a short consumer-group demo, the summary;
then a second run that reuses the running cluster; and the preflight refusing a busy port."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

from scripts.local.cluster import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]


def _demo(directory: Path, spec: ClusterSpec, *flags: str, timeout: float = 280) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.cli", "demo", "cluster", "--dir", str(directory),
                           "--zookeeper-port", str(spec.zookeeper_port), "--kafka-port-base", str(spec.kafka_port_base),
                           "--http-port-base", str(spec.http_port_base), *flags],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _down(directory: Path) -> None:
    subprocess.run([sys.executable, "-m", "scripts.cli", "cluster", "down", "--dir", str(directory)], cwd=ROOT,
                   capture_output=True, timeout=120)


def test_demo_cluster_runs_every_step_and_leaves_the_cluster_up(tmp_path):
    spec = ClusterSpec.on_free_ports(3)
    directory = tmp_path / "demo"
    bootstrap = ",".join(f"127.0.0.1:{spec.kafka_port_base + i}" for i in range(3))
    try:
        proc = _demo(directory, spec, "--records", "500", "--groups-seconds", "12")
        out = proc.stdout
        assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{proc.stderr[-5000:]}"
        assert "\r" not in out and "\033" not in out  # not a terminal: plain lines, no spinner
        for step in ("[1/6] preflight: Java, ZooKeeper jars, ports ...", "[2/6] starting ZooKeeper and 3 brokers ...",
                     "[3/6] creating topic demo (6 partitions, RF 3) with kafka-topics ...",
                     "[4/6] producing 500 records with kafka-console-producer ...",
                     "[6/6] consumer-group demo for 12 s (zkafka demo groups) ..."):
            assert step in out.splitlines(), out
        assert re.search(r"✓ \[1/6\] Java \d+", out)
        assert re.search(r"✓ \[2/6\] controller: broker [123] \(", out)
        assert re.search(r"Topic: demo\tPartition: 5\tLeader: [123]\tReplicas: ", out)
        assert "✓ [5/6] all 500 records read back (" in out
        assert re.search(r"│ \[ *[\d.]+s\] produced [\d,]+ records \(acknowledged\), consumed [\d,]+ distinct values "
                         r"in [\d,]+ deliveries: 0 lost", out), out
        assert f"│ bootstrap servers  {bootstrap}" in out
        assert f"│ ZooKeeper connect  127.0.0.1:{spec.zookeeper_port}" in out
        assert f"│ dashboard          http://127.0.0.1:{spec.http_port_base}/" in out  # / serves the dashboard now
        assert f"│ metrics            http://127.0.0.1:{spec.http_port_base}/metrics" in out
        assert f"│ stop               zkafka cluster down --dir {directory}" in out
        # the cluster is still up: the same command again reuses it and finds the earlier records
        again = _demo(directory, spec, "--records", "200", "--no-groups", timeout=120)
        assert again.returncode == 0, f"exit {again.returncode}\n{again.stdout}\n{again.stderr[-5000:]}"
        assert "reusing the cluster already running there" in again.stdout
        assert "✓ [5/5] all 200 records read back (after 500 from earlier runs)" in again.stdout, again.stdout
    finally:
        _down(directory)


def test_demo_cluster_refuses_a_busy_port_and_says_how_to_find_its_owner(tmp_path):
    spec = ClusterSpec.on_free_ports(3)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", spec.kafka_port_base + 1))
        squatter.listen()
        proc = _demo(tmp_path / "demo", spec, "--no-groups", timeout=60)
    assert proc.returncode == 1, proc.stdout
    assert f"error: port already in use: {spec.kafka_port_base + 1} (Kafka, broker 2)." in proc.stdout
    assert f"ss -ltnp 'sport = :{spec.kafka_port_base + 1}'" in proc.stdout
    assert "the cluster is left running" not in proc.stdout
    assert not (tmp_path / "demo").exists()
