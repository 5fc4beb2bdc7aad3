"""The parts of scripts.local.spark.standalone that start nothing: the spec on free ports, a cluster dir without
a cluster, the URLs, which processes are this cluster's executors, and a master that does not answer."""
from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict

import pytest

from scripts.local.spark import standalone
from scripts.local.spark.standalone import SparkClusterError, SparkClusterSpec, SparkStandaloneCluster
from zkafka.testing.ports import ephemeral_low


def test_spark_home_is_the_pyspark_wheel():
    home = standalone.spark_home()
    assert (home / "bin" / "spark-class").exists() and (home / "bin" / "spark-submit").exists()
    assert (home / "jars").is_dir()


def test_spark_home_without_pyspark_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(standalone, "pyspark_jars_dir", lambda: None)
    with pytest.raises(SparkClusterError, match=r"zkafka\[spark\]"):
        standalone.spark_home()


# ---------------------------------------------------------------------------------------------- the spec


def test_on_free_ports_gives_two_distinct_free_ports_below_the_ephemeral_range():
    for _ in range(5):
        spec = SparkClusterSpec.on_free_ports(3, cores_per_worker=2)
        assert (spec.workers, spec.cores_per_worker, spec.memory_per_worker) == (3, 2, "1g")
        assert spec.master_port != spec.master_webui_port
        assert max(spec.master_port, spec.master_webui_port) < ephemeral_low()


def test_on_free_ports_never_gives_the_master_and_its_web_ui_the_same_port(monkeypatch):
    """Each port is found free on its own, so both lookups can draw the same one (as ClusterSpec.on_free_ports
    knows and retries): here the first two draws are equal, as random draws sometimes are."""
    draws = iter([17077, 17077, 17078, 17079, 17080, 17081])
    monkeypatch.setattr(standalone, "find_free_base_port", lambda size=1, *a, **k: next(draws))
    spec = SparkClusterSpec.on_free_ports(2)
    assert spec.master_port != spec.master_webui_port, (
        f"the master and its web UI were both given port {spec.master_port}")


# ------------------------------------------------------------------------------------------- the cluster


def test_a_dir_without_a_cluster_says_how_to_start_one(tmp_path):
    with pytest.raises(SparkClusterError) as info:
        SparkStandaloneCluster(tmp_path)
    assert "zkafka spark up" in str(info.value) and str(tmp_path.resolve()) in str(info.value)


def test_the_urls_of_a_given_spec(tmp_path):
    cluster = SparkStandaloneCluster(tmp_path, SparkClusterSpec(master_port=17077, master_webui_port=18180))
    assert cluster.master_url == "spark://127.0.0.1:17077"
    assert cluster.webui_url == "http://127.0.0.1:18180"
    other = SparkStandaloneCluster(tmp_path, SparkClusterSpec(host="10.0.0.7"))
    assert (other.master_url, other.webui_url) == ("spark://10.0.0.7:7077", "http://10.0.0.7:8180")


def test_the_spec_is_read_back_from_the_cluster_dir(tmp_path):
    spec = SparkClusterSpec(3, 2, "2g", master_port=17077, master_webui_port=18180, worker_pids=[11, 12, 13],
                            master_pid=10)
    (tmp_path / "spark-cluster.json").write_text(json.dumps(asdict(spec)))
    cluster = SparkStandaloneCluster(tmp_path)
    assert cluster.spec == spec and cluster.dir == tmp_path.resolve()
    assert cluster.master_url == "spark://127.0.0.1:17077"


def test_no_executors_running_means_no_pids(tmp_path):
    assert SparkStandaloneCluster(tmp_path, SparkClusterSpec()).executor_pids() == []


def test_an_executor_is_a_process_of_the_executor_class_working_under_a_worker_of_this_cluster(tmp_path,
                                                                                                monkeypatch):
    """This test's own process plays the executor JVM: its command line is made the executor class's and its
    working directory is moved around the cluster dir."""
    me = os.getpid()
    monkeypatch.setattr(standalone, "cmdline",
                        lambda pid: f"java -cp x {standalone.EXECUTOR_CLASS} --executor-id 0" if pid == me else "")
    cluster = SparkStandaloneCluster(tmp_path, SparkClusterSpec(workers=2))
    for folder, mine in (("worker-2/work/app-1/0", True), ("worker-1/work/app-7/3", True),
                         ("worker-3/work/app-1/0", False),  # not a worker of this cluster
                         ("worker-1/workspace/app-1/0", False), ("worker-1", False), ("elsewhere", False)):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        monkeypatch.chdir(tmp_path / folder)
        assert cluster.executor_pids() == ([me] if mine else []), folder
    monkeypatch.setattr(standalone, "cmdline", lambda pid: "java org.apache.spark.deploy.worker.Worker")
    monkeypatch.chdir(tmp_path / "worker-1/work/app-7/3")
    assert cluster.executor_pids() == []  # the right folder, but not an executor


def test_a_master_that_does_not_answer_has_no_state(tmp_path, monkeypatch):
    for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):  # urllib would ask a proxy instead
        monkeypatch.delenv(proxy, raising=False)
    with socket.socket() as reserved:  # bound, never listening: connections to it are refused at once
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        cluster = SparkStandaloneCluster(tmp_path, SparkClusterSpec(master_webui_port=port))
        assert cluster.state() is None
        assert cluster.alive_workers() == 0


def test_recorded_pids_that_are_no_longer_this_clusters_daemons_are_left_alone(tmp_path, monkeypatch):
    """A pid from spark-cluster.json that now belongs to another process (reused after a reboot, say) is not
    this cluster's: running_pids leaves it out, so down never signals it."""
    me = os.getpid()
    spec = standalone.SparkClusterSpec(workers=1, master_port=17077, master_webui_port=18180, worker_pids=[me],
                                       master_pid=me)
    cluster = standalone.SparkStandaloneCluster(tmp_path, spec)
    monkeypatch.setattr(standalone, "cmdline", lambda pid: "python -m pytest")
    assert cluster.running_pids() == []
    monkeypatch.setattr(standalone, "cmdline",
                        lambda pid: "java org.apache.spark.deploy.worker.Worker spark://127.0.0.1:17077")
    assert cluster.running_pids() == [me, me]
    monkeypatch.setattr(standalone, "cmdline",
                        lambda pid: "java org.apache.spark.deploy.worker.Worker spark://127.0.0.1:27077")
    assert cluster.running_pids() == []  # another cluster's worker


def test_down_forgets_the_cluster_and_a_second_down_is_a_clear_error(tmp_path, monkeypatch):
    spec = standalone.SparkClusterSpec(workers=1, master_port=17077, master_webui_port=18180, worker_pids=[],
                                       master_pid=None)
    (tmp_path / "spark-cluster.json").write_text(json.dumps(asdict(spec)))
    standalone.SparkStandaloneCluster(tmp_path).down()
    assert not (tmp_path / "spark-cluster.json").exists()
    with pytest.raises(standalone.SparkClusterError, match="zkafka spark up"):
        standalone.SparkStandaloneCluster(tmp_path)


def test_up_refuses_a_dir_whose_cluster_still_runs(tmp_path, monkeypatch):
    spec = standalone.SparkClusterSpec(workers=1, master_port=17077, master_webui_port=18180)
    (tmp_path / "spark-cluster.json").write_text(json.dumps(asdict(spec)))
    monkeypatch.setattr(standalone.SparkStandaloneCluster, "running_pids", lambda self: [12345])
    monkeypatch.setattr(standalone.SparkStandaloneCluster, "_spawn", lambda *a: pytest.fail("started a JVM"))
    with pytest.raises(standalone.SparkClusterError, match="already runs"):
        standalone.SparkStandaloneCluster(tmp_path, spec).up()
