"""Topic and broker configs changed live (real ZooKeeper, 3 real brokers, real clients): retention and
min.insync.replicas take effect without a restart, the kafka-configs tool round-trips, kafka-python's
admin works, and changes survive a broker restart."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from scripts.local.cluster import Cluster, running_cluster
from tests.integration.conditions import wait_for

BIN = Path(sys.executable).parent
CHECK_INTERVAL_MS = 500
TIMEOUT = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("configs") / "cluster", 3, tick_time=500, session_timeout_ms=6000,
                         properties={"log.retention.check.interval.ms": str(CHECK_INTERVAL_MS),
                                     "log.segment.delete.delay.ms": "0", "min.insync.replicas": "2"}) as c:
        yield c


@pytest.fixture(scope="module")
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def tool(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / "kafka-configs"), *args], capture_output=True, text=True, timeout=90)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def in_sync(cluster: Cluster, topic: str) -> bool:
    """The partition's leader sees all three replicas in its ISR."""
    for broker in cluster.broker_ids:
        state = ((cluster.health(broker) or {}).get("partitions") or {}).get(f"{topic}-0") or {}
        if state.get("is_leader"):
            return len(state["isr"]) == 3
    return False


def create(admin: AdminClient, cluster: Cluster, topic: str, config: dict[str, str] | None = None) -> None:
    admin.create_topics([NewTopic(topic, 1, 3, config=config or {})])[topic].result(TIMEOUT)
    wait_for(lambda: in_sync(cluster, topic), TIMEOUT, f"{topic} to be fully replicated")


def set_topic_config(admin: AdminClient, topic: str, **changes: str | None) -> None:
    entries = [ConfigEntry(key.replace("_", "."), value, incremental_operation=AlterConfigOpType.DELETE if value is None
                           else AlterConfigOpType.SET) for key, value in changes.items()]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT)


def segments(cluster: Cluster, broker: int, topic: str) -> list[Path]:
    return sorted((cluster.log_dir(broker) / f"{topic}-0").glob("*.log"))


def produce(cluster: Cluster, topic: str, count: int, **settings) -> list[KafkaError | None]:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                         "enable.idempotence": False, "batch.num.messages": 1, **settings})
    errors: list[KafkaError | None] = []
    for i in range(count):
        producer.produce(topic, value=b"x" * 200, key=str(i).encode(), on_delivery=lambda err, msg: errors.append(err))
        producer.poll(0)
    producer.flush(TIMEOUT)
    return errors


def all_delivered(errors: list[KafkaError | None]) -> bool:
    """(KafkaError's == against None misbehaves in confluent-kafka: compare by identity.)"""
    return all(error is None for error in errors)


def pids(cluster: Cluster) -> dict[int, int | None]:
    return {b: cluster.broker_pid(b) for b in cluster.broker_ids}


# -- (a) retention.ms changed live ---------------------------------------------------------------------
def test_retention_change_deletes_old_segments_on_every_replica_without_a_restart(cluster, admin):
    topic = "retained"
    create(admin, cluster, topic, {"segment.bytes": "1024"})
    before = pids(cluster)
    assert all_delivered(produce(cluster, topic, 40))
    wait_for(lambda: all(len(segments(cluster, b, topic)) >= 4 for b in cluster.broker_ids), TIMEOUT,
             "every replica to roll several small segments")
    set_topic_config(admin, topic, retention_ms="1")
    wait_for(lambda: all(len(segments(cluster, b, topic)) == 1 for b in cluster.broker_ids),
             10 * CHECK_INTERVAL_MS / 1000, "retention to delete the old segments on every replica")
    for broker in cluster.broker_ids:
        start = int(segments(cluster, broker, topic)[0].stem)
        assert start > 0, f"broker {broker} kept its first segment"
    assert pids(cluster) == before  # applied live: no broker restarted


# -- (b) min.insync.replicas changed live --------------------------------------------------------------
def test_min_insync_replicas_change_applies_to_acks_all_at_once(cluster, admin):
    topic = "min-isr"
    create(admin, cluster, topic)
    assert all_delivered(produce(cluster, topic, 1))
    set_topic_config(admin, topic, min_insync_replicas="4")

    def refused() -> bool:
        (error,) = produce(cluster, topic, 1, retries=0, **{"message.timeout.ms": 5000})
        return error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS

    wait_for(refused, 10, "acks=all to be refused with NOT_ENOUGH_REPLICAS", interval=0.1)
    set_topic_config(admin, topic, min_insync_replicas="2")
    wait_for(lambda: all_delivered(produce(cluster, topic, 1, retries=0)), 10, "acks=all to succeed again", interval=0.1)


# -- (c) the kafka-configs tool, kafka-python's admin -----------------------------------------------------
def test_kafka_configs_topic_round_trip(cluster, admin):
    topic = "tooled"
    create(admin, cluster, topic)
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "topics", "--entity-name", topic)
    altered = tool(*bootstrap, "--alter", "--add-config", "retention.ms=12345,cleanup.policy=[compact,delete]")
    assert (altered.returncode, altered.stdout) == (0, f"Completed updating config for topic {topic}.\n"), altered.stderr
    described = tool(*bootstrap, "--describe")
    assert described.returncode == 0, described.stderr
    assert described.stdout.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=12345 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=12345, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}"]
    deleted = tool(*bootstrap, "--alter", "--delete-config", "retention.ms")
    assert deleted.returncode == 0, deleted.stderr
    assert "retention.ms" not in tool(*bootstrap, "--describe").stdout
    missing = tool(*bootstrap, "--alter", "--delete-config", "retention.ms")
    assert (missing.returncode, missing.stderr.strip()) == (1, "Invalid config(s): retention.ms")
    bad = tool(*bootstrap, "--alter", "--add-config", "segment.bytes=1")
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr and "segment.bytes" in bad.stderr


def test_kafka_configs_broker_dynamic_keys(cluster):
    base = ("--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "brokers")
    altered = tool(*base, "--entity-name", "2", "--alter", "--add-config", "leader.replication.throttled.rate=1048576")
    assert (altered.returncode, altered.stdout) == (0, "Completed updating config for broker 2.\n"), altered.stderr
    wait_for(lambda: (cluster.health(2) or {}).get("dynamic_config", {}).get("leader_replication_throttled_rate")
             == 1048576, 10, "broker 2 to apply the throttle rate")
    assert cluster.health(1)["dynamic_config"]["leader_replication_throttled_rate"] == 2**63 - 1
    described = tool(*base, "--entity-name", "2", "--describe").stdout.splitlines()
    assert described[0] == "Dynamic configs for broker 2 are:"
    assert described[1:] == ["  leader.replication.throttled.rate=1048576 sensitive=false synonyms={"
                             "DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1048576, "
                             "DEFAULT_CONFIG:leader.replication.throttled.rate=9223372036854775807}"]
    default = tool(*base, "--entity-default", "--alter", "--add-config", "follower.replication.throttled.rate=2048")
    assert (default.returncode, default.stdout) == (0, "Completed updating default config for brokers in the cluster.\n")
    wait_for(lambda: all((cluster.health(b) or {}).get("dynamic_config", {}).get("follower_replication_throttled_rate")
                         == 2048 for b in cluster.broker_ids), 10, "every broker to apply the default")
    assert tool(*base, "--entity-default", "--describe").stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  follower.replication.throttled.rate=2048 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:follower.replication.throttled.rate=2048}"]
    read_only = tool(*base, "--entity-name", "1", "--alter", "--add-config", "num.io.threads=4")
    assert read_only.returncode == 1 and "Cannot update these configs dynamically: num.io.threads" in read_only.stderr
    assert tool(*base, "--entity-default", "--alter", "--delete-config", "follower.replication.throttled.rate").returncode == 0
    wait_for(lambda: all((cluster.health(b) or {}).get("dynamic_config", {}).get("follower_replication_throttled_rate")
                         == 2**63 - 1 for b in cluster.broker_ids), 10, "the default to be removed everywhere")


def test_broker_default_log_config_reaches_topics_without_overrides(cluster, admin):
    topic = "defaulted"
    create(admin, cluster, topic)
    base = ("--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "brokers", "--entity-default")
    assert tool(*base, "--alter", "--add-config", "log.retention.ms=86400000").returncode == 0
    resource = ConfigResource(ResourceType.TOPIC, topic)

    def retention():
        return admin.describe_configs([resource])[resource].result(TIMEOUT)["retention.ms"]

    entry = wait_for(lambda: (e := retention()).value == "86400000" and e, 10, "the topic to show the new default")
    assert entry.source == 3  # DYNAMIC_DEFAULT_BROKER_CONFIG
    assert tool(*base, "--alter", "--delete-config", "log.retention.ms").returncode == 0
    wait_for(lambda: retention().value == "604800000", 10, "the default to go back")


def test_zookeeper_mode_writes_the_znode_and_the_brokers_apply_it(cluster, admin, zk):
    topic = "zk-mode"
    create(admin, cluster, topic)
    result = tool("--zookeeper", cluster.zookeeper_connect, "--entity-type", "topics", "--entity-name", topic,
                  "--alter", "--add-config", "retention.bytes=1000000")
    assert result.returncode == 0 and result.stdout == f"Completed updating config for entity: topic '{topic}'.\n"
    assert b'"retention.bytes":"1000000"' in zk.get(f"/config/topics/{topic}")[0]
    changes = sorted(zk.get_children("/config/changes"))
    assert zk.get(f"/config/changes/{changes[-1]}")[0] == ('{"version":2,"entity_path":"topics/%s"}' % topic).encode()
    shown = tool("--zookeeper", cluster.zookeeper_connect, "--entity-type", "topics", "--entity-name", topic, "--describe")
    assert shown.stdout == f"Configs for topic '{topic}' are retention.bytes=1000000\n"


def test_kafka_python_alter_and_describe_configs(cluster, admin):
    topic = "kafka-python"
    create(admin, cluster, topic)
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        for incremental in (False, True):  # AlterConfigs, then IncrementalAlterConfigs
            value = "5555" if incremental else "4444"
            result = client.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": value})],
                                          incremental=incremental)
            assert result == {"topic": {topic: "OK"}}
            described = client.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic)])
            assert described["topic"][topic]["retention.ms"]["value"] == value
        broker = KpConfigResource(ConfigResourceType.BROKER, "1", {"follower.replication.throttled.rate": "4096"})
        assert client.alter_configs([broker]) == {"broker": {"1": "OK"}}
        wait_for(lambda: (cluster.health(1) or {}).get("dynamic_config", {}).get("follower_replication_throttled_rate")
                 == 4096, 10, "broker 1 to apply kafka-python's change")
        described = client.describe_configs([KpConfigResource(ConfigResourceType.BROKER, "1")], include_synonyms=True)
        assert described["broker"]["1"]["follower.replication.throttled.rate"]["value"] == "4096"
        client.alter_configs([KpConfigResource(ConfigResourceType.BROKER, "1",
                                               {"follower.replication.throttled.rate": ("DELETE", None)})])
    finally:
        client.close()


# -- (d) survives a restart -------------------------------------------------------------------------------
def test_configs_survive_a_broker_restart(cluster, admin):
    topic = "retained"  # retention.ms=1 since the first test
    assert tool("--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "brokers", "--entity-name", "3",
                "--alter", "--add-config", "leader.replication.throttled.rate=777").returncode == 0
    wait_for(lambda: (cluster.health(3) or {}).get("dynamic_config", {}).get("leader_replication_throttled_rate") == 777,
             10, "broker 3 to apply the throttle")
    cluster.stop_broker(3)
    cluster.start_broker(3)
    cluster.wait_until_ready(60)
    assert cluster.health(3)["dynamic_config"]["leader_replication_throttled_rate"] == 777
    wait_for(lambda: in_sync(cluster, topic), TIMEOUT, "broker 3 back in the ISR")
    assert all_delivered(produce(cluster, topic, 40))
    wait_for(lambda: len(segments(cluster, 3, topic)) == 1, 10 * CHECK_INTERVAL_MS / 1000,
             "the restarted broker to apply retention.ms=1 from ZooKeeper")
