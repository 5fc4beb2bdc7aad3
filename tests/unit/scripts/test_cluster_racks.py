"""``zkafka cluster up --racks``: ClusterSpec.racks becomes each broker's ``broker.rack`` in its server.properties
(racks[id - 1]); a cluster without racks writes none; ``--racks`` needs one non-empty rack per broker. Nothing is
started: ``Cluster.up`` and ``status`` are replaced where the command would call them."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from scripts import cli
from scripts.local.cluster import Cluster, ClusterSpec


def properties(cluster: Cluster, broker_id: int) -> dict[str, str]:
    text = cluster.write_properties(broker_id).read_text()
    return dict(line.split("=", 1) for line in text.splitlines())


def test_each_broker_gets_its_rack(tmp_path):
    cluster = Cluster(tmp_path / "c", ClusterSpec(4, 2181, 9092, 8080, racks=["r1", "r1", "r2", "zone-3"]))
    assert [properties(cluster, b)["broker.rack"] for b in cluster.broker_ids] == ["r1", "r1", "r2", "zone-3"]
    assert properties(cluster, 3)["broker.id"] == "3"
    assert cluster.write_properties(2) == tmp_path / "c" / "broker-2" / "server.properties"


def test_a_cluster_without_racks_sets_no_broker_rack(tmp_path):
    cluster = Cluster(tmp_path / "c", ClusterSpec(3, 2181, 9092, 8080))
    assert cluster.spec.racks == []
    assert all("broker.rack" not in properties(cluster, b) for b in cluster.broker_ids)


def test_the_racks_survive_the_cluster_json_and_an_older_one_has_none(tmp_path):
    spec = ClusterSpec(2, 2181, 9092, 8080, racks=["a", "b"])
    (tmp_path / "cluster.json").write_text(json.dumps(asdict(spec)))
    assert Cluster(tmp_path).spec.racks == ["a", "b"]
    older = {k: v for k, v in asdict(spec).items() if k != "racks"}
    (tmp_path / "cluster.json").write_text(json.dumps(older))
    assert Cluster(tmp_path).spec.racks == []


# -------------------------------------------------------------------------------------------- the command


@pytest.mark.parametrize("racks", ["a,b", "a,b,c,d", "a,,b", "a,b,"])
def test_racks_must_be_one_non_empty_rack_per_broker(tmp_path, capsys, monkeypatch, racks):
    monkeypatch.setattr(Cluster, "up", lambda self, timeout=60.0: pytest.fail("a cluster was started"))
    with pytest.raises(SystemExit) as info:
        cli.main(["cluster", "up", "--brokers", "3", "--racks", racks, "--dir", str(tmp_path / "c")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--racks" in err and "usage: zkafka cluster up" in err
    assert not (tmp_path / "c").exists()  # nothing started


def test_up_passes_the_racks_to_the_cluster(tmp_path, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(Cluster, "up", lambda self, timeout=60.0: started.append(self.spec))
    monkeypatch.setattr(Cluster, "status", lambda self: {
        "dir": str(self.dir), "bootstrap_servers": self.bootstrap_servers,
        "zookeeper": {"connect": self.zookeeper_connect, "pid": None, "alive": False, "mode": None},
        "brokers": [], "controller": None})
    assert cli.main(["cluster", "up", "--brokers", "3", "--racks", "a,a,b", "--dir", str(tmp_path)]) == 0
    (spec,) = started
    assert spec.brokers == 3 and spec.racks == ["a", "a", "b"]
    capsys.readouterr()
    assert cli.main(["cluster", "up", "--brokers", "2", "--dir", str(tmp_path)]) == 0
    assert started[1].racks == []
