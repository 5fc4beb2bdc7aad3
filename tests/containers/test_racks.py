"""Racks as separate hosts (``zkafka.testing.RackedCluster``): three racks, each a Docker network of its own with
one ZooKeeper node and brokers (rack a: brokers 1 and 2, rack b: broker 3, rack c: broker 4), joined only
through a router; names resolved from each node's hosts file to routed addresses.

The first test checks the topology itself (one network per node, its own hostname, routes through the router,
no volume shared, ``broker.rack`` in the metadata) and that the router is the only path between racks. The second
checks Kafka's rack-aware replica placement (every partition's three replicas in three racks: a rack-unaware
placement over brokers 1..4 puts two replicas in rack a) and that losing a whole rack — its two brokers and its
ZooKeeper node killed at once — leaves every partition led, with two replicas in sync, writable with acks=all
and min.insync.replicas=2, and every acknowledged record readable exactly once, in order.
"""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zkafka.testing import RackedCluster, wait_for
from zkafka.testing.defaults import SESSION_TIMEOUT_MS
from zkafka.testing.readiness import answers_api_versions

RACKS = {"a": 2, "b": 1, "c": 1}
PROPERTIES = {"default.replication.factor": 3, "offsets.topic.num.partitions": 6, "replica.lag.time.max.ms": 6000}
TOPIC, PARTITIONS, RECORDS = "racked", 8, 40
FAILOVER_S = SESSION_TIMEOUT_MS / 1000 + 30


@pytest.fixture
def racked(docker_ready, request):
    cluster = RackedCluster(racks=RACKS, properties=PROPERTIES)
    cluster.start()
    yield cluster
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        print(f"\n===== container logs ({cluster.name}) =====\n{cluster.logs()}")
    cluster.stop()


# -- the topology --------------------------------------------------------------------------------------------
def attrs_of(cluster: RackedCluster, node: str) -> dict:
    """The node's container as Docker inspects it now."""
    container = cluster.container(node)
    container.reload()
    return container.attrs


def assert_each_node_is_a_host_of_its_rack(cluster: RackedCluster) -> None:
    """On its rack's network only, at its planned address, under its own name, routing the other racks through
    the router's address on that network; no volume shared; the router on every rack network."""
    networks = {rack: net.name for rack, net in cluster.rack_networks.items()}
    volumes: list[str] = []
    for node in cluster.nodes:
        attrs = attrs_of(cluster, node)
        rack = cluster.rack_of(node)
        assert list(attrs["NetworkSettings"]["Networks"]) == [networks[rack]], f"{node}: its rack's network only"
        assert attrs["NetworkSettings"]["Networks"][networks[rack]]["IPAddress"] == cluster.node_ip(node)
        assert attrs["Config"]["Hostname"] == node
        volumes += [m["Name"] for m in attrs["Mounts"] if m.get("Name")]
        routes = cluster.exec_root(node, "ip route")
        for other, subnet in cluster.subnets.items():
            if other != rack:
                assert f"{subnet} via {cluster.subnets[rack][254]}" in routes, f"{node}: {routes}"
    assert len(volumes) == len(set(volumes)), "a volume shared between nodes"
    assert set(attrs_of(cluster, "router")["NetworkSettings"]["Networks"]) == set(networks.values())
    # names resolve from the hosts file to the routed address, across racks
    assert cluster.exec_root("broker1", "getent hosts broker4").split()[0] == cluster.node_ip("broker4")


def assert_the_router_is_the_only_path_between_racks(cluster: RackedCluster) -> None:
    assert cluster.reaches("broker1", "broker3", 9092) and cluster.reaches("broker4", "zk2", 2181)
    cluster.cut_routes(["a"])  # rack a alone cut off
    assert not cluster.reaches("broker1", "broker3", 9092) and not cluster.reaches("broker3", "zk1", 2181)
    assert cluster.reaches("broker1", "broker2", 9092), "inside rack a nothing goes through the router"
    assert cluster.reaches("broker3", "broker4", 9092), "between racks b and c the router still forwards"
    cluster.heal_routes()
    assert cluster.reaches("broker1", "broker3", 9092)
    # without its route through the router, broker3's packets to rack c take the default route, the Docker
    # host, which does not forward between its networks
    rack_c = cluster.subnets["c"]
    cluster.exec_root("broker3", f"ip route del {rack_c}")
    assert not cluster.reaches("broker3", "broker4", 9092)
    cluster.exec_root("broker3", f"ip route replace {rack_c} via {cluster.subnets['b'][254]}")
    assert cluster.reaches("broker3", "broker4", 9092)


def test_each_node_is_a_host_on_its_rack_network_reached_from_other_racks_only_through_the_router(racked):
    cluster = racked
    assert_each_node_is_a_host_of_its_rack(cluster)
    assert_the_router_is_the_only_path_between_racks(cluster)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    nodes = admin.describe_cluster(request_timeout=30).result(30).nodes
    assert {n.id: n.rack for n in nodes} == cluster.broker_racks, "each broker's broker.rack in the metadata"
    assert {(n.host, n.port) for n in nodes} == {(cluster.host, cluster.kafka_ports[b]) for b in cluster.broker_ids}

    # the host's connections arrive from each rack network's own gateway: cut_clients finds them
    cluster.cut_clients()
    assert not any(answers_api_versions(cluster.host, cluster.kafka_ports[b]) for b in cluster.broker_ids)
    cluster.heal()
    wait_for(lambda: all(answers_api_versions(cluster.host, cluster.kafka_ports[b]) for b in cluster.broker_ids), 10,
             "every broker's Kafka port answering the host again")


# -- rack-aware placement and the loss of a rack -----------------------------------------------------------
def live_views(cluster: RackedCluster, live: list[int]) -> list[dict]:
    """The partitions of TOPIC as each live broker's metadata has them (a broker that does not answer: none)."""
    healths = [cluster.health(b) for b in live]
    return [{p: h["metadata"]["partitions"].get(f"{TOPIC}-{p}") for p in range(PARTITIONS)} for h in healths if h]


def every_partition(cluster: RackedCluster, live: list[int], ok) -> bool:
    """Every live broker answers and its metadata has every partition in a state ``ok`` accepts."""
    views = live_views(cluster, live)
    return len(views) == len(live) and all(s and ok(s) for view in views for s in view.values())


def replicas_by_partition(admin: AdminClient) -> dict[int, list]:
    description = admin.describe_topics(TopicCollection([TOPIC]), request_timeout=30)[TOPIC].result(30)
    return {p.id: p.replicas for p in description.partitions}


def produce_to_every_partition(producer: Producer, first: int, acked: dict[int, list[int]]) -> None:
    """Values ``first .. first + RECORDS - 1`` to each partition; every one must be acknowledged."""
    failed: list[str] = []

    def delivered(err, msg) -> None:
        if err is None:
            acked[msg.partition()].append(int(msg.value()))
        else:
            failed.append(f"partition {msg.partition()} value {int(msg.value())}: {err.name()} ({err.str()})")
    for p in range(PARTITIONS):
        for value in range(first, first + RECORDS):
            producer.produce(TOPIC, str(value).encode(), partition=p, on_delivery=delivered)
    assert producer.flush(90) == 0, "records still unacknowledged after 90 s"
    assert not failed, f"{len(failed)} deliveries failed, first {failed[:3]}"


def read_every_partition(cluster: RackedCluster) -> dict[int, list[int]]:
    """Each partition from offset 0 to its high watermark."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        read: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}

        def at_ends() -> bool:
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is None:
                    read[m.partition()].append((m.offset(), int(m.value())))
            return all(len(read[p]) >= ends[p] for p in range(PARTITIONS))
        wait_for(at_ends, 60, "every partition read to its high watermark", 0)
    finally:
        consumer.close()
    for p, records in read.items():
        assert [o for o, _ in records] == list(range(ends[p])), f"partition {p}: offsets {records[:5]}..."
    return {p: [v for _, v in records] for p, records in read.items()}


def test_replicas_span_the_racks_and_losing_a_whole_rack_keeps_every_partition_available(racked):
    cluster = racked
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    wait_for(lambda: every_partition(cluster, cluster.broker_ids, lambda s: len(s["isr"]) == 3 and s["leader"] > 0),
             60, f"{TOPIC}: every partition led, three replicas in sync")
    racks = cluster.broker_racks
    for p, replicas in replicas_by_partition(admin).items():
        assert len(replicas) == 3 and len({racks[n.id] for n in replicas}) == 3, \
            f"partition {p}: replicas {[(n.id, racks[n.id]) for n in replicas]} not in three racks"
        assert all(n.rack == racks[n.id] for n in replicas), "the metadata's racks are the brokers' broker.rack"

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 90000})
    acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    produce_to_every_partition(producer, 0, acked)
    leaders_before = {p: s["leader"] for p, s in live_views(cluster, [1])[0].items()}
    lost = set(cluster.brokers_in("a"))
    assert lost & set(leaders_before.values()), f"rack a leads no partition: {leaders_before}"

    assert cluster.kill_rack("a") == ["zk1", "broker1", "broker2"]
    live = [b for b in cluster.broker_ids if b not in lost]
    wait_for(lambda: every_partition(cluster, live, lambda s: s["leader"] in live and set(s["isr"]) <= set(live)
                                     and len(s["isr"]) >= 2), FAILOVER_S,
             "every partition led by a live broker, its ISR shrunk to the two live replicas")
    assert cluster.controller_id() in live
    assert sorted(cluster.zk_mode(z) or "down" for z in (2, 3)) == ["follower", "leader"]

    produce_to_every_partition(producer, RECORDS, acked)
    assert all(acked[p] == list(range(2 * RECORDS)) for p in range(PARTITIONS)), "acknowledged out of order"
    read = read_every_partition(cluster)
    for p in range(PARTITIONS):
        assert read[p] == acked[p], f"partition {p}: read {read[p][:5]}... != acknowledged {acked[p][:5]}..."
