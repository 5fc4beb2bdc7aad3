"""A broker that comes back (restarted, or healed after a partition) must get the controller's metadata, and
the cluster must name exactly one controller, also after ZooKeeper connection losses that the sessions
survive: kazoo forgets every watch on a connection loss, and the controller that ignored this never heard
of a broker again (the soak's seeds 11, 12013 and 1544237110). Each scenario ends with every broker's
metadata naming the one controller, listing every broker as live and knowing every partition."""
from __future__ import annotations

from zkafka.testing.cluster import SESSION_TIMEOUT_MS, ZkafkaCluster, controller_view
from tests.containers.test_faults import PROPERTIES, create_topic
from tests.integration.conditions import wait_for

TOPIC, PARTITIONS = "rejoin", 3
SESSION_S = SESSION_TIMEOUT_MS / 1000


def agreed(cluster: ZkafkaCluster) -> int | None:
    """The one controller every broker names (its own role, its metadata) with every broker live and every
    partition of TOPIC known with a leader; None while they disagree."""
    brokers = sorted(cluster.broker_ids)
    healths = {b: cluster.health(b) for b in brokers}
    if not all(healths.values()):
        return None
    active = [b for b, h in healths.items() if controller_view(h).get("is_controller")]
    if len(active) != 1 or sorted(controller_view(healths[active[0]]).get("live_brokers", [])) != brokers:
        return None
    for h in healths.values():
        metadata = h["metadata"]
        if metadata["controller_id"] != active[0] or sorted(metadata["live_brokers"]) != brokers:
            return None
        states = [metadata["partitions"].get(f"{TOPIC}-{p}") for p in range(PARTITIONS)]
        if not all(s and s["leader"] in brokers for s in states):
            return None
    return active[0]


def test_a_broker_restarted_after_zookeeper_restarts_gets_metadata(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, TOPIC, PARTITIONS)
    controller = wait_for(lambda: agreed(cluster), 60, "one agreed controller")
    for z in cluster.zookeeper_ids:  # a rolling restart: every broker's connection drops, no session ends
        cluster.kill_zookeeper(z)
        cluster.start_zookeeper(z)
        wait_for(lambda: cluster.zk_mode(z) in ("leader", "follower"), 60, f"zk{z} back in the ensemble")
    assert agreed(cluster) == controller
    victim = next(b for b in cluster.broker_ids if b != controller)
    cluster.restart_broker(victim)
    wait_for(lambda: agreed(cluster), SESSION_S + 60,
             f"restarted broker {victim} in everyone's metadata, with metadata of its own")


def test_a_broker_stopped_while_partitioned_gets_metadata_after_the_heal(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, TOPIC, PARTITIONS)
    controller = wait_for(lambda: agreed(cluster), 60, "one agreed controller")
    victim = next(b for b in cluster.broker_ids if b != controller)
    cluster.isolate_broker(victim)
    wait_for(lambda: victim not in controller_view(cluster.health(controller)).get("live_brokers", [victim]),
             SESSION_S + 30,
             f"controller {controller} sees broker {victim}'s session expire")
    cluster.restart_broker(victim, timeout_s=10)  # SIGTERM while cut off (controlled shutdown cannot reach anyone)
    cluster.heal_broker(victim)
    wait_for(lambda: agreed(cluster), SESSION_S + 60, f"broker {victim} back with the controller's metadata")


def test_a_paused_controller_rejoins_with_one_controller_named_everywhere(make_container_cluster):
    cluster = make_container_cluster(properties=PROPERTIES)
    create_topic(cluster, TOPIC, PARTITIONS)
    old = wait_for(lambda: agreed(cluster), 60, "one agreed controller")
    others = [b for b in cluster.broker_ids if b != old]
    cluster.pause_broker(old)
    wait_for(lambda: len(cluster.controllers(others)) == 1, SESSION_S + 30, "a new controller")
    cluster.unpause_broker(old)
    new = wait_for(lambda: agreed(cluster), SESSION_S + 60, "one controller named everywhere after the unpause")
    assert new != old
