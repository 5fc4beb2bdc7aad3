"""A real ZooKeeper and real broker processes on 127.0.0.1: registration, controller election and
failover, zombie fencing, and the topic lifecycle (reference §1-§3)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from brokers.control import LeaderAndIsrRequest, LeaderAndIsrResponse, PartitionState, decode, encode
from brokers.protocol.errors import ErrorCode
from brokers.security.control_auth import signed_headers
from brokers.zk.paths import ControlPlaneSecretZNode
from scripts.local.cluster import Cluster, ClusterSpec
from scripts.local.zookeeper import find_free_base_port
from tests.integration.conditions import wait_for

SESSION_MS = 4000
REPO = Path(__file__).resolve().parents[2]
KAFKA_TOPICS = Path(sys.executable).with_name("kafka-topics")


@pytest.fixture
def cluster(tmp_path):
    zk_port = find_free_base_port(1)
    kafka_base = find_free_base_port(3)
    http_base = find_free_base_port(3)
    spec = ClusterSpec(brokers=3, zookeeper_port=zk_port, kafka_port_base=kafka_base, http_port_base=http_base,
                       tick_time=500, session_timeout_ms=SESSION_MS)
    c = Cluster(tmp_path / "cluster", spec)
    c.up(timeout=60)
    yield c
    c.down()


def topics(cluster, *args: str) -> str:
    result = subprocess.run([str(KAFKA_TOPICS), "--zookeeper", cluster.zookeeper_connect, *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def partition_states(zk, topic: str) -> dict[int, tuple[dict, int]]:
    out = {}
    for p in zk.get_children(f"/brokers/topics/{topic}/partitions"):
        data, stat = zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")
        out[int(p)] = (json.loads(data), stat.version)
    return out


def leaderships(zk, topic: str) -> dict[int, tuple[int, int, int]]:
    """(leader, leader epoch, controller epoch) per partition: what only a controller writes."""
    return {p: (s["leader"], s["leader_epoch"], s["controller_epoch"]) for p, (s, _) in partition_states(zk, topic).items()}


def leadership_consistent(zk, topic: str, live: set[int]) -> bool:
    states = partition_states(zk, topic)
    return bool(states) and all(s["leader"] in live and s["leader"] in s["isr"] and set(s["isr"]) <= live
                                for s, _ in states.values())


def test_brokers_register_and_one_controller_with_epoch_1(cluster, zk):
    assert sorted(zk.get_children("/brokers/ids")) == ["1", "2", "3"]
    for broker_id in (1, 2, 3):
        data, stat = zk.get(f"/brokers/ids/{broker_id}")
        registration = json.loads(data)
        assert registration["version"] == 5
        assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.kafka_port(broker_id)}"]
        assert stat.ephemeralOwner != 0
        assert cluster.health(broker_id)["broker_epoch"] == stat.czxid  # broker epoch = czxid
    controller = json.loads(zk.get("/controller")[0])["brokerid"]
    assert zk.get("/controller_epoch")[0] == b"1"
    assert cluster.controller() == (controller, 1)
    assert {h["controller"]["active_controller_id"] for h in map(cluster.health, (1, 2, 3))} == {controller}
    cluster_id = json.loads(zk.get("/cluster/id")[0])["id"]
    meta = (cluster.log_dir(1) / "meta.properties").read_text()
    assert "broker.id=1" in meta and f"cluster.id={cluster_id}" in meta


def test_kill_minus_nine_controller_moves_control_and_leadership(cluster, zk):
    topics(cluster, "--create", "--topic", "failover", "--partitions", "6", "--replication-factor", "3")
    wait_for(lambda: leadership_consistent(zk, "failover", {1, 2, 3}), 20, "partition leaders")
    old, epoch = cluster.controller()
    killed_at = time.monotonic()
    cluster.signal_broker(old, signal.SIGKILL)
    new = wait_for(lambda: (c := cluster.controller()) and c[0] != old and c, SESSION_MS / 1000 + 10, "a new controller")
    elapsed = time.monotonic() - killed_at
    assert new[1] > epoch
    assert elapsed <= SESSION_MS / 1000 + 2, f"failover took {elapsed:.1f} s"  # the bound
    live = {1, 2, 3} - {old}
    wait_for(lambda: leadership_consistent(zk, "failover", live), 20, "leaders on live ISR members")


def test_zombie_controller_is_fenced_and_resigns(cluster, zk):
    topics(cluster, "--create", "--topic", "zombie", "--partitions", "4", "--replication-factor", "3")
    wait_for(lambda: leadership_consistent(zk, "zombie", {1, 2, 3}), 20, "partition leaders")
    old, old_epoch = cluster.controller()
    czxid_before = zk.get(f"/brokers/ids/{old}")[1].czxid
    cluster.signal_broker(old, signal.SIGSTOP)
    try:
        new, new_epoch = wait_for(lambda: (c := cluster.controller()) and c[0] != old and c,
                                  SESSION_MS / 1000 + 15, "a successor controller")
        assert new_epoch == old_epoch + 1
        live = {1, 2, 3} - {old}
        wait_for(lambda: leadership_consistent(zk, "zombie", live), 20, "the successor's leadership")
        before = leaderships(zk, "zombie")
        epoch_before = zk.get("/controller_epoch")
    finally:
        cluster.signal_broker(old, signal.SIGCONT)
    # The zombie wakes up, finds its session gone, resigns, and re-registers as a plain broker.
    health = wait_for(lambda: (h := cluster.health(old)) and h["controller"]["resignations"] >= 1
                      and h["controller"]["active_controller_id"] == new and h, 30, "the zombie to resign")
    assert not health["controller"]["is_controller"]
    wait_for(lambda: str(old) in zk.get_children("/brokers/ids"), 30, "re-registration")
    czxid_after = zk.get(f"/brokers/ids/{old}")[1].czxid
    assert czxid_after > czxid_before  # a new session, a new broker epoch
    wait_for(lambda: cluster.health(old)["broker_epoch"] == czxid_after, 10, "the broker to adopt its new epoch")
    # (leaders may since have added the returning broker back to their ISRs: same leader and epoch)
    assert leaderships(zk, "zombie") == before, "the zombie's writes landed"
    assert zk.get("/controller_epoch")[0] == epoch_before[0] and zk.get("/controller_epoch")[1].version == epoch_before[1].version
    assert cluster.controller() == (new, new_epoch)
    # A request from the old controller epoch (as the zombie would send) is refused by brokers.
    target = next(b for b in (1, 2, 3) if b != old)
    stale = LeaderAndIsrRequest(old, old_epoch, -1, (PartitionState("zombie", 0, old_epoch, old, 99, (old,), 0,
                                                                    (1, 2, 3)),), ())
    url = f"http://127.0.0.1:{cluster.http_port(target)}/control/v1/leader-and-isr"
    unsigned = urllib.request.Request(url, data=encode(stale), headers={"Content-Type": "application/msgpack"})
    with pytest.raises(urllib.error.HTTPError) as refused:  # only brokers may call the control plane
        urllib.request.urlopen(unsigned, timeout=5)
    assert refused.value.code == 401
    secret = ControlPlaneSecretZNode.decode(zk.get(ControlPlaneSecretZNode.PATH)[0])  # the zombie has it
    request = urllib.request.Request(url, data=encode(stale), headers={
        "Content-Type": "application/msgpack",
        **signed_headers(secret, "POST", "/control/v1/leader-and-isr", encode(stale))})
    with urllib.request.urlopen(request, timeout=5) as response:
        answer = decode(LeaderAndIsrResponse, response.read())
    assert answer.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert cluster.health(target)["partitions"]["zombie-0"]["leader_epoch"] != 99


def test_topic_lifecycle(cluster, zk):
    out = topics(cluster, "--create", "--topic", "orders", "--partitions", "6", "--replication-factor", "3")
    assert "Created topic orders." in out
    assignment = {int(p): r for p, r in json.loads(zk.get("/brokers/topics/orders")[0])["partitions"].items()}
    assert sorted(assignment) == list(range(6))
    assert all(sorted(r) == [1, 2, 3] for r in assignment.values())
    leaders = [assignment[p][0] for p in range(6)]
    assert all(leaders[p + 1] == leaders[p] % 3 + 1 for p in range(5))  # round-robin first replicas
    wait_for(lambda: leadership_consistent(zk, "orders", {1, 2, 3}), 20, "partition leaders")
    for p, (state, _) in partition_states(zk, "orders").items():  # New -> Online: first live replica leads
        assert (state["leader"], state["isr"], state["leader_epoch"]) == (assignment[p][0], assignment[p], 0)
    for broker_id in (1, 2, 3):  # every broker holds its replicas' logs on disk
        wait_for(lambda b=broker_id: all((cluster.log_dir(b) / f"orders-{p}").is_dir() for p in range(6)), 20,
                 f"logs on broker {broker_id}")

    controller, _ = cluster.controller()
    victim = next(b for b in (1, 2, 3) if b != controller)
    led = [p for p, (s, _) in partition_states(zk, "orders").items() if s["leader"] == victim]
    assert led
    cluster.signal_broker(victim, signal.SIGKILL)
    live = {1, 2, 3} - {victim}
    wait_for(lambda: leadership_consistent(zk, "orders", live), SESSION_MS / 1000 + 10, "leaders moving off the victim")
    states = partition_states(zk, "orders")
    for p in led:  # offline election: the first replica in assignment order that is live and in the ISR
        expected = next(b for b in assignment[p] if b in live)
        assert states[p][0]["leader"] == expected and states[p][0]["leader_epoch"] >= 1
        wait_for(lambda p=p, b=expected: cluster.health(b)["partitions"].get(f"orders-{p}", {}).get("is_leader"), 10,
                 f"broker {expected} to lead orders-{p}")
    # a broker's metadata cache follows the controller's UpdateMetadata
    survivor = next(iter(live))
    wait_for(lambda: cluster.health(survivor)["metadata"]["live_brokers"] == sorted(live), 10, "metadata cache")

    cluster.start_broker(victim)
    cluster.wait_until_ready(30)
    restarted = wait_for(lambda: (h := cluster.health(victim)) and len(h["partitions"]) == 6 and h, 20,
                         "the restarted broker to get its replicas' state")
    assert all(not restarted["partitions"][f"orders-{p}"]["is_leader"] for p in led)
    topics(cluster, "--delete", "--topic", "orders")
    wait_for(lambda: not zk.exists("/brokers/topics/orders"), 30, "topic znodes removed")
    assert not zk.exists("/config/topics/orders") and not zk.exists("/admin/delete_topics/orders")
    for broker_id in (1, 2, 3):
        wait_for(lambda b=broker_id: not any(cluster.log_dir(b).glob("orders-*")), 20, f"logs gone on broker {broker_id}")
    assert "orders" not in topics(cluster, "--list")


def test_duplicate_broker_id_is_refused(cluster, tmp_path):
    properties = tmp_path / "dup.properties"
    properties.write_text(f"broker.id=1\nzookeeper.connect={cluster.zookeeper_connect}\n"
                          f"log.dirs={tmp_path / 'dup-logs'}\nlisteners=PLAINTEXT://127.0.0.1:{find_free_base_port(1)}\n"
                          f"http.port={find_free_base_port(1)}\nzookeeper.session.timeout.ms={SESSION_MS}\n")
    result = subprocess.run([sys.executable, "-m", "brokers", "--config", str(properties)], capture_output=True,
                            text=True, timeout=60, cwd=REPO)
    assert result.returncode != 0
    assert "broker id 1 is already registered" in result.stderr


def test_bad_broker_config_names_the_key(tmp_path):
    properties = tmp_path / "bad.properties"
    properties.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\nnum.partitons=3\n")
    result = subprocess.run([sys.executable, "-m", "brokers", str(properties)], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 2
    assert "num.partitons" in result.stderr
    assert os.path.basename(str(properties)) in result.stderr


def test_cluster_cli_up_status_down(tmp_path):
    zkafka = str(Path(sys.executable).with_name("zkafka"))
    directory = tmp_path / "cli-cluster"
    up = subprocess.run([zkafka, "cluster", "up", "--brokers", "2", "--dir", str(directory),
                         "--zookeeper-port", str(find_free_base_port(1)), "--kafka-port-base", str(find_free_base_port(2)),
                         "--http-port-base", str(find_free_base_port(2)), "--tick-time", "500",
                         "--session-timeout-ms", str(SESSION_MS)], capture_output=True, text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        assert "controller:        broker" in up.stdout and "epoch 1" in up.stdout
        status = subprocess.run([zkafka, "cluster", "status", "--dir", str(directory), "--json"],
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0
        info = json.loads(status.stdout)
        assert info["zookeeper"]["mode"] == "standalone"
        assert [b["alive"] and b["registered"] for b in info["brokers"]] == [True, True]
        assert info["controller"]["epoch"] == 1
        assert sum(b["is_controller"] for b in info["brokers"]) == 1
    finally:
        down = subprocess.run([zkafka, "cluster", "down", "--dir", str(directory)], capture_output=True, text=True,
                              timeout=120)
    assert down.returncode == 0, down.stderr
    after = subprocess.run([zkafka, "cluster", "status", "--dir", str(directory), "--json"], capture_output=True,
                           text=True, timeout=60)
    assert after.returncode == 1
    info = json.loads(after.stdout)
    assert not info["zookeeper"]["alive"] and not any(b["alive"] for b in info["brokers"])
    for broker_id in (1, 2):  # a clean shutdown leaves Kafka's marker for the next start
        assert (directory / f"broker-{broker_id}" / "logs" / ".kafka_cleanshutdown").exists()


def test_clean_stop_moves_leadership_before_the_broker_leaves(cluster, zk):
    topics(cluster, "--create", "--topic", "graceful", "--partitions", "3", "--replication-factor", "3")
    wait_for(lambda: leadership_consistent(zk, "graceful", {1, 2, 3}), 20, "partition leaders")
    controller, _ = cluster.controller()
    states = partition_states(zk, "graceful")
    victim = next(s["leader"] for s, _ in states.values() if s["leader"] != controller)
    cluster.stop_broker(victim)  # SIGTERM: controlled shutdown, then exit
    assert "controlled shutdown succeeded" in cluster.tail(victim, 200)
    after = partition_states(zk, "graceful")  # no waiting: it was done before the process exited
    assert all(s["leader"] != victim and victim not in s["isr"] for s, _ in after.values())
    assert all(s["leader"] in s["isr"] for s, _ in after.values())


def test_bad_event_loop_choice_names_the_variable(tmp_path):
    properties = tmp_path / "ok.properties"
    properties.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\n")
    result = subprocess.run([sys.executable, "-m", "brokers", str(properties)], capture_output=True, text=True,
                            timeout=60, cwd=REPO, env={**os.environ, "ZKAFKA_EVENT_LOOP": "trio"})
    assert result.returncode == 2
    assert "ZKAFKA_EVENT_LOOP='trio'" in result.stderr


def test_log_dir_of_another_cluster_is_refused(cluster, tmp_path):
    logs = tmp_path / "foreign-logs"
    logs.mkdir()
    (logs / "meta.properties").write_text("version=0\nbroker.id=7\ncluster.id=someOtherCluster\n")
    properties = tmp_path / "foreign.properties"
    properties.write_text(f"broker.id=7\nzookeeper.connect={cluster.zookeeper_connect}\nlog.dirs={logs}\n"
                          f"http.port={find_free_base_port(1)}\nlisteners=PLAINTEXT://127.0.0.1:{find_free_base_port(1)}\n")
    result = subprocess.run([sys.executable, "-m", "brokers", str(properties)], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 2
    assert "belongs to cluster someOtherCluster" in result.stderr


def test_losing_every_replica_keeps_the_last_isr_member_and_it_leads_again(cluster, zk):
    """Pitfall 9: the ISR is never emptied. With unclean election off, a partition whose replicas are
    all down has leader -1 and still names its last ISR member, which leads again when it returns."""
    topics(cluster, "--create", "--topic", "lonely", "--partitions", "1", "--replication-factor", "2")
    wait_for(lambda: leadership_consistent(zk, "lonely", {1, 2, 3}), 20, "a leader")
    state, _ = partition_states(zk, "lonely")[0]
    leader = state["leader"]
    follower = next(b for b in state["isr"] if b != leader)
    cluster.signal_broker(follower, signal.SIGKILL)
    wait_for(lambda: partition_states(zk, "lonely")[0][0]["isr"] == [leader], SESSION_MS / 1000 + 15, "ISR shrink")
    cluster.signal_broker(leader, signal.SIGKILL)
    offline = wait_for(lambda: (s := partition_states(zk, "lonely")[0][0])["leader"] == -1 and s,
                       SESSION_MS / 1000 + 15, "the partition to go offline")
    assert offline["isr"] == [leader]  # the last member is kept: it holds every committed record
    cluster.start_broker(leader)
    back = wait_for(lambda: (s := partition_states(zk, "lonely")[0][0])["leader"] == leader and s, 30,
                    "the last ISR member to lead again")
    assert back["isr"] == [leader] and back["leader_epoch"] > offline["leader_epoch"]
