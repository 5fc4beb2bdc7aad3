"""A ZooKeeper connection loss that the session survives (the server restarted within the session timeout)
must not cost the controller its watches. kazoo forgets every watch when the connection drops and does not
restore it on reconnect; ``brokers.zk.gateway`` then fires each one (WATCH_LOST) so that its owner re-reads
and arms it again. Without that, the controller never hears of a new topic, a broker's failure or its
restart again: the restarted broker gets no metadata and names no controller. Real ZooKeeper, real brokers."""
from __future__ import annotations

import json
import signal

from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conditions import wait_for
from tests.integration.znodes import controller_id

SESSION_MS = 10000  # the brokers' sessions outlive the ZooKeeper restart
TIMEOUT = 30
TOPIC = "after-reconnect"


def session_ids(zk) -> dict[int, int]:
    return {int(b): zk.exists(f"/brokers/ids/{b}").ephemeralOwner for b in zk.get_children("/brokers/ids")}


def test_controller_hears_topics_and_brokers_after_a_zookeeper_restart(make_cluster):
    cluster, zk = make_cluster(2, session_timeout_ms=SESSION_MS)
    controller = wait_for(lambda: controller_id(zk), TIMEOUT, "a controller")
    other = next(b for b in cluster.broker_ids if b != controller)
    sessions = session_ids(zk)

    cluster.zookeeper.stop()  # every broker's connection drops; the sessions live on in ZooKeeper's log
    cluster.zookeeper.start(60)
    zk.stop()
    zk.start(timeout=15)
    wait_for(lambda: all((cluster.health(b) or {}).get("zookeeper_connected") for b in cluster.broker_ids),
             TIMEOUT, "every broker reconnected")
    assert session_ids(zk) == sessions, "the test needs the brokers' sessions to survive the restart"

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    created = admin.create_topics([NewTopic(TOPIC, 1, 2)])[TOPIC]
    wait_for(lambda: zk.exists(f"/brokers/topics/{TOPIC}/partitions/0/state"), TIMEOUT,
             "the controller elects a leader for a topic created after the reconnect (TopicChange watch)")
    created.result(TIMEOUT)

    rate = 1048576  # a dynamic broker config written as Kafka's tools do: the znode, then a change notification
    zk.create(f"/config/brokers/{other}", json.dumps({"version": 1, "config": {
        "leader.replication.throttled.rate": str(rate)}}).encode(), makepath=True)
    zk.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": f"brokers/{other}"}).encode(),
              sequence=True)
    wait_for(lambda: (cluster.health(other) or {}).get("dynamic_config", {}).get("leader_replication_throttled_rate")
             == rate, TIMEOUT, f"broker {other} applies a config change made after the reconnect (/config/changes watch)")

    cluster.signal_broker(other, signal.SIGKILL)
    wait_for(lambda: (cluster.health(controller) or {}).get("controller", {}).get("live_brokers") == [controller],
             SESSION_MS / 1000 + TIMEOUT, f"controller {controller} sees broker {other}'s failure (BrokerChange watch)")
    cluster.start_broker(other)
    wait_for(lambda: (cluster.health(other) or {}).get("metadata", {}).get("controller_id") == controller,
             TIMEOUT, f"restarted broker {other} gets metadata naming controller {controller}")
