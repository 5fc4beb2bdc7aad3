"""An invalid soak keeps evidence: the partitions its anomalies name are dumped from every broker, and every
node's whole log is saved; a valid run keeps nothing."""
from __future__ import annotations

from scripts.soak.checker import Anomaly, CheckResult
from scripts.soak.evidence import dump_script, keep_evidence, named_partitions


class RecordingCluster:
    """The two calls evidence makes of a ZkafkaCluster, answered from memory (broker 2 cannot be read)."""

    broker_ids = [1, 2]
    zookeeper_ids = [1]

    def __init__(self):
        self.scripts: list[tuple[str, str]] = []

    def exec_root(self, node, script, check=True):
        self.scripts.append((node, script))
        if node == "broker2":
            raise RuntimeError("container is paused")
        return f"dump of {node}\n"

    def container(self, node):
        class Logs:
            def logs(self):
                return f"whole log of {node}\n".encode()
        return Logs()


def result(*anomalies: Anomaly) -> CheckResult:
    return CheckResult(anomalies={a.kind: a for a in anomalies}, stats={}, valid=False)


def test_named_partitions_are_found_anywhere_in_the_examples():
    examples = [{"value": 8024, "at": [["soak/2", 2675], ["soak/2", 2943]]},
                {"key": "txn-out/11", "nested": {"deeper": ["soak/0"]}}, "not/a/key", "soak", 7]
    assert named_partitions(examples) == {("soak", 2), ("txn-out", 11), ("soak", 0)}


def test_the_dump_script_reads_the_partition_from_both_log_dirs():
    script = dump_script("soak", 2)
    assert "/var/lib/zkafka/data/soak-2" in script and "/var/lib/zkafka/small/soak-2" in script
    assert "zkafka log dump --print-data-log" in script


def test_a_disallowed_anomaly_dumps_its_partitions_from_every_broker_and_keeps_every_log(tmp_path):
    cluster = RecordingCluster()
    duplicate = Anomaly("duplicate", 1, [{"value": 8024, "at": [["soak/2", 2675], ["soak/2", 2943]]}], False, "")
    allowed = Anomaly("lost-write", 3, [{"value": 1, "at": [["soak/5", 7]]}], True, "")
    evidence = keep_evidence(cluster, tmp_path, result(duplicate, allowed))
    assert evidence == tmp_path / "evidence"
    assert sorted(p.name for p in evidence.iterdir()) == [
        "broker1-soak-2.txt", "broker1.log", "broker2-soak-2.txt", "broker2.log", "zk1.log"]
    assert (evidence / "broker1-soak-2.txt").read_text() == "dump of broker1\n"
    assert "not readable: RuntimeError: container is paused" in (evidence / "broker2-soak-2.txt").read_text()
    assert (evidence / "zk1.log").read_text() == "whole log of zk1\n"
    assert [node for node, _ in cluster.scripts] == ["broker1", "broker2"]  # soak/5's anomaly is allowed


def test_a_valid_run_keeps_nothing(tmp_path):
    cluster = RecordingCluster()
    assert keep_evidence(cluster, tmp_path, result(Anomaly("duplicate", 0, [], False, ""))) is None
    assert not (tmp_path / "evidence").exists() and cluster.scripts == []
