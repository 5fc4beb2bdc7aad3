"""The admin API and /metrics against a real 3-broker cluster: every answer is checked against the
cluster's own truth (ZooKeeper's znodes, the logs on disk, what was produced and committed), from every
broker (any broker answers for the whole cluster), and again after a broker is killed and restarted."""
from __future__ import annotations

import json
import signal
import threading

import msgpack
import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

TOPIC, PARTITIONS, PER_PARTITION = "api-orders", 3, 40
GROUP, COMMITTED = "api-group", 15


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("http-api") / "cluster", 3, tick_time=500, session_timeout_ms=3000,
                         properties={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3",
                         "replica.lag.time.max.ms": "3000", "replica.fetch.backoff.ms": "200"}) as c:
        yield c


@pytest.fixture(scope="module")
def topic(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"retention.ms": "987654321"})])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(TOPIC, f"value-{i}".encode(), key=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return TOPIC


@pytest.fixture(scope="module")
def group(cluster, topic):
    """A Stable one-member group that committed offset COMMITTED on every partition; polled until the end."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    wait_for(lambda: consumer.poll(0.1) is not None and len(consumer.assignment()) == PARTITIONS, 30,
             "the member's assignment")
    consumer.commit(offsets=[TopicPartition(topic, p, COMMITTED) for p in range(PARTITIONS)], asynchronous=False)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [consumer.poll(0.1) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    yield GROUP
    stop.set()
    thread.join(10)
    consumer.close()


def get(cluster: Cluster, broker_id: int, path: str, **kwargs) -> requests.Response:
    return requests.get(f"http://127.0.0.1:{cluster.http_port(broker_id)}{path}", timeout=10, **kwargs)


def api(cluster: Cluster, broker_id: int, path: str) -> dict:
    response = get(cluster, broker_id, f"/api/v1/{path}")
    assert response.status_code == 200, response.text
    return response.json()


def metrics(cluster: Cluster, broker_id: int) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one broker's /metrics."""
    text = get(cluster, broker_id, "/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def znode(zk, path: str):
    return json.loads(zk.get(path)[0])


def test_healthz_and_readyz_on_every_broker(cluster):
    for broker_id in cluster.broker_ids:
        health = get(cluster, broker_id, "/healthz").json()
        assert health["status"] == "up" and health["broker_id"] == broker_id
        ready = get(cluster, broker_id, "/readyz")
        assert ready.status_code == 200 and ready.json() == {"ready": True, "missing": []}


def test_cluster_view_is_zookeepers_from_every_broker(cluster, zk):
    cluster_id = znode(zk, "/cluster/id")["id"]
    controller = znode(zk, "/controller")["brokerid"]
    epoch = int(zk.get("/controller_epoch")[0])
    for broker_id in cluster.broker_ids:
        view = api(cluster, broker_id, "cluster")
        assert (view["cluster_id"], view["controller_id"], view["controller_epoch"]) == (cluster_id, controller, epoch)
        assert view["brokers"] == sorted(int(b) for b in zk.get_children("/brokers/ids"))
        assert view["answered_by"] == broker_id
        brokers = api(cluster, broker_id, "brokers")["brokers"]
        assert [(b["id"], b["alive"], b["controller"]) for b in brokers] == [
            (b, True, b == controller) for b in cluster.broker_ids]
        assert [(b["port"], b["http_port"]) for b in brokers] == [
            (cluster.kafka_port(b), cluster.http_port(b)) for b in cluster.broker_ids]


def test_msgpack_is_the_same_answer_as_json(cluster, topic):
    as_json = api(cluster, 2, f"partitions?topic={topic}")
    response = get(cluster, 2, f"/api/v1/partitions?topic={topic}", headers={"Accept": "application/x-msgpack"})
    assert response.headers["Content-Type"].startswith("application/x-msgpack")
    assert msgpack.unpackb(response.content) == as_json


def log_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> int:
    directory = cluster.log_dir(broker_id) / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in directory.glob("*.log"))


def test_partitions_and_topics_match_zookeeper_and_the_logs(cluster, zk, topic):
    for broker_id in cluster.broker_ids:
        rows = api(cluster, broker_id, f"partitions?topic={topic}")["partitions"]
        assert [r["partition"] for r in rows] == list(range(PARTITIONS))
        for row in rows:
            state = znode(zk, f"/brokers/topics/{topic}/partitions/{row['partition']}/state")
            assignment = znode(zk, f"/brokers/topics/{topic}")["partitions"][str(row["partition"])]
            assert (row["leader"], row["leader_epoch"], row["isr"]) == (state["leader"], state["leader_epoch"],
                                                                        state["isr"])
            assert row["replicas"] == assignment
            offsets = (row["high_watermark"], row["log_end_offset"], row["log_start_offset"])
            assert offsets == (PER_PARTITION, PER_PARTITION, 0)
            assert row["size_bytes"] == log_bytes(cluster, row["leader"], topic, row["partition"]) > 0
            assert row["segments"] == 1 and not row["under_replicated"] and not row["offline"]
        (summary,) = [t for t in api(cluster, broker_id, "topics")["topics"] if t["name"] == topic]
        assert summary["configs"] == {"retention.ms": "987654321"}
        assert (summary["partitions"], summary["replication_factor"], summary["messages"]) == (
            PARTITIONS, 3, PARTITIONS * PER_PARTITION)
        assert summary["size_bytes"] == sum(r["size_bytes"] for r in rows)
        detail = api(cluster, broker_id, f"topics/{topic}")
        assert detail["partition_details"] == rows
    assert get(cluster, 1, "/api/v1/topics/no-such-topic").status_code == 404


def test_groups_show_members_assignment_and_lag(cluster, zk, group, topic):
    def stable():
        rows = [g for g in api(cluster, 3, "groups")["groups"] if g["group_id"] == group]
        return rows and rows[0]["state"] == "Stable" and rows[0]["offsets"] and rows[0]
    view = wait_for(stable, 30, "the group Stable with its offsets")
    assert (view["protocol_type"], view["protocol"], len(view["members"])) == ("consumer", "range", 1)
    (member,) = view["members"]
    assert member["assignment"] == [{"topic": topic, "partitions": list(range(PARTITIONS))}]
    assert member["client_host"] == "/127.0.0.1"
    assert [(o["partition"], o["committed_offset"], o["high_watermark"], o["lag"]) for o in view["offsets"]] == [
        (p, COMMITTED, PER_PARTITION, PER_PARTITION - COMMITTED) for p in range(PARTITIONS)]
    assert view["total_lag"] == PARTITIONS * (PER_PARTITION - COMMITTED)
    for p in range(PARTITIONS):  # what the coordinator wrote to ZooKeeper
        assert int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) == COMMITTED
    for broker_id in cluster.broker_ids:
        assert api(cluster, broker_id, f"groups/{group}")["coordinator"] == view["coordinator"]
    coordinator = metrics(cluster, view["coordinator"])
    for p in range(PARTITIONS):
        labels = (("group", group), ("partition", str(p)), ("topic", topic))
        assert coordinator[("kafka_consumergroup_lag", labels)] == PER_PARTITION - COMMITTED
        assert coordinator[("kafka_consumergroup_committed_offset", labels)] == COMMITTED
    assert coordinator[("kafka_coordinator_group_count", (("state", "Stable"),))] >= 1
    assert coordinator[("kafka_coordinator_rebalances_total", ())] >= 1
    assert get(cluster, 1, "/api/v1/groups/no-such-group").status_code == 404


def test_overview_is_the_other_endpoints_in_one_answer(cluster, group, topic):
    def stable() -> bool:
        return any(g["group_id"] == group and g["state"] == "Stable" for g in api(cluster, 2, "groups")["groups"])
    wait_for(stable, 30, "the group Stable")
    overview = api(cluster, 2, "overview")
    assert overview["partitions"] == api(cluster, 2, "partitions")["partitions"]
    assert overview["brokers"] == api(cluster, 2, "brokers")["brokers"]
    assert overview["topics"] == api(cluster, 2, "topics")["topics"]
    assert [g["group_id"] for g in overview["groups"]] == [g["group_id"] for g in api(cluster, 2, "groups")["groups"]]
    cluster_view = {k: v for k, v in api(cluster, 2, "cluster").items() if k != "time_ms"}
    assert {k: v for k, v in overview["cluster"].items() if k != "time_ms"} == cluster_view
    local = get(cluster, 2, "/api/v1/local/partitions", headers={"Accept": "application/x-msgpack"})
    assert {(r["topic"], r["partition"]) for r in msgpack.unpackb(local.content)} == {
        (r["topic"], r["partition"]) for r in overview["partitions"]}  # RF 3 on 3 brokers: every replica here
    assert get(cluster, 2, "/api/v1/local/nothing").status_code == 404


def total(samples: dict, name: str, **labels) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def test_metrics_agree_with_the_cluster(cluster, zk, topic):
    scraped = {b: metrics(cluster, b) for b in cluster.broker_ids}
    messages = sum(total(s, "kafka_server_topic_messages_in_total", topic=topic) for s in scraped.values())
    assert messages == PARTITIONS * PER_PARTITION
    assert sum(total(s, "kafka_server_topic_bytes_in_total", topic=topic) for s in scraped.values()) > 0
    assert sum(total(s, "kafka_server_topic_produce_requests_total", topic=topic) for s in scraped.values()) >= 1
    produce_requests = sum(total(s, "kafka_network_request_duration_seconds_count", api="Produce")
                           for s in scraped.values())
    assert produce_requests >= 1
    controller, epoch = znode(zk, "/controller")["brokerid"], int(zk.get("/controller_epoch")[0])
    for broker_id, samples in scraped.items():
        assert samples[("kafka_controller_active_controller_count", ())] == int(broker_id == controller)
        assert samples[("kafka_controller_epoch", ())] == epoch
        assert samples[("kafka_zookeeper_session_state", (("state", "CONNECTED"),))] == 1
        assert samples[("kafka_zookeeper_request_duration_seconds_count", ())] > 0
        assert samples[("kafka_server_under_replicated_partitions", ())] == 0
        assert samples[("kafka_event_loop_lag_seconds", ())] >= 0
        for p in range(PARTITIONS):  # every broker hosts every partition (RF 3)
            labels = (("partition", str(p)), ("topic", topic))
            assert samples[("kafka_log_end_offset", labels)] == PER_PARTITION
            assert samples[("kafka_log_size_bytes", labels)] == log_bytes(cluster, broker_id, topic, p)
            assert samples[("kafka_log_segments", labels)] == 1
    assert scraped[controller][("kafka_controller_offline_partitions_count", ())] == 0


def test_a_killed_broker_shows_as_down_then_back(cluster, topic):
    """Last in the module: broker 3 is killed, seen down with every partition under-replicated (and by
    the leaders' metrics), then restarted, caught up and added back to the ISR (counted as expansions)."""
    victim = 3
    cluster.signal_broker(victim, signal.SIGKILL)

    def down():
        brokers = {b["id"]: b for b in api(cluster, 1, "brokers")["brokers"]}
        rows = api(cluster, 1, f"partitions?topic={topic}")["partitions"]
        return (not brokers[victim]["alive"] and all(r["under_replicated"] and not r["offline"] for r in rows)
                and rows)
    rows = wait_for(down, 30, f"broker {victim} down and its partitions under-replicated")
    assert all(victim not in r["isr"] and r["leader"] != victim for r in rows)
    assert api(cluster, 2, "cluster")["brokers"] == [1, 2]
    everything = api(cluster, 1, "partitions")["partitions"]  # __consumer_offsets too: RF 3 as well
    assert sum(r["under_replicated"] for r in everything) == len(everything) > PARTITIONS
    assert sum(metrics(cluster, b)[("kafka_server_under_replicated_partitions", ())] for b in (1, 2)) == len(everything)
    assert get(cluster, 1, "/readyz").status_code == 200
    cluster.start_broker(victim)
    cluster.wait_until_ready(60)
    wait_for(lambda: all(not r["under_replicated"] for r in api(cluster, 1, f"partitions?topic={topic}")["partitions"]),
             60, "the restarted broker back in every ISR")
    expands = sum(metrics(cluster, b)[("kafka_server_isr_expands_total", ())] for b in cluster.broker_ids)
    assert expands >= PARTITIONS
